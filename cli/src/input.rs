//! Reading a request or contract document: JSON is passed through as written (the component
//! parses it, with every wire rule); YAML is converted to JSON text first.

use std::io::Read;
use std::path::Path;

use scale_units_host::{ErrorCode, EvaluationError};

use crate::Failure;

/// Reads `source` (a file, or `-` for stdin) as JSON text for the evaluator.
///
/// A `.yaml`/`.yml` file, or any document that does not start with `{` or `[`, is read as YAML
/// and re-written as JSON; YAML that does not parse is an `invalid_json` error, like JSON that
/// does not parse.
pub(crate) fn read_json(source: &str) -> Result<Result<String, EvaluationError>, Failure> {
    let bytes = if source == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|error| Failure::Host(format!("cannot read stdin: {error}")))?;
        bytes
    } else {
        std::fs::read(source).map_err(|error| Failure::Host(format!("cannot read {source}: {error}")))?
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(Err(EvaluationError::new(ErrorCode::InvalidJson, "the document is not valid UTF-8", "")));
    };
    let extension = Path::new(source).extension().and_then(|extension| extension.to_str());
    let yaml = match extension {
        Some("yaml" | "yml") => true,
        Some("json") => false,
        // A byte-order mark goes to the evaluator, which refuses it as `invalid_json`.
        _ => !(text.starts_with('\u{feff}') || text.trim_start().starts_with(['{', '['])),
    };
    if !yaml {
        return Ok(Ok(text));
    }
    Ok(yaml_to_json(&text))
}

fn yaml_to_json(text: &str) -> Result<String, EvaluationError> {
    // YAML 1.2 booleans only (`yes`/`on` stay strings, and the evaluator refuses them where a
    // boolean is due); a duplicate key is an error, as in JSON.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
    };
    let value: serde_json::Value = serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        EvaluationError::new(ErrorCode::InvalidJson, format!("the document is not valid YAML: {error}"), "")
    })?;
    serde_json::to_string(&value).map_err(|error| {
        EvaluationError::new(ErrorCode::InvalidJson, format!("the YAML document has no JSON form: {error}"), "")
    })
}

#[cfg(test)]
mod tests {
    use super::yaml_to_json;

    #[test]
    fn yaml_becomes_the_json_the_evaluator_judges() {
        let json = yaml_to_json(
            "a: yes\nb: on\nc: 1.0\nd: 7\ne: 2026-08-19T12:00:00Z\nf: ~\ng: 18446744073709551615\nh: true\ni: '1'\n",
        )
        .expect("valid YAML");
        // YAML 1.1 booleans stay strings, floats stay floats (the evaluator refuses both where an
        // integer or a boolean is due), times stay strings, and big integers stay exact.
        assert_eq!(
            json,
            r#"{"a":"yes","b":"on","c":1.0,"d":7,"e":"2026-08-19T12:00:00Z","f":null,"g":18446744073709551615,"h":true,"i":"1"}"#
        );
        let duplicate = yaml_to_json("a: 1\na: 2\n").expect_err("a duplicate key");
        assert_eq!(duplicate.code(), scale_units_host::ErrorCode::InvalidJson);
    }
}
