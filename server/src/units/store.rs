//! Where observations live: in this process (one replica, no setup) or in Redis (every replica
//! of the service reads the same evidence). One key per observation, expiring with it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::UnitError;

/// What an evidence write under a lease must find to be applied: the lease's key holding
/// `holder` (see `crate::collect::lease`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The lease's key.
    pub key: String,
    /// `<replica>:<token>`, the value the lease must still hold.
    pub holder: String,
}

/// A write under a lease: KEYS[1] the lease, ARGV[1] the value it must hold; then per key
/// KEYS[i] three ARGV (`S`/`D`, the value, the expiry in ms since the epoch or empty).
const FENCED_WRITE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('FENCED the lease is held by another') end
for i = 2, #KEYS do
  local at = (i - 2) * 3 + 2
  if ARGV[at] == 'D' then
    redis.call('DEL', KEYS[i])
  elseif ARGV[at + 2] == '' then
    redis.call('SET', KEYS[i], ARGV[at + 1])
  else
    redis.call('SET', KEYS[i], ARGV[at + 1], 'PXAT', ARGV[at + 2])
  end
end
return #KEYS - 1
";

/// One change to the store.
pub(crate) struct Write {
    pub(crate) key: String,
    /// `None` deletes the key.
    pub(crate) value: Option<String>,
    /// When the key disappears, in milliseconds since the Unix epoch (`None`: never).
    pub(crate) expires_at_ms: Option<i64>,
}

pub(crate) enum Store {
    Memory(Mutex<Memory>),
    Redis(ConnectionManager),
}

/// The memory store: key → value and expiry (milliseconds since the epoch; `i64::MAX` never).
/// Reads skip what has expired; expired keys are removed by a sweep of the whole map at most
/// every [`SWEEP_EVERY_MS`] (sweeping on every write made a round of 10 000 units quadratic:
/// 29 % of the service's CPU in `retain`, BENCHMARKS.md "Collection at scale").
#[derive(Default)]
pub(crate) struct Memory {
    entries: HashMap<String, (String, i64)>,
    swept_at_ms: i64,
}

/// How often the memory store drops expired keys (they are never read in between).
const SWEEP_EVERY_MS: i64 = 1_000;

/// How long one Redis command may take before the store counts as unavailable: well inside an
/// admission webhook's budget, so that a Redis that hangs is a denial, not an API server timeout.
const REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

impl Store {
    pub(crate) fn memory() -> Self {
        Self::Memory(Mutex::new(Memory::default()))
    }

    /// Connects to Redis at `url` (`redis://host:port/db`, or `rediss://` over TLS: checked
    /// against `ca`, PEM, when given, else the system's roots); later failures reconnect on their
    /// own.
    pub(crate) async fn redis(url: &str, ca: Option<&[u8]>) -> Result<Self, UnitError> {
        let invalid = |error: redis::RedisError| {
            UnitError::Config(format!("invalid Redis URL {}: {}", redact(url), scrub(&error.to_string(), url)))
        };
        let client = match ca {
            None => redis::Client::open(url).map_err(invalid)?,
            Some(_) if !url.starts_with("rediss://") => {
                return Err(UnitError::Config(format!(
                    "a Redis CA is given, so the URL must be rediss:// (TLS), not {}",
                    redact(url)
                )));
            }
            Some(pem) => {
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(pem.to_vec()) };
                redis::Client::build_with_tls(url, certificates).map_err(invalid)?
            }
        };
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(REDIS_RESPONSE_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_with_config(client, config).await.map_err(|error| {
            UnitError::Store(format!("cannot connect to Redis at {}: {}", redact(url), scrub(&error.to_string(), url)))
        })?;
        Ok(Self::Redis(manager))
    }

    /// The Redis connection, shared with the ledger of admitted actions.
    pub(crate) fn redis_manager(&self) -> Option<ConnectionManager> {
        match self {
            Self::Memory(_) => None,
            Self::Redis(manager) => Some(manager.clone()),
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            Self::Redis(_) => "redis",
        }
    }

