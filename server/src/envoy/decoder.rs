//! What the actuator reads: the rule by which the gate finds, in a request body, the replica count
//! (and any other value a route takes from the body) that the actuator's own JSON decoder would
//! apply. Every route has one [`Decoder`]; the presets pick theirs, a route of one's own picks
//! one in the routes file (default [`Decoder::Strict`]). The gate judges the value read here, or
//! refuses the call with the reason; it never judges a value the actuator would read differently.
//!
//! | decoder | actuators | keys | a key twice (or two spellings of it) |
//! |---|---|---|---|
//! | `go` | Docker Engine, Nomad (Go's `encoding/json`) | any ASCII case; a key that matches only through Go's Unicode folding (`ſ` for `s`, `K` for `k`, `ı` for `i`: which of them match has changed between Go releases) is refused | refused (Go keeps the last, and merges objects) |
//! | `kubernetes` | the Kubernetes API server (`sigs.k8s.io/json`, case-sensitive; merge and strategic merge patches as maps) | exact; other spellings are unknown fields the API server drops, and are ignored; a `$` key (a strategic-merge-patch directive) on the path is refused; a body whose media type is not JSON is refused | refused (the API server keeps the last, or refuses with `fieldValidation=Strict`) |
//! | `strict` | any (routes of one's own) | exact; any other spelling that some decoder could fold onto the key (another ASCII case, any key that is not ASCII) and any `$` key on the path are refused | refused |
//!
//! For every decoder: the body is one JSON document (nothing after it), UTF-8, at most 128 deep,
//! without an exact duplicate key anywhere (`strict.rs`); a count is a JSON integer written with
//! digits only (no sign, fraction or exponent: Go refuses `5.0`, `5e0` and `-0` into an unsigned
//! field, or reads `-0` as 0 into a signed one), 0 to the core's bound (10 000). `null` is no count
//! (Docker then applies 1, a Kubernetes merge patch 0): refused as missing.
//! `tests/envoy-decoders` holds these rules to the real decoders (`differential.rs`).

use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

use crate::strict::Unique;

/// The most replicas a count may ask for: the core's bound on every replica count.
pub const MAX_COUNT: u64 = scale_units_core::LIMITS.max_replicas;

/// How an actuator's API decodes a JSON body (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decoder {
    /// Go's `encoding/json` (`Decoder.Decode` into a struct): Docker Engine, Nomad.
    Go,
    /// The Kubernetes API server's JSON decoding of a `Scale` body or patch.
    Kubernetes,
    /// Any decoder: only the exact key, alone, with nothing some decoder could read instead.
    Strict,
}

impl fmt::Display for Decoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Go => "go",
            Self::Kubernetes => "kubernetes",
            Self::Strict => "strict",
        })
    }
}

/// A value that cannot be read from a body: a stable code and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyError {
    /// `body_not_json`, `count_missing`, `count_not_integer`, `count_out_of_range`,
    /// `count_ambiguous`, or for a unit's name `invalid_unit`.
    pub code: &'static str,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for BodyError {}

/// What a pointer leads to: a replica count, or a string (a unit's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Count,
    Text,
}

impl Kind {
    fn missing(self) -> &'static str {
        match self {
            Self::Count => "count_missing",
            Self::Text => "invalid_unit",
        }
    }

    fn ambiguous(self) -> &'static str {
        match self {
            Self::Count => "count_ambiguous",
            Self::Text => "invalid_unit",
        }
    }
}

/// A value read at the end of a pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Leaf {
    Count(u64),
    Text(String),
}

/// The outcome of walking one value on the pointer's path.
#[derive(Debug)]
enum Found {
    Value(Leaf),
    /// Nothing there (the reason).
    Missing(String),
    /// Something there the gate must not judge.
    Refused(BodyError),
}

/// How a key relates to the pointer's segment, under a decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Match {
    /// The decoder reads this key as the segment's.
    Reads(Fold),
    /// A key on the path the gate refuses (a directive, a spelling some decoder could read).
    Refused(Refusal),
    /// Another field.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fold {
    Exact,
    /// Another ASCII case: every Go release matches it.
    Ascii,
    /// Only through a non-ASCII rune some Go release folds onto an ASCII letter.
    Unicode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Directive,
    Spelling,
}

