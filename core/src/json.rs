//! A strict JSON reader: one document, no duplicate keys, integers kept apart from floats, and
//! a field reader that names the JSON path of every fault.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::{ErrorCode, EvaluationError};

/// A parsed JSON value. Numbers keep only what the wire format can use: an integer literal
/// (as `i128`, wide enough for any `u64` or `i64`) or the fact that a float was given.
/// Strings borrow from the text unless they hold an escape.
#[derive(Debug)]
pub(crate) enum Json<'de> {
    Null,
    Bool(bool),
    Int(i128),
    Float,
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
            Self::Float => "a float",
            Self::Str(_) => "a string",
            Self::Array(_) => "an array",
            Self::Object(_) => "an object",
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json<'de>, E> {
        Ok(Json::Float)
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json<'de>>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        /// Objects up to this size are searched for a repeated key; larger ones keep a set.
        const SCAN: usize = 16;
        let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        let mut seen: Option<BTreeSet<Cow<'de, str>>> = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let duplicate = match &mut seen {
                Some(seen) => !seen.insert(key.clone()),
                None if entries.len() < SCAN => entries.iter().any(|(known, _)| *known == key),
                None => {
                    let mut set = BTreeSet::new();
                    for (known, _) in &entries {
                        set.insert(known.clone());
                    }
                    let duplicate = !set.insert(key.clone());
                    seen = Some(set);
                    duplicate
                }
            };
            if duplicate {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let value = map.next_value::<Json<'de>>()?;
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// An object key, borrowed from the text unless it holds an escape.
struct Key<'de>(Cow<'de, str>);

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Parses one JSON document. JSON-level faults are `invalid_json`; an integer literal too large
/// even for a float is `invalid_field` (SPEC §1), as every other too-large integer is.
pub(crate) fn parse(text: &str) -> Result<Json<'_>, EvaluationError> {
    serde_json::from_str::<Json>(text).map_err(|error| {
        // serde_json reports an integer literal beyond f64's range as "number out of range".
        let message = error.to_string();
        if message.starts_with("number out of range") {
            EvaluationError::new(ErrorCode::InvalidField, format!("integer is out of range: {message}"), "")
        } else {
            EvaluationError::new(ErrorCode::InvalidJson, format!("request is not valid JSON: {message}"), "")
        }
    })
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

    /// The text of the path.
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

pub(crate) fn invalid_field(path: impl Into<String>, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(ErrorCode::InvalidField, message, path)
}

/// The last field name of a path's text (the whole text when it has no `.`).
pub(crate) fn field_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

fn wrong_type(path: &Path<'_>, expected: &str, found: &Json<'_>) -> EvaluationError {
    let path = path.render();
    let message = format!("{} must be {expected}, not {}", field_name(&path), found.type_name());
    invalid_field(path, message)
}

