//! A strict JSON reader: one document, no duplicate keys, integers kept apart from floats, and
//! a field reader that names the JSON path of every fault.

use std::borrow::Cow;

use crate::diagnose::{Near, Notes, Sink, listed, nearest};
use crate::error::{ErrorCode, EvaluationError};
use crate::vocab::Word;

mod read;

/// A parsed JSON value. Numbers keep only what the wire format can use: an integer literal
/// (as `i128`, wide enough for any `u64` or `i64`), or a float (kept only to say what it was:
/// the reader, as serde_json, reads an integer literal past `u64` as a float).
/// Strings borrow from the text unless they hold an escape.
#[derive(Debug)]
pub(crate) enum Json<'de> {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(Cow<'de, str>),
    Array(Vec<Json<'de>>),
    Object(Vec<(Cow<'de, str>, Json<'de>)>),
}

impl Json<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Int(_) => "an integer",
            Self::Float(_) => "a float",
            Self::Str(_) => "a string",
            Self::Array(_) => "an array",
            Self::Object(_) => "an object",
        }
    }
}

/// What stands in for a field that is missing, when collecting: `null`, which every reader
/// refuses, and refusing is not reported again (the field is already unreadable).
static NULL: Json<'static> = Json::Null;

/// The largest integer any field of schema 1 takes (`10^15`, amounts and signal values).
const LARGEST_BOUND: &str = "10^15";

/// Parses one JSON document, `what` naming it in messages (`request`, `contract`). JSON-level
/// faults are `invalid_json`; an integer literal too large even for a float is `invalid_field`
/// (SPEC §1), as every other too-large integer is.
pub(crate) fn parse<'t>(text: &'t str, what: &str) -> Result<Json<'t>, EvaluationError> {
    read::document(text).map_err(|error| json_error(text, what, &error))
}

/// [`parse`], reporting to a sink: `None` (after the fault) when the text is not one document.
pub(crate) fn parse_in<'t, S: Sink>(text: &'t str, what: &str, sink: &mut S) -> Result<Option<Json<'t>>, S::Stop> {
    match read::document(text) {
        Ok(json) => Ok(Some(json)),
        Err(error) => {
            sink.fault(|| json_error(text, what, &error), |_| Some(json_hint(text, &error)))?;
            Ok(None)
        }
    }
}

fn json_error(text: &str, what: &str, error: &read::SyntaxError) -> EvaluationError {
    let message = error.to_string();
    // The reader (as serde_json) reports an integer literal beyond f64's range as "number out of range".
    if message.starts_with("number out of range") {
        EvaluationError::new(
            ErrorCode::InvalidField,
            format!(
                "integer is out of range: {message}: no field takes a number this large (the largest bound is {LARGEST_BOUND})"
            ),
            "",
        )
    } else if text.starts_with('\u{feff}') {
        EvaluationError::new(
            ErrorCode::InvalidJson,
            format!("{what} is not valid JSON: it starts with a byte-order mark (U+FEFF) at line 1 column 1"),
            "",
        )
    } else {
        EvaluationError::new(ErrorCode::InvalidJson, format!("{what} is not valid JSON: {message}"), "")
    }
}

