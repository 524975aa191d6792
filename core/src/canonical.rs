//! Canonical JSON and content digests (SPEC §8): keys sorted, no whitespace, non-ASCII escaped,
//! exactly Python's `json.dumps(v, ensure_ascii=True, sort_keys=True, separators=(",", ":"))`.

use sha2::{Digest, Sha256};

/// A JSON value as the identity objects need it. Object keys are static field names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Canon<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer, written in plain decimal.
    Int(i128),
    /// A string, escaped as Python's `ensure_ascii` does.
    Str(&'a str),
    /// An array, in the given order.
    List(Vec<Canon<'a>>),
    /// An object; written with its keys sorted.
    Map(Vec<(&'static str, Canon<'a>)>),
}

impl Canon<'_> {
    /// The canonical text.
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Bool(true) => out.push_str("true"),
            Self::Bool(false) => out.push_str("false"),
            Self::Int(number) => {
                use std::fmt::Write;
                // Writing to a String cannot fail.
                let _ = write!(out, "{number}");
            }
            Self::Str(text) => write_string(text, out),
            Self::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Self::Map(entries) => {
                out.push('{');
                if entries.is_sorted_by(|a, b| a.0 <= b.0) {
                    write_entries(entries.iter(), out);
                } else {
                    let mut sorted: Vec<&(&'static str, Canon<'_>)> = entries.iter().collect();
                    insertion_sort(&mut sorted, |a, b| a.0 > b.0);
                    write_entries(sorted.into_iter(), out);
                }
                out.push('}');
            }
        }
    }
}

/// A stable insertion sort (`greater(a, b)`: `a` goes after `b`). The lists sorted here are short
/// (identity objects and their word lists), and this is far less code in the component than the
/// standard library's sorts.
fn insertion_sort<T>(items: &mut [T], greater: impl Fn(&T, &T) -> bool) {
    for end in 1..items.len() {
        let mut at = end;
        while at > 0 && items.get(at - 1).zip(items.get(at)).is_some_and(|(a, b)| greater(a, b)) {
            items.swap(at - 1, at);
            at -= 1;
        }
    }
}

fn write_entries<'e, 'a: 'e>(entries: impl Iterator<Item = &'e (&'static str, Canon<'a>)>, out: &mut String) {
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        value.write(out);
    }
}

/// Writes `text` as a JSON string: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, and `\u00xx` (lower-case
/// hex) for the other control characters. With `ensure_ascii` (canonical JSON: Python's
/// `ensure_ascii=True`) DEL and every non-ASCII character are written as `\uXXXX` UTF-16 units too;
/// without it (serde_json's compact output) they are written as they are.
pub(crate) fn write_json_string(text: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    let mut rest = text;
    // Runs of characters written as they are are copied whole.
    while let Some(at) = rest.bytes().position(|b| b < b' ' || b == b'"' || b == b'\\' || (ensure_ascii && b > b'~')) {
        // Every byte before `at` is ASCII or (without `ensure_ascii`) whole characters, and the
        // byte at `at` starts a character, so `at` is a character boundary.
        let Some((plain, tail)) = rest.split_at_checked(at) else {
            break;
        };
        out.push_str(plain);
        let mut chars = tail.chars();
        if let Some(c) = chars.next() {
            write_escaped(c, out);
        }
        rest = chars.as_str();
    }
    out.push_str(rest);
    out.push('"');
}

/// Canonical JSON's string: [`write_json_string`] with `ensure_ascii`.
fn write_string(text: &str, out: &mut String) {
    write_json_string(text, true, out);
}

fn write_escaped(c: char, out: &mut String) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        _ => {
            let mut units = [0_u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(hex_digit((*unit >> shift) & 0xf));
                }
            }
        }
    }
}

/// Appends `value` in decimal, zero-padded to at least `min_width` digits (at most 20). By hand:
/// the formatting machinery costs more than the rest of an identity text in the component.
pub(crate) fn push_decimal(value: u64, min_width: usize, out: &mut String) {
    let mut digits = [b'0'; 20];
    let mut written = 0;
    let mut rest = value;
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + u8::try_from(rest % 10).unwrap_or_default();
        rest /= 10;
        written += 1;
        if rest == 0 && written >= min_width {
            break;
        }
    }
    let start = digits.len() - written;
    out.extend(digits.get(start..).unwrap_or_default().iter().map(|&b| char::from(b)));
}

/// The lower-case hex digit of `nibble` (0..=15).
fn hex_digit(nibble: u16) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}

/// Appends the lower-case hex of `bytes`.
fn push_hex(bytes: &[u8], out: &mut String) {
    for &byte in bytes {
        out.push(hex_digit(u16::from(byte >> 4)));
        out.push(hex_digit(u16::from(byte & 0xf)));
    }
}

/// Lower-case hex of the sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    push_hex(&Sha256::digest(bytes), &mut hex);
    hex
}

/// The content digest `D(v) = "sha256:" + lowerhex(sha256(canonical(v)))`.
pub fn content_digest(value: &Canon<'_>) -> String {
    format!("sha256:{}", sha256_hex(value.to_text().as_bytes()))
}

/// Canonical JSON written straight into one buffer, without building a tree. The caller writes
/// each object's keys in ascending byte order (the order [`Canon`] sorts them into), so the text
/// is [`Canon::to_text`] of the same value; the identities in every vector pin these bytes.
pub(crate) struct CanonWriter {
    out: String,
    comma: bool,
}

