//! Why the unit registry could not store observations or decide for a unit.

use std::fmt;

use scale_units_core::EvaluationError;

use super::UnitKey;
use scale_units_host::RegistryError;

/// Why a [`Units`](super::Units) operation failed. None of them is ever read as "no change" or
/// "zero": a caller that must answer (the admission webhook, the KEDA scaler) fails closed.
#[derive(Debug)]
#[non_exhaustive]
pub enum UnitError {
    /// `namespace/name` is not a Kubernetes namespace (a DNS label) and object name (a DNS
    /// subdomain).
    InvalidKey(String),
    /// No contract is loaded for the unit (observations are refused for it).
    UnknownUnit(UnitKey),
    /// No replica count was given and none is fresh: none collected, pushed or admitted within
    /// its max age (or it was lost).
    UnknownReplicas(UnitKey),
    /// The observations a collector pushed are not SPEC §5 observations (the component's typed
    /// error, with the JSON path inside the pushed body).
    InvalidObservations(EvaluationError),
    /// The evaluator refused the request assembled for the unit (a current replica count below
    /// the contract's floor, a stored value that is no longer valid JSON…).
    Evaluation(EvaluationError),
    /// No active policy, or the component failed.
    Policy(RegistryError),
    /// The observation store (Redis) could not be read or written: the evidence is unavailable.
    Store(String),
    /// A setting is unusable (a Redis URL, a contracts folder).
    Config(String),
    /// A collector's write under a lease it no longer holds (another replica took the unit's
    /// shard): nothing was written.
    Fenced(String),
}

impl UnitError {
    /// A stable, machine-readable code (the service's `error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidKey(_) => "invalid_unit_key",
            Self::UnknownUnit(_) => "unknown_unit",
            Self::UnknownReplicas(_) => "unknown_replicas",
            Self::InvalidObservations(error) | Self::Evaluation(error) => error.code().as_str(),
            Self::Policy(error) => error.code(),
            Self::Store(_) => "evidence_unavailable",
            Self::Config(_) => "invalid_configuration",
            Self::Fenced(_) => "lease_lost",
        }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidKey(reason) => write!(f, "invalid unit key: {reason}"),
            Self::UnknownUnit(key) => write!(f, "no scale-unit contract is loaded for {key}"),
            Self::UnknownReplicas(key) => {
                write!(
                    f,
                    "the current replica count of {key} is unknown (none collected, pushed or admitted within its max age)"
                )
            }
            Self::InvalidObservations(error) => write!(f, "invalid observations: {error}"),
            Self::Evaluation(error) => write!(f, "the evaluator refused the unit's request: {error}"),
            Self::Policy(error) => write!(f, "no decision: {error}"),
            Self::Store(reason) => write!(f, "evidence unavailable: the observation store failed: {reason}"),
            Self::Config(reason) => write!(f, "{reason}"),
            Self::Fenced(reason) => write!(f, "evidence refused: {reason}"),
        }
    }
}

impl std::error::Error for UnitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Policy(error) => Some(error),
            _ => None,
        }
    }
}
