//! The ledger's Redis home, shared by every replica: the unit's keys share its hash tag
//! (`scale-units:{ns/name}:…`), and each write that must be atomic is one Lua script.

use redis::aio::ConnectionManager;

use super::{
    Admission, JOURNAL_MAX_PER_UNIT, Told, UnitError, Word, journal_key, judge, redis_error, settled, settled_entry,
    to_json, unsettled,
};

/// The Redis key of the epoch (no hash tag: read beside one unit's keys only on a single node; on
/// a cluster it is read on its own).
pub(super) const REDIS_EPOCH: &str = "scale-units:epoch";

/// One compare-and-set round of [`Ledger::settle`] in Redis: `None` when the record changed
/// between the read and the write (judge again), else what was settled.
pub(super) async fn redis_settle(
    manager: &ConnectionManager,
    unit: &str,
    word: &Word,
) -> Result<Option<Told>, UnitError> {
    let mut connection = manager.clone();
    let held: Option<String> = match &word.review_uid {
        // A review already recorded (a replay) says nothing.
        Some(uid) => {
            let (held, replayed): (Option<String>, bool) = redis::pipe()
                .cmd("GET")
                .arg(redis_last_key(unit))
                .cmd("EXISTS")
                .arg(redis_review_key(unit, uid))
                .query_async(&mut connection)
                .await
                .map_err(|error| redis_error(&error))?;
            held.filter(|_| !replayed)
        }
        None => redis::cmd("GET")
            .arg(redis_last_key(unit))
            .query_async(&mut connection)
            .await
            .map_err(|error| redis_error(&error))?,
    };
    let Some(held) = held else { return Ok(Some(Told::Nothing)) };
    let Some(last) = serde_json::from_str::<Admission>(&held).ok() else { return Ok(Some(Told::Nothing)) };
    let Some(state) = judge(&last, word) else { return Ok(Some(unsettled(&last, word))) };
    let updated = settled(last, state, word);
    let (field, review) = (journal_key(&updated), redis_review_key(unit, &updated.review_uid));
    let (entry, reviewed): (Option<String>, Option<String>) = redis::pipe()
        .cmd("HGET")
        .arg(redis_journal_key(unit))
        .arg(&field)
        .cmd("GET")
        .arg(&review)
        .query_async(&mut connection)
        .await
        .map_err(|error| redis_error(&error))?;
    let pair = |text: Option<String>| match text.as_deref().and_then(|text| settled_entry(text, &updated)) {
        Some(new) => (text.unwrap_or_default(), new),
        None => (String::new(), String::new()),
    };
    let ((entry, new_entry), (reviewed, new_review)) = (pair(entry), pair(reviewed));
    let written: i64 = redis::cmd("EVAL")
        .arg(SETTLE_SCRIPT)
        .arg(3)
        .arg(redis_last_key(unit))
        .arg(redis_journal_key(unit))
        .arg(&review)
        .arg(&held)
        .arg(to_json(&updated)?)
        .arg(&field)
        .arg(entry)
        .arg(new_entry)
        .arg(reviewed)
        .arg(new_review)
        .query_async(&mut connection)
        .await
        .map_err(|error| redis_error(&error))?;
    Ok((written == 1).then_some(Told::Settled(Box::new(updated))))
}

pub(super) fn redis_last_key(unit: &str) -> String {
    format!("scale-units:{{{unit}}}:admitted")
}

pub(super) fn redis_journal_key(unit: &str) -> String {
    format!("scale-units:{{{unit}}}:journal")
}

pub(super) fn redis_prior_key(unit: &str) -> String {
    format!("scale-units:{{{unit}}}:prior")
}

pub(super) fn redis_review_key(unit: &str, uid: &str) -> String {
    format!("scale-units:{{{unit}}}:review:{uid}")
}

/// Writes the epoch unless one is there; returns the one that is.
pub(super) async fn redis_epoch(manager: &ConnectionManager, now_ms: i64) -> Result<i64, UnitError> {
    let mut connection = manager.clone();
    let (epoch,): (Option<i64>,) = redis::pipe()
        .cmd("SET")
        .arg(REDIS_EPOCH)
        .arg(now_ms)
        .arg("NX")
        .ignore()
        .cmd("GET")
        .arg(REDIS_EPOCH)
        .query_async(&mut connection)
        .await
        .map_err(|error| redis_error(&error))?;
    epoch.ok_or_else(|| UnitError::Store("the Redis epoch key cannot be read back".to_owned()))
}

/// Drops the oldest journal entries beyond the count bound.
pub(super) async fn redis_trim(manager: &ConnectionManager, unit: &str) -> Result<(), UnitError> {
    let mut connection = manager.clone();
    let key = redis_journal_key(unit);
    let count: usize =
        redis::cmd("HLEN").arg(&key).query_async(&mut connection).await.map_err(|error| redis_error(&error))?;
    if count <= JOURNAL_MAX_PER_UNIT {
        return Ok(());
    }
    let all: Vec<(String, String)> =
        redis::cmd("HGETALL").arg(&key).query_async(&mut connection).await.map_err(|error| redis_error(&error))?;
    let mut dated: Vec<(i64, String)> = all
        .into_iter()
        .map(|(field, text)| (serde_json::from_str::<Admission>(&text).map_or(i64::MIN, |entry| entry.at_ms), field))
        .collect();
    dated.sort();
    let excess: Vec<String> = dated.into_iter().take(count - JOURNAL_MAX_PER_UNIT).map(|(_, field)| field).collect();
    let _: () = redis::cmd("HDEL")
        .arg(&key)
        .arg(excess)
        .query_async(&mut connection)
        .await
        .map_err(|error| redis_error(&error))?;
    Ok(())
}

/// KEYS: the review uid's key, the unit's last admission, the unit's journal, the unit's prior
/// action. ARGV: the admission's JSON, its time in ms, its journal field, the age bound in ms.
/// Returns 0 for a replayed review (nothing written), else 1. One script: atomic on the unit's
/// shard. The replaced admission becomes the prior action, unless it was retracted (then the
/// prior stays).
pub(super) const RECORD_SCRIPT: &str = r"
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[4]) then return 0 end
local held = redis.call('GET', KEYS[2])
local later = true
local retracted = false
if held then
  local ok, doc = pcall(cjson.decode, held)
  if ok and type(doc) == 'table' and tonumber(doc.at_ms) and tonumber(doc.at_ms) > tonumber(ARGV[2]) then
    later = false
  end
  if ok and type(doc) == 'table' and type(doc.settled) == 'table' and doc.settled.state == 'retracted' then
    retracted = true
  end
end
if later then
  if not held then
    redis.call('DEL', KEYS[4])
  elseif not retracted then
    redis.call('SET', KEYS[4], held)
  end
  redis.call('SET', KEYS[2], ARGV[1])
end
redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
";

/// KEYS: the unit's last admission, its journal, the settled admission's review entry. ARGV: the
/// record as read, the settled record, the journal field, the entry as read and settled (empty:
/// not the admission's), the review entry as read and settled (likewise). Returns 0, writing
/// nothing, when the record is no longer the one read; else 1.
pub(super) const SETTLE_SCRIPT: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], ARGV[3]) == ARGV[4] then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[5])
end
if ARGV[6] ~= '' and redis.call('GET', KEYS[3]) == ARGV[6] then
  redis.call('SET', KEYS[3], ARGV[7], 'KEEPTTL')
end
return 1
";
