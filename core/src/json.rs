//! A strict JSON reader: one document, no duplicate keys, integers kept apart from floats, and
//! a field reader that names the JSON path of every fault.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::{ErrorCode, EvaluationError};

/// A parsed JSON value. Numbers keep only what the wire format can use: an integer literal
/// (as `i128`, wide enough for any `u64` or `i64`) or the fact that a float was given.
#[derive(Debug)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i128),
    Float,
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
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
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Float)
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut seen = BTreeSet::new();
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let value = map.next_value::<Json>()?;
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// Parses one JSON document. JSON-level faults are `invalid_json`; an integer literal too large
/// even for a float is `invalid_field` (SPEC §1), as every other too-large integer is.
pub(crate) fn parse(text: &str) -> Result<Json, EvaluationError> {
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

/// `parent.name`, or `name` at the root.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}.{name}") }
}

/// `parent[index]`.
pub(crate) fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

pub(crate) fn invalid_field(path: impl Into<String>, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(ErrorCode::InvalidField, message, path)
}

fn wrong_type(path: &str, expected: &str, found: &Json) -> EvaluationError {
    let name = path.rsplit('.').next().unwrap_or(path);
    invalid_field(path, format!("{name} must be {expected}, not {}", found.type_name()))
}

/// Reads the fields of one JSON object; [`Fields::finish`] rejects any field left unread.
pub(crate) struct Fields<'a> {
    entries: &'a [(String, Json)],
    read: Vec<bool>,
    path: &'a str,
}

impl<'a> Fields<'a> {
    /// Opens `value` as an object found at `path`.
    pub(crate) fn new(value: &'a Json, path: &'a str) -> Result<Self, EvaluationError> {
        match value {
            Json::Object(entries) => Ok(Self { entries, read: vec![false; entries.len()], path }),
            other => Err(wrong_type_at(path, "an object", other)),
        }
    }

    pub(crate) fn path(&self) -> &str {
        self.path
    }

    /// The field's value, `None` when absent. `null` counts as present.
    fn get(&mut self, name: &str) -> Option<&'a Json> {
        let position = self.entries.iter().position(|(key, _)| key == name)?;
        if let Some(flag) = self.read.get_mut(position) {
            *flag = true;
        }
        self.entries.get(position).map(|(_, value)| value)
    }

    fn field_path(&self, name: &str) -> String {
        join(self.path, name)
    }

    /// A field that must be present and not `null`.
    pub(crate) fn required(&mut self, name: &str) -> Result<(&'a Json, String), EvaluationError> {
        let path = self.field_path(name);
        match self.get(name) {
            None => Err(invalid_field(path, format!("{name} is required"))),
            Some(Json::Null) => Err(invalid_field(path, format!("{name} must not be null"))),
            Some(value) => Ok((value, path)),
        }
    }

    /// A field that may be omitted but never `null`.
    pub(crate) fn optional(&mut self, name: &str) -> Result<Option<(&'a Json, String)>, EvaluationError> {
        let path = self.field_path(name);
        match self.get(name) {
            None => Ok(None),
            Some(Json::Null) => Err(invalid_field(path, format!("{name} must not be null"))),
            Some(value) => Ok(Some((value, path))),
        }
    }

    /// A field that may be omitted or `null` (the SPEC's nullable fields).
    pub(crate) fn nullable(&mut self, name: &str) -> Option<(&'a Json, String)> {
        let path = self.field_path(name);
        match self.get(name) {
            None | Some(Json::Null) => None,
            Some(value) => Some((value, path)),
        }
    }

    /// Rejects every field that was not read.
    pub(crate) fn finish(self) -> Result<(), EvaluationError> {
        for ((key, _), read) in self.entries.iter().zip(&self.read) {
            if !read {
                return Err(invalid_field(join(self.path, key), format!("unknown field `{key}`")));
            }
        }
        Ok(())
    }
}

fn wrong_type_at(path: &str, expected: &str, found: &Json) -> EvaluationError {
    if path.is_empty() {
        invalid_field(path, format!("the request must be {expected}, not {}", found.type_name()))
    } else {
        wrong_type(path, expected, found)
    }
}

/// An integer literal; floats and booleans are refused (SPEC §1: `True` is not `1`).
pub(crate) fn int(value: &Json, path: &str) -> Result<i128, EvaluationError> {
    match value {
        Json::Int(number) => Ok(*number),
        other => Err(wrong_type(path, "an integer", other)),
    }
}

/// A non-negative integer that fits `u64`; anything else is `invalid_field`.
pub(crate) fn uint(value: &Json, path: &str) -> Result<u64, EvaluationError> {
    let number = int(value, path)?;
    u64::try_from(number).map_err(|_| out_of_range(path))
}

/// An integer that fits `i64`; anything else is `invalid_field`.
pub(crate) fn sint(value: &Json, path: &str) -> Result<i64, EvaluationError> {
    let number = int(value, path)?;
    i64::try_from(number).map_err(|_| out_of_range(path))
}

pub(crate) fn out_of_range(path: &str) -> EvaluationError {
    let name = path.rsplit('.').next().unwrap_or(path);
    invalid_field(path, format!("{name} is outside its bounds"))
}

/// A boolean; integers are refused.
pub(crate) fn boolean(value: &Json, path: &str) -> Result<bool, EvaluationError> {
    match value {
        Json::Bool(flag) => Ok(*flag),
        other => Err(wrong_type(path, "a boolean", other)),
    }
}

/// A string.
pub(crate) fn string(value: &Json, path: &str) -> Result<String, EvaluationError> {
    match value {
        Json::Str(text) => Ok(text.clone()),
        other => Err(wrong_type(path, "a string", other)),
    }
}

/// An array.
pub(crate) fn array<'a>(value: &'a Json, path: &str) -> Result<&'a [Json], EvaluationError> {
    match value {
        Json::Array(items) => Ok(items),
        other => Err(wrong_type(path, "an array", other)),
    }
}

/// A string from a closed vocabulary.
pub(crate) fn word<T>(value: &Json, path: &str, parse: fn(&str) -> Option<T>) -> Result<T, EvaluationError> {
    match value {
        Json::Str(text) => parse(text).ok_or_else(|| {
            let name = path.rsplit('.').next().unwrap_or(path);
            invalid_field(path, format!("{name} `{text}` is not in its vocabulary"))
        }),
        other => Err(wrong_type(path, "a string", other)),
    }
}
