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
//! | `caller` | `{username, groups}` of an admission review; `{address, client_certificate}` over HTTP and gRPC (`null` when absent) |
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
//! Admission reviews and evaluations are always written or counted: nothing that only observes
//! may stall a decision (the Kubernetes API server's audit backends are the model). Lines go
//! through a bounded queue ([`QUEUE`] lines unless configured) to a writer thread, and [`AuditMode`] says what a
//! request does when that queue is full or the writer cannot write:
//!
//! - [`AuditMode::Batch`] (the default): the line is dropped and counted
//!   ([`AuditLog::dropped`], `scale_units_audit_dropped_total`); the decision is served. While
//!   the writer is making progress a request whose lines find the queue full waits for room, at
//!   most [`AuditLog::timeout`] (a large batch of evaluations against a healthy log loses
//!   nothing); once one write has been blocked for longer than that, lines are dropped at once.
//! - [`AuditMode::BlockingStrict`]: the request waits until its line is written, at most
//!   [`AuditLog::timeout`]; when it was not (a full queue, a stalled reader, a write
//!   error), the request fails with [`AuditError`] instead of serving an unaudited decision.
//!
//! The writer writes what is queued in one `write` per batch; a line cut short by a failed write
//! is ended by a newline before the next batch, so every other line of the log stays whole.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

mod record;

pub use record::{AuditRecord, Caller, DecisionFacts, ErrorFacts, OverrideFacts};

/// Lines waiting for the writer thread, by default.
pub const QUEUE: usize = 8192;

/// Most bytes the writer gathers from the queue into one write.
const BATCH_BYTES: usize = 256 << 10;

/// What a request does when its audit line cannot be written (the module's summary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuditMode {
    /// A line that finds the queue full, or that the writer fails to write, is dropped and counted.
    #[default]
    Batch,
    /// The request fails when its line is not written within [`AuditLog::timeout`].
    BlockingStrict,
}

impl AuditMode {
    /// `batch` or `blocking-strict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Batch => "batch",
            Self::BlockingStrict => "blocking-strict",
        }
    }
}

/// A request's audit line was not written (blocking-strict mode): the request must fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditError {
    message: String,
}

impl AuditError {
    /// The stable code of the request's error answer.
    pub const CODE: &'static str = "audit_unavailable";

    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the decision audit log could not record this request (blocking-strict): {}", self.message)
    }
}

impl std::error::Error for AuditError {}

/// Units whose previous KEDA line is remembered for summaries; past it the memory is cleared (the
/// next calls are written in full).
const MAX_SUMMARIZED_UNITS: usize = 10_000;

/// Whether a line was written: the write error otherwise.
type Written = Result<(), String>;

enum Item {
    /// A line, with the sender waiting for it to be written (blocking-strict).
    Line(String, Option<oneshot::Sender<Written>>),
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
    /// What a request does when its line cannot be written (default [`AuditMode::Batch`]).
    pub mode: AuditMode,
    /// How long a request waits for its lines (default 1 s): blocking-strict, until written;
    /// batch, for room in the queue while the writer is making progress.
    pub timeout: Duration,
    /// When this log was made: the writer's clock.
    started: Instant,
    written: AtomicU64,
    summarized: AtomicU64,
    counters: Arc<Counters>,
}

/// Shared with the writer thread.
#[derive(Default)]
struct Counters {
    /// Lines lost in batch mode: the queue was full, or the write failed.
    dropped: AtomicU64,
    /// Requests failed in blocking-strict mode, and records no writer thread took.
    failed: AtomicU64,
    /// When the write in progress began, in ms since [`AuditLog::started`] plus one; 0: none.
    writing_since: AtomicU64,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("mode", &self.mode)
            .field("written", &self.written())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// A log written to stdout, `queue` lines waiting at most (at least 1; [`QUEUE`] by default).
    pub fn stdout(queue: usize) -> Self {
        Self::to_writer(Box::new(std::io::stdout()), queue)
    }

