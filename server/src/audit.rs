//! The decision audit log (`serve --audit-log`): one JSON line per decision the service serves —
//! `POST /v1/evaluate`, `GET /v1/units/{ns}/{name}`, every admission review and every KEDA call —
//! to stdout (the Kubernetes convention: the container runtime keeps it) or appended to a file.
//! OPA's decision logs are the model: enough to answer "why was this scale denied at 03:12?"
//! after the fact, without the evidence itself (the decision digest names it).
//!
//! Every line is one [`AuditRecord`], its keys always present (`null` when they do not apply),
//! in this order:
//!
//! | key | value |
//! |---|---|
//! | `time` | when the decision was served, RFC 3339 UTC with milliseconds |
//! | `source` | `evaluate`, `unit`, `admission` or `keda` |
//! | `unit` | `namespace/name` (evaluate: the contract's `unit_ref`) |
//! | `caller` | `{username, groups}` of an admission review; `{address, client_certificate}` over HTTP and gRPC |
//! | `action` | the decision's action, `null` when there was none |
//! | `current`, `desired` | the decision's `current_replicas` → `desired_replicas` |
//! | `reasons` | the decision's reason codes |
//! | `decision_id`, `decision_digest` | the decision's identity (SPEC §8) |
//! | `component_digest` | the component that decided |
//! | `allowed` | admission: whether the change was allowed; `null` elsewhere |
//! | `override` | admission: `{by, group, reason, expires}` when a denial was overridden |
//! | `error` | `{code, message}` when no decision could be made |
//! | `detail` | what the source adds: admission `{uid, change: {from, to}, dry_run, recovery, message}`, KEDA `{call, answer}` |
//! | `repeated` | KEDA: identical answers to this unit and call left out since their previous line |
//!
//! Bounded: a KEDA call that repeats the previous line of the same unit and call (the same action,
//! counts, reasons, answer and error; the decision id differs with the clock) within
//! [`AuditLog::summary_interval`] is not written, only counted into that unit and call's next
//! line's `repeated`.
//! Admission reviews and evaluations are always written. Lines go through a queue to a writer
//! thread; when the queue is full, the decision waits (the log is never silently short).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::listen::Peer;

/// Lines waiting for the writer thread.
const QUEUE: usize = 8192;

/// Units whose previous KEDA line is remembered for summaries; past it the memory is cleared (the
/// next calls are written in full).
const MAX_SUMMARIZED_UNITS: usize = 10_000;

/// Who asked for a decision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The review's `userInfo.username`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The review's `userInfo.groups`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The remote address of the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The client certificate's `sha256:` digest, when one was presented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
}

impl Caller {
    /// The peer of a connection.
    pub fn peer(peer: Option<&Peer>) -> Self {
        match peer {
            Some(peer) => Self {
                address: Some(peer.address.to_string()),
                client_certificate: peer.client_certificate.clone(),
                ..Self::default()
            },
            None => Self::default(),
        }
    }
}

/// What the audit log keeps of a decision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct DecisionFacts {
    /// `scale_up`, `scale_down`, `hold` or `blocked`.
    pub action: String,
    /// `current_replicas`.
    pub current_replicas: u64,
    /// `desired_replicas`.
    pub desired_replicas: u64,
    /// Reason codes, in order.
    pub reasons: Vec<String>,
    /// `decision_id`.
    pub decision_id: String,
    /// `decision_digest`.
    pub decision_digest: String,
}

impl DecisionFacts {
    /// The facts of a decision's JSON as the component wrote it; `None` when it cannot be read.
    pub fn from_json(decision: &str) -> Option<Self> {
        serde_json::from_str(decision).ok()
    }

    /// The facts of a typed decision.
    pub fn of(decision: &scale_units_core::Decision) -> Self {
        Self {
            action: decision.action.as_str().to_owned(),
            current_replicas: decision.current_replicas,
            desired_replicas: decision.desired_replicas,
            reasons: decision.reasons.iter().map(|reason| reason.as_str().to_owned()).collect(),
            decision_id: decision.decision_id.clone(),
            decision_digest: decision.decision_digest.clone(),
        }
    }
}

/// A break-glass override, as the audit log records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OverrideFacts {
    /// The username of the review.
    pub by: String,
    /// The configured override group the user is a member of.
    pub group: String,
    /// The workload's `scale-units/override-reason` annotation, when given.
    pub reason: Option<String>,
    /// The workload's `scale-units/override-expires` annotation, when given.
    pub expires: Option<String>,
}

/// Why no decision was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorFacts {
    /// A stable code (`replicas_out_of_bounds`, `evidence_unavailable`, …).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// One line of the audit log (the module's table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC, milliseconds.
    pub time: String,
    /// `evaluate`, `unit`, `admission` or `keda`.
    pub source: &'static str,
    /// `namespace/name`, or the contract's `unit_ref` for an evaluation.
    pub unit: Option<String>,
    /// Who asked.
    pub caller: Caller,
    /// The decision's action.
    pub action: Option<String>,
    /// The decision's `current_replicas`.
    pub current: Option<u64>,
    /// The decision's `desired_replicas`.
    pub desired: Option<u64>,
    /// The decision's reason codes.
    pub reasons: Vec<String>,
    /// The decision's id.
    pub decision_id: Option<String>,
    /// The decision's digest.
    pub decision_digest: Option<String>,
    /// The component that decided.
    pub component_digest: Option<String>,
    /// Admission: allowed or denied.
    pub allowed: Option<bool>,
    /// Admission: the override that allowed a denied change.
    #[serde(rename = "override")]
    pub overridden: Option<OverrideFacts>,
    /// Why no decision was made.
    pub error: Option<ErrorFacts>,
    /// What the source adds.
    pub detail: Value,
    /// KEDA: identical answers left out since this unit's previous line.
    pub repeated: u64,
}

