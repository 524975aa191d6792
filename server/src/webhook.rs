//! The admission webhook (`scale-units serve --webhook`, `POST /v1/admission`): a
//! `ValidatingWebhookConfiguration` sends the API server's `AdmissionReview` (`admission.k8s.io/v1`)
//! for `UPDATE` of `deployments/scale` and `statefulsets/scale` (an `autoscaling/v1` `Scale`: what
//! the HPA and `kubectl scale` send) and of `deployments` and `statefulsets` themselves; its
//! `matchConditions` send only the updates whose `spec.replicas` changes.
//!
//! The unit (the ScaleUnit naming the workload as its scale target, else the contract file of the
//! workload's `namespace/name`) is evaluated with the old replica count as current — the API
//! server's word on the object as it stands — and the change judged by the core's gate (SPEC §12,
//! `scale_units_core::gate`): allowed when the count does not change, when it moves in the
//! decision's direction without passing `desired_replicas`, or when a workload outside its
//! contract's bounds moves back toward them. Everything else the decision does not allow — above
//! all any change while the decision is `blocked` — is answered by the unit's mode: `Enforce`
//! denies it with the gate's message (the reasons, the numbers, the decision id), `Warn` allows it
//! with that message as a warning, `Monitor` allows it; the last two are recorded as would-be
//! denials (an Event, the audit line, a metric). `--webhook-dry-run` answers an `Enforce` unit as
//! `Warn`. A unit without a contract is allowed with a warning. Evidence that cannot be read
//! (Redis down) is a denial like any other. A body that is not an `AdmissionReview` gets a
//! well-formed denial, never a 500.
//!
//! A review is a question, never a record (issue 37): it changes nothing the service believes.
//! The cooldowns count from the changes the Kubernetes watch sees ([`crate::kubernetes`]), so a
//! review from anyone — authenticated or not, a server-side dry run, a forged one — is judged and
//! answered, and its answer goes only to whoever asked. The webhook tells the watch which changes
//! it allowed, so that the watch can tell a judged change from one that went around it, and audit
//! a broken glass when the change it let through is seen.
//!
//! Two ways past a denial, each allowed with a warning and counted: a recovery toward the bounds
//! (the gate's), and a member of an override group may break glass ([`breakglass`]: who may is
//! the webhook's policy, not the gate's). Every review is written to the audit log
//! ([`Reviewed::record`]).
//!
//! A body is read up to [`MAX_REVIEW_BYTES`] and parsed into the few fields judged by, the rest
//! skipped unread (no tree of the objects), at most two at once; a key named twice anywhere in it
//! is a malformed review.

pub mod breakglass;
mod input;

use kube_core::TypeMeta;
use kube_core::admission::{AdmissionResponse, Operation};
use scale_units_core::gate::{self, Bounds, ChangeKind, Evaluated, GateReason, GateVerdict};
use serde::Deserialize;
use serde_json::Value;

use crate::audit::{AuditRecord, Caller, DecisionFacts, ErrorFacts, OverrideFacts};
use crate::kubernetes::resource::Mode;
use crate::kubernetes::{AllowedChange, Cluster};
use crate::listen::Peer;
use crate::sources::WorkloadKind;
use crate::units::{UnitKey, UnitVerdict, Units};
use input::{ObjectIn, RequestIn, ReviewIn};

/// The audit annotation carrying the decision id of an admitted change (the API server prefixes
/// it with the webhook's name).
pub const DECISION_ANNOTATION: &str = "decision-id";

/// What the webhook answers for one review.
enum Outcome {
    Allow { warnings: Vec<String>, decision_id: Option<String> },
    Deny { message: String, decision_id: Option<String> },
}

/// A judged review: the answer, the unit whose replica count it would change (a unit with a
/// contract, its count changing), and what the audit log keeps of it.
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
    /// The gate's reason code, or the unit error's code of a change denied without a decision.
    code: Option<&'static str>,
}