impl CanonWriter {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self { out: String::with_capacity(capacity), comma: false }
    }

    fn separate(&mut self) {
        if self.comma {
            self.out.push(',');
        }
    }

    /// Opens an object (as a value).
    pub(crate) fn begin_object(&mut self) -> &mut Self {
        self.separate();
        self.out.push('{');
        self.comma = false;
        self
    }

    pub(crate) fn end_object(&mut self) -> &mut Self {
        self.out.push('}');
        self.comma = true;
        self
    }

    /// Opens an array (as a value).
    pub(crate) fn begin_array(&mut self) -> &mut Self {
        self.separate();
        self.out.push('[');
        self.comma = false;
        self
    }

    pub(crate) fn end_array(&mut self) -> &mut Self {
        self.out.push(']');
        self.comma = true;
        self
    }

    /// An object key; its value follows.
    pub(crate) fn key(&mut self, key: &'static str) -> &mut Self {
        self.separate();
        write_string(key, &mut self.out);
        self.out.push(':');
        self.comma = false;
        self
    }

    pub(crate) fn str(&mut self, text: &str) -> &mut Self {
        self.separate();
        write_string(text, &mut self.out);
        self.comma = true;
        self
    }

    /// A string, or `null`.
    pub(crate) fn opt_str(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            Some(text) => self.str(text),
            None => {
                self.separate();
                self.out.push_str("null");
                self.comma = true;
                self
            }
        }
    }

    pub(crate) fn uint(&mut self, number: u64) -> &mut Self {
        self.separate();
        push_decimal(number, 1, &mut self.out);
        self.comma = true;
        self
    }

    pub(crate) fn bool(&mut self, flag: bool) -> &mut Self {
        self.separate();
        self.out.push_str(if flag { "true" } else { "false" });
        self.comma = true;
        self
    }

    /// `key: [words…]`, the words sorted.
    pub(crate) fn sorted_words(&mut self, key: &'static str, mut words: Vec<&str>) -> &mut Self {
        insertion_sort(&mut words, |a, b| a > b);
        self.key(key).begin_array();
        for word in words {
            self.str(word);
        }
        self.end_array()
    }

    pub(crate) fn text(&self) -> &str {
        &self.out
    }
}

/// The short id and the content digest of an identity object whose canonical text is
/// `identity`: `prefix` and the first 32 hex digits of its sha256, and
/// `D({"identity": identity, "kind": kind})`, hashed in three pieces rather than written again.
pub(crate) fn id_and_digest(prefix: &str, identity: &str, kind: &str) -> (String, String) {
    let hash = Sha256::digest(identity.as_bytes());
    let mut id = String::with_capacity(prefix.len() + 32);
    id.push_str(prefix);
    push_hex(hash.get(..16).unwrap_or_default(), &mut id);

    let mut tail = String::with_capacity(kind.len() + 12);
    tail.push_str(",\"kind\":");
    write_string(kind, &mut tail);
    tail.push('}');
    let mut hasher = Sha256::new();
    hasher.update(b"{\"identity\":");
    hasher.update(identity.as_bytes());
    hasher.update(tail.as_bytes());
    let mut digest = String::with_capacity(71);
    digest.push_str("sha256:");
    push_hex(&hasher.finalize(), &mut digest);
    (id, digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_json_dumps() {
        let value = Canon::Map(vec![
            ("b", Canon::List(vec![Canon::Int(1), Canon::Null, Canon::Bool(true)])),
            ("a", Canon::Str("é\u{7f}\u{1}\"\\\n😀")),
        ]);
        assert_eq!(value.to_text(), r#"{"a":"\u00e9\u007f\u0001\"\\\n\ud83d\ude00","b":[1,null,true]}"#);
    }

    #[test]
    fn pinned_missing_signal_digest() {
        let missing = Canon::Map(vec![("kind", Canon::Str("signal")), ("state", Canon::Str("missing"))]);
        assert_eq!(content_digest(&missing), "sha256:09ec28542f8fbb66c37f2c661e774b6687127212408499e4eddb77cca44767fb");
    }

    #[test]
    fn writer_matches_the_tree() {
        let tree = Canon::Map(vec![
            ("a", Canon::List(vec![Canon::Str("x\u{1}é"), Canon::Null])),
            (
                "b",
                Canon::Map(vec![("c", Canon::Int(7)), ("d", Canon::Bool(false)), ("m", Canon::Int(u64::MAX.into()))]),
            ),
            ("e", Canon::List(vec![])),
        ]);
        let mut writer = CanonWriter::with_capacity(16);
        writer.begin_object().key("a").begin_array().str("x\u{1}é").opt_str(None).end_array();
        writer.key("b").begin_object().key("c").uint(7).key("d").bool(false).key("m").uint(u64::MAX).end_object();
        writer.key("e").begin_array().end_array().end_object();
        assert_eq!(writer.text(), tree.to_text());

        let (id, digest) = id_and_digest("p:", writer.text(), "k\u{e9}");
        let hex = sha256_hex(tree.to_text().as_bytes());
        assert_eq!(id, format!("p:{}", &hex[..32]));
        assert_eq!(digest, content_digest(&Canon::Map(vec![("identity", tree), ("kind", Canon::Str("k\u{e9}"))])));
    }
}
