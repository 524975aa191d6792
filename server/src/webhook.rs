//! The admission webhook (`scale-units serve --webhook`, `POST /v1/admission`): a
//! `ValidatingWebhookConfiguration` sends the API server's `AdmissionReview` (`admission.k8s.io/v1`)
//! for `UPDATE` of `deployments/scale` and `statefulsets/scale` (an `autoscaling/v1` `Scale`: what
//! the HPA and `kubectl scale` send) and of `deployments` and `statefulsets` themselves.
//!
//! The unit (`namespace/name` of the workload) is evaluated with the old replica count as current,
//! and the change judged by the core's gate (SPEC §12, `scale_units_core::gate`): allowed when the
//! count does not change, when it moves in the decision's direction without passing
//! `desired_replicas`, or when a workload outside its contract's bounds moves back toward them.
//! Everything else is denied — above all any change while the decision is `blocked` — with the
//! gate's message naming the reasons and the decision id. A
//! unit without a contract is allowed with a warning. Evidence that cannot be read (Redis down)
//! denies. A body that is not an `AdmissionReview` gets a well-formed denial, never a 500. In dry
//! run, a denial is answered `allowed` with the would-be denial as a warning.
//!
//! Two ways past a denial, each allowed with a warning and counted: a recovery toward the bounds
//! (the gate's), and a member of an override group may break glass ([`breakglass`]: who may is
//! the webhook's policy, not the gate's). Every review is written to the audit log ([`Reviewed::record`]).
//!
//! An admitted change is recorded ([`Units::record_admission`]) before the answer leaves; one that
//! cannot be recorded is denied. A review already admitted (the same uid and change: the API
//! server retried it) is answered allowed again and recorded once. An admitted change is not yet
//! a change (a later webhook, a conflict or validation may still refuse it): before judging, an
//! authenticated review tells the service what the API server holds of the workload
//! ([`reconcile`]), which retracts an admission that never happened or confirms one that did.
//! Only an authenticated review (the service decides: [`AdmissionOptions::unauthenticated`])
//! records the unit's last scale action, and only outside any dry run; any other is judged and
//! answered without the decision's id, reasons, bounds or warnings, never breaks glass, never
//! counts as a recovery, and is audited with its connection's address and its claimed user.
//!
//! A body is read up to [`MAX_REVIEW_BYTES`] and parsed into the few fields judged by, the rest
//! skipped unread (no tree of the objects), at most two at once; a key named twice anywhere in it
//! is a malformed review.

pub mod breakglass;
mod input;
mod reconcile;

use kube_core::TypeMeta;
use kube_core::admission::{AdmissionResponse, Operation};
use scale_units_core::gate::{self, Bounds, ChangeKind, Evaluated, GateReason, GateVerdict};
use serde::Deserialize;
use serde_json::Value;

use crate::audit::{AuditRecord, Caller, DecisionFacts, ErrorFacts, OverrideFacts};
use crate::listen::Peer;
use crate::sources::WorkloadKind;
use crate::units::{Admission, AdmittedChange, UnitKey, UnitVerdict, Units};
use input::{ObjectIn, RequestIn, ReviewIn};
use reconcile::reconcile;

/// The audit annotation carrying the decision id of an admitted change (the API server prefixes
/// it with the webhook's name).
pub const DECISION_ANNOTATION: &str = "decision-id";

/// What the webhook answers for one review.
enum Outcome {
    Allow { warnings: Vec<String>, decision_id: Option<String> },
    Deny { message: String, decision_id: Option<String> },
}

/// A judged review: the answer, the unit whose replica count it would change (a unit with a
/// contract, its count changing), whose admission is recorded as its last scale action, and what
/// the audit log keeps of it.
struct Judged {
    outcome: Outcome,
    changes: Option<UnitKey>,
    facts: Facts,
}

/// What the audit log keeps of a judged review.
#[derive(Default)]
struct Facts {
    unit: Option<String>,
    change: Option<(u64, u64)>,
    decision: Option<DecisionFacts>,
    component_digest: Option<String>,
    error: Option<ErrorFacts>,
    recovery: bool,
    /// What the review taught of the unit's last admission ([`reconcile`]).
    reconciled: Option<Value>,
}