/// What to do about text that is not one JSON document.
fn json_hint(text: &str, error: &read::SyntaxError) -> String {
    let message = error.to_string();
    let hint = if message.starts_with("number out of range") {
        "write a number within the field's bounds (every bound is at most 10^15)"
    } else if text.starts_with('\u{feff}') {
        "save the text as UTF-8 without a byte-order mark (BOM)"
    } else if text.chars().all(char::is_whitespace) {
        "the text is empty: give one JSON object"
    } else if message.starts_with("duplicate key") {
        "write each key once per object: two readers of a document with a repeated key can disagree on what it says"
    } else if message.starts_with("trailing characters") {
        "remove what follows the end of the document: the input is one JSON value"
    } else if message.starts_with("trailing comma") {
        "remove the comma before the closing bracket or brace"
    } else if message.starts_with("EOF while parsing") {
        "the text ends before the document does: close every `{` and `[` (is the file cut short?)"
    } else if message.starts_with("control character") {
        "escape control characters inside strings (`\\n`, `\\t`, `\\u0000`)"
    } else if message.starts_with("recursion limit exceeded") {
        "nest objects and arrays at most 128 levels deep"
    } else if message.starts_with("key must be a string") {
        "quote every object key with double quotes"
    } else if message.starts_with("lone leading surrogate") {
        "write characters outside the Basic Multilingual Plane as a valid surrogate pair, or unescaped"
    } else {
        "check the JSON at that line and column: strings in double quotes, no comments, no `NaN` or `Infinity`, a comma between items and none after the last"
    };
    hint.to_owned()
}

/// Where a value sits in the document: a chain of field names and indices on the stack, turned
/// into text (`policy.target`, `capacities[0].used`) only when an error names it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Path<'a> {
    /// The document itself (`""`).
    Root,
    /// A path given as text.
    Text(&'a str),
    /// `parent.name`, or `name` at the root.
    Field(&'a Path<'a>, &'a str),
    /// `parent[index]`.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    /// The path of field `name` below this one.
    pub(crate) fn field(&'a self, name: &'a str) -> Path<'a> {
        Path::Field(self, name)
    }

    /// The path of item `index` below this one.
    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }

    // Out of line, as the error builders below: each is called from dozens of checks, and inlined
    // at every one they cost the component kilobytes (docs/DECISIONS.md, "The component's size").
    /// The text of the path.
    #[inline(never)]
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Self::Root => {}
            Self::Text(text) => out.push_str(text),
            Self::Field(parent, name) => {
                parent.write(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Self::Index(parent, index) => {
                use std::fmt::Write;
                parent.write(out);
                // Writing to a String cannot fail.
                let _ = write!(out, "[{index}]");
            }
        }
    }
}

#[inline(never)]
pub(crate) fn invalid_field(path: impl Into<String>, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(ErrorCode::InvalidField, message, path)
}

/// The last field name of a path's text (the whole text when it has no `.`).
pub(crate) fn field_name(path: &str) -> &str {
    path.rfind('.').and_then(|dot| path.get(dot + 1..)).unwrap_or(path)
}

/// A float whose value is a whole number beyond every integer type: what serde_json makes of
/// an integer literal past `u64` (or a float literal such as `1e20`); either way, too large.
fn is_huge(value: f64) -> bool {
    value.fract() == 0.0 && value.abs() >= 9.2e18
}

#[inline(never)]
fn wrong_type(path: &Path<'_>, expected: &str, found: &Json<'_>) -> EvaluationError {
    let path = path.render();
    let name = field_name(&path);
    let message = match found {
        Json::Float(value) if expected == "an integer" && is_huge(*value) => {
            // The bounds are in the hint: naming them here would put the table in the component.
            format!("{name} is an integer past its bounds (about {})", short_float(*value))
        }
        _ => format!("{name} must be {expected}, not {}", found.type_name()),
    };
    invalid_field(path, message)
}

/// As [`wrong_type`], for an object: the document itself is "the document".
#[inline(never)]
fn wrong_type_at(path: &Path<'_>, expected: &str, found: &Json<'_>) -> EvaluationError {
    let text = path.render();
    if text.is_empty() {
        invalid_field(text, format!("the document must be {expected}, not {}", found.type_name()))
    } else {
        wrong_type(path, expected, found)
    }
}

