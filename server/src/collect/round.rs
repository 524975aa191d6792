//! The collection loop: every tick, the lease round (with Redis), then every unit due and held
//! is collected, at most [`CONCURRENT_UNITS`](super::CONCURRENT_UNITS) at once, with the round's
//! counters ([`crate::units::EvidenceStats`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::{Collector, lease};
use crate::units::{Fence, UnitKey};

impl Collector {
    /// Collects every unit with sources every `interval` (or its own `interval_s`), forever
    /// (spawn it on the runtime). Up to [`CONCURRENT_UNITS`](super::CONCURRENT_UNITS) units are collected at once; one
    /// unit's sources in turn. With a Redis store, only the units of the shards this replica
    /// holds a lease on ([`lease`]), each write fenced by the lease's token.
    pub async fn run(self: Arc<Self>, interval: Duration) {
        let stats = self.units.collect_stats();
        let every = interval.min(Duration::from_secs(1)).max(Duration::from_millis(10));
        // A lease outlives three ticks (a renewal late by a tick or two keeps it) and an interval.
        let lease_time = interval.max(every * 3);
        let leases = self.units.redis_manager().map(|manager| {
            let replica = format!("{}-{}", host_name(), std::process::id());
            Arc::new(lease::Leases::new(manager, replica, lease::SHARDS, lease_time))
        });
        stats.rounds.leases.store(u64::from(leases.is_some()), Ordering::Relaxed);
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        let window_ms = i64::try_from(interval_ms).unwrap_or(i64::MAX).max(1);
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Some(leases) = &leases {
                match leases.round().await {
                    Ok(shards) => {
                        stats.rounds.shards_held.store(u64::try_from(shards.len()).unwrap_or(0), Ordering::Relaxed);
                    }
                    Err(error) => {
                        stats.rounds.lease_errors.fetch_add(1, Ordering::Relaxed);
                        stats.rounds.shards_held.store(0, Ordering::Relaxed);
                        tracing::warn!(%error, "the lease round failed: this replica collects nothing until Redis answers");
                    }
                }
                stats.rounds.lease_changes.store(leases.changes(), Ordering::Relaxed);
            }
            let now = self.units.clock_ms();
            let mut owned = 0_u64;
            let mut round: Vec<(UnitKey, Option<Fence>)> = Vec::new();
            for key in self.units.source_keys() {
                if leases.as_ref().is_some_and(|leases| !leases.holds(&key)) {
                    continue;
                }
                owned += 1;
                let Some(sources) = self.units.sources(&key) else { continue };
                let every = sources.interval_s.map_or(interval, Duration::from_secs);
                let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
                if due.get(&key).is_some_and(|at| *at > now) {
                    continue;
                }
                if self.inflight.lock().unwrap_or_else(PoisonError::into_inner).contains(&key) {
                    stats.rounds.behind.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let every_ms = i64::try_from(every.as_millis()).unwrap_or(i64::MAX);
                due.insert(key.clone(), now.saturating_add(every_ms));
                let fence = match &leases {
                    None => None,
                    // Held at the check above, in this same tick: always there.
                    Some(leases) => match leases.fence(&key) {
                        Some(fence) => Some(fence),
                        None => continue,
                    },
                };
                round.push((key, fence));
            }
            stats.rounds.units_owned.store(owned, Ordering::Relaxed);
            if round.is_empty() {
                continue;
            }
            stats.rounds.rounds.fetch_add(1, Ordering::Relaxed);
            // Shared answers are asked once per interval, not once per round: a round that takes
            // longer than the interval has its first units due again before its last ones ran,
            // and each tick would then start a round; keyed by round, every unit still waiting
            // asked every shared query anew (at 30 000 units a round never finished).
            self.shared.begin_round(u64::try_from(now.div_euclid(window_ms)).unwrap_or(0));
            let pending = Arc::new(std::sync::atomic::AtomicUsize::new(round.len()));
            let units = u64::try_from(round.len()).unwrap_or(u64::MAX);
            let (started, reads) = (Instant::now(), stats.reads());
            for (key, fence) in round {
                self.inflight.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone());
                let collector = Arc::clone(&self);
                let permits = Arc::clone(&self.permits);
                let pending = Arc::clone(&pending);
                tokio::spawn(async move {
                    if let Ok(_permit) = permits.acquire_owned().await {
                        let _ = collector.collect_fenced(&key, fence.as_ref()).await;
                    }
                    collector.inflight.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
                    if pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                        let rounds = &collector.units.collect_stats().rounds;
                        let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                        rounds.last_units.store(units, Ordering::Relaxed);
                        rounds.last_ms.store(took, Ordering::Relaxed);
                        let queries = collector.units.collect_stats().reads().saturating_sub(reads);
                        rounds.last_queries.store(queries, Ordering::Relaxed);
                        rounds.shared_queries.store(collector.shared.runs(), Ordering::Relaxed);
                        if took > interval_ms {
                            rounds.overruns.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        }
    }
}

/// This host's name (a pod's name in Kubernetes), for the replica's lease name.
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|name| name.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "replica".to_owned())
}
