//! Leases: with several replicas of the service on one Redis, each shard of units is collected
//! by one replica at a time. A replica holds a shard under a lease (`scale-units:lease:<shard>`,
//! value `<replica>:<token>`, expiring after the lease time) whose token is the shard's
//! counter (`scale-units:lease-token:<shard>`, `INCR`ed at each acquisition): a fencing token.
//! Every evidence write of a collection checks, in the same Lua script as the write, that the
//! lease still holds that value ([`Fence`]), so a replica that lost its lease (paused, cut off,
//! slow) cannot interleave its late writes with the new holder's: they are refused.
//!
//! Each round ([`Leases::round`], every collector tick), in one Lua script (atomic): the replica
//! beats its heart (`scale-units:replicas`, a sorted set scored by Redis's own `TIME`, entries
//! older than the lease time dropped), counts the live replicas, keeps (renews) up to its fair
//! share of shards (`ceil(shards / live)`), releases the rest, and takes free shards up to its
//! share. A replica that stops renews nothing: its leases expire within the lease time, its
//! heart beat drops out, and the others' shares grow to take its shards at their next tick.
//!
//! Failure cases: Redis down → no round succeeds, no replica holds a lease, nobody collects, the
//! evidence expires at its own `expires_at` and every decision blocks (fail closed, never a
//! decision on stale evidence). Redis restarted empty → every lease is free and the tokens
//! restart from 1; a write fenced by a pre-restart token finds no lease and is refused. The keys
//! are built inside the scripts, so leases need one Redis (or a Redis Cluster with a single
//! shard), not a multi-shard cluster.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::ConnectionManager;

pub use crate::units::Fence;
use crate::units::UnitKey;

/// The number of shards units are spread over.
pub const SHARDS: u32 = 64;

/// This replica's leases on one Redis.
pub struct Leases {
    manager: ConnectionManager,
    replica: String,
    shards: u32,
    ttl: Duration,
    held: Mutex<BTreeMap<u32, u64>>,
    changes: AtomicU64,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases").field("replica", &self.replica).field("shards", &self.shards).finish_non_exhaustive()
    }
}

const ROUND: &str = r"
local replica, ttl, shards, prefix, start = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', prefix .. 'replicas', now, replica)
redis.call('ZREMRANGEBYSCORE', prefix .. 'replicas', '-inf', now - ttl)
local live = redis.call('ZCARD', prefix .. 'replicas')
local fair = math.ceil(shards / live)
local held, free = {}, {}
for s = 0, shards - 1 do
  local value = redis.call('GET', prefix .. 'lease:' .. s)
  if value then
    local owner, token = string.match(value, '^(.*):(%d+)$')
    if owner == replica then table.insert(held, {s, token}) end
  else
    table.insert(free, s)
  end
end
local result = {}
for i, lease in ipairs(held) do
  local key = prefix .. 'lease:' .. lease[1]
  if i <= fair then
    redis.call('PEXPIRE', key, ttl)
    table.insert(result, lease[1])
    table.insert(result, tonumber(lease[2]))
  else
    redis.call('DEL', key)
  end
end
local count = math.min(#held, fair)
for i = 1, #free do
  if count >= fair then break end
  local s = free[((i - 1 + start) % #free) + 1]
  local token = redis.call('INCR', prefix .. 'lease-token:' .. s)
  redis.call('SET', prefix .. 'lease:' .. s, replica .. ':' .. token, 'PX', ttl)
  table.insert(result, s)
  table.insert(result, token)
  count = count + 1
end
return result
";

const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

const PREFIX: &str = "scale-units:";

impl Leases {
    /// Leases for the replica named `replica` (unique among the replicas: the host name and the
    /// process id), over `shards` shards, each held for `ttl` unless renewed.
    pub fn new(manager: ConnectionManager, replica: impl Into<String>, shards: u32, ttl: Duration) -> Self {
        Self {
            manager,
            replica: replica.into(),
            shards: shards.max(1),
            ttl: ttl.max(Duration::from_millis(100)),
            held: Mutex::new(BTreeMap::new()),
            changes: AtomicU64::new(0),
        }
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The shard of a unit (FNV-1a of `namespace/name`, stable across replicas and versions).
    pub fn shard_of(&self, key: &UnitKey) -> u32 {
        let bytes = key.namespace.bytes().chain(std::iter::once(b'/')).chain(key.name.bytes());
        fnv1a(bytes) % self.shards
    }

    /// Whether this replica holds the unit's shard (as of its last round).
    pub fn holds(&self, key: &UnitKey) -> bool {
        let shard = self.shard_of(key);
        self.held.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&shard)
    }

    /// Renews, releases and takes leases (see the module). Returns the shards held after it.
    ///
    /// # Errors
    /// The Redis error: this replica then holds nothing (collects nothing) until a round succeeds.
    pub async fn round(&self) -> Result<Vec<u32>, redis::RedisError> {
        let start = self.shard_of_name();
        let mut connection = self.manager.clone();
        let answer: Result<Vec<u64>, redis::RedisError> = redis::cmd("EVAL")
            .arg(ROUND)
            .arg(0)
            .arg(&self.replica)
            .arg(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .arg(self.shards)
            .arg(PREFIX)
            .arg(start)
            .query_async(&mut connection)
            .await;
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let now: BTreeMap<u32, u64> = match answer {
            Ok(pairs) => pairs
                .chunks_exact(2)
                .filter_map(|pair| match pair {
                    [shard, token] => Some((u32::try_from(*shard).ok()?, *token)),
                    _ => None,
                })
                .collect(),
            Err(error) => {
                if !held.is_empty() {
                    self.changes.fetch_add(u64::try_from(held.len()).unwrap_or(u64::MAX), Ordering::Relaxed);
                    held.clear();
                }
                return Err(error);
            }
        };
        let changed = held.iter().filter(|(shard, token)| now.get(shard) != Some(token)).count()
            + now.iter().filter(|(shard, token)| held.get(shard) != Some(token)).count();
        self.changes.fetch_add(u64::try_from(changed).unwrap_or(u64::MAX), Ordering::Relaxed);
        *held = now;
        Ok(held.keys().copied().collect())
    }

    /// The fence of the unit's shard, when this replica holds it (as of its last round).
    pub fn fence(&self, key: &UnitKey) -> Option<Fence> {
        let shard = self.shard_of(key);
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(&shard)
            .map(|token| Fence { key: format!("{PREFIX}lease:{shard}"), holder: format!("{}:{token}", self.replica) })
    }

    /// How many shards this replica holds.
    pub fn held(&self) -> usize {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// How many leases this replica took or lost since it started.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Gives every lease back (a replica shutting down hands its units over at once).
    pub async fn release(&self) {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        let mut connection = self.manager.clone();
        for (shard, token) in held {
            let _: Result<i64, _> = redis::cmd("EVAL")
                .arg(RELEASE)
                .arg(1)
                .arg(format!("{PREFIX}lease:{shard}"))
                .arg(format!("{}:{token}", self.replica))
                .query_async(&mut connection)
                .await;
        }
    }

    /// Where this replica starts looking for free shards: spread by its name, so that replicas
    /// starting together do not all reach for the same shards first.
    fn shard_of_name(&self) -> u32 {
        fnv1a(self.replica.bytes()) % self.shards
    }
}

fn fnv1a(bytes: impl Iterator<Item = u8>) -> u32 {
    bytes.fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193))
}
