//! Shared queries: one Prometheus query serving many units (an expression aggregated `by` a
//! label, as prometheus-adapter runs one query per metric for every object), run once per
//! collection interval (the first unit of the interval that needs it asks; the others wait for
//! that answer)
//! and split by the label's value. Each unit is given only its own series: a value with no
//! series (`missing_series`) or with several (`several_series`) gives that unit nothing, as a
//! per-unit query's empty or doubled answer does.
//!
//! The answer is dated as a per-unit query's is: `timestamp(QUERY)` first, then `QUERY`; each
//! series by the `timestamp()` series with the same label value (never later than its own
//! evaluation time). A unit's `source_digest` covers the query, the label and value, and its
//! own series of both answers as Prometheus wrote them (each series object re-serialized
//! compactly), so it changes exactly when what that unit was given changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::OnceCell;

use super::Refusal;
use super::prometheus::{self, MAX_SHARED_ANSWER_BYTES};
use crate::sources::{PrometheusServer, SeriesOf};
use crate::units::EvidenceStats;

/// One unit's series of a shared answer.
#[derive(Clone, Debug)]
pub(crate) struct UnitSeries {
    /// The value as Prometheus wrote it.
    pub(crate) value: String,
    /// When it was observed (milliseconds since the epoch).
    pub(crate) at_ms: i64,
    /// What the unit was given: its series of the answer and of the `timestamp()` answer.
    pub(crate) bytes: Vec<u8>,
}

/// A shared query's answer, by label value.
#[derive(Debug, Default)]
pub(crate) struct SharedAnswer {
    by_value: HashMap<String, Vec<Result<UnitSeries, Refusal>>>,
}

type Cell = Arc<OnceCell<Result<Arc<SharedAnswer>, Refusal>>>;

/// Shared answers of the current round: each asked once, by the first unit that needs it.
#[derive(Debug, Default)]
pub(crate) struct SharedQueries {
    entries: Mutex<HashMap<(u64, String, String, String), Cell>>,
    round: AtomicU64,
    runs: AtomicU64,
}

impl SharedQueries {
    /// A new interval (`round`: the time divided by the collection interval): the answers of
    /// earlier intervals are asked again (a unit of an earlier one still collecting is given this
    /// one's).
    pub(crate) fn begin_round(&self, round: u64) {
        self.round.store(round, Ordering::Relaxed);
    }

    /// How many shared queries were run (each a `timestamp()` query and the query).
    pub(crate) fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// The unit's series of `query` on `server` (`server_name` as the file names it).
    ///
    /// # Errors
    /// The query's own refusal (`query_error`, `timeout`, `bad_answer`…), `missing_series`,
    /// `several_series`, or `undated` when its `timestamp()` series is missing.
    pub(crate) async fn series(
        &self,
        server_name: &str,
        server: &PrometheusServer,
        query: &str,
        series: &SeriesOf,
        stats: &EvidenceStats,
    ) -> Result<UnitSeries, Refusal> {
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let round = self.round.load(Ordering::Relaxed);
            entries.retain(|(of, ..), _| *of == round);
            let key = (round, format!("{server_name} {}", server.url), query.to_owned(), series.label.clone());
            Arc::clone(entries.entry(key).or_default())
        };
        let answer = cell
            .get_or_init(|| async {
                self.runs.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let answer = fetch(server, query, &series.label).await;
                stats.read_took(started.elapsed());
                answer.map(Arc::new)
            })
            .await
            .clone()?;
        match answer.by_value.get(&series.value).map(Vec::as_slice) {
            None | Some([]) => Err(Refusal::new(
                "missing_series",
                format!("the shared query answered no series with {}={:?}", series.label, series.value),
            )),
            Some([one]) => one.clone(),
            Some(several) => Err(Refusal::new(
                "several_series",
                format!("the shared query answered {} series with {}={:?}", several.len(), series.label, series.value),
            )),
        }
    }
}

async fn fetch(server: &PrometheusServer, query: &str, label: &str) -> Result<SharedAnswer, Refusal> {
    let dated = prometheus::query_limited(server, &format!("timestamp({query})"), MAX_SHARED_ANSWER_BYTES).await;
    let answer = prometheus::query_limited(server, query, MAX_SHARED_ANSWER_BYTES).await?;
    let dated = dated
        .map_err(|error| Refusal::new("undated", format!("timestamp() of the query failed: {}", error.message)))?;
    let value_of =
        |labels: &serde_json::Map<String, Value>| labels.get(label).and_then(Value::as_str).map(str::to_owned);
    let mut times: HashMap<String, Vec<(Option<i64>, String)>> = HashMap::new();
    for sample in &dated.samples {
        let Some(value) = value_of(&sample.labels) else { continue };
        let at_ms = sample.value.parse::<f64>().ok().filter(|seconds| seconds.is_finite()).map(|seconds| {
            #[expect(clippy::cast_possible_truncation, reason = "finite, milliseconds since the epoch")]
            let at_ms = (seconds * 1000.0).floor() as i64;
            at_ms
        });
        times.entry(value).or_default().push((at_ms, sample.raw.to_string()));
    }
    let mut by_value: HashMap<String, Vec<Result<UnitSeries, Refusal>>> = HashMap::new();
    for sample in answer.samples {
        let Some(value) = value_of(&sample.labels) else { continue };
        let own = match times.get(&value).map(Vec::as_slice) {
            Some([(Some(at_ms), raw)]) => {
                let mut bytes = sample.raw.to_string().into_bytes();
                bytes.push(b'\n');
                bytes.extend_from_slice(raw.as_bytes());
                Ok(UnitSeries { value: sample.value, at_ms: sample.at_ms.min(*at_ms), bytes })
            }
            _ => {
                Err(Refusal::new("undated", format!("timestamp() of the query has no one time for {label}={value:?}")))
            }
        };
        by_value.entry(value).or_default().push(own);
    }
    Ok(SharedAnswer { by_value })
}