/// As [`wrong_type`], for an object: the document itself is "the request".
fn wrong_type_at(path: &Path<'_>, expected: &str, found: &Json<'_>) -> EvaluationError {
    let text = path.render();
    if text.is_empty() {
        invalid_field(text, format!("the request must be {expected}, not {}", found.type_name()))
    } else {
        wrong_type(path, expected, found)
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
}

impl<'a, 'de> Fields<'a, 'de> {
    /// Opens `value` as an object found at `path`.
    pub(crate) fn new(value: &'a Json<'de>, path: &'a Path<'a>) -> Result<Self, EvaluationError> {
        match value {
            Json::Object(entries) => Ok(Self { entries, read: ReadSet::new(entries.len()), next: 0, path }),
            other => Err(wrong_type_at(path, "an object", other)),
        }
    }

    /// The field's value, `None` when absent. `null` counts as present.
    fn get(&mut self, name: &str) -> Option<&'a Json<'de>> {
        let (after, before) = (self.entries.get(self.next..)?, self.entries.get(..self.next)?);
        let position = match after.iter().position(|(key, _)| key == name) {
            Some(offset) => self.next + offset,
            None => before.iter().position(|(key, _)| key == name)?,
        };
        self.read.mark(position);
        self.next = position + 1;
        self.entries.get(position).map(|(_, value)| value)
    }

    /// A field that must be present and not `null`.
    pub(crate) fn required(&mut self, name: &'a str) -> Result<(&'a Json<'de>, Path<'a>), EvaluationError> {
        let path = self.path.field(name);
        match self.get(name) {
            None => Err(invalid_field(path.render(), format!("{name} is required"))),
            Some(Json::Null) => Err(invalid_field(path.render(), format!("{name} must not be null"))),
            Some(value) => Ok((value, path)),
        }
    }

    /// A field that may be omitted but never `null`.
    pub(crate) fn optional(&mut self, name: &'a str) -> Result<Option<(&'a Json<'de>, Path<'a>)>, EvaluationError> {
        let path = self.path.field(name);
        match self.get(name) {
            None => Ok(None),
            Some(Json::Null) => Err(invalid_field(path.render(), format!("{name} must not be null"))),
            Some(value) => Ok(Some((value, path))),
        }
    }

    /// A field that may be omitted or `null` (the SPEC's nullable fields).
    pub(crate) fn nullable(&mut self, name: &'a str) -> Option<(&'a Json<'de>, Path<'a>)> {
        let path = self.path.field(name);
        match self.get(name) {
            None | Some(Json::Null) => None,
            Some(value) => Some((value, path)),
        }
    }

    /// Rejects every field that was not read.
    pub(crate) fn finish(self) -> Result<(), EvaluationError> {
        for (position, (key, _)) in self.entries.iter().enumerate() {
            if !self.read.contains(position) {
                return Err(invalid_field(self.path.field(key).render(), format!("unknown field `{key}`")));
            }
        }
        Ok(())
    }
}

/// An integer literal; floats and booleans are refused (SPEC §1: `True` is not `1`).
pub(crate) fn int(value: &Json<'_>, path: &Path<'_>) -> Result<i128, EvaluationError> {
    match value {
        Json::Int(number) => Ok(*number),
        other => Err(wrong_type(path, "an integer", other)),
    }
}

/// A non-negative integer that fits `u64`; anything else is `invalid_field`.
pub(crate) fn uint(value: &Json<'_>, path: &Path<'_>) -> Result<u64, EvaluationError> {
    let number = int(value, path)?;
    u64::try_from(number).map_err(|_| out_of_range(path))
}

/// An integer that fits `i64`; anything else is `invalid_field`.
pub(crate) fn sint(value: &Json<'_>, path: &Path<'_>) -> Result<i64, EvaluationError> {
    let number = int(value, path)?;
    i64::try_from(number).map_err(|_| out_of_range(path))
}

pub(crate) fn out_of_range(path: &Path<'_>) -> EvaluationError {
    let path = path.render();
    let message = format!("{} is outside its bounds", field_name(&path));
    invalid_field(path, message)
}

/// A boolean; integers are refused.
pub(crate) fn boolean(value: &Json<'_>, path: &Path<'_>) -> Result<bool, EvaluationError> {
    match value {
        Json::Bool(flag) => Ok(*flag),
        other => Err(wrong_type(path, "a boolean", other)),
    }
}

/// A string.
pub(crate) fn string(value: &Json<'_>, path: &Path<'_>) -> Result<String, EvaluationError> {
    match value {
        Json::Str(text) => Ok(text.as_ref().to_owned()),
        other => Err(wrong_type(path, "a string", other)),
    }
}

/// An array.
pub(crate) fn array<'a, 'de>(value: &'a Json<'de>, path: &Path<'_>) -> Result<&'a [Json<'de>], EvaluationError> {
    match value {
        Json::Array(items) => Ok(items),
        other => Err(wrong_type(path, "an array", other)),
    }
}

/// A string from a closed vocabulary.
pub(crate) fn word<T>(value: &Json<'_>, path: &Path<'_>, parse: fn(&str) -> Option<T>) -> Result<T, EvaluationError> {
    match value {
        Json::Str(text) => parse(text).ok_or_else(|| {
            let path = path.render();
            let message = format!("{} `{text}` is not in its vocabulary", field_name(&path));
            invalid_field(path, message)
        }),
        other => Err(wrong_type(path, "a string", other)),
    }
}
