//! Counters of the evidence collected for `/metrics`: observations stored and refused (by unit,
//! source and cause) and the time of the collectors' reads.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::UnitKey;

/// Collection counters, by unit and source (and cause for refusals), for `/metrics`.
#[derive(Debug, Default)]
pub struct EvidenceStats {
    stored: Mutex<BTreeMap<(String, String), u64>>,
    refused: Mutex<BTreeMap<(String, String, &'static str), u64>>,
    reads: AtomicU64,
    read_nanos: AtomicU64,
    read_max_nanos: AtomicU64,
    /// The collectors' rounds, leases and evidence ages.
    pub(crate) rounds: RoundStats,
}

/// The upper bounds of `scale_units_evidence_age_seconds`' buckets.
const AGE_BUCKETS_S: [u64; 10] = [1, 2, 5, 10, 15, 20, 30, 60, 120, 300];

/// Rounds, leases and the age of the evidence stored, for `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct RoundStats {
    /// Rounds started (a tick at which at least one unit was due).
    pub(crate) rounds: AtomicU64,
    /// Rounds that took longer than the interval.
    pub(crate) overruns: AtomicU64,
    /// Units due while their previous collection still ran (skipped).
    pub(crate) behind: AtomicU64,
    /// The last finished round: units, reads (queries), milliseconds.
    pub(crate) last_units: AtomicU64,
    pub(crate) last_queries: AtomicU64,
    pub(crate) last_ms: AtomicU64,
    /// Shared queries run.
    pub(crate) shared_queries: AtomicU64,
    /// Units this replica collects (all with sources without leases; those of its shards with).
    pub(crate) units_owned: AtomicU64,
    /// Shards held, and lease changes (taken or lost); `leases` is 0/1: leases in use.
    pub(crate) leases: AtomicU64,
    pub(crate) shards_held: AtomicU64,
    pub(crate) lease_changes: AtomicU64,
    pub(crate) lease_errors: AtomicU64,
    /// Ages of the observations stored: per bucket of [`AGE_BUCKETS_S`] (not cumulative), then
    /// the sum in milliseconds and the count.
    ages: [AtomicU64; AGE_BUCKETS_S.len() + 1],
    age_ms_sum: AtomicU64,
}

impl RoundStats {
    /// An observation `age_ms` old was stored.
    pub(crate) fn aged(&self, age_ms: u64) {
        let index = AGE_BUCKETS_S.iter().position(|bound| age_ms <= bound * 1000).unwrap_or(AGE_BUCKETS_S.len());
        if let Some(bucket) = self.ages.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.age_ms_sum.fetch_add(age_ms, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String) {
        let load = |value: &AtomicU64| value.load(Ordering::Relaxed);
        let metrics: [(&str, &str, &str, &AtomicU64); 11] = [
            ("scale_units_collect_rounds_total", "counter", "Collection rounds started.", &self.rounds),
            (
                "scale_units_collect_round_overruns_total",
                "counter",
                "Rounds that took longer than the interval.",
                &self.overruns,
            ),
            (
                "scale_units_collect_behind_total",
                "counter",
                "Units due while their previous collection still ran (skipped).",
                &self.behind,
            ),
            (
                "scale_units_collect_round_units",
                "gauge",
                "Units collected in the last finished round.",
                &self.last_units,
            ),
            (
                "scale_units_collect_round_queries",
                "gauge",
                "Queries and reads of the last finished round.",
                &self.last_queries,
            ),
            ("scale_units_collect_shared_queries_total", "counter", "Shared queries run.", &self.shared_queries),
            ("scale_units_collect_units", "gauge", "Units this replica collects.", &self.units_owned),
            (
                "scale_units_collect_leases_enabled",
                "gauge",
                "1 when units are shared with other replicas under Redis leases.",
                &self.leases,
            ),
            (
                "scale_units_collect_shards_held",
                "gauge",
                "Shards of units this replica holds a lease on.",
                &self.shards_held,
            ),
            (
                "scale_units_collect_lease_changes_total",
                "counter",
                "Leases this replica took or lost.",
                &self.lease_changes,
            ),
            (
                "scale_units_collect_lease_errors_total",
                "counter",
                "Lease rounds that failed (Redis unreachable): nothing collected.",
                &self.lease_errors,
            ),
        ];
        for (name, kind, help, value) in metrics {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}", load(value));
        }
        #[expect(clippy::cast_precision_loss, reason = "milliseconds to seconds for display")]
        let last_seconds = load(&self.last_ms) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "# HELP scale_units_collect_round_seconds Duration of the last finished round.\n# TYPE scale_units_collect_round_seconds gauge\nscale_units_collect_round_seconds {last_seconds}"
        );
        let _ = writeln!(
            out,
            "# HELP scale_units_evidence_age_seconds Age of each observation when it was stored (now - observed_at).\n# TYPE scale_units_evidence_age_seconds histogram"
        );
        let mut cumulative = 0;
        for (index, bucket) in self.ages.iter().enumerate() {
            cumulative += load(bucket);
            match AGE_BUCKETS_S.get(index) {
                Some(bound) => {
                    let _ = writeln!(out, "scale_units_evidence_age_seconds_bucket{{le=\"{bound}\"}} {cumulative}");
                }
                None => {
                    let _ = writeln!(out, "scale_units_evidence_age_seconds_bucket{{le=\"+Inf\"}} {cumulative}");
                }
            }
        }
        #[expect(clippy::cast_precision_loss, reason = "milliseconds to seconds for display")]
        let sum = load(&self.age_ms_sum) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "scale_units_evidence_age_seconds_sum {sum}\nscale_units_evidence_age_seconds_count {cumulative}"
        );
    }
}

