//! The Rust host of the Scale Units evaluator component (work in progress, issue 3).
