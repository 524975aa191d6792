//! The reader under [`super::parse`]: one JSON document (RFC 8259) into a [`Json`] tree.
//!
//! It reads as serde_json 1.x (`serde_json::from_str`, without `float_roundtrip`), the reader the
//! core used before this one: the same documents are accepted, and every refusal has the same
//! message and position, which `invalid_json` messages, their hints and the playground quote. The
//! core's own rules are added: no key twice in one object, integers kept apart from floats. Written
//! here rather than through serde for the component's size (serde's visitor machinery and
//! serde_json's reader were about 17 KB of it; BENCHMARKS.md, "WIT 0.3.0"). The tests below hold it
//! to serde_json on generated and hand-picked texts.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use super::Json;

/// A text that is not one JSON document: what is wrong and where (1-based line, 0-based column
/// in bytes, as serde_json counts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    fault: Fault,
    line: usize,
    column: usize,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {} column {}", self.fault, self.line, self.column)
    }
}

/// What is wrong with the text, in serde_json's words.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fault {
    EofWhileParsingList,
    EofWhileParsingObject,
    EofWhileParsingString,
    EofWhileParsingValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedSomeIdent,
    ExpectedSomeValue,
    InvalidEscape,
    InvalidNumber,
    NumberOutOfRange,
    ControlCharacterWhileParsingString,
    KeyMustBeAString,
    LoneLeadingSurrogateInHexEscape,
    TrailingComma,
    TrailingCharacters,
    UnexpectedEndOfHexEscape,
    RecursionLimitExceeded,
    DuplicateKey(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EofWhileParsingList => "EOF while parsing a list",
            Self::EofWhileParsingObject => "EOF while parsing an object",
            Self::EofWhileParsingString => "EOF while parsing a string",
            Self::EofWhileParsingValue => "EOF while parsing a value",
            Self::ExpectedColon => "expected `:`",
            Self::ExpectedListCommaOrEnd => "expected `,` or `]`",
            Self::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            Self::ExpectedSomeIdent => "expected ident",
            Self::ExpectedSomeValue => "expected value",
            Self::InvalidEscape => "invalid escape",
            Self::InvalidNumber => "invalid number",
            Self::NumberOutOfRange => "number out of range",
            Self::ControlCharacterWhileParsingString => {
                "control character (\\u0000-\\u001F) found while parsing a string"
            }
            Self::KeyMustBeAString => "key must be a string",
            Self::LoneLeadingSurrogateInHexEscape => "lone leading surrogate in hex escape",
            Self::TrailingComma => "trailing comma",
            Self::TrailingCharacters => "trailing characters",
            Self::UnexpectedEndOfHexEscape => "unexpected end of hex escape",
            Self::RecursionLimitExceeded => "recursion limit exceeded",
            Self::DuplicateKey(key) => return write!(f, "duplicate key `{key}`"),
        })
    }
}

/// Whether `key` is already in the object of more than [`SCAN`] keys whose entries so far are
/// `entries`: the set of their keys is made at the first such key and kept in `seen`. Out of line,
/// so that the reading of ordinary objects does not carry it.
#[inline(never)]
fn repeated_in_set(seen: &mut Option<BTreeSet<String>>, entries: &[(Cow<'_, str>, Json<'_>)], key: &str) -> bool {
    let set = seen.get_or_insert_with(|| {
        // Inserted one by one: `collect` would bring a sort into the component.
        let mut set = BTreeSet::new();
        for (known, _) in entries {
            set.insert(known.to_string());
        }
        set
    });
    !set.insert(key.to_owned())
}

/// A refusal on its way out: the fault and the byte offset its position is counted at (`None`
/// for a duplicate key until the object around it has been closed, as serde_json places it).
struct Stop {
    fault: Fault,
    at: Option<usize>,
}

type Read<T> = Result<T, Stop>;

/// How deep arrays and objects may nest (serde_json's limit: the 128th level is refused).
const DEPTH: u8 = 128;

/// Objects up to this size are searched for a repeated key; larger ones keep a set.
const SCAN: usize = 16;

