#![doc = include_str!("../README.md")]

pub mod keda;
pub mod service;
pub mod units;
pub mod webhook;
