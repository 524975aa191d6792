//! The ledger of admitted scale actions: what must outlive the service. Per unit, the last
//! admitted change (time, from → to, decision id, review uid), a journal of the accepted decisions
//! keyed by decision id, and the review uids already admitted (a replayed review records nothing
//! new). Bounded per unit ([`JOURNAL_MAX_PER_UNIT`]) and by age ([`JOURNAL_MAX_AGE_MS`]).
//!
//! Three homes, one contract: a redb file in a state folder (each admission committed with redb's
//! default `Durability::Immediate`, an fsync, before the answer leaves), Redis (shared by every
//! replica; durable only as Redis's AOF makes it), or redb in memory (lost with the process).
//! Each home's reads and writes are in `ledger/redb_store.rs` and `ledger/redis_store.rs`; what
//! they share (the records, how a reading settles an admission) is here.
//!
//! An admission is the webhook's word before the API server has applied the change (another
//! webhook, a conflict or validation may still refuse it): the API server's later word settles it
//! ([`Ledger::settle`]). Per unit the ledger also keeps the *prior* action: the last admission
//! before the current one that was not retracted, from which the cooldowns count when the current
//! one is retracted.
//!
//! Each home has an epoch: the moment from which it vouches for every admission. A unit with no
//! record has no known action since the epoch, never "no action ever": the cooldown counts from
//! the epoch. A new state folder, a new process (memory) and a Redis that lost its data (its
//! epoch key is gone) all start a new epoch at the moment the service learns it.

use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadableDatabase};
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};

use super::UnitError;

mod redb_store;
mod redis_store;

use redb_store::{JOURNAL, PRIOR, REVIEWS, open_epoch, range_of, redb_get, redb_last, redb_record, redb_settle};
use redis_store::{
    RECORD_SCRIPT, REDIS_EPOCH, redis_epoch, redis_journal_key, redis_last_key, redis_prior_key, redis_review_key,
    redis_settle, redis_trim,
};

/// Most journal entries (and remembered review uids) kept per unit.
pub const JOURNAL_MAX_PER_UNIT: usize = 64;
/// Journal entries and review uids older than this (7 days, in milliseconds) are dropped.
pub const JOURNAL_MAX_AGE_MS: i64 = 7 * 24 * 3600 * 1000;

/// The state folder's database file.
pub const STATE_FILE: &str = "scale-units.redb";

/// One admitted change of a unit's replica count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    /// When it was admitted (the service's clock), RFC 3339 in whole seconds.
    pub at: String,
    /// The same, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The replica count before.
    pub from: u64,
    /// The replica count admitted.
    pub to: u64,
    /// The decision that admitted it (`None`: a recovery toward the bounds, an override).
    pub decision_id: Option<String>,
    /// The `AdmissionReview`'s `request.uid`.
    pub review_uid: String,
    /// Set when this record replaces one that could not be read: the time is when the service
    /// learned it did not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The `metadata.resourceVersion` of the review's `oldObject`: the version of the object the
    /// change was admitted against (`None`: not from a review, or none given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// What the API server's later word said of the change (`None`: unconfirmed, it stands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Settled>,
}

impl Admission {
    /// Whether the API server's later word showed that the change never happened.
    pub fn retracted(&self) -> bool {
        self.settled.as_ref().is_some_and(|settled| settled.state == Settlement::Retracted)
    }
}

/// What the API server's word after an admission said of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settled {
    /// Whether the change happened.
    pub state: Settlement,
    /// When the service learned it, RFC 3339 in whole seconds.
    pub at: String,
    /// The same, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Who said so: `review:<uid>` (a later review's `oldObject`) or a collected count's
    /// `source_ref`.
    pub by: String,
    /// The replica count it showed.
    pub count: u64,
}

/// Whether an admitted change happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    /// The workload runs the admitted count: the change happened (final).
    Confirmed,
    /// The object the change was admitted against is still there, unchanged, at the old count: the
    /// API server refused the change. Its cooldown and count are withdrawn; a later word showing
    /// the admitted count confirms it after all.
    Retracted,
}

/// What a later reading of the workload says: its replica count, and the object version it was
/// read at.
#[derive(Clone, Debug)]
pub(crate) struct Word {
    /// The review's uid: an admission's own review, or any review already recorded (a replay),
    /// says nothing. `None` for a collected count.
    pub(crate) review_uid: Option<String>,
    /// The `oldObject`'s `metadata.resourceVersion`.
    pub(crate) resource_version: Option<String>,
    /// The replica count it shows.
    pub(crate) count: u64,
    /// Who says it ([`Settled::by`]).
    pub(crate) by: String,
    /// When the service heard it.
    pub(crate) at_ms: i64,
}

