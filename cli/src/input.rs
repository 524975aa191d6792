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
    let Ok(text) = String::from_utf8(read_bytes(source)?) else {
        return Ok(Err(EvaluationError::new(
            ErrorCode::InvalidJson,
            format!("{} is not valid UTF-8: save it as UTF-8 text", name(source)),
            "",
        )));
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
    Ok(yaml_to_json(&text, &name(source)))
}

/// Reads `source` (a file, or `-` for stdin) as UTF-8 text: a `what` such as a CSV trace.
pub(crate) fn read_text(source: &str, what: &str) -> Result<Result<String, EvaluationError>, Failure> {
    match String::from_utf8(read_bytes(source)?) {
        Ok(text) => Ok(Ok(text)),
        Err(_) => Ok(Err(EvaluationError::new(
            ErrorCode::InvalidField,
            format!("the {what} ({}) is not valid UTF-8: save it as UTF-8 text", name(source)),
            what,
        ))),
    }
}

/// How a message names `source`.
fn name(source: &str) -> String {
    if source == "-" { "stdin".to_owned() } else { source.to_owned() }
}

fn read_bytes(source: &str) -> Result<Vec<u8>, Failure> {
    if source == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|error| Failure::Host(format!("cannot read stdin: {error}")))?;
        Ok(bytes)
    } else {
        std::fs::read(source).map_err(|error| Failure::Host(format!("cannot read {source}: {error}")))
    }
}

/// YAML text as JSON text; `name` says which document in an error.
fn yaml_to_json(text: &str, name: &str) -> Result<String, EvaluationError> {
    // YAML 1.2 booleans only (`yes`/`on` stay strings, and the evaluator refuses them where a
    // boolean is due); a duplicate key is an error, as in JSON.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        with_snippet: false,
    };
    let value: serde_json::Value = serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        EvaluationError::new(
            ErrorCode::InvalidJson,
            format!("{name} is not valid YAML: {}", yaml_fault(text, &error)),
            "",
        )
    })?;
    serde_json::to_string(&value)
        .map_err(|error| EvaluationError::new(ErrorCode::InvalidJson, format!("{name} has no JSON form: {error}"), ""))
}

/// Where a YAML document is wrong and what to do: `line L, column C: …`.
///
/// A tab in the indentation is reported where the tab is: the parser names the start of the
/// scalar it was reading (often the line before) when the tab follows a line break.
fn yaml_fault(text: &str, error: &serde_saphyr::Error) -> String {
    use serde_saphyr::MessageFormatter as _;
    let message = serde_saphyr::UserMessageFormatter.format_message(error);
    let location = error.location().filter(|location| location.line() > 0);
    if message.contains("tab") {
        let from = location.map_or(1, |location| location.line());
        let tab = text.lines().zip(1u64..).skip_while(|(_, number)| *number < from).find_map(|(line, number)| {
            let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
            line.get(..indent)?.find('\t').map(|column| (number, column + 1))
        });
        if let Some((line, column)) = tab {
            return format!(
                "line {line}, column {column}: a tab in the indentation; YAML indents with spaces only: \
                 replace the tab with spaces"
            );
        }
    }
    let what_to_do = match error {
        serde_saphyr::Error::DuplicateMappingKey { .. } => ": keep one of them",
        _ => "",
    };
    match location {
        Some(location) => format!("line {}, column {}: {message}{what_to_do}", location.line(), location.column()),
        None => format!("{message}{what_to_do}"),
    }
}

#[cfg(test)]
mod tests {
    use super::yaml_to_json;

    #[test]
    fn yaml_becomes_the_json_the_evaluator_judges() {
        let json = yaml_to_json(
            "a: yes\nb: on\nc: 1.0\nd: 7\ne: 2026-08-19T12:00:00Z\nf: ~\ng: 18446744073709551615\nh: true\ni: '1'\n",
            "x.yaml",
        )
        .expect("valid YAML");
        // YAML 1.1 booleans stay strings, floats stay floats (the evaluator refuses both where an
        // integer or a boolean is due), times stay strings, and big integers stay exact.
        assert_eq!(
            json,
            r#"{"a":"yes","b":"on","c":1.0,"d":7,"e":"2026-08-19T12:00:00Z","f":null,"g":18446744073709551615,"h":true,"i":"1"}"#
        );
        let duplicate = yaml_to_json("a: 1\na: 2\n", "x.yaml").expect_err("a duplicate key");
        assert_eq!(duplicate.code(), scale_units_host::ErrorCode::InvalidJson);
        assert_eq!(
            duplicate.message(),
            "x.yaml is not valid YAML: line 2, column 1: duplicate mapping key `a` is not allowed here: keep one of them"
        );
    }

    #[test]
    fn a_tab_in_the_indentation_is_reported_where_it_is() {
        // The parser names the scalar before the tab (line 1, line 2, line 3 below); the message
        // names the tab's own line and column.
        let cases = [
            ("a: 1\n\tb: 2\n", 2, 1),
            ("a: 1\nc:\n  d: 1\n\te: 2\n", 4, 1),
            ("a: 1\nb:\n  - x\n  \t- y\n", 4, 3),
            ("contract:\n  policy:\n\ttarget: 5\n", 3, 1),
        ];
        for (text, line, column) in cases {
            let error = yaml_to_json(text, "c.yaml").expect_err("a tab in the indentation");
            assert_eq!(
                error.message(),
                format!(
                    "c.yaml is not valid YAML: line {line}, column {column}: a tab in the indentation; YAML indents \
                     with spaces only: replace the tab with spaces"
                ),
                "{text:?}"
            );
        }
        // A tab inside a flow collection, or between a key and its value, is YAML.
        assert!(yaml_to_json("a: [1,\n\t2]\nb:\t3\n", "c.yaml").is_ok());
    }
}
