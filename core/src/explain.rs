//! Plain words for decisions: the one catalogue every face (CLI, component, bindings,
//! playground) uses, so that they all say the same.

use std::fmt::Write;

use crate::model::Decision;
use crate::vocab::{ActionKind, EvidenceStatus, Reason};

impl Reason {
    /// One sentence saying what this reason means for the operator.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::AtTarget => "The signal already fits the current replica count; nothing to change.",
            Self::Cooldown => {
                "The last scaling action is too recent (or lies in the future); the cooldown has not elapsed."
            }
            Self::SignalMissing => "No demand signal was observed; a missing metric is never read as zero.",
            Self::SignalStale => "The demand signal is outside its freshness window.",
            Self::SignalMismatch => "The observed signal is not the one the policy tracks.",
            Self::CapacityMissing => "A capacity axis the contract depends on has no observation.",
            Self::CapacityStale => "A capacity observation is outside its freshness window.",
            Self::CapacityExhausted => "The added replicas would not fit the available capacity or a local quota.",
            Self::EngineAuthoritySaturated => {
                "The engine behind this surface is saturated; more front-end replicas would not help."
            }
            Self::ProviderQuotaMissing => "The provider-global quota has no observation.",
            Self::ProviderQuotaStale => "The provider-global quota observation is outside its freshness window.",
            Self::ProviderQuotaExhausted => {
                "The shared provider quota cannot take the added replicas; replicas never multiply it."
            }
            Self::ProviderQuotaNotMultiplicative => {
                "A provider-global quota was declared as growing with replicas, which it never does."
            }
            Self::QuotaMissing => "A quota the contract binds has no observation.",
            Self::QuotaStale => "A quota observation is outside its freshness window.",
            Self::QuotaScopeMismatch => "A quota observation reports a different scope than the contract binds.",
            Self::ContinuityMissing => "No continuity observation for a surface that keeps session state.",
            Self::ContinuityStale => "The continuity observation is outside its freshness window.",
            Self::ContinuityNotReady => "The continuity store reports that it is not ready.",
            Self::ActiveSessionsBlockDrain => "Active sessions or streams must drain before any replica is removed.",
            Self::ScaleFromZeroDisabled => "The unit is at zero and the contract does not allow starting from zero.",
            Self::ScaleToZeroDisabled => "The contract does not allow scaling to zero.",
            Self::DrainRequired => "Removing replicas needs a drain longer than the continuity contract allows.",
            Self::OverloadSheddingActive => {
                "Safety evidence is missing or stale, or the fleet is shedding load; scaling is unsafe."
            }
            Self::NoisyNeighbor => "A noisy neighbour is degrading the fleet; scaling is unsafe.",
            Self::PartitionLeaseMissing => "A partition lease is missing.",
            Self::InvalidBounds => "The decision had no valid bounds to act within.",
            Self::TargetTracking => "The replica count follows the signal towards its target, within steps and bounds.",
        }
    }
}

impl ActionKind {
    /// A short phrase for the action.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::ScaleUp => "scale up",
            Self::ScaleDown => "scale down",
            Self::Hold => "hold",
            Self::Blocked => "blocked: do not scale",
        }
    }
}

impl EvidenceStatus {
    /// A short phrase for the status.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Missing => "missing",
            Self::Stale => "stale",
            Self::Blocked => "unusable",
        }
    }
}

/// A reason with its plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReasonText {
    /// The reason.
    pub reason: Reason,
    /// [`Reason::describe`] of it (a `String`, so that a host can carry the words a component
    /// returned).
    pub text: String,
}

/// A decision in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// One line: the action and the replica counts.
    pub summary: String,
    /// Each reason, in the decision's order.
    pub reasons: Vec<ReasonText>,
    /// One line per evidence entry: kind, status, code and reference.
    pub evidence: Vec<String>,
}

impl Explanation {
    /// The explanation as text for a terminal: summary, reasons, then an evidence table.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.summary);
        let _ = writeln!(out, "\nReasons:");
        for reason in &self.reasons {
            let _ = writeln!(out, "  - {}: {}", reason.reason, reason.text);
        }
        let _ = writeln!(out, "\nEvidence:");
        for line in &self.evidence {
            let _ = writeln!(out, "  {line}");
        }
        out
    }
}

/// Describes a decision in plain words.
pub fn explain(decision: &Decision) -> Explanation {
    let summary = match decision.action {
        ActionKind::ScaleUp | ActionKind::ScaleDown => format!(
            "{}: {} -> {} replicas{}",
            decision.action.describe(),
            decision.current_replicas,
            decision.desired_replicas,
            if decision.drain_required { " (drain the removed replicas first)" } else { "" }
        ),
        ActionKind::Hold => format!("hold at {} replicas", decision.current_replicas),
        ActionKind::Blocked => format!(
            "{} (stays at {} replicas{})",
            decision.action.describe(),
            decision.current_replicas,
            if decision.drain_required { "; a drain is required" } else { "" }
        ),
    };
    let reasons =
        decision.reasons.iter().map(|&reason| ReasonText { reason, text: reason.describe().to_owned() }).collect();
    let evidence = decision
        .evidence
        .iter()
        .map(|e| format!("{:<10} {:<9} {:<28} {}", e.kind.as_str(), e.status.describe(), e.code, e.reference))
        .collect();
    Explanation { summary, reasons, evidence }
}