/// Whether `key` names `name` (ASCII) for Go's `encoding/json`, and how. Go matches a JSON key to a
/// field regardless of case; its folding maps U+017F (ſ) to `s` and U+212A (Kelvin sign) to `k`
/// (simple case folding, Go 1.20 and 1.22 on), and Go 1.21 mapped runes to their upper case, which
/// also sends U+0131 (dotless ı) to `I`. No other rune folds onto an ASCII letter in any release
/// (`tests/envoy-decoders` lists them from the Go toolchain, `differential.rs` compares).
fn go_fold(key: &str, name: &str) -> Option<Fold> {
    let mut keys = key.chars();
    let mut unicode = false;
    for wanted in name.chars() {
        let got = keys.next()?;
        if got == wanted || (got.is_ascii() && got.eq_ignore_ascii_case(&wanted)) {
            continue;
        }
        let onto = match got {
            '\u{17F}' => 's',
            '\u{212A}' => 'k',
            '\u{131}' => 'i',
            _ => return None,
        };
        if wanted.to_ascii_lowercase() != onto {
            return None;
        }
        unicode = true;
    }
    if keys.next().is_some() {
        return None;
    }
    Some(if unicode {
        Fold::Unicode
    } else if key == name {
        Fold::Exact
    } else {
        Fold::Ascii
    })
}

/// The runes [`go_fold`] treats as folding onto an ASCII letter (for the differential test).
pub const GO_UNICODE_FOLDS: [(char, char); 3] = [('\u{131}', 'i'), ('\u{17F}', 's'), ('\u{212A}', 'k')];

impl Decoder {
    fn classify(self, key: &str, segment: &str) -> Match {
        match self {
            Self::Go => go_fold(key, segment).map_or(Match::Other, Match::Reads),
            Self::Kubernetes if key == segment => Match::Reads(Fold::Exact),
            Self::Kubernetes if key.starts_with('$') => Match::Refused(Refusal::Directive),
            Self::Kubernetes => Match::Other,
            Self::Strict if key == segment => Match::Reads(Fold::Exact),
            Self::Strict if key.starts_with('$') => Match::Refused(Refusal::Directive),
            Self::Strict if !key.is_ascii() || key.eq_ignore_ascii_case(segment) => Match::Refused(Refusal::Spelling),
            Self::Strict => Match::Other,
        }
    }

    /// Whether a pointer can be read under this decoder: the `go` decoder folds ASCII names only.
    ///
    /// # Errors
    /// The reason, when a segment of `pointer` is not ASCII under the `go` decoder.
    pub fn check_pointer(self, pointer: &str) -> Result<(), String> {
        if self == Self::Go && !pointer.is_ascii() {
            return Err("the go decoder matches ASCII keys only: Go folds other letters by rules the gate does not model (use strict)".to_owned());
        }
        Ok(())
    }

    /// Whether a body of this media type (the `content-type` header) is read: the Kubernetes API
    /// server also takes YAML, protobuf, JSON patches and apply patches, which this gate does not
    /// read as it does.
    ///
    /// # Errors
    /// `body_not_json`, naming the media type.
    pub fn check_media_type(self, content_type: Option<&str>) -> Result<(), BodyError> {
        if self != Self::Kubernetes {
            return Ok(());
        }
        const READ: [&str; 3] =
            ["application/json", "application/merge-patch+json", "application/strategic-merge-patch+json"];
        let media =
            content_type.and_then(|value| value.split(';').next()).map(|media| media.trim().to_ascii_lowercase());
        match media {
            Some(media) if READ.contains(&media.as_str()) => Ok(()),
            other => Err(BodyError {
                code: "body_not_json",
                message: format!(
                    "the body's media type is {}: the gate reads a Kubernetes body of type {} only",
                    other.map_or_else(|| "not given".to_owned(), |media| format!("{media:?}")),
                    READ.join(", ")
                ),
            }),
        }
    }

