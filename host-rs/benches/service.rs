//! Placeholder until the service benchmark lands.
fn main() {}