/// How the webhook judges. [`Default`]: no dry run, no override group.
#[derive(Clone, Debug, Default)]
pub struct AdmissionOptions {
    /// Answer every denial `allowed`, with the denial as a warning (`--webhook-dry-run`).
    pub dry_run: bool,
    /// Members of these groups may override a denial ([`breakglass`]).
    pub override_groups: Vec<String>,
    /// The caller did not authenticate (no client certificate of the webhook's CA, no bearer
    /// token): the review is judged, but no scale action is recorded from it, and its answer
    /// names no decision, reason or bound (the audit log keeps them). Its `userInfo` is a claim:
    /// it never overrides a denial nor counts as a recovery, and the audit log names its peer.
    pub unauthenticated: bool,
    /// The connection the review came on (its address goes to the audit log).
    pub peer: Option<Peer>,
}

/// Largest `AdmissionReview` body read: a review carries the object and the old object, each at
/// most what etcd stores (1.5 MiB, its default `--max-request-bytes`), and an envelope (uid,
/// resource, user, options) given 64 KiB.
pub const MAX_REVIEW_BYTES: usize = 2 * (3 << 19) + (64 << 10);

/// Reviews parsed at once; the others wait their turn (their bodies are read already).
const PARSED_AT_ONCE: usize = 2;

static PARSING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(PARSED_AT_ONCE);

/// The one warning of an answer to an unauthenticated review.
pub const UNAUTHENTICATED_WARNING: &str = concat!(
    "scale-units: this review did not authenticate (client certificate or token): judged, ",
    "not recorded for the cooldowns, details in the service's audit log"
);

/// An answered review.
#[derive(Clone, Debug)]
pub struct Reviewed {
    /// The response `AdmissionReview`, as JSON, always well-formed.
    pub review: Value,
    /// The audit line of the review (`None` for a body that is not a review).
    pub record: Option<AuditRecord>,
    /// The group through which a denial was overridden.
    pub overridden: Option<String>,
    /// Whether the change was allowed as a recovery toward the contract's bounds.
    pub recovered: bool,
}

/// Answers one `AdmissionReview` body: the response review, as JSON, always well-formed.
/// `dry_run` answers every denial `allowed`, with the denial as a warning.
pub async fn review(units: &Units, body: &[u8], dry_run: bool) -> Value {
    review_with(units, body, &AdmissionOptions { dry_run, ..AdmissionOptions::default() }).await.review
}

/// Answers one `AdmissionReview` body as `options` say, with its audit line: the review parsed,
/// what it says of the workload learned ([`reconcile`]), the change judged by the gate
/// ([`admit`]), a retried review answered as before ([`replay`]),
/// break glass ([`break_glass`]), the admitted action recorded ([`record`]), the audit line
/// ([`audit`]), an unauthenticated answer stripped of its reasons ([`redact`]), and the response
/// ([`respond`]).
pub async fn review_with(units: &Units, body: &[u8], options: &AdmissionOptions) -> Reviewed {
    let unanswerable = |review| Reviewed { review, record: None, overridden: None, recovered: false };
    let (types, request) = match parse(body).await {
        Ok(parsed) => parsed,
        Err(review) => return unanswerable(review),
    };
    let reconciled = reconcile(units, options, &request).await;
    let Judged { mut outcome, changes, mut facts } = admit(units, &request).await;
    facts.reconciled = reconciled;
    let replayed = replay(units, &request, changes.as_ref(), &facts, &mut outcome).await;
    let overridden = break_glass(options, &request, &facts, &mut outcome);
    let replayed = replayed.as_ref();
    record(units, options, &request, changes.as_ref(), &facts, replayed, overridden.is_some(), &mut outcome).await;
    // A recovery is a judgment of the change alone; from a review that did not authenticate it is
    // answered the same, but neither counted nor logged as one.
    let recovered = facts.recovery && !options.unauthenticated;
    let change = facts.change;
    let group = overridden.as_ref().map(|granted| granted.group.clone());
    let record = audit(options, &request, facts, overridden, recovered, &outcome);
    if options.unauthenticated {
        outcome = redact(outcome, change);
    }
    Reviewed {
        review: respond(types, request.uid, outcome, options.dry_run),
        record: Some(record),
        overridden: group,
        recovered,
    }
}

/// The review's type and request, or the well-formed denial of a body that is not one. A body is
/// parsed [`PARSED_AT_ONCE`] at a time, a key named twice anywhere refused.
async fn parse(body: &[u8]) -> Result<(TypeMeta, RequestIn), Value> {
    let parsed = {
        // INVARIANT: the semaphore is a static that is never closed.
        let _turn = PARSING.acquire().await.ok();
        crate::strict::check(body).and_then(|()| serde_json::from_slice::<ReviewIn>(body))
    };
    let review = parsed.map_err(|error| {
        malformed(body, &format!("the body is not an admission.k8s.io/v1 AdmissionReview: {error}"))
    })?;
    let types = TypeMeta { api_version: review.api_version, kind: review.kind };
    let request = review.request.ok_or_else(|| malformed(body, "the AdmissionReview has no request"))?;
    Ok((types, request))
}