/// How the webhook judges. [`Default`]: no dry run, no override group.
#[derive(Clone, Debug, Default)]
pub struct AdmissionOptions {
    /// Answer a denial of an `Enforce` unit as `Warn` does: `allowed`, with the denial as a
    /// warning (`--webhook-dry-run`).
    pub dry_run: bool,
    /// Members of these groups may override a denial ([`breakglass`]).
    pub override_groups: Vec<String>,
    /// The caller did not authenticate (no client certificate of `--webhook-client-ca`, no
    /// bearer token), or the service asks for no credential: the audit line says so and names
    /// its peer. It is judged and answered like any other: a review records nothing, so its
    /// answer goes only to whoever asked.
    pub unauthenticated: bool,
    /// The connection the review came on (its address goes to the audit log).
    pub peer: Option<Peer>,
    /// The Kubernetes watch: which unit names the workload, and where allowed changes and
    /// (would-be) denials are told.
    pub cluster: Option<std::sync::Arc<Cluster>>,
}

/// A change the decision does not allow, and how it was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The unit's mode in force (`Warn` for an `Enforce` unit under `--webhook-dry-run`).
    pub mode: Mode,
    /// Why: the gate's reason code (`decision_hold`, `past_desired`, …) or, for a change that
    /// could not be judged, the unit error's code (`evidence_unavailable`, …).
    pub code: &'static str,
}

/// Largest `AdmissionReview` body read: a review carries the object and the old object, each at
/// most what etcd stores (1.5 MiB, its default `--max-request-bytes`), and an envelope (uid,
/// resource, user, options) given 64 KiB.
pub const MAX_REVIEW_BYTES: usize = 2 * (3 << 19) + (64 << 10);

/// Reviews parsed at once; the others wait their turn (their bodies are read already).
const PARSED_AT_ONCE: usize = 2;

static PARSING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(PARSED_AT_ONCE);

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
    /// A change the decision does not allow: denied (`Enforce`) or let through (`Warn`,
    /// `Monitor`), for the metrics.
    pub denial: Option<Denial>,
}

/// Answers one `AdmissionReview` body: the response review, as JSON, always well-formed.
/// `dry_run` answers every denial `allowed`, with the denial as a warning.
pub async fn review(units: &Units, body: &[u8], dry_run: bool) -> Value {
    review_with(units, body, &AdmissionOptions { dry_run, ..AdmissionOptions::default() }).await.review
}

/// Answers one `AdmissionReview` body as `options` say, with its audit line: the review parsed,
/// the change judged by the gate ([`admit`]), break glass ([`break_glass`]), the unit's mode
/// applied ([`apply_mode`]), the watch told ([`tell`]), the audit line ([`audit`]) and the
/// response ([`respond`]). Nothing is recorded.
pub async fn review_with(units: &Units, body: &[u8], options: &AdmissionOptions) -> Reviewed {
    let unanswerable = |review| Reviewed { review, record: None, overridden: None, recovered: false, denial: None };
    let (types, request) = match parse(body).await {
        Ok(parsed) => parsed,
        Err(review) => return unanswerable(review),
    };
    let Judged { mut outcome, changes, facts } = admit(units, options.cluster.as_deref(), &request).await;
    let mode = changes.as_ref().and_then(|key| units.mode(key)).unwrap_or_default().under_dry_run(options.dry_run);
    let overridden = if mode == Mode::Enforce { break_glass(options, &request, &facts, &mut outcome) } else { None };
    let denial = match (&outcome, facts.code) {
        (Outcome::Deny { .. }, Some(code)) => Some(Denial { mode, code }),
        (Outcome::Deny { .. }, None) => Some(Denial { mode, code: "request_invalid" }),
        (Outcome::Allow { .. }, _) => None,
    };
    let denied_message = match &outcome {
        Outcome::Deny { message, .. } => Some(message.clone()),
        Outcome::Allow { .. } => None,
    };
    apply_mode(mode, &mut outcome);
    if let (Some(cluster), Some(key)) = (&options.cluster, &changes) {
        tell(cluster, key, &request, &facts, overridden.as_ref(), mode, denied_message.as_deref(), &outcome);
    }
    let recovered = facts.recovery;
    let group = overridden.as_ref().map(|granted| granted.group.clone());
    let record = audit(options, &request, facts, overridden, recovered, &outcome, denial);
    Reviewed {
        review: respond(types, request.uid, outcome),
        record: Some(record),
        overridden: group,
        recovered,
        denial,
    }
}

