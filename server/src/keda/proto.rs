//! KEDA's wire types and gRPC stubs, generated from `proto/externalscaler.proto` at build time
//! (build.rs, protox and tonic-prost-build) and never edited. Public because they are the wire
//! protocol: the client is what KEDA runs, here for tests, benchmarks and probes.
#![allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "generated code"
)]

include!(concat!(env!("OUT_DIR"), "/externalscaler.rs"));