/// A review already admitted (the API server retried it) is answered as it was and recorded once:
/// its own recorded action must not hold it back for the cooldown. Returns its admission.
async fn replay(
    units: &Units,
    request: &RequestIn,
    changes: Option<&UnitKey>,
    facts: &Facts,
    outcome: &mut Outcome,
) -> Option<crate::units::Admission> {
    let (Some(key), Some((from, to))) = (changes, facts.change) else { return None };
    if request.dry_run {
        return None;
    }
    let admission = units
        .admitted_review(key, &request.uid)
        .await
        .ok()
        .flatten()
        .filter(|admission| (admission.from, admission.to) == (from, to))?;
    *outcome = Outcome::Allow {
        warnings: vec![format!(
            "scale-units: review {} was admitted at {} and is answered again; its action is recorded once",
            request.uid, admission.at
        )],
        decision_id: admission.decision_id.clone(),
    };
    Some(admission)
}

/// Break glass: a member of an override group is let through a denial, never silently. The
/// membership is the API server's word: a review that did not authenticate only claims it (anyone
/// who reaches the port can write `userInfo`), and overrides nothing.
fn break_glass(
    options: &AdmissionOptions,
    request: &RequestIn,
    facts: &Facts,
    outcome: &mut Outcome,
) -> Option<OverrideFacts> {
    let Outcome::Deny { message, decision_id } = outcome else { return None };
    if options.unauthenticated {
        return None;
    }
    let username = request.user_info.username.clone().unwrap_or_default();
    let groups = request.user_info.groups.clone().unwrap_or_default();
    let annotations = request.object.as_ref().and_then(|object| object.metadata.annotations.as_ref());
    match breakglass::check(&options.override_groups, &username, &groups, annotations, jiff::Timestamp::now()) {
        breakglass::Check::Granted(granted) => {
            let change =
                facts.change.map_or_else(|| "the change".to_owned(), |(old, new)| format!("{old} -> {new} replicas"));
            let against = decision_id.as_deref().map_or_else(|| "a denial".to_owned(), |id| format!("decision {id}"));
            let mut warnings = vec![breakglass::warning(&granted, &change, &against)];
            warnings.push(format!("scale-units: overridden denial: {message}"));
            *outcome = Outcome::Allow { warnings, decision_id: decision_id.clone() };
            return Some(granted);
        }
        breakglass::Check::Refused(why) => message.push_str(&format!("; override refused: {why}")),
        breakglass::Check::NotAMember { annotated: true } => message.push_str(&format!(
            "; the override annotations grant nothing: {username} is in none of the override groups"
        )),
        breakglass::Check::NotAMember { annotated: false } => {}
    }
    None
}

/// Records an admitted change as the unit's last scale action, and its new count as the unit's
/// count. An admitted change starts the contract's cooldown for the next decision, but only one
/// this webhook enforced: under `--webhook-dry-run` every review is let through whatever it asks
/// (a forged 9 -> 1 would start a cooldown), a server-side dry run (`kubectl --dry-run=server`)
/// changes nothing, and a review that did not authenticate could come from anyone who reaches the
/// port. A change that cannot be recorded is denied, unless overridden. A replayed review's
/// action is recorded already; its count is recorded again, unless a later review showed that
/// change never happened.
#[expect(clippy::too_many_arguments, reason = "the review's parts, each read by one rule here")]
async fn record(
    units: &Units,
    options: &AdmissionOptions,
    request: &RequestIn,
    changes: Option<&UnitKey>,
    facts: &Facts,
    replayed: Option<&Admission>,
    overridden: bool,
    outcome: &mut Outcome,
) {
    let recordable = !options.unauthenticated && !options.dry_run && !request.dry_run;
    let Some(key) = changes.filter(|_| recordable && matches!(outcome, Outcome::Allow { .. })) else { return };
    if replayed.is_some_and(Admission::retracted) {
        return;
    }
    let resource_version = request.old_object.as_ref().and_then(|old| old.metadata.resource_version.as_deref());
    let change = admitted_change(&request.uid, facts.change, resource_version, outcome);
    if replayed.is_none()
        && let Err(error) = units.record_admission(key, change).await
    {
        let message = format!("scale-units: {key}: the scale action cannot be recorded for its cooldown: {error}");
        match outcome {
            // An override stands: the cooldown is what cannot be kept, and the warning says so.
            Outcome::Allow { warnings, .. } if overridden => warnings.push(message),
            Outcome::Allow { decision_id, .. } | Outcome::Deny { decision_id, .. } => {
                let decision_id = decision_id.clone();
                *outcome = Outcome::Deny { message, decision_id };
            }
        }
    }
    // The admitted count is the unit's count at once (observed now, with its max age): KEDA and
    // the next decision never go back to the old count while the collector catches up. Only from
    // a review that could record its action and still stands.
    if matches!(outcome, Outcome::Allow { .. })
        && let Some((_, new)) = facts.change
        && let Err(error) = units.record_admitted_count(key, new).await
    {
        let message = format!("scale-units: {key}: the admitted replica count cannot be recorded: {error}");
        tracing::warn!(unit = %key, "{message}");
        if let Outcome::Allow { warnings, .. } = outcome {
            warnings.push(message);
        }
    }
}