/// What `word` settles of `last`: confirmed when it shows the admitted count (a retracted change
/// reinstated: the API server applied it after all); retracted when it shows the count before
/// the change on the very object version the change was admitted against (the object has not
/// changed since: the change never happened); nothing else — a confirmed change stays confirmed,
/// and the old count on another version cannot tell a refused change from one undone since by a
/// change this service did not record.
fn judge(last: &Admission, word: &Word) -> Option<Settlement> {
    if last.from == last.to || word.review_uid.as_deref() == Some(last.review_uid.as_str()) {
        return None;
    }
    let state = last.settled.as_ref().map(|settled| settled.state);
    if word.count == last.to {
        return (state != Some(Settlement::Confirmed)).then_some(Settlement::Confirmed);
    }
    (word.count == last.from && read_before(last, word) && state.is_none()).then_some(Settlement::Retracted)
}

/// Whether `word` was read from the object version `last` was admitted against: what the object
/// was before that change.
fn read_before(last: &Admission, word: &Word) -> bool {
    matches!((&last.resource_version, &word.resource_version), (Some(admitted), Some(read)) if admitted == read)
}

/// What a later reading did to the unit's last admission ([`Ledger::settle`]).
#[derive(Clone, Debug)]
pub(crate) enum Told {
    /// It settled it: the admission as it is now.
    Settled(Box<Admission>),
    /// Nothing: it was read from the object version the admission was judged against (a late
    /// review from before the change, which tells nothing of now).
    FromBefore,
    /// Nothing: no admission, a replay, or nothing it can tell.
    Nothing,
}

/// `admission` as `word` settles it (`state`).
fn settled(mut admission: Admission, state: Settlement, word: &Word) -> Admission {
    admission.settled =
        Some(Settled { state, at: format_ms(word.at_ms), at_ms: word.at_ms, by: word.by.clone(), count: word.count });
    admission
}

/// `text`, a journal or review entry of `admission`, settled as `updated` is (`None`: not its
/// entry, or unreadable).
fn settled_entry(text: &str, updated: &Admission) -> Option<String> {
    let mut entry = serde_json::from_str::<Admission>(text).ok()?;
    if entry.review_uid != updated.review_uid {
        return None;
    }
    entry.settled.clone_from(&updated.settled);
    serde_json::to_string(&entry).ok()
}

/// What [`Units::record_admission`](super::Units::record_admission) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The admission is recorded (and its decision journaled, unless it already was).
    New,
    /// The review uid was already recorded for the unit: nothing changed.
    Replayed,
}

/// A unit's last admission as the ledger knows it, and the epoch it vouches from.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    /// The admission the cooldowns count from: the last one, or the prior one when the last was
    /// retracted (the retracted one itself when the prior cannot be read: never a shorter
    /// cooldown than the truth).
    pub(crate) last: Option<Admission>,
    /// The last admission, when it was retracted.
    pub(crate) retracted: Option<Admission>,
    /// From when the ledger vouches (`None`: the embedder said no unit acted before).
    pub(crate) epoch_ms: Option<i64>,
}

pub(crate) enum Ledger {
    Redb { db: Arc<Database>, epoch_ms: Option<i64>, kind: &'static str },
    Redis { manager: ConnectionManager, no_prior: bool },
}

fn store_error(what: &str) -> impl Fn(redb::Error) -> UnitError + '_ {
    move |error| UnitError::Store(format!("the state store cannot {what}: {error}"))
}

fn redis_error(error: &redis::RedisError) -> UnitError {
    UnitError::Store(format!("the scale-action ledger in Redis failed: {error}"))
}

/// `ns/name` and a separator no key contains, so that one unit's entries form a range.
fn prefix(unit: &str) -> String {
    format!("{unit}\u{1f}")
}