/// A denial of a `Warn` unit is allowed with it as a warning, of a `Monitor` unit allowed.
fn apply_mode(mode: Mode, outcome: &mut Outcome) {
    let Outcome::Deny { message, decision_id } = outcome else { return };
    let warnings = match mode {
        Mode::Enforce => return,
        Mode::Warn => vec![format!("scale-units (Warn mode), would deny: {message}")],
        Mode::Monitor => Vec::new(),
    };
    *outcome = Outcome::Allow { warnings, decision_id: decision_id.take() };
}

/// Tells the watch what was allowed (it looks for the change) and what was, or would have been,
/// denied (an Event on the ScaleUnit and its target). A server-side dry run changes nothing: the
/// watch waits for nothing, and no Event is made of it.
#[expect(clippy::too_many_arguments, reason = "the review's parts, each read by one rule here")]
fn tell(
    cluster: &Cluster,
    key: &UnitKey,
    request: &RequestIn,
    facts: &Facts,
    overridden: Option<&OverrideFacts>,
    mode: Mode,
    denied: Option<&str>,
    outcome: &Outcome,
) {
    // A server-side dry run changes nothing and is no attempt: no Event (its audit line stays).
    if let Some(message) = denied.filter(|_| !request.dry_run) {
        cluster.judged_against(key, mode, message);
    }
    let (Some((from, to)), Outcome::Allow { decision_id, .. }) = (facts.change, outcome) else { return };
    if request.dry_run || from == to {
        return;
    }
    let username = request.user_info.username.clone().unwrap_or_default();
    cluster.allowed(
        key,
        AllowedChange {
            from,
            to,
            broke_glass: overridden.map(|granted| (granted.group.clone(), username)),
            decision_id: decision_id.clone(),
            at: std::time::Instant::now(),
        },
    );
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

/// Break glass: a member of an override group is let through a denial, never silently. A review
/// records nothing, so a forged one that claims the membership gains only its own answer; the
/// override that counts is the one the watch sees applied (audited then, with this review's user).
fn break_glass(
    options: &AdmissionOptions,
    request: &RequestIn,
    facts: &Facts,
    outcome: &mut Outcome,
) -> Option<OverrideFacts> {
    let Outcome::Deny { message, decision_id } = outcome else { return None };
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

/// The review's audit line. An unauthenticated review's user is a claim: kept apart from the
/// caller, who is known by its address only.
fn audit(
    options: &AdmissionOptions,
    request: &RequestIn,
    facts: Facts,
    overridden: Option<OverrideFacts>,
    recovered: bool,
    outcome: &Outcome,
    denial: Option<Denial>,
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
    record.allowed = Some(matches!(outcome, Outcome::Allow { .. }));
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
        "mode": denial.map(|denial| denial.mode.as_str()),
        "would_deny": denial.is_some_and(|denial| denial.mode != Mode::Enforce),
        "recovery": recovered,
        "message": message,
        "authenticated": !options.unauthenticated,
    });
    if let (Some(claimed), Some(detail)) = (claimed_user, record.detail.as_object_mut()) {
        detail.insert("unauthenticated_attempt".to_owned(), Value::Bool(true));
        detail.insert("claimed_user".to_owned(), claimed);
        detail.insert("claimed_override".to_owned(), Value::Bool(claimed_override));
    }
    record
}

/// The response `AdmissionReview`: the decision id as an audit annotation, warnings, or the
/// denial (403).
fn respond(types: TypeMeta, uid: String, outcome: Outcome) -> Value {
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
            response = response.deny(message);
            response.result.code = 403;
            response.result.reason = "Forbidden".to_owned();
        }
    }
    to_json(response)
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

async fn admit(units: &Units, cluster: Option<&Cluster>, request: &RequestIn) -> Judged {
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
    // The ScaleUnit naming the workload as its target, else the unit of the workload's name.
    let named = cluster.and_then(|cluster| {
        let kind = match workload {
            Workload::Deployment => "Deployment",
            Workload::StatefulSet => "StatefulSet",
        };
        cluster.unit_for("apps", kind, namespace, &request.name)
    });
    let key = match named.map_or_else(|| UnitKey::new(namespace, request.name.as_str()), Ok) {
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
            facts.code = Some(error.code());
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
        facts.code = Some(verdict.reason.as_str());
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
