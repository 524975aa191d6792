//! sha256 over `len` bytes of a fixed buffer, once per message, for timing the hashing a decision
//! does inside the evaluator component. A bench fixture, not a product.

use sha2::{Digest, Sha256};

/// Bytes to hash: longer than any identity text of a valid request.
static BUFFER: [u8; 65_536] = [b'a'; 65_536];

/// Hashes the first `a`, `b`, `c` and `d` bytes of the buffer, as four messages, and returns a
/// byte of the last digest (so that the work cannot be optimised away).
#[unsafe(no_mangle)]
pub extern "C" fn hash4(a: u32, b: u32, c: u32, d: u32) -> u32 {
    let mut last = 0;
    for len in [a, b, c, d] {
        let len = usize::try_from(len).unwrap_or(0).min(BUFFER.len());
        let digest = Sha256::digest(BUFFER.get(..len).unwrap_or_default());
        last = u32::from(digest.first().copied().unwrap_or(0));
    }
    last
}