/// A huge float as two significant digits and a power of ten (`1.0e20`, `1.8e19`), written with
/// integer formatting only: float formatting would add kilobytes to the component for one message.
fn short_float(value: f64) -> String {
    let mut mantissa = value.abs();
    let mut exponent = 0_u32;
    while mantissa >= 10.0 && exponent < 400 {
        mantissa /= 10.0;
        exponent += 1;
    }
    // `as` saturates: the mantissa is in 1..10 here.
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a value in 0..100, see above")]
    let tenths = (mantissa * 10.0) as u32;
    let sign = if value < 0.0 { "-" } else { "" };
    format!("{sign}{}.{}e{exponent}", tenths / 10, tenths % 10)
}

/// `in low..=high` for a field with documented bounds, else what fits 64 bits.
fn bounds_text(name: &str) -> String {
    match crate::validate::bounds(name) {
        Some((low, high)) => format!("in {low}..={high}"),
        None => "an integer that fits 64 bits".to_owned(),
    }
}

/// Whether `text` is what `str::parse::<i128>` reads (an optional sign, then digits, within
/// `i128`), without `i128` parsing: its overflow-checked multiplication is a kilobyte of the
/// component for this one hint.
fn is_i128_text(text: &str) -> bool {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let significant = digits.trim_start_matches('0');
    let limit =
        if negative { "170141183460469231731687303715884105728" } else { "170141183460469231731687303715884105727" };
    significant.len() < limit.len() || (significant.len() == limit.len() && significant <= limit)
}

/// What to write instead of a value of the wrong JSON type.
fn type_hint(path: &Path<'_>, expected: &str, found: &Json<'_>) -> String {
    let text = path.render();
    let name = field_name(&text);
    match (expected, found) {
        ("an integer", Json::Float(value)) if is_huge(*value) => format!("write `{name}` {}", bounds_text(name)),
        ("an integer", Json::Float(value)) if value.fract() == 0.0 => {
            // Not huge: below 9.2 × 10^18 in magnitude, so the cast is exact; integer formatting
            // keeps float formatting (about 20 KB) out of the component.
            #[expect(clippy::cast_possible_truncation, reason = "a whole number within i64, see above")]
            let whole = *value as i64;
            format!("write `{name}` as the whole number {whole}, without a decimal point or exponent")
        }
        ("an integer", Json::Float(_)) => format!("write `{name}` as a whole number {}", bounds_text(name)),
        ("an integer", Json::Str(s)) if is_i128_text(s.trim()) => {
            format!("write `{name}` as the number {}, without quotes", s.trim())
        }
        ("an integer", Json::Bool(_)) => format!("write `{name}` as a number {}, not true or false", bounds_text(name)),
        ("a boolean", Json::Str(s)) if matches!(s.trim(), "true" | "false") => {
            format!("write `{name}` as {}, without quotes", s.trim())
        }
        ("a boolean", Json::Int(n)) if matches!(n, 0 | 1) => {
            format!("write `{name}` as {}: a boolean is true or false, not a number", *n == 1)
        }
        ("an array", Json::Str(s)) => format!("write `{name}` as an array, such as [\"{s}\"]"),
        ("a string", Json::Int(_) | Json::Float(_) | Json::Bool(_)) => {
            format!("write `{name}` as a string, in double quotes")
        }
        _ => format!("write `{name}` as {expected} (it is {})", found.type_name()),
    }
}

/// Which fields of an object were read: a bit per entry (a vector past 64 entries).
enum ReadSet {
    Small(u64),
    Large(Vec<bool>),
}

impl ReadSet {
    fn new(len: usize) -> Self {
        if len <= 64 { Self::Small(0) } else { Self::Large(vec![false; len]) }
    }

    fn mark(&mut self, position: usize) {
        match self {
            Self::Small(bits) => *bits |= 1_u64.checked_shl(u32::try_from(position).unwrap_or(u32::MAX)).unwrap_or(0),
            Self::Large(flags) => {
                if let Some(flag) = flags.get_mut(position) {
                    *flag = true;
                }
            }
        }
    }