impl AuditRecord {
    /// A record of `source` at the current time, with nothing else filled in.
    pub fn new(source: &'static str) -> Self {
        Self {
            time: now(),
            source,
            unit: None,
            caller: Caller::default(),
            action: None,
            current: None,
            desired: None,
            reasons: Vec::new(),
            decision_id: None,
            decision_digest: None,
            component_digest: None,
            allowed: None,
            overridden: None,
            error: None,
            detail: Value::Null,
            repeated: 0,
        }
    }

    /// Fills in a decision's facts.
    #[must_use]
    pub fn decision(mut self, facts: Option<DecisionFacts>) -> Self {
        if let Some(facts) = facts {
            self.action = Some(facts.action);
            self.current = Some(facts.current_replicas);
            self.desired = Some(facts.desired_replicas);
            self.reasons = facts.reasons;
            self.decision_id = Some(facts.decision_id);
            self.decision_digest = Some(facts.decision_digest);
        }
        self
    }

    /// What a KEDA line is compared on to be summarized: everything but the time, the decision's
    /// identity (which changes with the clock) and the caller's address.
    fn summary_key(&self) -> String {
        serde_json::json!([
            self.action,
            self.current,
            self.desired,
            self.reasons,
            self.component_digest,
            self.error,
            self.detail
        ])
        .to_string()
    }
}

/// The current time, RFC 3339 UTC with milliseconds.
fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

enum Item {
    Line(String),
    Flush(oneshot::Sender<()>),
}

/// The previous KEDA line of a unit.
struct Previous {
    key: String,
    written: Instant,
    repeated: u64,
}

/// The audit log: a queue to a writer thread. Share it in an `Arc`.
pub struct AuditLog {
    sender: mpsc::Sender<Item>,
    keda: Mutex<HashMap<String, Previous>>,
    /// A repeated KEDA answer is written again at least this often (default 60 s).
    pub summary_interval: Duration,
    written: AtomicU64,
    summarized: AtomicU64,
    failed: std::sync::Arc<AtomicU64>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("written", &self.written()).finish_non_exhaustive()
    }
}

impl AuditLog {
    /// A log written to stdout.
    pub fn stdout() -> Self {
        Self::to_writer(Box::new(std::io::stdout()))
    }

    /// A log appended to `path` (created when missing).
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn file(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::to_writer(Box::new(file)))
    }

    /// A log written to `writer` by a thread of its own.
    pub fn to_writer(writer: Box<dyn Write + Send>) -> Self {
        let (sender, mut receiver) = mpsc::channel::<Item>(QUEUE);
        let failed = std::sync::Arc::new(AtomicU64::new(0));
        let failures = std::sync::Arc::clone(&failed);
        // Without the thread (the system refused one) every record counts as failed.
        let _ = std::thread::Builder::new().name("scale-units-audit".to_owned()).spawn(move || {
            let mut writer = std::io::BufWriter::with_capacity(64 << 10, writer);
            while let Some(item) = receiver.blocking_recv() {
                match item {
                    Item::Line(line) => {
                        if writer.write_all(line.as_bytes()).is_err() {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                        if receiver.is_empty() {
                            let _ = writer.flush();
                        }
                    }
                    Item::Flush(done) => {
                        let _ = writer.flush();
                        let _ = done.send(());
                    }
                }
            }
            let _ = writer.flush();
        });
        Self {
            sender,
            keda: Mutex::new(HashMap::new()),
            summary_interval: Duration::from_secs(60),
            written: AtomicU64::new(0),
            summarized: AtomicU64::new(0),
            failed,
        }
    }

    /// Lines queued so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// KEDA answers summarized (not written) so far.
    pub fn summarized(&self) -> u64 {
        self.summarized.load(Ordering::Relaxed)
    }

    /// Records that could not be queued (the writer thread is gone).
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Writes `record` as one line (waits while the queue is full).
    pub async fn record(&self, record: &AuditRecord) {
        let mut line = serde_json::to_string(record).unwrap_or_else(|error| {
            serde_json::json!({"time": record.time, "source": record.source, "error": {"code": "audit_error", "message": error.to_string()}}).to_string()
        });
        line.push('\n');
        if self.sender.send(Item::Line(line)).await.is_ok() {
            self.written.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes a KEDA `record`, unless it repeats the previous line of its unit and call (`detail.call`)
    /// within [`Self::summary_interval`]; the next line written for them says how many were left out.
    pub async fn record_keda(&self, mut record: AuditRecord) {
        // One memory per unit and call: KEDA alternates IsActive and GetMetrics on every poll.
        let unit = format!(
            "{} {}",
            record.unit.as_deref().unwrap_or_default(),
            record.detail.get("call").unwrap_or(&Value::Null)
        );
        let key = record.summary_key();
        {
            let mut previous = self.keda.lock().unwrap_or_else(PoisonError::into_inner);
            match previous.get_mut(&unit) {
                Some(last) if last.key == key && last.written.elapsed() < self.summary_interval => {
                    last.repeated += 1;
                    self.summarized.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Some(last) => {
                    record.repeated = last.repeated;
                    *last = Previous { key, written: Instant::now(), repeated: 0 };
                }
                None => {
                    if previous.len() >= MAX_SUMMARIZED_UNITS {
                        previous.clear();
                    }
                    previous.insert(unit, Previous { key, written: Instant::now(), repeated: 0 });
                }
            }
        }
        self.record(&record).await;
    }

    /// Waits until every line queued so far is written and flushed.
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.sender.send(Item::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }
}