    /// A log appended to `path` (created when missing), `queue` lines waiting at most.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn file(path: &Path, queue: usize) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::to_writer(Box::new(file), queue))
    }

    /// A log written to `writer` by a thread of its own, `queue` lines waiting at most, in
    /// [`AuditMode::Batch`].
    pub fn to_writer(writer: Box<dyn Write + Send>, queue: usize) -> Self {
        let (sender, receiver) = mpsc::channel::<Item>(queue.max(1));
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let started = Instant::now();
        // Without the thread (the system refused one) the queue is closed and every record is
        // counted as failed.
        let _ = std::thread::Builder::new()
            .name("scale-units-audit".to_owned())
            .spawn(move || write_lines(writer, receiver, &shared, started));
        Self {
            sender,
            keda: Mutex::new(HashMap::new()),
            summary_interval: Duration::from_secs(60),
            mode: AuditMode::Batch,
            timeout: Duration::from_secs(1),
            started,
            written: AtomicU64::new(0),
            summarized: AtomicU64::new(0),
            counters,
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

    /// Lines dropped in batch mode (the queue was full or the write failed).
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Requests failed in blocking-strict mode, and records no writer thread took.
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }

    /// Writes `record` as one line, as [`Self::mode`] says: batch never waits; blocking-strict
    /// waits until the line is written, at most [`Self::timeout`].
    ///
    /// # Errors
    /// Blocking-strict only: the line was not written in time, or its write failed.
    pub async fn record(&self, record: &AuditRecord) -> Result<(), AuditError> {
        self.record_all(std::slice::from_ref(record)).await
    }

    /// Writes each of `records` as a line (a batch of evaluations): blocking-strict waits for all
    /// of them together, at most [`Self::timeout`].
    ///
    /// # Errors
    /// Blocking-strict only: a line was not written in time, or its write failed.
    pub async fn record_all(&self, records: &[AuditRecord]) -> Result<(), AuditError> {
        let lines = records.iter().map(|record| {
            let mut line = serde_json::to_string(record).unwrap_or_else(|error| {
                serde_json::json!({"time": record.time, "source": record.source, "error": {"code": "audit_error", "message": error.to_string()}}).to_string()
            });
            line.push('\n');
            line
        });
        match self.mode {
            AuditMode::Batch => {
                let deadline = tokio::time::Instant::now() + self.timeout;
                for line in lines {
                    let counter = match self.sender.try_send(Item::Line(line, None)) {
                        Ok(()) => &self.written,
                        Err(mpsc::error::TrySendError::Full(_)) if self.writer_stalled() => &self.counters.dropped,
                        Err(mpsc::error::TrySendError::Full(item)) => {
                            match tokio::time::timeout_at(deadline, self.sender.send(item)).await {
                                Ok(Ok(())) => &self.written,
                                Ok(Err(_)) => &self.counters.failed,
                                Err(_) => &self.counters.dropped,
                            }
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => &self.counters.failed,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            AuditMode::BlockingStrict => {
                let result = self.record_strict(lines).await;
                if result.is_err() {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                }
                result
            }
        }
    }

    async fn record_strict(&self, lines: impl Iterator<Item = String>) -> Result<(), AuditError> {
        let limit = self.timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let mut pending = Vec::new();
        for line in lines {
            let (done, written) = oneshot::channel();
            match tokio::time::timeout_at(deadline, self.sender.send(Item::Line(line, Some(done)))).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(AuditError::new("the audit writer has stopped")),
                Err(_) => {
                    return Err(AuditError::new(format!(
                        "the audit queue stayed full for {} ms (its reader is stalled)",
                        limit.as_millis()
                    )));
                }
            }
            self.written.fetch_add(1, Ordering::Relaxed);
            pending.push(written);
        }
        for written in pending {
            match tokio::time::timeout_at(deadline, written).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(error))) => return Err(AuditError::new(format!("cannot write the line: {error}"))),
                Ok(Err(_)) => return Err(AuditError::new("the audit writer has stopped")),
                Err(_) => {
                    return Err(AuditError::new(format!(
                        "the line was not written within {} ms (the writer is blocked)",
                        limit.as_millis()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Writes a KEDA `record`, unless it repeats the previous line of its unit and call (`detail.call`)
    /// within [`Self::summary_interval`]; the next line written for them says how many were left out.
    ///
    /// # Errors
    /// As [`Self::record`]; a summarized answer never fails.
    pub async fn record_keda(&self, mut record: AuditRecord) -> Result<(), AuditError> {
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
                    return Ok(());
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
        self.record(&record).await
    }

    /// Waits until every line queued so far is written and flushed, at most `limit` (a stalled
    /// reader must not keep the process from exiting): whether they were.
    pub async fn flush(&self, limit: Duration) -> bool {
        let flushed = async {
            let (done, flushed) = oneshot::channel();
            self.sender.send(Item::Flush(done)).await.is_ok() && flushed.await.is_ok()
        };
        tokio::time::timeout(limit, flushed).await.unwrap_or(false)
    }

    /// The writer has been inside one write for longer than [`Self::timeout`].
    fn writer_stalled(&self) -> bool {
        let since = self.counters.writing_since.load(Ordering::Relaxed);
        since != 0 && elapsed_ms(self.started).saturating_sub(u128::from(since - 1)) > self.timeout.as_millis()
    }

    /// Lines queued and not yet taken by the writer.
    pub fn queued(&self) -> usize {
        self.sender.max_capacity() - self.sender.capacity()
    }
}

/// The writer thread: takes what is queued (up to [`BATCH_BYTES`]), writes it, tells the waiting
/// requests, counts what was lost.
/// Milliseconds since `started`.
fn elapsed_ms(started: Instant) -> u128 {
    started.elapsed().as_millis()
}

fn write_lines(
    mut writer: Box<dyn Write + Send>,
    mut receiver: mpsc::Receiver<Item>,
    counters: &Counters,
    started: Instant,
) {
    let mut buffer = Vec::with_capacity(BATCH_BYTES);
    // Each line's end in `buffer` and who waits for it.
    let mut lines: Vec<(usize, Option<oneshot::Sender<Written>>)> = Vec::new();
    let mut flushes = Vec::new();
    // The previous write stopped inside a line: end it before anything else.
    let mut torn = false;
    while let Some(first) = receiver.blocking_recv() {
        buffer.clear();
        if torn {
            buffer.push(b'\n');
        }
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Item::Line(line, done) => {
                    buffer.extend_from_slice(line.as_bytes());
                    lines.push((buffer.len(), done));
                }
                Item::Flush(done) => flushes.push(done),
            }
            if buffer.len() < BATCH_BYTES {
                next = receiver.try_recv().ok();
            }
        }
        let since = u64::try_from(elapsed_ms(started)).unwrap_or(u64::MAX - 1) + 1;
        counters.writing_since.store(since, Ordering::Relaxed);
        let (written, error) = write_some(&mut *writer, &buffer);
        counters.writing_since.store(0, Ordering::Relaxed);
        if let Some(last) = written.checked_sub(1) {
            torn = buffer.get(last) != Some(&b'\n');
        }
        for (end, done) in lines.drain(..) {
            let result =
                if end <= written { Ok(()) } else { Err(error.clone().unwrap_or_else(|| "not written".to_owned())) };
            match done {
                Some(done) => {
                    let _ = done.send(result);
                }
                None if result.is_err() => {
                    counters.dropped.fetch_add(1, Ordering::Relaxed);
                }
                None => {}
            }
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
    let _ = writer.flush();
}

/// Writes `bytes`, then flushes: how many were written, and the error that stopped it.
fn write_some(writer: &mut dyn Write, bytes: &[u8]) -> (usize, Option<String>) {
    let mut written = 0;
    while written < bytes.len() {
        match writer.write(bytes.get(written..).unwrap_or_default()) {
            Ok(0) => return (written, Some("the writer accepts no more bytes".to_owned())),
            Ok(count) => written += count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return (written, Some(error.to_string())),
        }
    }
    match writer.flush() {
        Ok(()) => (written, None),
        Err(error) => (0, Some(error.to_string())),
    }
}