/// Reads `text` as one JSON document.
pub(crate) fn document(text: &str) -> Result<Json<'_>, SyntaxError> {
    let mut reader = Reader { text, bytes: text.as_bytes(), index: 0, depth: DEPTH };
    let read = reader.value().and_then(|value| match reader.whitespace() {
        Some(_) => Err(reader.peek_error(Fault::TrailingCharacters)),
        None => Ok(value),
    });
    read.map_err(|stop| {
        let at = stop.at.unwrap_or(reader.index);
        let head = reader.bytes.get(..at).unwrap_or(reader.bytes);
        let start_of_line = head.iter().rposition(|&b| b == b'\n').map_or(0, |newline| newline + 1);
        let line = 1 + head.iter().take(start_of_line).filter(|&&b| b == b'\n').count();
        SyntaxError { fault: stop.fault, line, column: at - start_of_line }
    })
}

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    /// The next byte to read.
    index: usize,
    /// Levels of nesting still allowed.
    depth: u8,
}

impl<'t> Reader<'t> {
    /// A fault at the byte just read (serde_json's `error`).
    fn error(&self, fault: Fault) -> Stop {
        Stop { fault, at: Some(self.index) }
    }

    /// A fault at the byte about to be read (serde_json's `peek_error`).
    fn peek_error(&self, fault: Fault) -> Stop {
        Stop { fault, at: Some(self.bytes.len().min(self.index + 1)) }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.index).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.index += 1;
        Some(byte)
    }

    /// Skips whitespace and returns the next byte, not consumed.
    #[inline(always)]
    fn whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.index += 1;
        }
        self.peek()
    }

    /// `text[from..to]`, both ends at ASCII bytes the reader stopped at.
    #[inline(always)]
    fn slice(&self, from: usize, to: usize) -> &'t str {
        // INVARIANT: `from` and `to` are offsets of ASCII bytes (or the end), so character
        // boundaries; the empty fallback is never taken.
        self.text.get(from..to).unwrap_or_default()
    }

    fn value(&mut self) -> Read<Json<'t>> {
        let Some(peek) = self.whitespace() else {
            return Err(self.peek_error(Fault::EofWhileParsingValue));
        };
        match peek {
            b'n' => {
                self.index += 1;
                self.ident(b"ull").map(|()| Json::Null)
            }
            b't' => {
                self.index += 1;
                self.ident(b"rue").map(|()| Json::Bool(true))
            }
            b'f' => {
                self.index += 1;
                self.ident(b"alse").map(|()| Json::Bool(false))
            }
            b'-' => {
                self.index += 1;
                self.number(false)
            }
            b'0'..=b'9' => self.number(true),
            b'"' => {
                self.index += 1;
                self.string().map(Json::Str)
            }
            b'[' => {
                self.enter()?;
                self.index += 1;
                let items = self.items();
                self.depth += 1;
                let end = self.end_array();
                match (items, end) {
                    (Ok(items), Ok(())) => Ok(Json::Array(items)),
                    (Err(stop), _) | (_, Err(stop)) => Err(stop),
                }
            }
            b'{' => {
                self.enter()?;
                self.index += 1;
                let entries = self.entries();
                self.depth += 1;
                let end = self.end_object();
                match (entries, end) {
                    (Ok(entries), Ok(())) => Ok(Json::Object(entries)),
                    (Err(mut stop), _) => {
                        // A duplicate key is placed where the object's reading stopped.
                        stop.at = Some(stop.at.unwrap_or(self.index));
                        Err(stop)
                    }
                    (_, Err(stop)) => Err(stop),
                }
            }
            _ => Err(self.peek_error(Fault::ExpectedSomeValue)),
        }
    }

    fn enter(&mut self) -> Read<()> {
        self.depth -= 1;
        if self.depth == 0 {
            return Err(self.peek_error(Fault::RecursionLimitExceeded));
        }
        Ok(())
    }

    // Out of line: `true`, `false` and `null` each read through it (component size, docs/DECISIONS.md).
    #[inline(never)]
    fn ident(&mut self, rest: &[u8]) -> Read<()> {
        for &expected in rest {
            match self.next() {
                None => return Err(self.error(Fault::EofWhileParsingValue)),
                Some(byte) if byte != expected => return Err(self.error(Fault::ExpectedSomeIdent)),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The items of an array whose `[` has been read, up to (not including) its `]`.
    fn items(&mut self) -> Read<Vec<Json<'t>>> {
        let mut items = Vec::new();
        loop {
            let Some(peek) = self.whitespace() else {
                return Err(self.peek_error(Fault::EofWhileParsingList));
            };
            if peek == b']' {
                return Ok(items);
            }
            if !items.is_empty() {
                if peek != b',' {
                    return Err(self.peek_error(Fault::ExpectedListCommaOrEnd));
                }
                self.index += 1;
                match self.whitespace() {
                    Some(b']') => return Err(self.peek_error(Fault::TrailingComma)),
                    Some(_) => {}
                    None => return Err(self.peek_error(Fault::EofWhileParsingValue)),
                }
            }
            items.push(self.value()?);
        }
    }

    fn end_array(&mut self) -> Read<()> {
        match self.whitespace() {
            Some(b']') => {
                self.index += 1;
                Ok(())
            }
            Some(b',') => {
                self.index += 1;
                match self.whitespace() {
                    Some(b']') => Err(self.peek_error(Fault::TrailingComma)),
                    _ => Err(self.peek_error(Fault::TrailingCharacters)),
                }
            }
            Some(_) => Err(self.peek_error(Fault::TrailingCharacters)),
            None => Err(self.peek_error(Fault::EofWhileParsingList)),
        }
    }

    /// The entries of an object whose `{` has been read, up to (not including) its `}`.
    fn entries(&mut self) -> Read<Vec<(Cow<'t, str>, Json<'t>)>> {
        let mut entries: Vec<(Cow<'t, str>, Json<'t>)> = Vec::new();
        // Owned keys: the same set type as the diagnosis's, so the component carries one copy of
        // its code (an object this large is rare).
        let mut seen: Option<BTreeSet<String>> = None;
        loop {
            let Some(peek) = self.whitespace() else {
                return Err(self.peek_error(Fault::EofWhileParsingObject));
            };
            if peek == b'}' {
                return Ok(entries);
            }
            if entries.is_empty() {
                if peek != b'"' {
                    return Err(self.peek_error(Fault::KeyMustBeAString));
                }
            } else {
                if peek != b',' {
                    return Err(self.peek_error(Fault::ExpectedObjectCommaOrEnd));
                }
                self.index += 1;
                match self.whitespace() {
                    Some(b'"') => {}
                    Some(b'}') => return Err(self.peek_error(Fault::TrailingComma)),
                    Some(_) => return Err(self.peek_error(Fault::KeyMustBeAString)),
                    None => return Err(self.peek_error(Fault::EofWhileParsingValue)),
                }
            }
            self.index += 1;
            let key = self.string()?;
            let duplicate = if seen.is_none() && entries.len() < SCAN {
                entries.iter().any(|(known, _)| *known == key)
            } else {
                repeated_in_set(&mut seen, &entries, &key)
            };
            if duplicate {
                return Err(Stop { fault: Fault::DuplicateKey(key.into_owned()), at: None });
            }
            match self.whitespace() {
                Some(b':') => self.index += 1,
                Some(_) => return Err(self.peek_error(Fault::ExpectedColon)),
                None => return Err(self.peek_error(Fault::EofWhileParsingObject)),
            }
            let value = self.value()?;
            entries.push((key, value));
        }
    }

    fn end_object(&mut self) -> Read<()> {
        match self.whitespace() {
            Some(b'}') => {
                self.index += 1;
                Ok(())
            }
            Some(b',') => Err(self.peek_error(Fault::TrailingComma)),
            Some(_) => Err(self.peek_error(Fault::TrailingCharacters)),
            None => Err(self.peek_error(Fault::EofWhileParsingObject)),
        }
    }

    /// A string whose opening `"` has been read, through its closing `"`: borrowed from the text
    /// unless it holds an escape.
    fn string(&mut self) -> Read<Cow<'t, str>> {
        let mut owned: Option<String> = None;
        let mut from = self.index;
        loop {
            let rest = self.bytes.get(self.index..).unwrap_or_default();
            match special(rest) {
                Some(plain) => self.index += plain,
                None => {
                    self.index = self.bytes.len();
                    return Err(self.error(Fault::EofWhileParsingString));
                }
            }
            match self.peek() {
                Some(b'"') => {
                    let piece = self.slice(from, self.index);
                    self.index += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(piece),
                        Some(mut text) => {
                            text.push_str(piece);
                            Cow::Owned(text)
                        }
                    });
                }
                Some(b'\\') => {
                    let text = owned.get_or_insert_with(String::new);
                    text.push_str(self.slice(from, self.index));
                    self.index += 1;
                    self.escape(text)?;
                    from = self.index;
                }
                _ => {
                    self.index += 1;
                    return Err(self.error(Fault::ControlCharacterWhileParsingString));
                }
            }
        }
    }

    /// An escape whose `\` has been read.
    fn escape(&mut self, text: &mut String) -> Read<()> {
        let Some(byte) = self.next() else {
            return Err(self.error(Fault::EofWhileParsingString));
        };
        text.push(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(text),
            _ => return Err(self.error(Fault::InvalidEscape)),
        });
        Ok(())
    }

    /// A `\u` escape whose `\u` has been read: a character of the Basic Multilingual Plane, or a
    /// surrogate pair.
    fn unicode_escape(&mut self, text: &mut String) -> Read<()> {
        let unit = self.hex4()?;
        let code = match unit {
            0xDC00..=0xDFFF => return Err(self.error(Fault::LoneLeadingSurrogateInHexEscape)),
            0xD800..=0xDBFF => {
                for expected in [b'\\', b'u'] {
                    match self.peek() {
                        None => return Err(self.error(Fault::EofWhileParsingString)),
                        Some(byte) => {
                            self.index += 1;
                            if byte != expected {
                                return Err(self.error(Fault::UnexpectedEndOfHexEscape));
                            }
                        }
                    }
                }
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error(Fault::LoneLeadingSurrogateInHexEscape));
                }
                (((u32::from(unit) - 0xD800) << 10) | (u32::from(low) - 0xDC00)) + 0x1_0000
            }
            _ => u32::from(unit),
        };
        // INVARIANT: `code` is no surrogate and at most U+10FFFF, so always a character.
        if let Some(c) = char::from_u32(code) {
            text.push(c);
        }
        Ok(())
    }

    /// Four hexadecimal digits.
    fn hex4(&mut self) -> Read<u16> {
        let Some(&[a, b, c, d]) = self.bytes.get(self.index..self.index + 4) else {
            self.index = self.bytes.len();
            return Err(self.error(Fault::EofWhileParsingString));
        };
        self.index += 4;
        let mut unit: u16 = 0;
        for digit in [a, b, c, d] {
            let Some(value) = char::from(digit).to_digit(16) else {
                return Err(self.error(Fault::InvalidEscape));
            };
            unit = unit << 4 | u16::try_from(value).unwrap_or_default();
        }
        Ok(unit)
    }

    /// A number, its `-` (when `positive` is false) already read.
    fn number(&mut self, positive: bool) -> Read<Json<'t>> {
        let Some(first) = self.next() else {
            return Err(self.error(Fault::EofWhileParsingValue));
        };
        let mut significand = match first {
            b'0' => {
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.peek_error(Fault::InvalidNumber));
                }
                0
            }
            b'1'..=b'9' => u64::from(first - b'0'),
            _ => return Err(self.error(Fault::InvalidNumber)),
        };
        if first != b'0' {
            while let Some(digit @ b'0'..=b'9') = self.peek() {
                let Some(next) = significand.checked_mul(10).and_then(|s| s.checked_add(u64::from(digit - b'0')))
                else {
                    return self.long_integer(positive, significand).map(Json::Float);
                };
                self.index += 1;
                significand = next;
            }
        }
        match self.peek() {
            Some(b'.') => self.fraction(positive, significand, 0).map(Json::Float),
            Some(b'e' | b'E') => self.exponent(positive, significand, 0).map(Json::Float),
            _ if positive => Ok(Json::Int(i128::from(significand))),
            // serde_json reads `-0` as a float, and a negative integer below `i64::MIN` too.
            _ if significand == 0 => Ok(Json::Float(-0.0)),
            _ if significand <= 1 << 63 => Ok(Json::Int(-i128::from(significand))),
            _ => Ok(Json::Float(-(significand as f64))),
        }
    }

    /// The rest of an integer past `u64`: its digits only scale it.
    fn long_integer(&mut self, positive: bool, significand: u64) -> Read<f64> {
        let mut exponent: i32 = 0;
        loop {
            match self.peek() {
                Some(b'0'..=b'9') => {
                    self.index += 1;
                    exponent = exponent.saturating_add(1);
                }
                Some(b'.') => return self.fraction(positive, significand, exponent),
                Some(b'e' | b'E') => return self.exponent(positive, significand, exponent),
                _ => return self.scaled(positive, significand, exponent),
            }
        }
    }

    /// A fraction, at its `.`.
    fn fraction(&mut self, positive: bool, mut significand: u64, exponent_before: i32) -> Read<f64> {
        self.index += 1;
        let mut exponent_after: i32 = 0;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            let Some(next) = significand.checked_mul(10).and_then(|s| s.checked_add(u64::from(digit - b'0'))) else {
                // Further digits cannot change the float.
                while let Some(b'0'..=b'9') = self.peek() {
                    self.index += 1;
                }
                let exponent = exponent_before.saturating_add(exponent_after);
                return match self.peek() {
                    Some(b'e' | b'E') => self.exponent(positive, significand, exponent),
                    _ => self.scaled(positive, significand, exponent),
                };
            };
            self.index += 1;
            significand = next;
            exponent_after -= 1;
        }
        if exponent_after == 0 {
            return Err(match self.peek() {
                Some(_) => self.peek_error(Fault::InvalidNumber),
                None => self.peek_error(Fault::EofWhileParsingValue),
            });
        }
        let exponent = exponent_before.saturating_add(exponent_after);
        match self.peek() {
            Some(b'e' | b'E') => self.exponent(positive, significand, exponent),
            _ => self.scaled(positive, significand, exponent),
        }
    }

    /// An exponent, at its `e` or `E`.
    fn exponent(&mut self, positive: bool, significand: u64, starting: i32) -> Read<f64> {
        self.index += 1;
        let positive_exponent = match self.peek() {
            Some(b'+') => {
                self.index += 1;
                true
            }
            Some(b'-') => {
                self.index += 1;
                false
            }
            _ => true,
        };
        let mut exponent = match self.next() {
            None => return Err(self.error(Fault::EofWhileParsingValue)),
            Some(digit @ b'0'..=b'9') => i32::from(digit - b'0'),
            Some(_) => return Err(self.error(Fault::InvalidNumber)),
        };
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            self.index += 1;
            let Some(next) = exponent.checked_mul(10).and_then(|e| e.checked_add(i32::from(digit - b'0'))) else {
                // Past i32: infinity (refused) or zero.
                if significand != 0 && positive_exponent {
                    return Err(self.error(Fault::NumberOutOfRange));
                }
                while let Some(b'0'..=b'9') = self.peek() {
                    self.index += 1;
                }
                return Ok(if positive { 0.0 } else { -0.0 });
            };
            exponent = next;
        }
        let exponent =
            if positive_exponent { starting.saturating_add(exponent) } else { starting.saturating_sub(exponent) };
        self.scaled(positive, significand, exponent)
    }

    /// `significand × 10^exponent`, computed as serde_json computes it (one multiplication or
    /// division by a power of ten from the table); an infinite result is refused.
    fn scaled(&self, positive: bool, significand: u64, mut exponent: i32) -> Read<f64> {
        let mut value = significand as f64;
        loop {
            let power = usize::try_from(exponent.unsigned_abs()).ok().and_then(|index| POW10.get(index));
            match power {
                Some(&power) => {
                    if exponent >= 0 {
                        value *= power;
                        if value.is_infinite() {
                            return Err(self.error(Fault::NumberOutOfRange));
                        }
                    } else {
                        value /= power;
                    }
                    break;
                }
                None => {
                    if value == 0.0 {
                        break;
                    }
                    if exponent >= 0 {
                        return Err(self.error(Fault::NumberOutOfRange));
                    }
                    value /= 1e308;
                    exponent += 308;
                }
            }
        }
        Ok(if positive { value } else { -value })
    }
}

