//! Each ScaleUnit's status: its decision, its evidence and its conditions, computed every
//! [`KubernetesOptions::status_interval`](super::KubernetesOptions::status_interval) and written
//! through the status subresource only when something in it changed — the decision's id and
//! times, an evidence's observation time and a condition's transition time ride along, they
//! never cause a write — and at most `status_writes_per_minute` times a minute per unit (a token
//! bucket: the latest status is written when a token comes back). An Event says when the
//! decision changed.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use scale_units_core::{ActionKind, Decision};
use serde_json::Value;

use super::events::Reason;
use super::resource::{DecisionStatus, EvidenceStatus, ScaleUnit, ScaleUnitStatus, TargetStatus};
use super::watch::ResourceMeta;
use super::{Cluster, TargetKey};
use crate::units::{Observed, UnitDecision, UnitKey, UnitVerdict};

/// How long one status write may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the writer keeps of a unit between rounds.
#[derive(Debug, Default)]
pub(crate) struct WriterState {
    tokens: f64,
    refilled: Option<Instant>,
    /// The decision's action, desired count and reasons at the last round.
    decision: Option<(String, Option<u64>, Vec<String>)>,
}

impl WriterState {
    fn take(&mut self, per_minute: u32, now: Instant) -> bool {
        let burst = f64::from(per_minute.max(1));
        self.tokens = match self.refilled {
            None => burst,
            Some(at) => (self.tokens + now.duration_since(at).as_secs_f64() * burst / 60.0).min(burst),
        };
        self.refilled = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One unit's inputs, read from the watch's state at the start of a round.
struct Snapshot {
    key: UnitKey,
    meta: ResourceMeta,
    target: Option<TargetKey>,
    observed: Option<Observed>,
    refused: Option<(String, String)>,
    held: Option<ScaleUnitStatus>,
}

pub(super) async fn run(cluster: Arc<Cluster>) {
    let mut interval = tokio::time::interval(cluster.options.status_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if !cluster.synced() {
            continue;
        }
        let snapshots: Vec<Snapshot> = {
            let tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
            tracks
                .units
                .iter()
                .filter_map(|(key, track)| {
                    Some(Snapshot {
                        key: key.clone(),
                        meta: track.resource.clone()?,
                        target: track.target.as_ref().map(|(_, target)| target.clone()),
                        observed: track.observed.clone(),
                        refused: track.refused.clone(),
                        held: track.status.clone(),
                    })
                })
                .collect()
        };
        for snapshot in snapshots {
            round(&cluster, snapshot).await;
        }
    }
}

async fn round(cluster: &Arc<Cluster>, snapshot: Snapshot) {
    let decided = cluster.units.decide_with_evidence(&snapshot.key, None).await;
    let now = jiff::Timestamp::now();
    let status = build(&snapshot, &decided, now);
    let decision = status
        .decision
        .as_ref()
        .map(|decision| (decision.action.clone(), status.desired_replicas, decision.reasons.clone()));
    let (changed_decision, write) = {
        let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(track) = tracks.units.get_mut(&snapshot.key) else { return };
        let changed = track.writer.decision.is_some() && track.writer.decision != decision;
        let first = track.writer.decision.is_none();
        track.writer.decision = decision.clone();
        let differs = track.status.as_ref().is_none_or(|held| !same(held, &status));
        let write = differs && track.writer.take(cluster.options.status_writes_per_minute, Instant::now());
        (changed && !first, write)
    };
    if changed_decision && let Some((action, desired, reasons)) = &decision {
        let note = match (&decided, desired) {
            (Ok(UnitDecision { verdict: UnitVerdict::Decided { decision, .. }, .. }), _) => short(decision),
            _ => format!(
                "{action}{}: {}",
                desired.map(|count| format!(" to {count}")).unwrap_or_default(),
                reasons.join(", ")
            ),
        };
        cluster.publish(&snapshot.key, Reason::DecisionChanged, &note);
    }
    if !write {
        return;
    }
    let api: Api<ScaleUnit> = Api::namespaced(cluster.client.clone(), &snapshot.meta.namespace);
    let patch = serde_json::json!({"status": with_nulls(&status)});
    let written = tokio::time::timeout(
        WRITE_TIMEOUT,
        api.patch_status(&snapshot.meta.name, &PatchParams::default(), &Patch::Merge(&patch)),
    )
    .await;
    match written {
        Ok(Ok(_)) => {
            cluster.status_writes.fetch_add(1, Ordering::Relaxed);
            let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(track) = tracks.units.get_mut(&snapshot.key) {
                track.status = Some(status);
            }
        }
        Ok(Err(error)) => {
            cluster.status_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(unit = %snapshot.key, "the ScaleUnit's status was not written: {error}");
        }
        Err(_) => {
            cluster.status_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(unit = %snapshot.key, "the ScaleUnit's status was not written within {WRITE_TIMEOUT:?}");
        }
    }
}

/// The decision's short form for an event: the action, the counts and the reasons.
pub(crate) fn short(decision: &Decision) -> String {
    let explained = scale_units_core::explain(decision);
    let reasons: Vec<&str> = decision.reasons.iter().map(|reason| reason.as_str()).collect();
    format!("{} ({}; decision {})", explained.summary, reasons.join(", "), decision.decision_id)
}

/// Whether two statuses say the same, their ids and times apart.
fn same(a: &ScaleUnitStatus, b: &ScaleUnitStatus) -> bool {
    let strip = |status: &ScaleUnitStatus| {
        let mut status = status.clone();
        if let Some(decision) = status.decision.as_mut() {
            decision.decision_id = None;
            decision.decided_at = None;
        }
        for evidence in &mut status.evidence {
            evidence.observed_at = None;
        }
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(jiff::Timestamp::UNIX_EPOCH);
        }
        status
    };
    strip(a) == strip(b)
}

/// The status as a merge patch: a field it lacks is written `null` (removed), not kept.
fn with_nulls(status: &ScaleUnitStatus) -> Value {
    let mut value = serde_json::to_value(status).unwrap_or_else(|_| Value::Object(serde_json::Map::new()));
    if let Some(object) = value.as_object_mut() {
        for field in [
            "observedGeneration",
            "target",
            "currentReplicas",
            "desiredReplicas",
            "decision",
            "lastScaleTime",
            "knownSince",
            "evidence",
            "conditions",
        ] {
            object.entry(field).or_insert(Value::Null);
        }
    }
    value
}

fn time_ms(ms: i64) -> Option<Time> {
    jiff::Timestamp::from_millisecond(ms).ok().map(Time)
}

/// The status of one unit.
fn build(
    snapshot: &Snapshot,
    decided: &Result<UnitDecision, crate::units::UnitError>,
    now: jiff::Timestamp,
) -> ScaleUnitStatus {
    let observed = snapshot.observed.as_ref();
    let mut status = ScaleUnitStatus {
        observed_generation: snapshot.meta.generation,
        target: snapshot.target.as_ref().map(|target| TargetStatus {
            reference: format!("{}/{}", target.kind, target.name),
            uid: snapshot.held.as_ref().and_then(|held| held.target.as_ref()).and_then(|target| target.uid.clone()),
            generation: observed.and_then(|observed| observed.generation),
        }),
        current_replicas: observed.and_then(|observed| observed.count),
        desired_replicas: None,
        decision: None,
        last_scale_time: observed.and_then(|observed| observed.last_change).and_then(|change| time_ms(change.at_ms)),
        known_since: observed.and_then(|observed| time_ms(observed.known_since_ms)),
        evidence: Vec::new(),
        conditions: Vec::new(),
    };
    let mut conditions = Vec::new();
    let (ready, ready_reason, ready_message) = match (&snapshot.refused, observed.and_then(|observed| observed.count)) {
        (Some((path, message)), _) => (
            false,
            if path.starts_with("spec.sources") { "SourcesRefused" } else { "ContractRefused" },
            format!("{path}: {message} (the contract in force, if any, is the previous one)"),
        ),
        (None, None) => (
            false,
            "TargetNotFound",
            format!(
                "{} has no readable spec.replicas on the API server (not found, or not in its scale subresource): no decision",
                snapshot.target.as_ref().map_or_else(|| "the scale target".to_owned(), ToString::to_string)
            ),
        ),
        (None, Some(_)) => {
            (true, "Ready", "the contract is in force and the target's count is the API server's".to_owned())
        }
    };
    conditions.push(condition("Ready", ready, ready_reason, &ready_message));
    match decided {
        Ok(UnitDecision {
            verdict: UnitVerdict::Decided { decision, current_replicas }, provenance, evidence, ..
        }) => {
            let reasons: Vec<String> = decision.reasons.iter().map(|reason| reason.as_str().to_owned()).collect();
            status.current_replicas = Some(*current_replicas);
            status.desired_replicas = Some(decision.desired_replicas);
            status.decision = Some(DecisionStatus {
                action: decision.action.as_str().to_owned(),
                reason: reasons.first().cloned(),
                reasons: reasons.clone(),
                decision_id: Some(decision.decision_id.clone()),
                component_digest: provenance.as_ref().map(|provenance| provenance.component_digest.clone()),
                decided_at: Some(Time(now)),
            });
            status.evidence = evidence_of(decision, evidence.as_ref());
            let stale: Vec<&EvidenceStatus> = status.evidence.iter().filter(|e| e.state != "Fresh").collect();
            let (fresh, reason, message) = match stale.first() {
                None => (true, "AllFresh", "every observation the contract reads is fresh".to_owned()),
                Some(first) => (
                    false,
                    if first.state == "Missing" { "EvidenceMissing" } else { "EvidenceStale" },
                    stale
                        .iter()
                        .map(|e| format!("{} {}", e.name, e.state.to_lowercase()))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            };
            conditions.push(condition("EvidenceFresh", fresh, reason, &message));
            let blocked = decision.action == ActionKind::Blocked;
            let (reason, message) = if blocked {
                let first = decision.reasons.first().map_or("Blocked".to_owned(), |reason| camel(reason.as_str()));
                (first, short(decision))
            } else {
                ("NotBlocked".to_owned(), short(decision))
            };
            conditions.push(condition("ScalingBlocked", blocked, &reason, &message));
        }
        Ok(UnitDecision { verdict: UnitVerdict::NoContract, .. }) => {
            conditions.push(condition(
                "ScalingBlocked",
                false,
                "NoContract",
                "no contract is in force: changes are not gated",
            ));
        }
        Err(error) => {
            status.decision = Some(DecisionStatus {
                action: "error".to_owned(),
                reason: Some(error.code().to_owned()),
                reasons: vec![error.code().to_owned()],
                decided_at: Some(Time(now)),
                ..DecisionStatus::default()
            });
            conditions.push(condition("EvidenceFresh", false, "NoDecision", &error.to_string()));
            conditions.push(condition("ScalingBlocked", true, "NoDecision", &error.to_string()));
        }
    }
    // A condition keeps its transition time while its status stays.
    for condition in &mut conditions {
        if let Some(held) =
            snapshot.held.as_ref().and_then(|held| held.conditions.iter().find(|held| held.type_ == condition.type_))
            && held.status == condition.status
        {
            condition.last_transition_time = held.last_transition_time.clone();
        }
        condition.observed_generation = snapshot.meta.generation;
    }
    status.conditions = conditions;
    status
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: super::events::truncate(message.to_owned(), 1024),
        last_transition_time: Time(jiff::Timestamp::now()),
        observed_generation: None,
    }
}

/// `snake_case` as `CamelCase` (a condition's reason).
fn camel(code: &str) -> String {
    code.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Each piece of evidence the decision read: its state, source and observation time.
fn evidence_of(decision: &Decision, stored: Option<&Value>) -> Vec<EvidenceStatus> {
    decision
        .evidence
        .iter()
        .map(|evidence| {
            let kind = evidence.kind.as_str();
            let state = match evidence.status {
                scale_units_core::EvidenceStatus::Accepted => "Fresh",
                scale_units_core::EvidenceStatus::Missing => "Missing",
                scale_units_core::EvidenceStatus::Stale => "Stale",
                scale_units_core::EvidenceStatus::Blocked => "Unusable",
            };
            let observed_at = stored.and_then(|stored| {
                let one = |value: Option<&Value>| {
                    value.and_then(|value| value.get("observed_at")).and_then(Value::as_str).map(str::to_owned)
                };
                match kind {
                    "capacity" => stored.get("capacities").and_then(Value::as_array).and_then(|items| {
                        one(items
                            .iter()
                            .find(|item| item.get("axis").and_then(Value::as_str) == Some(evidence.code.as_str())))
                    }),
                    "quota" => stored.get("quotas").and_then(Value::as_array).and_then(|items| {
                        one(items.iter().find(|item| {
                            item.get("source_ref").and_then(Value::as_str) == Some(evidence.reference.as_str())
                        }))
                    }),
                    other => one(stored.get(other)),
                }
            });
            EvidenceStatus {
                name: format!("{kind}:{}", evidence.code),
                state: state.to_owned(),
                observed_at,
                source: Some(evidence.reference.clone()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_code_reads_as_a_condition_reason() {
        assert_eq!(camel("signal_missing"), "SignalMissing");
        assert_eq!(camel("cooldown"), "Cooldown");
    }

    #[test]
    fn the_bucket_gives_a_burst_then_refills_per_minute() {
        let mut writer = WriterState::default();
        let start = Instant::now();
        let burst = (0..10).filter(|_| writer.take(6, start)).count();
        assert_eq!(burst, 6);
        assert!(!writer.take(6, start + Duration::from_secs(5)));
        assert!(writer.take(6, start + Duration::from_secs(11)));
        assert!(!writer.take(6, start + Duration::from_secs(12)));
    }

    #[test]
    fn ids_and_times_never_make_a_status_differ() {
        let mut a = ScaleUnitStatus {
            decision: Some(DecisionStatus {
                action: "hold".into(),
                decision_id: Some("a".into()),
                ..DecisionStatus::default()
            }),
            evidence: vec![EvidenceStatus {
                name: "signal:in_flight".into(),
                state: "Fresh".into(),
                observed_at: Some("2026-12-04T10:00:00Z".into()),
                source: None,
            }],
            ..ScaleUnitStatus::default()
        };
        let mut b = a.clone();
        if let Some(decision) = b.decision.as_mut() {
            decision.decision_id = Some("b".into());
        }
        b.evidence[0].observed_at = Some("2026-12-04T10:00:02Z".into());
        assert!(same(&a, &b));
        b.evidence[0].state = "Stale".into();
        assert!(!same(&a, &b));
        a.desired_replicas = Some(3);
        b.evidence[0].state = "Fresh".into();
        assert!(!same(&a, &b));
    }
}