impl EvidenceStats {
    /// One Prometheus query or Redis read took `elapsed` (answered or not).
    /// Reads (queries) so far.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    pub(crate) fn read_took(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.read_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.read_max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// One observation of `unit` was stored (`Ok`) or refused with a cause (`Err`).
    pub(crate) fn count(&self, unit: &UnitKey, source: &str, outcome: Result<(), &'static str>) {
        match outcome {
            Ok(()) => {
                let mut stored = self.stored.lock().unwrap_or_else(PoisonError::into_inner);
                *stored.entry((unit.to_string(), source.to_owned())).or_default() += 1;
            }
            Err(cause) => {
                let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
                *refused.entry((unit.to_string(), source.to_owned(), cause)).or_default() += 1;
            }
        }
    }

    /// The counters in the Prometheus text format (`scale_units_evidence_stored_total`,
    /// `scale_units_evidence_refused_total`, `scale_units_evidence_query_seconds`,
    /// `scale_units_evidence_query_max_seconds`).
    pub fn render(&self, out: &mut String) {
        self.rounds.render(out);
        let escape = |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        #[expect(clippy::cast_precision_loss, reason = "nanoseconds to seconds for display")]
        let seconds = |nanos: &AtomicU64| nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(
            out,
            "# HELP scale_units_evidence_query_seconds Time of the collectors' Prometheus queries and Redis reads.\n# TYPE scale_units_evidence_query_seconds summary\nscale_units_evidence_query_seconds_sum {}\nscale_units_evidence_query_seconds_count {}",
            seconds(&self.read_nanos),
            self.reads.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP scale_units_evidence_query_max_seconds The longest collector query or read.\n# TYPE scale_units_evidence_query_max_seconds gauge\nscale_units_evidence_query_max_seconds {}",
            seconds(&self.read_max_nanos)
        );
        let _ = writeln!(
            out,
            "# HELP scale_units_evidence_stored_total Observations collected and stored, by unit and source.\n# TYPE scale_units_evidence_stored_total counter"
        );
        for ((unit, source), count) in self.stored.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(
                out,
                "scale_units_evidence_stored_total{{unit=\"{}\",source=\"{}\"}} {count}",
                escape(unit),
                escape(source)
            );
        }
        let _ = writeln!(
            out,
            "# HELP scale_units_evidence_refused_total Collections that wrote nothing, by unit, source and cause.\n# TYPE scale_units_evidence_refused_total counter"
        );
        for ((unit, source, cause), count) in self.refused.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(
                out,
                "scale_units_evidence_refused_total{{unit=\"{}\",source=\"{}\",cause=\"{cause}\"}} {count}",
                escape(unit),
                escape(source)
            );
        }
    }
}