/// The review's audit line. An unauthenticated review's user is a claim: kept apart from the
/// caller, who is known by its address only.
fn audit(
    options: &AdmissionOptions,
    request: &RequestIn,
    facts: Facts,
    overridden: Option<OverrideFacts>,
    recovered: bool,
    outcome: &Outcome,
) -> AuditRecord {
    let username = request.user_info.username.clone().unwrap_or_default();
    let groups = request.user_info.groups.clone().unwrap_or_default();
    let claimed_override =
        options.unauthenticated && options.override_groups.iter().any(|group| groups.contains(group));
    let mut record = AuditRecord::new("admission").decision(facts.decision);
    record.unit = facts.unit;
    record.caller = Caller::peer(options.peer.as_ref());
    let claimed_user = if options.unauthenticated {
        Some(serde_json::json!({"username": username, "groups": groups}))
    } else {
        record.caller.username = Some(username);
        record.caller.groups = Some(groups);
        None
    };
    record.component_digest = facts.component_digest;
    record.error = facts.error;
    record.allowed = Some(options.dry_run || matches!(outcome, Outcome::Allow { .. }));
    record.overridden = overridden;
    let message = match outcome {
        Outcome::Allow { warnings, .. } => warnings.join("; "),
        Outcome::Deny { message, .. } => message.clone(),
    };
    record.detail = serde_json::json!({
        "uid": request.uid,
        "resource": format!("{}{}", request.resource.resource, request.sub_resource.as_deref().map(|sub| format!("/{sub}")).unwrap_or_default()),
        "change": facts.change.map(|(from, to)| serde_json::json!({"from": from, "to": to})),
        "dry_run": request.dry_run,
        "webhook_dry_run": options.dry_run,
        "recovery": recovered,
        "message": message,
        "authenticated": !options.unauthenticated,
    });
    if let (Some(reconciled), Some(detail)) = (facts.reconciled, record.detail.as_object_mut()) {
        detail.insert("reconciled".to_owned(), reconciled);
    }
    if let (Some(claimed), Some(detail)) = (claimed_user, record.detail.as_object_mut()) {
        detail.insert("unauthenticated_attempt".to_owned(), Value::Bool(true));
        detail.insert("claimed_user".to_owned(), claimed);
        detail.insert("claimed_override".to_owned(), Value::Bool(claimed_override));
    }
    record
}

/// The answer to a review that did not authenticate: no decision id, reason, bound or warning
/// (the audit log keeps them), and the warning that it was not recorded.
fn redact(outcome: Outcome, change: Option<(u64, u64)>) -> Outcome {
    match outcome {
        Outcome::Allow { .. } => {
            Outcome::Allow { warnings: vec![UNAUTHENTICATED_WARNING.to_owned()], decision_id: None }
        }
        Outcome::Deny { .. } => Outcome::Deny {
            message: format!(
                "scale-units: {} denied; the reasons go to authenticated reviews only",
                change.map_or_else(|| "the change".to_owned(), |(old, new)| format!("{old} -> {new} replicas"))
            ),
            decision_id: None,
        },
    }
}