    fn contains(&self, position: usize) -> bool {
        match self {
            Self::Small(bits) => {
                bits & 1_u64.checked_shl(u32::try_from(position).unwrap_or(u32::MAX)).unwrap_or(0) != 0
            }
            Self::Large(flags) => flags.get(position).copied().unwrap_or(false),
        }
    }
}

/// Reads the fields of one JSON object; [`Fields::finish`] rejects any field left unread.
pub(crate) struct Fields<'a, 'de> {
    entries: &'a [(Cow<'de, str>, Json<'de>)],
    read: ReadSet,
    /// Where the next lookup starts: fields are usually read in the order they were written.
    next: usize,
    path: &'a Path<'a>,
    /// The names looked up, kept only when collecting: the did-you-mean of an unknown field.
    asked: Option<Vec<&'a str>>,
}

impl<'a, 'de> Fields<'a, 'de> {
    /// Opens `value` as an object found at `path`. When collecting, a value that is not an
    /// object is reported and read as an object without fields.
    pub(crate) fn new<S: Sink>(value: &'a Json<'de>, path: &'a Path<'a>, sink: &mut S) -> Result<Self, S::Stop> {
        let asked = sink.collects().then(Vec::new);
        match value {
            Json::Object(entries) => Ok(Self { entries, read: ReadSet::new(entries.len()), next: 0, path, asked }),
            other => {
                sink.unreadable(
                    path,
                    || wrong_type_at(path, "an object", other),
                    |notes| notes.knows(path).then(|| type_hint(path, "an object", other)),
                )?;
                Ok(Self { entries: &[], read: ReadSet::new(0), next: 0, path, asked })
            }
        }
    }

    /// The field's value, `None` when absent. `null` counts as present.
    fn get(&mut self, name: &'a str) -> Option<&'a Json<'de>> {
        if let Some(asked) = &mut self.asked {
            asked.push(name);
        }
        let (after, before) = (self.entries.get(self.next..)?, self.entries.get(..self.next)?);
        let position = match after.iter().position(|(key, _)| key == name) {
            Some(offset) => self.next + offset,
            None => before.iter().position(|(key, _)| key == name)?,
        };
        self.read.mark(position);
        self.next = position + 1;
        self.entries.get(position).map(|(_, value)| value)
    }

    /// A field that must be present and not `null`. When collecting, a missing one is reported
    /// and read as `null` (which its reader refuses without a second report).
    pub(crate) fn required<S: Sink>(
        &mut self,
        name: &'a str,
        sink: &mut S,
    ) -> Result<(&'a Json<'de>, Path<'a>), S::Stop> {
        let path = self.path.field(name);
        match self.get(name) {
            None => {
                sink.unreadable(
                    &path,
                    || invalid_field(path.render(), format!("{name} is required")),
                    |notes| notes.knows(&path).then(|| format!("add `{name}` to {}", object_name(self.path))),
                )?;
                Ok((&NULL, path))
            }
            Some(Json::Null) => {
                sink.unreadable(
                    &path,
                    || invalid_field(path.render(), format!("{name} must not be null")),
                    |notes| {
                        notes.knows(&path).then(|| format!("give `{name}` a value: it is required and null is not one"))
                    },
                )?;
                Ok((&NULL, path))
            }
            Some(value) => Ok((value, path)),
        }
    }

    /// A field that may be omitted but never `null`; an omitted one takes its default.
    pub(crate) fn optional<S: Sink>(
        &mut self,
        name: &'a str,
        sink: &mut S,
    ) -> Result<Option<(&'a Json<'de>, Path<'a>)>, S::Stop> {
        let path = self.path.field(name);
        match self.get(name) {
            None => {
                sink.defaulted(&path);
                Ok(None)
            }
            Some(Json::Null) => {
                sink.unreadable(
                    &path,
                    || invalid_field(path.render(), format!("{name} must not be null")),
                    |notes| {
                        notes.knows(&path).then(|| {
                            format!("remove `{name}` to take its default, or give it a value: null is not one")
                        })
                    },
                )?;
                Ok(None)
            }
            Some(value) => Ok(Some((value, path))),
        }
    }

