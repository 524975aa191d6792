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
    let value: serde_json::Value = serde_saphyr::from_str(text).map_err(|error| {
        EvaluationError::new(ErrorCode::InvalidJson, format!("the document is not valid YAML: {error}"), "")
    })?;
    serde_json::to_string(&value).map_err(|error| {
        EvaluationError::new(ErrorCode::InvalidJson, format!("the YAML document has no JSON form: {error}"), "")
    })
}