/// The response `AdmissionReview`: the decision id as an audit annotation, warnings, or the
/// denial (403); under `dry_run` a denial is answered allowed with it as a warning.
fn respond(types: TypeMeta, uid: String, outcome: Outcome, dry_run: bool) -> Value {
    let mut response = AdmissionResponse::invalid("");
    (response.types, response.uid, response.allowed, response.result) =
        (types, uid, true, kube_core::Status::default());
    match outcome {
        Outcome::Allow { warnings, decision_id } => {
            if let Some(id) = decision_id {
                response.audit_annotations.insert(DECISION_ANNOTATION.to_owned(), id);
            }
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
        }
        Outcome::Deny { message, decision_id } => {
            if let Some(id) = decision_id {
                response.audit_annotations.insert(DECISION_ANNOTATION.to_owned(), id);
            }
            if dry_run {
                response.warnings = Some(vec![format!("scale-units dry run, would deny: {message}")]);
            } else {
                response = response.deny(message);
                response.result.code = 403;
                response.result.reason = "Forbidden".to_owned();
            }
        }
    }
    to_json(response)
}

/// What the ledger keeps of an admitted review.
fn admitted_change<'a>(
    uid: &'a str,
    change: Option<(u64, u64)>,
    resource_version: Option<&'a str>,
    outcome: &'a Outcome,
) -> AdmittedChange<'a> {
    let (from, to) = change.unwrap_or_default();
    let (Outcome::Allow { decision_id, .. } | Outcome::Deny { decision_id, .. }) = outcome;
    AdmittedChange { from, to, decision_id: decision_id.as_deref(), review_uid: uid, resource_version }
}

/// A denial for a body that cannot be read as a review, echoing its `request.uid` when there is one.
fn malformed(body: &[u8], message: &str) -> Value {
    let mut response = AdmissionResponse::invalid(format!("scale-units: {message}"));
    response.result.code = 400;
    #[derive(Deserialize)]
    struct Uid {
        request: Option<UidOf>,
    }
    #[derive(Deserialize)]
    struct UidOf {
        uid: Option<String>,
    }
    if let Some(uid) = serde_json::from_slice::<Uid>(body).ok().and_then(|review| review.request?.uid) {
        response.uid = uid;
    }
    to_json(response)
}

fn to_json(response: AdmissionResponse) -> Value {
    serde_json::to_value(response.into_review()).unwrap_or_else(|error| {
        // Unreachable (the types serialize); still an answer the API server can read.
        serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "", "allowed": false, "status": {"message": format!("scale-units: {error}"), "code": 500}}
        })
    })
}

/// Which workloads' replica counts the webhook judges.
#[derive(Clone, Copy)]
enum Workload {
    Deployment,
    StatefulSet,
}

impl Workload {
    fn kind(self) -> WorkloadKind {
        match self {
            Self::Deployment => WorkloadKind::Deployment,
            Self::StatefulSet => WorkloadKind::StatefulSet,
        }
    }
}

/// The workload whose replica count the review would change, and whether through its `scale`
/// subresource; `None` for anything else (not judged).
fn target(request: &RequestIn) -> Option<(Workload, bool)> {
    if request.operation != Operation::Update {
        return None;
    }
    let workload = match (request.resource.group.as_str(), request.resource.resource.as_str()) {
        ("apps", "deployments") => Workload::Deployment,
        ("apps", "statefulsets") => Workload::StatefulSet,
        _ => return None,
    };
    let scale = match request.sub_resource.as_deref() {
        Some("scale") => true,
        None | Some("") => false,
        Some(_) => return None,
    };
    Some((workload, scale))
}