    /// A field that may be omitted or `null` (the SPEC's nullable fields).
    pub(crate) fn nullable<S: Sink>(&mut self, name: &'a str, sink: &mut S) -> Option<(&'a Json<'de>, Path<'a>)> {
        let path = self.path.field(name);
        match self.get(name) {
            None => {
                sink.defaulted(&path);
                None
            }
            Some(Json::Null) => None,
            Some(value) => Some((value, path)),
        }
    }

    /// Rejects every field that was not read (when collecting, each one, with the nearest
    /// field the object knows).
    pub(crate) fn finish<S: Sink>(self, sink: &mut S) -> Result<(), S::Stop> {
        for (position, (key, _)) in self.entries.iter().enumerate() {
            if self.read.contains(position) {
                continue;
            }
            let path = self.path.field(key);
            sink.fault(
                || invalid_field(path.render(), format!("unknown field `{key}`")),
                |notes| notes.knows_shallow(self.path).then(|| self.unknown_hint(key)),
            )?;
        }
        Ok(())
    }

    fn unknown_hint(&self, key: &str) -> String {
        let asked = self.asked.as_deref().unwrap_or_default();
        // A misspelling is of a field the object does not already have.
        let absent = asked.iter().copied().filter(|name| !self.entries.iter().any(|(k, _)| k == name));
        let within = object_name(self.path);
        match nearest(key, absent) {
            Some(near) => format!("did you mean `{}`? Rename `{key}`, or remove it", near.word),
            None => format!("remove `{key}`: {within} has the fields {}", listed(asked)),
        }
    }
}

/// How a hint names the object at `path`: `contract.policy`, or "the document".
fn object_name(path: &Path<'_>) -> String {
    let text = path.render();
    if text.is_empty() { "the document".to_owned() } else { format!("`{text}`") }
}

/// An integer literal; floats and booleans are refused (SPEC §1: `True` is not `1`). When
/// collecting, a refused value reads as `None`.
fn int<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<Option<i128>, S::Stop> {
    match value {
        Json::Int(number) => Ok(Some(*number)),
        other => {
            sink.unreadable(
                path,
                || wrong_type(path, "an integer", other),
                |notes| notes.knows(path).then(|| type_hint(path, "an integer", other)),
            )?;
            Ok(None)
        }
    }
}

/// A non-negative integer that fits `u64`; anything else is `invalid_field` (`0` stands in when
/// collecting).
pub(crate) fn uint<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<u64, S::Stop> {
    let Some(number) = int(value, path, sink)? else { return Ok(0) };
    match u64::try_from(number) {
        Ok(number) => Ok(number),
        Err(_) => {
            out_of_range(path, number, sink)?;
            Ok(0)
        }
    }
}

/// An integer that fits `i64`; anything else is `invalid_field` (`0` stands in when collecting).
pub(crate) fn sint<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<i64, S::Stop> {
    let Some(number) = int(value, path, sink)? else { return Ok(0) };
    match i64::try_from(number) {
        Ok(number) => Ok(number),
        Err(_) => {
            out_of_range(path, number, sink)?;
            Ok(0)
        }
    }
}

/// An integer literal outside the type its field is read as.
fn out_of_range<S: Sink>(path: &Path<'_>, number: i128, sink: &mut S) -> Result<(), S::Stop> {
    sink.unreadable(
        path,
        || {
            let text = path.render();
            let name = field_name(&text);
            // Serde reads every integer literal as an i64 or a u64: one of them prints it.
            let shown = match (i64::try_from(number), u64::try_from(number)) {
                (Ok(small), _) => small.to_string(),
                (_, Ok(large)) => large.to_string(),
                _ => "past 64 bits".to_owned(),
            };
            let message = if number < 0 {
                format!("{name} must not be negative, not {shown}")
            } else {
                format!("{name} is {shown}, an integer past its bounds")
            };
            invalid_field(text, message)
        },
        |notes| {
            notes.knows(path).then(|| {
                let text = path.render();
                let name = field_name(&text);
                format!("write `{name}` {}", bounds_text(name))
            })
        },
    )
}

