//! Benchmarks (below).
fn main() {}
