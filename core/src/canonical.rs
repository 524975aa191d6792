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
            Self::Int(number) => out.push_str(&number.to_string()),
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
                let mut sorted: Vec<&(&'static str, Canon<'_>)> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (key, value)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes a JSON string the way Python's `ensure_ascii=True` does: `\"`, `\\`, `\n`, `\r`,
/// `\t`, `\b`, `\f`, and `\uXXXX` (lower-case hex, UTF-16 units) for every other character
/// outside printable ASCII, DEL included.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0_u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Lower-case hex of the sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in hash {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The content digest `D(v) = "sha256:" + lowerhex(sha256(canonical(v)))`.
pub fn content_digest(value: &Canon<'_>) -> String {
    format!("sha256:{}", sha256_hex(value.to_text().as_bytes()))
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
}