    /// Applies every write at once (one `MULTI`/`EXEC` on Redis); with a `fence`, in one Lua
    /// script that first checks the lease still holds the fence's value, else writes nothing
    /// ([`UnitError::Fenced`]). The memory store has no leases: a fence is ignored.
    pub(crate) async fn write(&self, writes: Vec<Write>, now_ms: i64, fence: Option<&Fence>) -> Result<(), UnitError> {
        match self {
            Self::Memory(memory) => {
                let mut memory = memory.lock().unwrap_or_else(PoisonError::into_inner);
                if now_ms.saturating_sub(memory.swept_at_ms) >= SWEEP_EVERY_MS || now_ms < memory.swept_at_ms {
                    memory.entries.retain(|_, (_, expires)| *expires > now_ms);
                    memory.swept_at_ms = now_ms;
                }
                let map = &mut memory.entries;
                for write in writes {
                    match write.value {
                        Some(value) => {
                            map.insert(write.key, (value, write.expires_at_ms.unwrap_or(i64::MAX)));
                        }
                        None => {
                            map.remove(&write.key);
                        }
                    }
                }
                Ok(())
            }
            Self::Redis(manager) if fence.is_some() => {
                let Some(fence) = fence else { return Ok(()) };
                let mut command = redis::cmd("EVAL");
                command.arg(FENCED_WRITE).arg(writes.len().saturating_add(1)).arg(&fence.key);
                let mut values: Vec<String> = vec![fence.holder.clone()];
                for write in writes {
                    command.arg(write.key);
                    match (write.value, write.expires_at_ms) {
                        (Some(value), Some(at)) => values.extend(["S".to_owned(), value, at.to_string()]),
                        (Some(value), None) => values.extend(["S".to_owned(), value, String::new()]),
                        (None, _) => values.extend(["D".to_owned(), String::new(), String::new()]),
                    }
                }
                command.arg(values);
                let mut connection = manager.clone();
                match command.query_async::<i64>(&mut connection).await {
                    Ok(_) => Ok(()),
                    Err(error) if error.code() == Some("FENCED") => Err(UnitError::Fenced(format!(
                        "the lease {} no longer holds {}: another replica collects the unit",
                        fence.key, fence.holder
                    ))),
                    Err(error) => Err(UnitError::Store(error.to_string())),
                }
            }
            Self::Redis(manager) => {
                let mut pipe = redis::pipe();
                pipe.atomic();
                for write in writes {
                    match (write.value, write.expires_at_ms) {
                        (Some(value), Some(at)) => pipe.cmd("SET").arg(write.key).arg(value).arg("PXAT").arg(at),
                        (Some(value), None) => pipe.cmd("SET").arg(write.key).arg(value),
                        (None, _) => pipe.cmd("DEL").arg(write.key),
                    }
                    .ignore();
                }
                let mut connection = manager.clone();
                pipe.query_async::<()>(&mut connection).await.map_err(|error| UnitError::Store(error.to_string()))
            }
        }
    }

    /// The values of `keys`, in order; an expired or absent key is `None`.
    pub(crate) async fn read(&self, keys: &[String], now_ms: i64) -> Result<Vec<Option<String>>, UnitError> {
        match self {
            Self::Memory(memory) => {
                let memory = memory.lock().unwrap_or_else(PoisonError::into_inner);
                let map = &memory.entries;
                Ok(keys
                    .iter()
                    .map(|key| map.get(key).filter(|(_, expires)| *expires > now_ms).map(|(value, _)| value.clone()))
                    .collect())
            }
            Self::Redis(manager) => {
                if keys.is_empty() {
                    return Ok(Vec::new());
                }
                let mut connection = manager.clone();
                let values: Vec<Option<String>> = redis::cmd("MGET")
                    .arg(keys)
                    .query_async(&mut connection)
                    .await
                    .map_err(|error| UnitError::Store(error.to_string()))?;
                if values.len() == keys.len() {
                    Ok(values)
                } else {
                    Err(UnitError::Store(format!("MGET answered {} values for {} keys", values.len(), keys.len())))
                }
            }
        }
    }
}

/// `message` with any piece of `url`'s user, password or query replaced by `***` (a client
/// error that quotes what it was given shows no secret).
fn scrub(message: &str, url: &str) -> String {
    let Some((_, rest)) = url.split_once("://") else { return message.to_owned() };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let mut secrets: Vec<&str> = Vec::new();
    if let Some((credentials, _)) = authority.rsplit_once('@') {
        secrets.extend(credentials.split(':').filter(|part| !part.is_empty()));
    }
    if let Some((_, query)) = rest.split_once('?') {
        secrets.push(query);
    }
    secrets.iter().fold(message.to_owned(), |text, secret| text.replace(secret, "***"))
}

/// `url` as a message may show it: the user and password (`scheme://user:password@host`) and any
/// query (`?password=…`) replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return "(not a URL)".to_owned() };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, _)) => (rest, "?***"),
        None => (rest, ""),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority.to_owned(), |(_, host)| format!("***@{host}"));
    format!("{scheme}://{host}{path}{query}")
}