/// A boolean; integers are refused (`false` stands in when collecting).
pub(crate) fn boolean<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<bool, S::Stop> {
    match value {
        Json::Bool(flag) => Ok(*flag),
        other => {
            sink.unreadable(
                path,
                || wrong_type(path, "a boolean", other),
                |notes| notes.knows(path).then(|| type_hint(path, "a boolean", other)),
            )?;
            Ok(false)
        }
    }
}

/// A string (`""` stands in when collecting).
pub(crate) fn string<S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<String, S::Stop> {
    match value {
        Json::Str(text) => Ok(text.as_ref().to_owned()),
        other => {
            sink.unreadable(
                path,
                || wrong_type(path, "a string", other),
                |notes| notes.knows(path).then(|| type_hint(path, "a string", other)),
            )?;
            Ok(String::new())
        }
    }
}

/// An array (no items stand in when collecting).
pub(crate) fn array<'a, 'de, S: Sink>(
    value: &'a Json<'de>,
    path: &Path<'_>,
    sink: &mut S,
) -> Result<&'a [Json<'de>], S::Stop> {
    match value {
        Json::Array(items) => Ok(items),
        other => {
            sink.unreadable(
                path,
                || wrong_type(path, "an array", other),
                |notes| notes.knows(path).then(|| type_hint(path, "an array", other)),
            )?;
            Ok(&[])
        }
    }
}

/// A string from a closed vocabulary. When collecting, a misspelling near exactly one word is
/// read as that word; anything else reads as the vocabulary's first word, unreadable.
pub(crate) fn word<T: Word, S: Sink>(value: &Json<'_>, path: &Path<'_>, sink: &mut S) -> Result<T, S::Stop> {
    let at = spelling(value, path, sink, T::SPELLINGS)?;
    Ok(at.and_then(|at| T::WORDS.get(at).copied()).unwrap_or(T::FIRST))
}

/// [`word`] over the vocabulary's spellings, compiled once for every vocabulary: the index of the
/// word read, or `None` when the value is unreadable.
fn spelling<S: Sink>(
    value: &Json<'_>,
    path: &Path<'_>,
    sink: &mut S,
    words: &'static [&'static str],
) -> Result<Option<usize>, S::Stop> {
    // A search of at most fourteen words: kilobytes smaller than a `match` per vocabulary, within
    // wall time's spread of them, about 1.5 % more instructions a JSON call (BENCHMARKS.md).
    let index = |text: &str| words.iter().position(|word| *word == text);
    let text = match value {
        Json::Str(text) => text,
        other => {
            sink.unreadable(
                path,
                || wrong_type(path, "a string", other),
                |notes| {
                    notes
                        .knows(path)
                        .then(|| format!("{}: one of {}", type_hint(path, "a string", other), listed(words)))
                },
            )?;
            return Ok(None);
        }
    };
    if let Some(found) = index(text) {
        return Ok(Some(found));
    }
    let error = || {
        let path = path.render();
        let message = format!("{} `{text}` is not in its vocabulary", field_name(&path));
        invalid_field(path, message)
    };
    // The nearest word is looked for only when collecting: the SPEC's path reports and stops.
    let near = if sink.collects() { nearest(text, words.iter().copied()) } else { None };
    let hint = |notes: &Notes| notes.knows(path).then(|| word_hint(text, near, words));
    match near.filter(|n| n.unique).and_then(|n| index(n.word)) {
        Some(meant) => {
            sink.fault(error, hint)?;
            Ok(Some(meant))
        }
        None => {
            sink.unreadable(path, error, hint)?;
            Ok(None)
        }
    }
}