async fn admit(units: &Units, request: &RequestIn) -> Judged {
    let allow = || Judged {
        outcome: Outcome::Allow { warnings: Vec::new(), decision_id: None },
        changes: None,
        facts: Facts::default(),
    };
    let Some((workload, scale)) = target(request) else { return allow() };
    let deny = |message: String| Judged {
        outcome: Outcome::Deny { message: format!("scale-units: {message}"), decision_id: None },
        changes: None,
        facts: Facts::default(),
    };
    let (Some(old), Some(new)) = (&request.old_object, &request.object) else {
        return deny("an UPDATE review without object and oldObject".to_owned());
    };
    let (old, new) = match (replicas(old, workload, scale), replicas(new, workload, scale)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(error), _) | (_, Err(error)) => return deny(error),
    };
    if old == new {
        return allow();
    }
    let Some(namespace) = request.namespace.as_deref() else {
        return deny("the review names no namespace".to_owned());
    };
    let key = match UnitKey::new(namespace, request.name.as_str()) {
        Ok(key) => key,
        Err(error) => return deny(error.to_string()),
    };
    // A unit whose sources name its workload's kind is that workload's only: a workload of the
    // other kind with the same name neither reads its decision nor starts its cooldowns.
    let declared = units.sources(&key).and_then(|sources| sources.workload);
    if let Some(declared) = declared
        && declared != workload.kind()
    {
        return Judged {
            outcome: Outcome::Allow {
                warnings: vec![format!(
                    "scale-units: {key} is a {declared:?}'s unit; this {:?}'s {old} -> {new} replicas is not checked",
                    workload.kind()
                )],
                decision_id: None,
            },
            changes: None,
            facts: Facts { unit: Some(key.to_string()), change: Some((old, new)), ..Facts::default() },
        };
    }
    let change = format!("{key} {old} -> {new} replicas");
    let mut facts = Facts { unit: Some(key.to_string()), change: Some((old, new)), ..Facts::default() };
    let bounds = units.bounds(&key).map(|(min_replicas, max_replicas)| Bounds { min_replicas, max_replicas });
    // Below the floor the evaluator cannot decide (replicas_out_of_bounds): the core's gate judges
    // a recovery, which needs no evidence.
    if let Some(bounds) = bounds
        && old < bounds.min_replicas
    {
        facts.error = Some(ErrorFacts {
            code: "replicas_out_of_bounds".to_owned(),
            message: format!(
                "current_replicas {old} is below the contract floor (min_replicas {})",
                bounds.min_replicas
            ),
        });
        let verdict = gate::judge(Evaluated::BelowFloor { current_replicas: old, bounds }, new, ChangeKind::Scale);
        let outcome = outcome_of(&key, &verdict, &mut facts, None);
        return Judged { outcome, changes: Some(key), facts };
    }
    match units.decide(&key, Some(old)).await {
        Ok(decided) => match decided.verdict {
            UnitVerdict::NoContract => Judged {
                outcome: Outcome::Allow {
                    warnings: vec![format!(
                        "scale-units: {key} has no scale-unit contract; {old} -> {new} replicas not checked"
                    )],
                    decision_id: None,
                },
                changes: None,
                facts: Facts { unit: facts.unit, change: facts.change, ..Facts::default() },
            },
            UnitVerdict::Decided { decision, .. } => {
                facts.decision = Some(DecisionFacts::of(&decision));
                facts.component_digest = decided.provenance.map(|provenance| provenance.component_digest.clone());
                let id = decision.decision_id.clone();
                // A unit with a decision has a contract; its bounds were read a moment before.
                let bounds = bounds.unwrap_or(Bounds { min_replicas: 0, max_replicas: u64::MAX });
                let verdict = gate::judge(Evaluated::Decided { decision, bounds }, new, ChangeKind::Scale);
                let outcome = outcome_of(&key, &verdict, &mut facts, Some(id));
                Judged { outcome, changes: Some(key), facts }
            }
        },
        Err(error) => {
            facts.error = Some(ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
            let denied = deny(format!("{change} denied: {error}"));
            Judged { changes: Some(key), facts, ..denied }
        }
    }
}

/// The review's outcome for the core gate's verdict (SPEC §12.1): its words after the unit's
/// name; a recovery is marked in the facts, and a drain asked of an allowed scale-down is a
/// warning of its own.
fn outcome_of(key: &UnitKey, verdict: &GateVerdict, facts: &mut Facts, decision_id: Option<String>) -> Outcome {
    let said = format!("scale-units: {key} {}", verdict.message);
    if !verdict.allowed {
        return Outcome::Deny { message: said, decision_id };
    }
    let warnings = match verdict.reason {
        GateReason::RecoveryTowardMin | GateReason::RecoveryTowardMax => {
            facts.recovery = true;
            vec![said]
        }
        _ => match (&verdict.decision, &decision_id) {
            (Some(decision), Some(id)) if decision.drain_required => {
                vec![format!("scale-units: drain the removed replicas first (decision {id})")]
            }
            _ => Vec::new(),
        },
    };
    Outcome::Allow { warnings, decision_id }
}

/// `spec.replicas` of a `Scale` (absent: 0) or of a Deployment or StatefulSet (absent: 1, the
/// Kubernetes default).
fn replicas(object: &ObjectIn, _workload: Workload, scale: bool) -> Result<u64, String> {
    let count = object.spec.as_ref().and_then(|spec| spec.replicas).unwrap_or(if scale { 0 } else { 1 });
    u64::try_from(count).map_err(|_| format!("spec.replicas is negative ({count})"))
}