    /// The replica count at `pointer` (RFC 6901) as this decoder would apply it.
    ///
    /// # Errors
    /// [`BodyError`]: `body_not_json`, `count_missing` (also `null`), `count_not_integer` (a
    /// string, a sign, a fraction, an exponent), `count_out_of_range` (past [`MAX_COUNT`]),
    /// `count_ambiguous` (the decoder could read another key, or the same key twice).
    pub fn count(self, body: &[u8], pointer: &str) -> Result<u64, BodyError> {
        match self.read(body, pointer, Kind::Count)? {
            Leaf::Count(count) => Ok(count),
            Leaf::Text(_) => Err(BodyError { code: "count_not_integer", message: "not a count".to_owned() }),
        }
    }

    /// The string at `pointer` as this decoder would read it (a unit's name from the body).
    ///
    /// # Errors
    /// [`BodyError`]: `body_not_json`, or `invalid_unit` (missing, `null`, not a string, ambiguous).
    pub fn text(self, body: &[u8], pointer: &str) -> Result<String, BodyError> {
        match self.read(body, pointer, Kind::Text)? {
            Leaf::Text(text) => Ok(text),
            Leaf::Count(_) => Err(BodyError { code: "invalid_unit", message: "not a string".to_owned() }),
        }
    }

    fn read(self, body: &[u8], pointer: &str, kind: Kind) -> Result<Leaf, BodyError> {
        let path = segments(pointer);
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let walk = Walk { decoder: self, path: &path, at: 0, kind };
        let found = walk
            .deserialize(&mut deserializer)
            .and_then(|found| deserializer.end().map(|()| found))
            .map_err(|error| BodyError { code: "body_not_json", message: format!("the body is not JSON: {error}") })?;
        match found {
            Found::Value(leaf) => Ok(leaf),
            Found::Missing(why) => Err(BodyError {
                code: kind.missing(),
                message: match kind {
                    Kind::Count => format!("no replica count at {pointer}: {why}"),
                    Kind::Text => format!("no unit name at {pointer}: {why}"),
                },
            }),
            Found::Refused(error) => Err(error),
        }
    }
}

/// A JSON pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
fn segments(pointer: &str) -> Vec<String> {
    pointer.split('/').skip(1).map(|token| token.replace("~1", "/").replace("~0", "~")).collect()
}

/// `/a/b` for the first `at` segments (the object being read), `the body` at the top.
fn place(path: &[String], at: usize) -> String {
    if at == 0 {
        return "the body".to_owned();
    }
    let mut text = String::new();
    for segment in path.iter().take(at) {
        text.push('/');
        text.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    }
    text
}

/// One value on the pointer's path: an object or array on the way, or the value at its end.
#[derive(Clone, Copy)]
struct Walk<'a> {
    decoder: Decoder,
    path: &'a [String],
    at: usize,
    kind: Kind,
}