/// The did-you-mean of a misspelt word, and the words of its vocabulary.
fn word_hint(text: &str, near: Option<Near<'_>>, words: &[&str]) -> String {
    let all = listed(words);
    match near {
        Some(near) if near.unique => {
            format!("did you mean `{}`? (the rest of this diagnosis reads it so); the values are {all}", near.word)
        }
        Some(near) => format!("did you mean `{}`? The values are {all}", near.word),
        None if text.is_empty() => format!("write one of {all}"),
        None => format!("`{text}` is none of {all}"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{field_name, is_i128_text, short_float};

    /// [`is_i128_text`] answers as `str::parse::<i128>` does.
    #[test]
    fn integer_texts_as_i128_parses_them() {
        let max = i128::MAX.to_string();
        let min = i128::MIN.to_string();
        let texts = [
            "",
            "+",
            "-",
            "0",
            "-0",
            "+0",
            "007",
            "-007",
            "12",
            "+12",
            "-12",
            "1 2",
            " 1",
            "1.0",
            "1e3",
            "+-1",
            "-+1",
            "--1",
            "++1",
            "a1",
            "1a",
            "٣",
            max.as_str(),
            min.as_str(),
            "170141183460469231731687303715884105728",
            "-170141183460469231731687303715884105729",
            "0000170141183460469231731687303715884105727",
            "1701411834604692317316873037158841057270",
            "99999999999999999999999999999999999999",
            "999999999999999999999999999999999999999",
        ];
        for text in texts {
            assert_eq!(is_i128_text(text), text.parse::<i128>().is_ok(), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn integer_texts_as_i128_parses_generated_ones(text in "[+-]{0,2}0{0,3}[0-9]{0,42}[ a.]?") {
            prop_assert_eq!(is_i128_text(&text), text.parse::<i128>().is_ok(), "{:?}", text);
        }
    }

    #[test]
    fn field_names_are_the_last_part_of_a_path() {
        assert_eq!(field_name("contract.policy.target"), "target");
        assert_eq!(field_name("capacities[0].used"), "used");
        assert_eq!(field_name("now"), "now");
        assert_eq!(field_name("a."), "");
        assert_eq!(field_name(""), "");
    }

    #[test]
    fn huge_floats_in_two_digits() {
        assert_eq!(short_float(1e20), "1.0e20");
        assert_eq!(short_float(18_446_744_073_709_551_616.0), "1.8e19");
        assert_eq!(short_float(-9.99e300), "-9.9e300");
        assert_eq!(short_float(f64::MAX), "1.7e308");
    }

    #[test]
    fn a_whole_float_is_hinted_as_its_integer() {
        use super::{Json, Path, type_hint};
        let path = Path::Text("contract.policy.min_replicas");
        for (value, expected) in [(1.0, "1"), (-2e3, "-2000"), (9.1e18, "9100000000000000000"), (250.0, "250")] {
            assert_eq!(
                type_hint(&path, "an integer", &Json::Float(value)),
                format!("write `min_replicas` as the whole number {expected}, without a decimal point or exponent"),
                "{value}"
            );
        }
    }

    #[test]
    fn an_integer_past_u64_is_past_its_bounds() {
        let text = r#"{"contract": {"policy": {"target": 100000000000000000000}}}"#;
        let Err(error) = crate::parse_request(text) else { panic!("accepted") };
        assert_eq!(error.path(), "contract.unit_ref"); // the first fault, in wire order
        let diagnosis = crate::diagnose_request_json(text);
        let target = diagnosis.faults().iter().find(|f| f.path() == "contract.policy.target");
        assert_eq!(
            target.map(|f| (f.message(), f.hint())),
            Some(("target is an integer past its bounds (about 1.0e20)", "write `target` in 1..=1000000000000"))
        );
    }
}
