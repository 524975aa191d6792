//! The service's check for duplicate keys, as strict as the core's reader: every JSON document
//! it accepts (a push, a contract or sources file, a pin's body, an admission review) is refused
//! when any object in it, at any depth, names a key twice, where serde_json would keep the last.
//! It walks the text without building a tree; serde_json's depth limit (128) applies.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// `Ok` when `text` is one JSON document without a duplicate key.
///
/// # Errors
/// serde_json's error: the text is not JSON, or names a key twice in one object (`duplicate key
/// `…``), with its line and column.
pub(crate) fn check(text: &[u8]) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    Unique.deserialize(&mut deserializer)?;
    deserializer.end()
}

/// Visits one value, refusing an object's repeated key (also the Envoy gate's reader, for what is
/// off the count's path).
#[derive(Clone, Copy)]
pub(crate) struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(A::Error::custom(format_args!("duplicate key `{key}`")));
            }
            map.next_value_seed(self)?;
            seen.insert(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn a_key_twice_at_any_depth_is_refused() {
        assert!(check(br#"{"a": 1, "b": [{"c": 1, "d": {"e": null}}], "c": 2}"#).is_ok());
        for twice in [r#"{"a": 1, "a": 2}"#, r#"{"x": [{"c": 1, "c": 1}]}"#, r#"{"x": {"y": {"z": 1, "z": 2}}}"#] {
            let error = check(twice.as_bytes()).err().map(|error| error.to_string()).unwrap_or_default();
            assert!(error.contains("duplicate key"), "{twice}: {error}");
        }
        assert!(check(b"{} {}").is_err(), "one document");
    }
}
