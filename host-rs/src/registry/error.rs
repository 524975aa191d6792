//! Why the registry refused a candidate or an operation.

use std::fmt;

use crate::HostError;

/// Why a [`PolicyRegistry`](crate::PolicyRegistry) operation failed. A refused candidate is never
/// staged, so it can never be activated, shadowed or pinned; the active policy is untouched.
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryError {
    /// The component was refused by the host: wrong digest, corrupt, an import, another world,
    /// an unsupported schema or WIT version (see [`HostError`]).
    Host(HostError),
    /// A trust key is configured and the candidate came without a signature.
    SignatureMissing {
        /// The candidate's digest.
        digest: String,
    },
    /// The signature is malformed or does not verify against the trust key.
    SignatureInvalid {
        /// The candidate's digest.
        digest: String,
        /// What was wrong.
        reason: String,
    },
    /// The candidate failed the conformance gate.
    ConformanceFailed {
        /// The candidate's digest.
        digest: String,
        /// Vectors that passed.
        passed: usize,
        /// Vectors that failed.
        failed: usize,
        /// The first few failures, `<id>: <why>`.
        failures: Vec<String>,
    },
    /// The gate has no vectors to run: an empty suite never passes a candidate.
    NoConformanceVectors,
    /// The conformance folder could not be read.
    ConformanceSuite {
        /// What went wrong.
        reason: String,
    },
    /// No staged policy has this digest.
    UnknownPolicy {
        /// The digest asked for.
        digest: String,
    },
    /// No policy is active (nothing activated yet), so nothing can be evaluated or rolled back to.
    NoActivePolicy,
    /// `rollback` with no earlier activation to return to.
    NothingToRollBack,
    /// The trust key is not 32 bytes of hex (an ed25519 public key).
    InvalidTrustKey(String),
    /// As many policies are staged as the registry keeps, and every one is in use (active, the
    /// rollback target, shadowed or pinned).
    StagedFull {
        /// [`RegistryBuilder::max_staged`](crate::registry::RegistryBuilder::max_staged).
        limit: usize,
    },
    /// The staged policy cannot be dropped: it is in use.
    PolicyInUse {
        /// Its digest.
        digest: String,
        /// How it is used: `active`, `the rollback target`, `shadowed` or `pinned`.
        why: &'static str,
    },
    /// As many units are pinned as the registry allows; unpin one first.
    PinsFull {
        /// [`RegistryBuilder::max_pins`](crate::registry::RegistryBuilder::max_pins).
        limit: usize,
    },
    /// A pin's `unit_ref` does not have a reference's form.
    InvalidUnitRef {
        /// Its length in bytes.
        length: usize,
    },
}

impl RegistryError {
    /// A stable, machine-readable code for the error (the service's `error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Host(HostError::DigestMismatch { .. } | HostError::InvalidExpectedDigest(_)) => "digest_mismatch",
            Self::Host(HostError::Imports { .. }) => "component_imports",
            Self::Host(HostError::WrongWorld { .. }) => "wrong_world",
            Self::Host(HostError::Incompatible { .. }) => "incompatible",
            Self::Host(HostError::InvalidComponent { .. }) => "invalid_component",
            Self::Host(HostError::OutOfFuel { .. } | HostError::MemoryLimit { .. } | HostError::Trap { .. }) => {
                "component_trap"
            }
            Self::Host(HostError::Unsupported { .. }) => "unsupported_by_component",
            Self::Host(_) => "host_error",
            Self::SignatureMissing { .. } => "signature_missing",
            Self::SignatureInvalid { .. } => "signature_invalid",
            Self::ConformanceFailed { .. } => "conformance_failed",
            Self::NoConformanceVectors | Self::ConformanceSuite { .. } => "conformance_unavailable",
            Self::UnknownPolicy { .. } => "unknown_policy",
            Self::NoActivePolicy => "no_active_policy",
            Self::NothingToRollBack => "nothing_to_roll_back",
            Self::InvalidTrustKey(_) => "invalid_trust_key",
            Self::StagedFull { .. } => "staged_full",
            Self::PolicyInUse { .. } => "policy_in_use",
            Self::PinsFull { .. } => "pins_full",
            Self::InvalidUnitRef { .. } => "invalid_ref",
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Host(error) => write!(f, "{error}"),
            Self::SignatureMissing { digest } => {
                write!(f, "{digest}: a trust key is configured and the candidate has no signature")
            }
            Self::SignatureInvalid { digest, reason } => write!(f, "{digest}: bad signature: {reason}"),
            Self::ConformanceFailed { digest, passed, failed, failures } => {
                write!(f, "{digest} failed the conformance gate ({passed} passed, {failed} failed)")?;
                if let Some(first) = failures.first() {
                    write!(f, "; first: {first}")?;
                }
                Ok(())
            }
            Self::NoConformanceVectors => write!(f, "the conformance gate has no vectors to run"),
            Self::ConformanceSuite { reason } => write!(f, "cannot read the conformance vectors: {reason}"),
            Self::UnknownPolicy { digest } => write!(f, "no staged policy {digest}"),
            Self::NoActivePolicy => write!(f, "no policy is active"),
            Self::NothingToRollBack => write!(f, "no earlier activation to roll back to"),
            Self::InvalidTrustKey(reason) => write!(f, "invalid trust key: {reason}"),
            Self::StagedFull { limit } => {
                write!(
                    f,
                    "{limit} policies are staged and every one is in use: drop one (DELETE /v1/policies/{{digest}})"
                )
            }
            Self::PolicyInUse { digest, why } => write!(f, "{digest} is {why}: it stays staged"),
            Self::PinsFull { limit } => {
                write!(f, "{limit} units are pinned, the most there may be: unpin one (POST /v1/policies/unpin)")
            }
            Self::InvalidUnitRef { length } => write!(
                f,
                "unit_ref ({length} bytes) is not a reference: 1 to 256 bytes of letters, digits and ._:/@+-, starting with a letter or digit"
            ),
        }
    }
}

impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Host(error) => Some(error),
            _ => None,
        }
    }
}

impl From<HostError> for RegistryError {
    fn from(error: HostError) -> Self {
        Self::Host(error)
    }
}
