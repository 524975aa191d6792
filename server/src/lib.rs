#![doc = include_str!("../README.md")]

pub mod audit;
pub mod collect;
pub mod config;
pub mod envoy;
pub mod keda;
pub mod kubernetes;
pub mod listen;
pub mod server;
pub mod service;
pub mod sources;
mod strict;
pub mod units;
pub mod webhook;
pub mod workers;
