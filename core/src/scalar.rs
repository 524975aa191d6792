//! Scalar checks of SPEC §3: bounded opaque references, the credential rule and digests.

/// The bytes a reference may hold after its first: ASCII letters, digits and `._:/@+-`.
#[expect(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of bounds fails the build, not a run"
)]
const REF_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'/' | b'@' | b'+' | b'-');
        b += 1;
    }
    table
};

/// Whether `text` matches `^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,255}$`.
pub(crate) fn is_ref(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    bytes.len() <= 256
        && first.is_ascii_alphanumeric()
        && rest.iter().all(|&b| REF_BYTES.get(usize::from(b)).copied().unwrap_or(false))
}

/// The credential pattern of SPEC §3, spelled out and grouped by first letter: its alternatives
/// form a finite language, so a case-insensitive substring search over these words is an exact
/// implementation of it.
const CREDENTIAL_WORDS: &[(u8, &[&str])] = &[
    (b'a', &["authorization", "apikey", "api_key", "api-key"]),
    (b'b', &["bearer"]),
    (b'c', &["cookie"]),
    (b'p', &["password", "passwd", "privatekey", "private_key", "private-key"]),
    (b'r', &["rawbody", "raw_body", "raw-body", "rawspan", "raw_span", "raw-span", "rawlog", "raw_log", "raw-log"]),
    (b's', &["secret"]),
    (b't', &["token=", "token:"]),
];

/// For each byte, 1 + the index in [`CREDENTIAL_WORDS`] of the words starting with it (either
/// case), or 0: one load per position instead of a search of the letters.
#[expect(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of bounds fails the build, not a run"
)]
const CREDENTIAL_START: [u8; 256] = {
    let mut table = [0_u8; 256];
    let mut i = 0;
    while i < CREDENTIAL_WORDS.len() {
        let letter = CREDENTIAL_WORDS[i].0;
        table[letter as usize] = i as u8 + 1;
        table[letter.to_ascii_uppercase() as usize] = i as u8 + 1;
        i += 1;
    }
    table
};

/// Whether `text` contains anything the credential pattern matches, ignoring ASCII case.
/// Refs are ASCII by the time this runs (the ref pattern is checked first).
pub(crate) fn looks_like_credential(text: &str) -> bool {
    // One pass, no allocation: at each position, only the words starting with that letter are
    // compared (a substring occurs somewhere exactly when it starts at some position).
    let bytes = text.as_bytes();
    (0..bytes.len()).any(|start| {
        let rest = bytes.get(start..).unwrap_or_default();
        let Some(&first) = rest.first() else {
            return false;
        };
        let group = CREDENTIAL_START.get(usize::from(first)).copied().unwrap_or(0);
        let Some((_, words)) = usize::from(group).checked_sub(1).and_then(|i| CREDENTIAL_WORDS.get(i)) else {
            return false;
        };
        words.iter().any(|word| {
            rest.len() >= word.len() && rest.iter().zip(word.bytes()).all(|(&a, b)| a.to_ascii_lowercase() == b)
        })
    })
}

/// The first word of the credential pattern found in `text` (ignoring ASCII case), for a hint.
pub(crate) fn credential_word(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    (0..lower.len()).find_map(|start| {
        let rest = lower.get(start..)?;
        CREDENTIAL_WORDS.iter().flat_map(|(_, words)| words.iter()).find(|word| rest.starts_with(**word)).copied()
    })
}

/// Whether `text` is `sha256:` and 64 lower-case hex digits.
pub(crate) fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{CREDENTIAL_WORDS, looks_like_credential};

    /// The definition: a case-insensitive substring search for any of the words.
    fn oracle(text: &str) -> bool {
        let lower = text.to_ascii_lowercase();
        CREDENTIAL_WORDS.iter().flat_map(|(_, words)| words.iter()).any(|word| lower.contains(word))
    }

    #[test]
    fn words_are_grouped_by_their_first_letter() {
        let words: Vec<&str> = CREDENTIAL_WORDS.iter().flat_map(|(_, words)| words.iter().copied()).collect();
        assert_eq!(words.len(), 23);
        for (letter, words) in CREDENTIAL_WORDS {
            assert!(
                words.iter().all(|word| word.as_bytes().first() == Some(letter) && *word == word.to_ascii_lowercase())
            );
        }
    }

    proptest! {
        #[test]
        fn credential_scan_matches_substring_search(
            text in "([a-zA-Z0-9._:/@+=-]{0,6}(AUTHORIZATION|Bearer|cookie|PassWD|private_key|token=|Token:|api-key|raw_body|rawspan|RAW-LOG|secre|toke|apike|raw)?){0,5}"
        ) {
            prop_assert_eq!(looks_like_credential(&text), oracle(&text));
        }
    }
}