/// Where the first `"`, `\\` or control character of `bytes` is: eight bytes at a time, as
/// serde_json looks (Mycroft's zero-byte test; the lowest flagged byte is always a true one).
fn special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let Ok(array) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let chars = u64::from_le_bytes(array);
        let control = chars.wrapping_sub(ONES * 0x20) & !chars;
        let quote = chars ^ (ONES * u64::from(b'"'));
        let quote = quote.wrapping_sub(ONES) & !quote;
        let backslash = chars ^ (ONES * u64::from(b'\\'));
        let backslash = backslash.wrapping_sub(ONES) & !backslash;
        let found = (control | quote | backslash) & HIGH;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|at| offset + at)
}

/// 10^0 to 10^308, each the nearest `f64`.
#[rustfmt::skip]
static POW10: [f64; 309] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32,
    1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46, 1e47, 1e48,
    1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60, 1e61, 1e62, 1e63, 1e64,
    1e65, 1e66, 1e67, 1e68, 1e69, 1e70, 1e71, 1e72, 1e73, 1e74, 1e75, 1e76, 1e77, 1e78, 1e79, 1e80,
    1e81, 1e82, 1e83, 1e84, 1e85, 1e86, 1e87, 1e88, 1e89, 1e90, 1e91, 1e92, 1e93, 1e94, 1e95, 1e96,
    1e97, 1e98, 1e99, 1e100, 1e101, 1e102, 1e103, 1e104, 1e105, 1e106, 1e107, 1e108, 1e109, 1e110,
    1e111, 1e112, 1e113, 1e114, 1e115, 1e116, 1e117, 1e118, 1e119, 1e120, 1e121, 1e122, 1e123,
    1e124, 1e125, 1e126, 1e127, 1e128, 1e129, 1e130, 1e131, 1e132, 1e133, 1e134, 1e135, 1e136,
    1e137, 1e138, 1e139, 1e140, 1e141, 1e142, 1e143, 1e144, 1e145, 1e146, 1e147, 1e148, 1e149,
    1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156, 1e157, 1e158, 1e159, 1e160, 1e161, 1e162,
    1e163, 1e164, 1e165, 1e166, 1e167, 1e168, 1e169, 1e170, 1e171, 1e172, 1e173, 1e174, 1e175,
    1e176, 1e177, 1e178, 1e179, 1e180, 1e181, 1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188,
    1e189, 1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196, 1e197, 1e198, 1e199, 1e200, 1e201,
    1e202, 1e203, 1e204, 1e205, 1e206, 1e207, 1e208, 1e209, 1e210, 1e211, 1e212, 1e213, 1e214,
    1e215, 1e216, 1e217, 1e218, 1e219, 1e220, 1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227,
    1e228, 1e229, 1e230, 1e231, 1e232, 1e233, 1e234, 1e235, 1e236, 1e237, 1e238, 1e239, 1e240,
    1e241, 1e242, 1e243, 1e244, 1e245, 1e246, 1e247, 1e248, 1e249, 1e250, 1e251, 1e252, 1e253,
    1e254, 1e255, 1e256, 1e257, 1e258, 1e259, 1e260, 1e261, 1e262, 1e263, 1e264, 1e265, 1e266,
    1e267, 1e268, 1e269, 1e270, 1e271, 1e272, 1e273, 1e274, 1e275, 1e276, 1e277, 1e278, 1e279,
    1e280, 1e281, 1e282, 1e283, 1e284, 1e285, 1e286, 1e287, 1e288, 1e289, 1e290, 1e291, 1e292,
    1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299, 1e300, 1e301, 1e302, 1e303, 1e304, 1e305,
    1e306, 1e307, 1e308,
];