impl Ledger {
    /// A ledger in this process (its epoch is now, unless `no_prior`).
    pub(crate) fn memory(now_ms: i64, no_prior: bool) -> Result<Self, UnitError> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|error| store_error("start")(error.into()))?;
        let epoch_ms = open_epoch(&db, now_ms)?;
        Ok(Self::Redb { db: Arc::new(db), epoch_ms: (!no_prior).then_some(epoch_ms), kind: "memory" })
    }

    /// The ledger of the state folder `dir` (created when missing); its epoch is the one written
    /// when the file was created.
    pub(crate) fn open(dir: &Path, now_ms: i64, no_prior: bool) -> Result<Self, UnitError> {
        std::fs::create_dir_all(dir)
            .map_err(|error| UnitError::Config(format!("cannot create the state folder {}: {error}", dir.display())))?;
        let path = dir.join(STATE_FILE);
        let db = Database::create(&path)
            .map_err(|error| UnitError::Config(format!("cannot open the state store {}: {error}", path.display())))?;
        let epoch_ms = open_epoch(&db, now_ms)?;
        Ok(Self::Redb { db: Arc::new(db), epoch_ms: (!no_prior).then_some(epoch_ms), kind: "state-dir" })
    }

    /// The ledger in Redis; writes the epoch unless one is there.
    pub(crate) async fn redis(manager: ConnectionManager, now_ms: i64, no_prior: bool) -> Result<Self, UnitError> {
        redis_epoch(&manager, now_ms).await?;
        Ok(Self::Redis { manager, no_prior })
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Redb { kind, .. } => kind,
            Self::Redis { .. } => "redis",
        }
    }

    /// The unit's last admission and the ledger's epoch. A record that cannot be read is replaced
    /// by one at `now_ms` (the cooldown counts from when the service learned it did not know).
    pub(crate) async fn known(&self, unit: &str, now_ms: i64) -> Result<Known, UnitError> {
        match self {
            Self::Redb { db, epoch_ms, .. } => {
                let (db, key) = (Arc::clone(db), unit.to_owned());
                let (last, prior) = blocking(move || {
                    let last = redb_last(&db, &key, now_ms)?;
                    let prior = match &last {
                        Some(last) if last.retracted() => redb_get(&db, PRIOR, &key)?,
                        _ => None,
                    };
                    Ok((last, prior))
                })
                .await?;
                let (last, retracted) = effective(last, prior.as_deref());
                Ok(Known { last, retracted, epoch_ms: *epoch_ms })
            }
            Self::Redis { manager, no_prior } => {
                let mut connection = manager.clone();
                let key = redis_last_key(unit);
                let (epoch, last, prior): (Option<i64>, Option<String>, Option<String>) = redis::pipe()
                    .cmd("GET")
                    .arg(REDIS_EPOCH)
                    .cmd("GET")
                    .arg(&key)
                    .cmd("GET")
                    .arg(redis_prior_key(unit))
                    .query_async(&mut connection)
                    .await
                    .map_err(|error| redis_error(&error))?;
                // The epoch is gone: Redis lost its data. A new epoch starts now.
                let epoch = match epoch {
                    Some(epoch) => epoch,
                    None => redis_epoch(manager, now_ms).await?,
                };
                let last = match last {
                    None => None,
                    Some(text) => match serde_json::from_str::<Admission>(&text) {
                        Ok(admission) => Some(admission),
                        Err(error) => {
                            let replaced = unreadable(now_ms, &error.to_string());
                            let _: () = redis::cmd("SET")
                                .arg(&key)
                                .arg(to_json(&replaced)?)
                                .query_async(&mut connection)
                                .await
                                .map_err(|error| redis_error(&error))?;
                            Some(replaced)
                        }
                    },
                };
                let (last, retracted) = effective(last, prior.as_deref());
                Ok(Known { last, retracted, epoch_ms: (!no_prior).then_some(epoch) })
            }
        }
    }

    /// The admission recorded for `uid` on the unit, if any.
    pub(crate) async fn review(&self, unit: &str, uid: &str) -> Result<Option<Admission>, UnitError> {
        let text = match self {
            Self::Redb { db, .. } => {
                let (db, key) = (Arc::clone(db), format!("{}{uid}", prefix(unit)));
                blocking(move || {
                    let read = db.begin_read().map_err(|error| store_error("read")(error.into()))?;
                    let table = match read.open_table(REVIEWS) {
                        Ok(table) => table,
                        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                        Err(error) => return Err(store_error("read")(error.into())),
                    };
                    let value = table.get(key.as_str()).map_err(|error| store_error("read")(error.into()))?;
                    Ok(value.map(|value| value.value().to_owned()))
                })
                .await?
            }
            Self::Redis { manager, .. } => {
                let mut connection = manager.clone();
                redis::cmd("GET")
                    .arg(redis_review_key(unit, uid))
                    .query_async::<Option<String>>(&mut connection)
                    .await
                    .map_err(|error| redis_error(&error))?
            }
        };
        Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
    }

    /// Records an admission: the unit's last action (only ever moved later), the decision in the
    /// journal (once per decision id) and the review uid (once: a replay changes nothing).
    /// Committed durably (redb: fsync; Redis: as its AOF) before it returns.
    pub(crate) async fn record(&self, unit: &str, admission: Admission) -> Result<Recorded, UnitError> {
        let entry = journal_key(&admission);
        let text = to_json(&admission)?;
        match self {
            Self::Redb { db, .. } => {
                let (db, unit) = (Arc::clone(db), unit.to_owned());
                blocking(move || redb_record(&db, &unit, &admission, &entry, &text)).await
            }
            Self::Redis { manager, .. } => {
                let mut connection = manager.clone();
                let recorded: i64 = redis::cmd("EVAL")
                    .arg(RECORD_SCRIPT)
                    .arg(4)
                    .arg(redis_review_key(unit, &admission.review_uid))
                    .arg(redis_last_key(unit))
                    .arg(redis_journal_key(unit))
                    .arg(redis_prior_key(unit))
                    .arg(&text)
                    .arg(admission.at_ms)
                    .arg(&entry)
                    .arg(JOURNAL_MAX_AGE_MS)
                    .query_async(&mut connection)
                    .await
                    .map_err(|error| redis_error(&error))?;
                if recorded == 0 {
                    return Ok(Recorded::Replayed);
                }
                redis_trim(manager, unit).await?;
                Ok(Recorded::New)
            }
        }
    }

    /// Settles the unit's last admission by a later reading of its workload ([`judge`]): marks
    /// it confirmed or retracted, in its record, its journal entry and its review entry, at once.
    /// Returns what it did.
    pub(crate) async fn settle(&self, unit: &str, word: &Word) -> Result<Told, UnitError> {
        match self {
            Self::Redb { db, .. } => {
                let (db, unit, word) = (Arc::clone(db), unit.to_owned(), word.clone());
                blocking(move || redb_settle(&db, &unit, &word)).await
            }
            Self::Redis { manager, .. } => {
                // Compare-and-set on the record's text: a record changed in between (an admission,
                // another replica settling it) is read and judged again.
                for _ in 0..3 {
                    if let Some(told) = redis_settle(manager, unit, word).await? {
                        return Ok(told);
                    }
                }
                Ok(Told::Nothing)
            }
        }
    }

    /// The unit's journal, oldest first.
    pub(crate) async fn journal(&self, unit: &str) -> Result<Vec<Admission>, UnitError> {
        let texts: Vec<String> = match self {
            Self::Redb { db, .. } => {
                let (db, unit) = (Arc::clone(db), unit.to_owned());
                blocking(move || {
                    let read = db.begin_read().map_err(|error| store_error("read")(error.into()))?;
                    let table = match read.open_table(JOURNAL) {
                        Ok(table) => table,
                        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                        Err(error) => return Err(store_error("read")(error.into())),
                    };
                    range_of(&table, &unit).map(|entries| entries.into_iter().map(|(_, text)| text).collect())
                })
                .await?
            }
            Self::Redis { manager, .. } => {
                let mut connection = manager.clone();
                redis::cmd("HVALS")
                    .arg(redis_journal_key(unit))
                    .query_async(&mut connection)
                    .await
                    .map_err(|error| redis_error(&error))?
            }
        };
        let mut entries: Vec<Admission> = texts.iter().filter_map(|text| serde_json::from_str(text).ok()).collect();
        entries.sort_by_key(|entry| entry.at_ms);
        Ok(entries)
    }
}

