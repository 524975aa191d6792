//! The typed error every entry point returns for a request it cannot decide on (SPEC §9).

use std::fmt;

use crate::canonical::write_json_string;

crate::vocab::wire_enum! {
    /// The stable code of an [`EvaluationError`] (SPEC §9); one spelling in every language.
    ErrorCode {
        /// The bytes are not one JSON document (bad UTF-8, a byte-order mark, a duplicate key, …).
        InvalidJson = "invalid_json",
        /// A field is missing, unknown, of the wrong type, or outside its bounds.
        InvalidField = "invalid_field",
        /// A reference does not match the bounded opaque reference pattern.
        InvalidRef = "invalid_ref",
        /// A reference looks like it carries a credential or a raw payload.
        CredentialInRef = "credential_in_ref",
        /// A digest is not `sha256:` and 64 lower-case hex digits.
        InvalidDigest = "invalid_digest",
        /// A time is malformed, lacks an offset, or lies outside 2000..=2300.
        InvalidTime = "invalid_time",
        /// The scale policy is inconsistent (SPEC §4.1).
        InvalidPolicy = "invalid_policy",
        /// The contract breaks a rule of its parts or its surface profile (SPEC §4.2, §4.3).
        InvalidContract = "invalid_contract",
        /// An observation breaks its own checks (SPEC §5).
        InvalidObservation = "invalid_observation",
        /// A supplied `contract_id` or `contract_digest` differs from the computed one.
        IdentityMismatch = "identity_mismatch",
        /// Two observations of one capacity axis or one quota.
        DuplicateObservation = "duplicate_observation",
        /// `current_replicas` is outside 0..=10000 or below the contract floor.
        ReplicasOutOfBounds = "replicas_out_of_bounds",
    }
}

/// Why a request could not be evaluated: a stable [`ErrorCode`], the reference's message, and
/// the JSON path of the offending field (`""` for the request as a whole).
///
/// An error is a value, never a crash: every entry point returns it for bad input of any kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvaluationError {
    code: ErrorCode,
    message: String,
    path: String,
}

impl EvaluationError {
    /// Builds an error from its parts.
    pub fn new(code: ErrorCode, message: impl Into<String>, path: impl Into<String>) -> Self {
        Self { code, message: message.into(), path: path.into() }
    }

    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human-readable message; for the SPEC's named checks it contains the reference's text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON path of the offending field, such as `contract.policy.min_replicas` or
    /// `capacities[1]`; `""` for the request as a whole.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// [`Self::to_json`] as compact text, byte for byte serde_json's, written directly (the
    /// component carries no generic serializer).
    pub(crate) fn to_json_text(&self) -> String {
        let mut out = String::with_capacity(40 + self.message.len() + self.path.len());
        out.push_str("{\"code\":");
        write_json_string(self.code.as_str(), false, &mut out);
        out.push_str(",\"message\":");
        write_json_string(&self.message, false, &mut out);
        out.push_str(",\"path\":");
        write_json_string(&self.path, false, &mut out);
        out.push('}');
        out
    }

    /// The error as the wire object `{"code", "message", "path"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.code.as_str(),
            "message": self.message,
            "path": self.path,
        })
    }
}

impl fmt::Display for EvaluationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.code, self.message)
        } else {
            write!(f, "{} at {}: {}", self.code, self.path, self.message)
        }
    }
}

impl std::error::Error for EvaluationError {}

#[cfg(test)]
mod tests {
    use super::{ErrorCode, EvaluationError};

    #[test]
    fn the_json_text_is_serde_jsons() {
        let texts =
            ["", "plain", "quote \" and backslash \\", "line\nbreak\ttab\u{1}\u{1f}", "é 😀 \u{7f}", "</script>"];
        for code in [ErrorCode::InvalidJson, ErrorCode::InvalidField, ErrorCode::ReplicasOutOfBounds] {
            for message in texts {
                for path in texts {
                    let error = EvaluationError::new(code, message, path);
                    assert_eq!(error.to_json_text(), error.to_json().to_string(), "{message:?} {path:?}");
                }
            }
        }
    }
}