#[cfg(test)]
mod tests {
    //! The reader against serde_json, the reader it replaces: the same tree for every document,
    //! the same message (fault, line and column) for every refusal.

    use std::borrow::Cow;
    use std::collections::BTreeSet;
    use std::fmt;
    use std::fmt::Write as _;

    use proptest::prelude::*;
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    use super::{Json, document};

    /// serde_json's reading into a [`Json`] tree, as the core did before this reader.
    struct Oracle<'de>(Json<'de>);

    struct OracleVisitor;

    impl<'de> Visitor<'de> for OracleVisitor {
        type Value = Oracle<'de>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_bool<E>(self, v: bool) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Bool(v)))
        }

        fn visit_i64<E>(self, v: i64) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Int(i128::from(v))))
        }

        fn visit_u64<E>(self, v: u64) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Int(i128::from(v))))
        }

        fn visit_f64<E>(self, v: f64) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Float(v)))
        }

        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Str(Cow::Borrowed(v))))
        }

        fn visit_str<E>(self, v: &str) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Str(Cow::Owned(v.to_owned()))))
        }

        fn visit_unit<E>(self) -> Result<Oracle<'de>, E> {
            Ok(Oracle(Json::Null))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Oracle<'de>, A::Error> {
            let mut items = Vec::new();
            while let Some(Oracle(item)) = seq.next_element::<Oracle<'de>>()? {
                items.push(item);
            }
            Ok(Oracle(Json::Array(items)))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Oracle<'de>, A::Error> {
            let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
            let mut seen = BTreeSet::new();
            while let Some(Oracle(Json::Str(key))) = map.next_key::<Oracle<'de>>()? {
                if !seen.insert(key.clone()) {
                    return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
                }
                let Oracle(value) = map.next_value::<Oracle<'de>>()?;
                entries.push((key, value));
            }
            Ok(Oracle(Json::Object(entries)))
        }
    }

    impl<'de> Deserialize<'de> for Oracle<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(OracleVisitor)
        }
    }

    /// A tree as text, floats with their sign (so `-0.0` and `0.0` differ) and strings with
    /// whether they were borrowed.
    fn render(json: &Json<'_>, out: &mut String) {
        match json {
            Json::Null => out.push('n'),
            Json::Bool(b) => out.push(if *b { 't' } else { 'f' }),
            Json::Int(i) => {
                let _ = write!(out, "i{i}");
            }
            // Six significant digits: the test build's serde_json rounds floats exactly
            // (`float_roundtrip`, enabled by a dev-dependency), the component's serde_json and
            // this reader scale by a power of ten and may be ulps away (more among subnormals).
            Json::Float(x) => {
                let _ = write!(out, "x{}{:.5e}", if x.is_sign_negative() { '-' } else { '+' }, x.abs());
            }
            Json::Str(s) => {
                let _ = write!(out, "{}{s:?}", if matches!(s, Cow::Borrowed(_)) { 'b' } else { 'o' });
            }
            Json::Array(items) => {
                out.push('[');
                for item in items {
                    render(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (key, value) in entries {
                    let _ = write!(out, "{key:?}:");
                    render(value, out);
                    out.push(',');
                }
                out.push('}');
            }
        }
    }

    fn ours(text: &str) -> Result<String, String> {
        document(text)
            .map(|json| {
                let mut out = String::new();
                render(&json, &mut out);
                out
            })
            .map_err(|error| error.to_string())
    }

    fn serde_jsons(text: &str) -> Result<String, String> {
        serde_json::from_str::<Oracle<'_>>(text)
            .map(|Oracle(json)| {
                let mut out = String::new();
                render(&json, &mut out);
                out
            })
            .map_err(|error| error.to_string())
    }

    fn same(text: &str) {
        assert_eq!(ours(text), serde_jsons(text), "{text:?}");
    }

    #[test]
    #[rustfmt::skip]
    fn reads_as_serde_json_reads_hand_picked_texts() {
        let numbers = [
            "0", "-0", "1", "-1", "01", "-01", "00", "1.", "1.5", "-1.5", "1.e5", ".5", "-", "--1", "-a", "+1", "1e",
            "1e+", "1e-", "1E5", "1e5", "1e-5", "-1e-5", "1e400", "-1e400", "1e-400", "1e308", "1.7976931348623157e308",
            "1.8e308", "4.9e-324", "2e-324", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
            "-9223372036854775809", "-18446744073709551615", "-18446744073709551616", "123456789012345678901234567890",
            "123456789012345678901234567890.5e-10", "0.000000000000000000000000000000000000001",
            "1.00000000000000000000000000000000000001", "1e2147483647", "1e2147483648", "0e99999999999",
            "1e-99999999999", "-1e99999999999", "1.5e9999999999999", "1x", "1.5x", "1e5x", "[1,]", "1 2",
        ];
        let strings = [
            r#""""#, r#""a""#, r#""a"#, r#"""#, r#""\""#, r#""\\""#, r#""\/""#, r#""\b\f\n\r\t""#, r#""\x""#, r#""\u""#,
            r#""\u12""#, r#""\u12345""#, r#""\u00e9""#, r#""\uD83D\uDE00""#, r#""\uD83D""#, r#""\uD83Dx""#,
            r#""\uD83D\x""#, r#""\uD83D\u0041""#, r#""\uDE00""#, r#""\uD83D\uD83D""#, r#""\uD83D\""#, r#""\uD83D\u""#,
            r#""\uGGGG""#, "\"a\u{1}b\"", "\"\t\"", "\"é\"", "\"a\\nb\"", "\"\u{7f}\"", r#""\u0000""#,
        ];
        let structures = [
            "", " ", "\n", "{", "}", "[", "]", "[1", "[1,", "[1 2]", "[,1]", "[1,,2]", "[]", "[ ]", "{}", "{ }", "{\"a\"",
            "{\"a\":", "{\"a\":1", "{\"a\":1,", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{1:1}", "{\"a\":1 \"b\":2}",
            "{\"a\":1,\"a\":2}", "{\"a\":1,\"a\"}", "{\"a\":1,\"a\" }", "{\"a\":1,\"a\":", "{\"a\":1,\n\"a\"\n:2}",
            "[{\"a\":1,\"a\":2}]", "{\"x\":{\"a\":1,\"a\":2}}", "{\"x\":[{\"b\":1,\"b\" } ] }", "nul", "null",
            "nulll", "tru", "true", "truE", "fals", "false", "n", "t", "f", "x", "\u{feff}{}", "{}x", "{} ", "{},",
            "[1]]", "[1],", "[\"a\",]", "[\n1\n,\n]", "{\"a\":[1,{\"b\":null}],\"c\":true}", "\r\n\t {\"a\":1}\r\n",
            "{\"a\":1}\n\n x", "[[[[[]]]]]",
        ];
        for text in numbers.iter().chain(strings.iter()).chain(structures.iter()) {
            same(text);
        }
        for depth in [126, 127, 128, 129, 200] {
            same(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
            same(&"[".repeat(depth));
            same(&format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)));
        }
        for keys in [15, 16, 17, 40] {
            let distinct: Vec<String> = (0..keys).map(|k| format!("\"k{k}\":{k}")).collect();
            same(&format!("{{{}}}", distinct.join(",")));
            same(&format!("{{{},\"k3\":0}}", distinct.join(",")));
            same(&format!("{{{},\"k{}\":0}}", distinct.join(","), keys - 1));
        }
    }

    /// Short texts from JSON's own alphabet, most of them wrong somewhere.
    fn jsonish() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            "\"a\"",
            "\"b\"",
            "0",
            "1",
            "9",
            "-",
            "+",
            ".",
            "e",
            "E",
            "1.5",
            "-0",
            "1e5",
            "null",
            "true",
            "false",
            "nul",
            "tru",
            " ",
            "\n",
            "\t",
            "\r",
            "\\u",
            "D83D",
            "DE00",
            "00e9",
            "\\n",
            "\u{1}",
            "é",
            "😀",
            "x",
            "18446744073709551616",
            "1e400",
        ]);
        prop::collection::vec(pieces, 0..24).prop_map(|pieces| pieces.concat())
    }

    /// A valid document, then possibly cut or with one byte changed.
    fn document_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(|x| format!("{x:e}")),
            "[a-z\\\\\"\u{0}-\u{1f}é😀]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        ];
        let tree = leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(|items| format!("[{}]", items.join(" , "))),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..5).prop_map(|entries| {
                    let entries: Vec<String> = entries.into_iter().map(|(k, v)| format!("\"{k}\":\n{v}")).collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        });
        (tree, any::<usize>(), any::<u8>(), 0..3_u8).prop_map(|(text, at, byte, change)| {
            let mut bytes = text.into_bytes();
            let at = if bytes.is_empty() { 0 } else { at % bytes.len() };
            match change {
                1 => bytes.truncate(at),
                2 if at < bytes.len() && byte.is_ascii() => {
                    if let Some(b) = bytes.get_mut(at) {
                        *b = byte;
                    }
                }
                _ => {}
            }
            String::from_utf8(bytes).unwrap_or_default()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn reads_as_serde_json_reads_jsonish_texts(text in jsonish()) {
            prop_assert_eq!(ours(&text), serde_jsons(&text), "{:?}", text);
        }

        #[test]
        fn reads_as_serde_json_reads_documents_cut_or_changed(text in document_text()) {
            prop_assert_eq!(ours(&text), serde_jsons(&text), "{:?}", text);
        }
    }
}