/// The record that replaces an unreadable one.
fn unreadable(now_ms: i64, why: &str) -> Admission {
    Admission {
        at: format_ms(now_ms),
        at_ms: now_ms,
        from: 0,
        to: 0,
        decision_id: None,
        review_uid: String::new(),
        note: Some(format!("replaces a record that could not be read ({why})")),
        resource_version: None,
        settled: None,
    }
}

/// The admission the cooldowns count from, and the last one when it was retracted: its prior
/// (none: the epoch), or itself when the prior cannot be read.
fn effective(last: Option<Admission>, prior: Option<&str>) -> (Option<Admission>, Option<Admission>) {
    match last {
        Some(last) if last.retracted() => match prior.map(serde_json::from_str::<Admission>) {
            None => (None, Some(last)),
            Some(Ok(prior)) => (Some(prior), Some(last)),
            Some(Err(_)) => (Some(last), None),
        },
        last => (last, None),
    }
}

/// `ms` as RFC 3339 in whole seconds, `Z`.
pub(crate) fn format_ms(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn to_json(admission: &Admission) -> Result<String, UnitError> {
    serde_json::to_string(admission).map_err(|error| UnitError::Store(format!("cannot encode a record: {error}")))
}

fn journal_key(admission: &Admission) -> String {
    match &admission.decision_id {
        Some(id) => id.clone(),
        None => format!("review:{}", admission.review_uid),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, UnitError> + Send + 'static,
) -> Result<T, UnitError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| UnitError::Store(format!("the state store task failed: {error}")))?
}

/// What a reading that settles nothing tells.
fn unsettled(last: &Admission, word: &Word) -> Told {
    if read_before(last, word) { Told::FromBefore } else { Told::Nothing }
}