impl Walk<'_> {
    fn leaf(&self) -> bool {
        self.at >= self.path.len()
    }

    fn here(&self) -> String {
        place(self.path, self.at)
    }

    /// A value that is not what the pointer's end (or a step on the way) must be.
    fn not(&self, what: &str) -> Found {
        if !self.leaf() {
            return Found::Missing(format!("{} is {what}, not an object", self.here()));
        }
        match self.kind {
            Kind::Count => Found::Refused(BodyError {
                code: "count_not_integer",
                message: format!(
                    "the replica count at {} is {what}, not an integer of digits only (0 to {MAX_COUNT})",
                    self.here()
                ),
            }),
            Kind::Text => Found::Refused(BodyError {
                code: "invalid_unit",
                message: format!("the unit's name at {} is {what}, not a string", self.here()),
            }),
        }
    }

    fn number(&self, written: String, out_of_range: bool) -> Found {
        if self.leaf() && self.kind == Kind::Count && out_of_range {
            return Found::Refused(BodyError {
                code: "count_out_of_range",
                message: format!("the replica count at {} is {written}: a count is 0 to {MAX_COUNT}", self.here()),
            });
        }
        self.not(&written)
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Found;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Found, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Found;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Found, E> {
        Ok(self.not(if value { "true" } else { "false" }))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Found, E> {
        if self.leaf() && self.kind == Kind::Count && value <= MAX_COUNT {
            return Ok(Found::Value(Leaf::Count(value)));
        }
        Ok(self.number(value.to_string(), value > MAX_COUNT))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Found, E> {
        Ok(self.number(value.to_string(), false))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Found, E> {
        // serde_json reads `-0`, a fraction, an exponent, and an integer past u64 as a float.
        #[expect(clippy::cast_precision_loss, reason = "a bound of 10 000 is exact in f64")]
        let past = value.fract() == 0.0 && value > MAX_COUNT as f64;
        Ok(self.number(format!("{value:?}"), past))
    }

    fn visit_str<E>(self, value: &str) -> Result<Found, E> {
        if self.leaf() && self.kind == Kind::Text {
            return Ok(Found::Value(Leaf::Text(value.to_owned())));
        }
        Ok(self.not(&format!("the string {value:?}")))
    }

    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(Found::Missing(format!("{} is null", self.here())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        let index = self.path.get(self.at).filter(|_| !self.leaf()).and_then(|segment| array_index(segment));
        let mut found = None;
        let mut position = 0usize;
        loop {
            if Some(position) == index {
                match seq.next_element_seed(Walk { at: self.at + 1, ..self })? {
                    Some(inner) => found = Some(inner),
                    None => break,
                }
            } else if seq.next_element_seed(Unique)?.is_none() {
                break;
            }
            position += 1;
        }
        Ok(match found {
            Some(found) => found,
            None if self.leaf() => self.not("an array"),
            None => Found::Missing(format!(
                "{} has no element {}",
                self.here(),
                self.path.get(self.at).map_or("", String::as_str)
            )),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let Some(segment) = self.path.get(self.at).filter(|_| !self.leaf()) else {
            Unique.visit_map(map)?;
            return Ok(self.not("an object"));
        };
        let mut seen: HashSet<String> = HashSet::new();
        let mut read: Vec<(String, Fold, Found)> = Vec::new();
        let mut refused: Option<(String, Refusal)> = None;
        while let Some(key) = map.next_key::<String>()? {
            let class = self.decoder.classify(&key, segment);
            if seen.contains(&key) && class == Match::Other {
                return Err(A::Error::custom(format_args!("duplicate key `{key}`")));
            }
            match class {
                Match::Reads(fold) => {
                    let found = map.next_value_seed(Walk { at: self.at + 1, ..self })?;
                    read.push((key.clone(), fold, found));
                }
                Match::Refused(why) => {
                    map.next_value_seed(Unique)?;
                    refused.get_or_insert((key.clone(), why));
                }
                Match::Other => map.next_value_seed(Unique)?,
            }
            seen.insert(key);
        }
        let at = self.here();
        let ambiguous = |message: String| Found::Refused(BodyError { code: self.kind.ambiguous(), message });
        if let Some((key, why)) = refused {
            return Ok(ambiguous(match why {
                Refusal::Directive => format!(
                    "{at} has the key {key:?}: a strategic-merge-patch directive can change what the patch sets, so the count cannot be judged"
                ),
                Refusal::Spelling => format!(
                    "{at} has the key {key:?} beside where {segment:?} is read: some JSON decoders read it as {segment:?} (case or Unicode folding); the gate reads the exact key only, alone (decoder strict)"
                ),
            }));
        }
        if read.len() > 1 {
            let keys: Vec<String> = read.iter().map(|(key, _, _)| format!("{key:?}")).collect();
            let rule = match self.decoder {
                Decoder::Go => "Go's decoder (Docker, Nomad) matches keys regardless of case and applies the last",
                Decoder::Kubernetes => {
                    "the Kubernetes API server applies the last (or refuses with fieldValidation=Strict)"
                }
                Decoder::Strict => "decoders differ on which one they apply",
            };
            return Ok(ambiguous(format!("{at} names {segment:?} {} times ({}): {rule}", keys.len(), keys.join(", "))));
        }
        Ok(match read.pop() {
            None => Found::Missing(format!("{at} has no {segment:?}")),
            Some((key, Fold::Unicode, _)) => ambiguous(format!(
                "{at} names {segment:?} as {key:?}: only Go's Unicode case folding matches it, and which Go releases do differs, so what the actuator reads is not known"
            )),
            Some((_, _, found)) => found,
        })
    }
}

/// A reference token that is an array index (digits, no leading zero).
fn array_index(token: &str) -> Option<usize> {
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{Decoder, MAX_COUNT, go_fold};

    const DOCKER: &str = "/Mode/Replicated/Replicas";

    fn code(result: Result<u64, super::BodyError>) -> String {
        match result {
            Ok(count) => format!("ok {count}"),
            Err(error) => error.code.to_owned(),
        }
    }

    #[test]
    fn go_reads_any_ascii_case_and_refuses_two_spellings_of_a_key() {
        let go = Decoder::Go;
        assert_eq!(go.count(br#"{"Mode":{"Replicated":{"Replicas":5}}}"#, DOCKER), Ok(5));
        assert_eq!(go.count(br#"{"mode":{"REPLICATED":{"replicas":7}}}"#, DOCKER), Ok(7));
        for body in [
            r#"{"Mode":{"Replicated":{"Replicas":5,"replicas":12}}}"#,
            r#"{"Mode":{"Replicated":{"Replicas":5}},"mode":{"Replicated":{"Replicas":12}}}"#,
            r#"{"Mode":{"Replicated":{"Replicas":5}},"mode":{}}"#,
            r#"{"Mode":{"Replicated":{"Replicas":5,"Replica\u017f":12}}}"#,
            r#"{"Mode":{"Replicated":{"Replicas":5},"replicated":null}}"#,
        ] {
            assert_eq!(code(go.count(body.as_bytes(), DOCKER)), "count_ambiguous", "{body}");
        }
        // Alone, a key only Go's Unicode folding matches: which releases match it differs.
        assert_eq!(
            code(go.count("{\"Count\":1,\"Mode\":{\"Replicated\":{\"Replica\u{17F}\":3}}}".as_bytes(), DOCKER)),
            "count_ambiguous"
        );
        assert_eq!(code(go.count(br#"{"Count":5,"count":12}"#, "/Count")), "count_ambiguous");
    }

    #[test]
    fn kubernetes_reads_the_exact_key_and_refuses_directives_and_duplicates() {
        let kube = Decoder::Kubernetes;
        let pointer = "/spec/replicas";
        assert_eq!(kube.count(br#"{"spec":{"replicas":5,"Replicas":12},"Spec":{"replicas":12}}"#, pointer), Ok(5));
        assert_eq!(code(kube.count(br#"{"spec":{"Replicas":5}}"#, pointer)), "count_missing");
        assert_eq!(code(kube.count(br#"{"spec":{"replicas":5,"$patch":"delete"}}"#, pointer)), "count_ambiguous");
        assert_eq!(code(kube.count(br#"{"$patch":"replace","spec":{"replicas":5}}"#, pointer)), "count_ambiguous");
        assert_eq!(code(kube.count(br#"{"spec":{"replicas":5,"replicas":12}}"#, pointer)), "count_ambiguous");
        assert!(kube.check_media_type(Some("application/merge-patch+json; charset=utf-8")).is_ok());
        for refused in
            [None, Some("application/yaml"), Some("application/json-patch+json"), Some("application/apply-patch+yaml")]
        {
            assert_eq!(kube.check_media_type(refused).map_err(|e| e.code), Err("body_not_json"), "{refused:?}");
        }
        assert!(Decoder::Go.check_media_type(None).is_ok());
    }

    #[test]
    fn strict_reads_the_exact_key_alone() {
        let strict = Decoder::Strict;
        assert_eq!(strict.count(br#"{"size":4,"name":"x"}"#, "/size"), Ok(4));
        for body in [
            r#"{"size":4,"Size":4}"#,
            "{\"size\":4,\"\u{17F}ize\":4}",
            r#"{"size":4,"$patch":"x"}"#,
            "{\"size\":4,\"gr\u{f6}\u{df}e\":1}",
        ] {
            assert_eq!(code(strict.count(body.as_bytes(), "/size")), "count_ambiguous", "{body}");
        }
        assert_eq!(code(strict.count(br#"{"Size":4}"#, "/size")), "count_ambiguous");
    }

    #[test]
    fn a_count_is_digits_only_within_the_bound() {
        for decoder in [Decoder::Go, Decoder::Kubernetes, Decoder::Strict] {
            let read = |count: &str| code(decoder.count(format!("{{\"n\":{count}}}").as_bytes(), "/n"));
            assert_eq!(read("0"), "ok 0");
            assert_eq!(read(&MAX_COUNT.to_string()), format!("ok {MAX_COUNT}"));
            for past in ["10001", "18446744073709551615", "18446744073709551616", "1e20"] {
                assert_eq!(read(past), "count_out_of_range", "{past}");
            }
            for bad in ["5.0", "5e0", "-0", "-1", "0.5e1", "\"5\"", "true", "[5]", "{}"] {
                assert_eq!(read(bad), "count_not_integer", "{bad}");
            }
            assert_eq!(read("null"), "count_missing");
            assert_eq!(code(decoder.count(b"{\"n\":5} {}", "/n")), "body_not_json");
            assert_eq!(code(decoder.count(b"{\"n\":05}", "/n")), "body_not_json");
            assert_eq!(code(decoder.count(b"{\"n\":1e400}", "/n")), "body_not_json");
            assert_eq!(code(decoder.count(b"{\"n\":5,\"x\":{\"a\":1,\"a\":2}}", "/n")), "body_not_json");
            assert_eq!(code(decoder.count(b"{\"n\\xff\":5}", "/n")), "body_not_json");
            assert_eq!(
                code(decoder.count(br#"{"\u006e":5}"#, "/n")),
                "ok 5",
                "escapes are read as the decoders read them"
            );
            assert_eq!(code(decoder.count(br#"{"n":{"m":5}}"#, "/n/m")), "ok 5");
            assert_eq!(code(decoder.count(br#"{"n":[1,{"m":5}]}"#, "/n/1/m")), "ok 5");
            assert_eq!(code(decoder.count(br#"{"n":[1]}"#, "/n/1/m")), "count_missing");
            assert_eq!(code(decoder.count(br#"{"n":3}"#, "/n/m")), "count_missing");
        }
    }

    #[test]
    fn the_unit_name_is_read_by_the_same_rule() {
        assert_eq!(Decoder::Go.text(br#"{"Name":"web","Mode":{}}"#, "/Name"), Ok("web".to_owned()));
        assert_eq!(Decoder::Go.text(br#"{"name":"web"}"#, "/Name"), Ok("web".to_owned()));
        for body in [r#"{"Name":"web","name":"db"}"#, r#"{"Name":null}"#, r#"{"Name":5}"#, r#"{}"#] {
            assert_eq!(Decoder::Go.text(body.as_bytes(), "/Name").map_err(|e| e.code), Err("invalid_unit"), "{body}");
        }
    }

    #[test]
    fn go_folds_ascii_case_and_three_runes() {
        assert_eq!(go_fold("Replicas", "Replicas"), Some(super::Fold::Exact));
        assert_eq!(go_fold("rEPLICAS", "Replicas"), Some(super::Fold::Ascii));
        assert_eq!(go_fold("Replica\u{17F}", "Replicas"), Some(super::Fold::Unicode));
        assert_eq!(go_fold("Repl\u{131}cas", "Replicas"), Some(super::Fold::Unicode));
        assert_eq!(go_fold("\u{212A}ind", "kind"), Some(super::Fold::Unicode));
        assert_eq!(go_fold("Replica", "Replicas"), None);
        assert_eq!(go_fold("Replicas_", "Replicas"), None);
        assert_eq!(go_fold("Repl\u{130}cas", "Replicas"), None);
        assert_eq!(go_fold("Re-licas", "Replicas"), None);
    }
}
