//! The service's metrics, written in the Prometheus text exposition format (version 0.0.4) by
//! hand: a few counters, one gauge and one histogram do not need a metrics library.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use scale_units_host::PolicyRegistry;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 14] =
    [0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// The routes latency is reported for.
pub(crate) const ROUTES: [&str; 7] = ["evaluate", "validate", "policies", "probe", "units", "admission", "other"];

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

/// Counters shared by every request.
#[derive(Default)]
pub(crate) struct Metrics {
    in_flight: AtomicI64,
    latency: [Histogram; ROUTES.len()],
    responses: Mutex<BTreeMap<(&'static str, u16), u64>>,
    decisions: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    errors: Mutex<BTreeMap<String, u64>>,
    overrides: Mutex<BTreeMap<String, u64>>,
    /// Denials (`Enforce`) and would-be denials (`Warn`, `Monitor`), by mode and reason code.
    denials: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    recoveries: AtomicU64,
    unauthenticated: AtomicU64,
}

impl Metrics {
    pub(crate) fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn in_flight(&self) -> i64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// A response was sent for `route` (an index of [`ROUTES`]).
    pub(crate) fn finished(&self, route: usize, status: u16, elapsed: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(histogram) = self.latency.get(route) {
            let seconds = elapsed.as_secs_f64();
            for (bucket, bound) in histogram.buckets.iter().zip(BUCKETS) {
                if seconds <= bound {
                    bucket.fetch_add(1, Ordering::Relaxed);
                }
            }
            histogram.count.fetch_add(1, Ordering::Relaxed);
            histogram.sum_nanos.fetch_add(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
        let name = ROUTES.get(route).copied().unwrap_or("other");
        *self.responses.lock().unwrap_or_else(PoisonError::into_inner).entry((name, status)).or_default() += 1;
    }

    /// A decision: counted once per reason (a decision without reasons counts as reason `none`).
    /// Labels come from the SPEC's closed vocabularies only: an action or reason a component
    /// invents (a hot-swapped one may) counts as `other`, so no component can grow the series
    /// without bound (issue 19).
    pub(crate) fn decision(&self, action: &str, reasons: &[String]) {
        let action = scale_units_core::ActionKind::parse(action).map_or("other", scale_units_core::ActionKind::as_str);
        let mut decisions = self.decisions.lock().unwrap_or_else(PoisonError::into_inner);
        if reasons.is_empty() {
            *decisions.entry((action, "none")).or_default() += 1;
        }
        for reason in reasons {
            let reason = scale_units_core::Reason::parse(reason).map_or("other", scale_units_core::Reason::as_str);
            *decisions.entry((action, reason)).or_default() += 1;
        }
    }

    /// A typed evaluation error, by its SPEC code, or a failed call (`component_trap`).
    pub(crate) fn error(&self, code: &str) {
        *self.errors.lock().unwrap_or_else(PoisonError::into_inner).entry(code.to_owned()).or_default() += 1;
    }

    /// A denial overridden by a member of `group` (`webhook/breakglass.rs`).
    pub(crate) fn admission_override(&self, group: &str) {
        *self.overrides.lock().unwrap_or_else(PoisonError::into_inner).entry(group.to_owned()).or_default() += 1;
    }

    /// A change the decision does not allow, answered in `mode` (`Enforce`: denied; `Warn`,
    /// `Monitor`: let through), for the gate's reason `code`.
    pub(crate) fn admission_denial(&self, mode: &'static str, code: &'static str) {
        *self.denials.lock().unwrap_or_else(PoisonError::into_inner).entry((mode, code)).or_default() += 1;
    }

    /// A change allowed as a recovery toward the contract's bounds (`webhook/recovery.rs`).
    pub(crate) fn admission_recovery(&self) {
        self.recoveries.fetch_add(1, Ordering::Relaxed);
    }

    /// An admission review that did not authenticate (judged, not recorded; issue 19).
    pub(crate) fn admission_unauthenticated(&self) {
        self.unauthenticated.fetch_add(1, Ordering::Relaxed);
    }

    /// The admission and audit counters of issue 16.
    fn render_operations(&self, out: &mut String, audit: Option<&crate::audit::AuditLog>) {
        header(out, "admission_overrides_total", "counter", "Admission denials overridden (break glass), by group.");
        for (group, count) in self.overrides.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(out, "scale_units_admission_overrides_total{{group=\"{}\"}} {count}", escape(group));
        }
        header(
            out,
            "admission_denials_total",
            "counter",
            "Replica changes the decision does not allow, by the unit's mode (Enforce: denied; Warn, Monitor: would have been) and the gate's reason.",
        );
        for ((mode, reason), count) in self.denials.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(out, "scale_units_admission_denials_total{{mode=\"{mode}\",reason=\"{reason}\"}} {count}");
        }
        header(out, "admission_recoveries_total", "counter", "Changes allowed as a recovery toward the bounds.");
        let _ = writeln!(out, "scale_units_admission_recoveries_total {}", self.recoveries.load(Ordering::Relaxed));
        header(
            out,
            "admission_unauthenticated_total",
            "counter",
            "Admission reviews without client certificate or token.",
        );
        let _ = writeln!(
            out,
            "scale_units_admission_unauthenticated_total {}",
            self.unauthenticated.load(Ordering::Relaxed)
        );
        if let Some(audit) = audit {
            header(out, "audit_lines_total", "counter", "Lines queued to the decision audit log.");
            let _ = writeln!(out, "scale_units_audit_lines_total {}", audit.written());
            header(out, "audit_summarized_total", "counter", "Repeated KEDA answers summarized, not written.");
            let _ = writeln!(out, "scale_units_audit_summarized_total {}", audit.summarized());
            header(
                out,
                "audit_dropped_total",
                "counter",
                "Audit lines dropped (batch mode): the queue was full or the write failed.",
            );
            let _ = writeln!(out, "scale_units_audit_dropped_total {}", audit.dropped());
            header(
                out,
                "audit_failed_total",
                "counter",
                "Requests failed because their audit line was not written (blocking-strict).",
            );
            let _ = writeln!(out, "scale_units_audit_failed_total {}", audit.failed());
            header(out, "audit_queued", "gauge", "Audit lines queued, not yet taken by the writer.");
            let _ = writeln!(out, "scale_units_audit_queued {}", audit.queued());
        }
    }

    pub(crate) fn render(
        &self,
        registry: &PolicyRegistry,
        ready: bool,
        audit: Option<&crate::audit::AuditLog>,
    ) -> String {
        let mut out = String::new();
        header(&mut out, "requests_in_flight", "gauge", "HTTP requests being served.");
        let _ = writeln!(out, "scale_units_requests_in_flight {}", self.in_flight());

        header(&mut out, "request_duration_seconds", "histogram", "Time from request to response, by route.");
        for (route, histogram) in ROUTES.iter().zip(&self.latency) {
            for (bucket, bound) in histogram.buckets.iter().zip(BUCKETS) {
                let count = bucket.load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "scale_units_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {count}"
                );
            }
            let count = histogram.count.load(Ordering::Relaxed);
            #[expect(clippy::cast_precision_loss, reason = "nanoseconds to seconds for display")]
            let sum = histogram.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            let _ =
                writeln!(out, "scale_units_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {count}");
            let _ = writeln!(out, "scale_units_request_duration_seconds_sum{{route=\"{route}\"}} {sum}");
            let _ = writeln!(out, "scale_units_request_duration_seconds_count{{route=\"{route}\"}} {count}");
        }

        header(&mut out, "responses_total", "counter", "HTTP responses, by route and status.");
        for ((route, status), count) in self.responses.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(out, "scale_units_responses_total{{route=\"{route}\",status=\"{status}\"}} {count}");
        }

        header(&mut out, "decisions_total", "counter", "Decisions returned, by action and reason (once per reason).");
        for ((action, reason), count) in self.decisions.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(
                out,
                "scale_units_decisions_total{{action=\"{}\",reason=\"{}\"}} {count}",
                escape(action),
                escape(reason)
            );
        }

        header(&mut out, "evaluation_errors_total", "counter", "Evaluations answered with an error, by code.");
        for (code, count) in self.errors.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(out, "scale_units_evaluation_errors_total{{code=\"{}\"}} {count}", escape(code));
        }

        header(&mut out, "active_policy_info", "gauge", "The active policy: its digest and evaluator version.");
        header(&mut out, "policy_activation", "gauge", "The active policy's activation number.");
        if let Some(active) = registry.active() {
            let _ = writeln!(
                out,
                "scale_units_active_policy_info{{digest=\"{}\",evaluator_version=\"{}\"}} 1",
                escape(active.policy.digest()),
                escape(&active.policy.info().evaluator_version)
            );
            let _ = writeln!(out, "scale_units_policy_activation {}", active.activation);
        }

        header(&mut out, "staged_policies", "gauge", "Policies staged (verified and through the conformance gate).");
        let _ = writeln!(out, "scale_units_staged_policies {}", registry.staged().len());
        header(&mut out, "shadow_divergences_total", "counter", "Requests on which the shadow candidate disagreed.");
        let _ = writeln!(out, "scale_units_shadow_divergences_total {}", registry.divergences().1);
        header(&mut out, "ready", "gauge", "1 while ready for traffic, 0 from SIGTERM on.");
        let _ = writeln!(out, "scale_units_ready {}", u8::from(ready));
        self.render_operations(&mut out, audit);
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP scale_units_{name} {help}\n# TYPE scale_units_{name} {kind}");
}

/// A label value: backslash, double quote and line feed escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    #[test]
    fn unknown_actions_and_reasons_share_one_label() {
        let metrics = Metrics::default();
        for index in 0..1000 {
            metrics.decision(&format!("act-{index}"), &[format!("reason-{index}"), "signal_stale".to_owned()]);
        }
        metrics.decision("hold", &[]);
        let decisions = metrics.decisions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let labels: Vec<_> = decisions.iter().map(|(labels, count)| (*labels, *count)).collect();
        assert_eq!(labels, [(("hold", "none"), 1), (("other", "other"), 1000), (("other", "signal_stale"), 1000)]);
    }
}
