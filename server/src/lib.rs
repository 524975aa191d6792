#![doc = include_str!("../README.md")]

pub mod audit;
pub mod collect;
pub mod envoy;
pub mod keda;
pub mod listen;
pub mod service;
mod strict;
pub mod units;
pub mod webhook;
pub mod workers;
