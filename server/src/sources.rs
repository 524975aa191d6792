//! A unit's sources file, `<namespace>.<name>.sources.yaml` (or `.yml`, `.json`) beside its
//! contract: where each field of each SPEC §5 observation is read from. The contract stays the
//! pure, hashed policy; this file is deployment configuration, read by the collector
//! ([`crate::collect`]). Its JSON Schema is `schema/sources.schema.json` ([`schema`]).
//!
//! ```yaml
//! prometheus:
//!   main: { url: "http://prometheus.monitoring:9090", timeout_ms: 2000 }
//! replicas:
//!   max_age_s: 60
//!   count: { prometheus: { server: main, query: 'kube_deployment_status_replicas{namespace="shop",deployment="api"}' } }
//! signal:
//!   signal: in_flight
//!   max_age_s: 60
//!   value: { prometheus: { server: main, query: "sum(gateway_active_connections)" } }
//! ```
//!
//! A shared query serves many units, run once per round for all of them; `series` names the
//! label it is aggregated by and this unit's value of it (issue 30):
//!
//! ```yaml
//!   value: { prometheus: { server: main, query: "sum by (deployment) (gateway_active_connections)",
//!                          series: { label: deployment, value: api } } }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use scale_units_core::{CapacityAxis, QuotaScope, SignalKind};
use serde::Deserialize;

/// Longest `max_age_s` and `interval_s`: SPEC's `MAX_SECONDS`.
pub const MAX_SECONDS: u64 = 86_400;

/// A unit's sources file, as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sources {
    /// Seconds between two collections of this unit (default: the collector's interval).
    #[serde(default)]
    pub interval_s: Option<u64>,
    /// Prometheus servers, by a name the fields refer to (and `source_ref` shows).
    #[serde(default)]
    pub prometheus: BTreeMap<String, PrometheusServer>,
    /// Redis servers, by a name the fields refer to (and `source_ref` shows).
    #[serde(default)]
    pub redis: BTreeMap<String, RedisServer>,
    /// The kind of the unit's workload. The admission webhook judges (and records for the
    /// cooldowns) only this kind's replica changes; a workload of the other kind with the unit's
    /// name is no unit of this contract (issue 19). Absent: both kinds of the unit's name share
    /// the contract and its cooldowns.
    #[serde(default)]
    pub workload: Option<WorkloadKind>,
    /// The workload's replica count, as evidence with an age limit.
    #[serde(default)]
    pub replicas: Option<ReplicasSource>,
    /// The scale signal.
    #[serde(default)]
    pub signal: Option<SignalSource>,
    /// One capacity observation per axis.
    #[serde(default)]
    pub capacities: Vec<CapacitySource>,
    /// One quota observation per `quota_ref`.
    #[serde(default)]
    pub quotas: Vec<QuotaSource>,
    /// The continuity observation.
    #[serde(default)]
    pub continuity: Option<ContinuitySource>,
    /// The safety observation, from Prometheus alerts.
    #[serde(default)]
    pub safety: Option<SafetySource>,
}

/// The kinds of workload whose replica counts the admission webhook judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum WorkloadKind {
    /// An `apps/v1` Deployment.
    Deployment,
    /// An `apps/v1` StatefulSet.
    StatefulSet,
}

/// A Prometheus server (its HTTP API, `GET /api/v1/query`).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusServer {
    /// `http://host:port[/prefix]`, or `https://…` with `ca_file`. No credentials in it.
    pub url: String,
    /// A file holding a bearer token, read at every query (so a rotated token is used at once).
    #[serde(default)]
    pub bearer_token_file: Option<PathBuf>,
    /// PEM certificates the server's certificate must chain to (required for `https`).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Time one query may take, connection included, in milliseconds (default 2000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

/// A Redis server.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisServer {
    /// `redis://host:port/db` (a password in it never reaches `source_ref` or a log line).
    pub url: String,
    /// Time one read may take, in milliseconds (default 2000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    2000
}

/// The replica count.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplicasSource {
    /// Where the count is read (`prometheus` or `redis`; it must be an exact integer).
    pub count: Number,
    /// A count older than this is no count (KEDA then answers an error, the webhook denies).
    pub max_age_s: u64,
}

/// The signal observation.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalSource {
    /// The signal (one of the contract's `allowed_signals`).
    pub signal: SignalKind,
    /// Its value (rounded up by default: load is never under-reported).
    pub value: Number,
    /// `expires_at = observed_at + max_age_s`.
    pub max_age_s: u64,
}

/// A capacity observation.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapacitySource {
    /// The axis.
    pub axis: CapacityAxis,
    /// Allocatable (rounded down by default).
    pub allocatable: Number,
    /// Reserved (rounded up by default).
    pub reserved: Number,
    /// Used (rounded up by default).
    pub used: Number,
    /// `expires_at = observed_at + max_age_s`.
    pub max_age_s: u64,
}

/// A quota observation.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaSource {
    /// The quota (one of the contract's bindings).
    pub quota_ref: String,
    /// Its scope.
    pub scope: QuotaScope,
    /// The limit (rounded down by default); usually `static`.
    pub limit: Number,
    /// What is used (rounded up by default), e.g. a Redis counter (`GET`).
    pub used: Number,
    /// `expires_at = observed_at + max_age_s`.
    pub max_age_s: u64,
}

/// The continuity observation.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinuitySource {
    /// Whether the continuity store is ready.
    pub ready: Flag,
    /// Active sessions (rounded up by default).
    pub active_sessions: Number,
    /// Active streams (rounded up by default).
    pub active_streams: Number,
    /// `expires_at = observed_at + max_age_s`.
    pub max_age_s: u64,
}

/// The safety observation from firing Prometheus alerts (`ALERTS{alertstate="firing"}`).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SafetySource {
    /// The Prometheus server holding the alerts.
    pub server: String,
    /// Alert names that mean `overloaded`.
    #[serde(default)]
    pub overloaded: Vec<String>,
    /// Alert names that mean `noisy_neighbor`.
    #[serde(default)]
    pub noisy_neighbor: Vec<String>,
    /// `expires_at = observed_at + max_age_s`.
    pub max_age_s: u64,
}

/// Where one integer field is read.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Number {
    /// A configured value (a quota's limit): configuration, not observation.
    Static(u64),
    /// An instant query answering one sample.
    Prometheus(PrometheusQuery),
    /// A Redis read.
    Redis(RedisRead),
}

/// Where one boolean field is read.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Flag {
    /// A configured value.
    Static(bool),
    /// An instant query answering one sample, 0 (false) or 1 (true).
    Prometheus(PrometheusQuery),
}

/// An instant query.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusQuery {
    /// The server's name in `prometheus`.
    pub server: String,
    /// PromQL answering exactly one sample (a vector of one series, or a scalar).
    pub query: String,
    /// The sample is multiplied by this before rounding (default 1; e.g. 1000 for seconds to ms).
    #[serde(default)]
    pub scale: Option<f64>,
    /// `ceil` or `floor` (default: the field's conservative direction).
    #[serde(default)]
    pub round: Option<Round>,
    /// A shared query: `query` serves many units (an expression aggregated `by` a label, e.g.
    /// `sum by (unit) (gateway_active_connections)`), run once per round for all of them, and
    /// this unit's sample is its one series whose `label` is `value`. Absent: `query` answers
    /// this unit's one sample.
    #[serde(default)]
    pub series: Option<SeriesOf>,
}

/// The series of a shared query that is this unit's.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesOf {
    /// The label the query is aggregated by (a Prometheus label name).
    pub label: String,
    /// This unit's value of it.
    pub value: String,
}

/// How a float becomes the SPEC's integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Round {
    /// Up.
    Ceil,
    /// Down.
    Floor,
}

/// A Redis read answering one non-negative integer.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisRead {
    /// The server's name in `redis`.
    pub server: String,
    /// The command.
    pub command: RedisCommand,
    /// The key.
    pub key: String,
    /// The hash field (`HGET` only).
    #[serde(default)]
    pub field: Option<String>,
}

/// The Redis commands a field may be read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum RedisCommand {
    /// A list's length (a queue backlog).
    Llen,
    /// A stream's length.
    Xlen,
    /// A sorted set's size.
    Zcard,
    /// A set's size.
    Scard,
    /// A string holding an integer (a counter of atomic increments).
    Get,
    /// A hash field holding an integer.
    Hget,
}

impl RedisCommand {
    /// The command's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llen => "LLEN",
            Self::Xlen => "XLEN",
            Self::Zcard => "ZCARD",
            Self::Scard => "SCARD",
            Self::Get => "GET",
            Self::Hget => "HGET",
        }
    }
}

/// A sources file that cannot be used: where, and why. The unit keeps its last good sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcesError {
    /// The path of the offending field (`signal.value.prometheus.server`), empty for the document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SourcesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

impl std::error::Error for SourcesError {}

fn error(path: impl Into<String>, message: impl Into<String>) -> SourcesError {
    SourcesError { path: path.into(), message: message.into() }
}

impl Sources {
    /// Parses and validates a sources file's text (`yaml`: YAML 1.2, else JSON).
    ///
    /// # Errors
    /// [`SourcesError`] for text that is not the document (an unknown field, a wrong type, with
    /// its line and column) or a document [`Self::validate`] refuses.
    pub fn parse(text: &str, yaml: bool) -> Result<Self, SourcesError> {
        let sources: Self = if yaml {
            let options = serde_saphyr::options! {
                strict_booleans: true,
                duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            };
            serde_saphyr::from_str_with_options(text, options).map_err(|e| error("", e.to_string()))?
        } else {
            crate::strict::check(text.as_bytes()).map_err(|e| error("", e.to_string()))?;
            serde_json::from_str(text).map_err(|e| error("", e.to_string()))?
        };
        sources.validate()?;
        Ok(sources)
    }

    /// Checks what the types cannot: servers named and declared, URLs without credentials,
    /// ages and timeouts in range, a finite positive `scale`, `field` exactly for `HGET`,
    /// alert names that are Prometheus names, no axis or `quota_ref` twice.
    ///
    /// # Errors
    /// The first fault, at its path.
    pub fn validate(&self) -> Result<(), SourcesError> {
        if let Some(interval) = self.interval_s
            && !(1..=MAX_SECONDS).contains(&interval)
        {
            return Err(error("interval_s", format!("must be 1..={MAX_SECONDS}")));
        }
        for (name, server) in &self.prometheus {
            let path = format!("prometheus.{name}");
            check_name(&path, name)?;
            check_url(&format!("{path}.url"), &server.url, &["http", "https"])?;
            if server.url.starts_with("https:") && server.ca_file.is_none() {
                return Err(error(format!("{path}.ca_file"), "an https server needs ca_file"));
            }
            check_timeout(&format!("{path}.timeout_ms"), server.timeout_ms)?;
        }
        for (name, server) in &self.redis {
            let path = format!("redis.{name}");
            check_name(&path, name)?;
            check_url(&format!("{path}.url"), &server.url, &["redis"])?;
            check_timeout(&format!("{path}.timeout_ms"), server.timeout_ms)?;
        }
        if let Some(replicas) = &self.replicas {
            check_age("replicas.max_age_s", replicas.max_age_s)?;
            if matches!(replicas.count, Number::Static(_)) {
                return Err(error("replicas.count", "the replica count is observed, never static"));
            }
            self.check_number("replicas.count", &replicas.count)?;
        }
        if let Some(signal) = &self.signal {
            check_age("signal.max_age_s", signal.max_age_s)?;
            self.check_number("signal.value", &signal.value)?;
        }
        let mut axes = Vec::new();
        for (index, capacity) in self.capacities.iter().enumerate() {
            let path = format!("capacities[{index}]");
            if axes.contains(&capacity.axis) {
                return Err(error(format!("{path}.axis"), "an axis is declared once"));
            }
            axes.push(capacity.axis);
            check_age(&format!("{path}.max_age_s"), capacity.max_age_s)?;
            self.check_number(&format!("{path}.allocatable"), &capacity.allocatable)?;
            self.check_number(&format!("{path}.reserved"), &capacity.reserved)?;
            self.check_number(&format!("{path}.used"), &capacity.used)?;
        }
        let mut refs: Vec<&str> = Vec::new();
        for (index, quota) in self.quotas.iter().enumerate() {
            let path = format!("quotas[{index}]");
            if quota.quota_ref.is_empty() || refs.contains(&quota.quota_ref.as_str()) {
                return Err(error(format!("{path}.quota_ref"), "a quota_ref is declared once and not empty"));
            }
            refs.push(&quota.quota_ref);
            check_age(&format!("{path}.max_age_s"), quota.max_age_s)?;
            self.check_number(&format!("{path}.limit"), &quota.limit)?;
            self.check_number(&format!("{path}.used"), &quota.used)?;
        }
        if let Some(continuity) = &self.continuity {
            check_age("continuity.max_age_s", continuity.max_age_s)?;
            if let Flag::Prometheus(query) = &continuity.ready {
                self.check_query("continuity.ready.prometheus", query)?;
            }
            self.check_number("continuity.active_sessions", &continuity.active_sessions)?;
            self.check_number("continuity.active_streams", &continuity.active_streams)?;
        }
        if let Some(safety) = &self.safety {
            check_age("safety.max_age_s", safety.max_age_s)?;
            if !self.prometheus.contains_key(&safety.server) {
                return Err(error("safety.server", format!("no Prometheus server named {:?}", safety.server)));
            }
            if safety.overloaded.is_empty() && safety.noisy_neighbor.is_empty() {
                return Err(error("safety", "name at least one alert (overloaded or noisy_neighbor)"));
            }
            for (list, names) in [("overloaded", &safety.overloaded), ("noisy_neighbor", &safety.noisy_neighbor)] {
                for (index, name) in names.iter().enumerate() {
                    if !is_alert_name(name) {
                        return Err(error(
                            format!("safety.{list}[{index}]"),
                            "not an alert name ([A-Za-z][A-Za-z0-9_]*)",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn check_number(&self, path: &str, number: &Number) -> Result<(), SourcesError> {
        match number {
            Number::Static(value) => {
                if *value > scale_units_core::LIMITS.max_amount {
                    return Err(error(path, "a value is at most 10^15 (SPEC §5)"));
                }
                Ok(())
            }
            Number::Prometheus(query) => self.check_query(&format!("{path}.prometheus"), query),
            Number::Redis(read) => {
                let path = format!("{path}.redis");
                if !self.redis.contains_key(&read.server) {
                    return Err(error(format!("{path}.server"), format!("no Redis server named {:?}", read.server)));
                }
                if read.key.is_empty() {
                    return Err(error(format!("{path}.key"), "the key is empty"));
                }
                match (read.command, &read.field) {
                    (RedisCommand::Hget, None) => Err(error(format!("{path}.field"), "HGET needs a field")),
                    (RedisCommand::Hget, Some(_)) | (_, None) => Ok(()),
                    (_, Some(_)) => Err(error(format!("{path}.field"), "only HGET reads a field")),
                }
            }
        }
    }

    fn check_query(&self, path: &str, query: &PrometheusQuery) -> Result<(), SourcesError> {
        if !self.prometheus.contains_key(&query.server) {
            return Err(error(format!("{path}.server"), format!("no Prometheus server named {:?}", query.server)));
        }
        if query.query.trim().is_empty() {
            return Err(error(format!("{path}.query"), "the query is empty"));
        }
        if let Some(series) = &query.series {
            if !is_label_name(&series.label) {
                return Err(error(format!("{path}.series.label"), "not a label name ([A-Za-z_][A-Za-z0-9_]*)"));
            }
            if series.value.is_empty() {
                return Err(error(format!("{path}.series.value"), "the label value is empty"));
            }
        }
        if let Some(scale) = query.scale
            && !(scale.is_finite() && scale > 0.0)
        {
            return Err(error(format!("{path}.scale"), "scale must be a finite number above 0"));
        }
        Ok(())
    }
}

impl Sources {
    /// The shared queries an observation (`signal`, `capacity.<axis>`, …, as
    /// [`crate::collect::Collected::source`] names it) is read from, as
    /// `prometheus.<server>: <query> [<label>=<value>]`.
    pub fn shared_queries(&self, source: &str) -> Vec<String> {
        let mut numbers: Vec<&Number> = Vec::new();
        let mut flags: Vec<&Flag> = Vec::new();
        match source {
            "replicas" => numbers.extend(self.replicas.as_ref().map(|replicas| &replicas.count)),
            "signal" => numbers.extend(self.signal.as_ref().map(|signal| &signal.value)),
            "continuity" => {
                if let Some(continuity) = &self.continuity {
                    numbers.extend([&continuity.active_sessions, &continuity.active_streams]);
                    flags.push(&continuity.ready);
                }
            }
            _ => {
                if let Some(axis) = source.strip_prefix("capacity.") {
                    for capacity in self.capacities.iter().filter(|capacity| capacity.axis.as_str() == axis) {
                        numbers.extend([&capacity.allocatable, &capacity.reserved, &capacity.used]);
                    }
                }
                if let Some(quota_ref) = source.strip_prefix("quota.") {
                    for quota in self.quotas.iter().filter(|quota| quota.quota_ref == quota_ref) {
                        numbers.extend([&quota.limit, &quota.used]);
                    }
                }
            }
        }
        let queries = numbers
            .into_iter()
            .filter_map(|number| match number {
                Number::Prometheus(query) => Some(query),
                Number::Static(_) | Number::Redis(_) => None,
            })
            .chain(flags.into_iter().filter_map(|flag| match flag {
                Flag::Prometheus(query) => Some(query),
                Flag::Static(_) => None,
            }));
        queries
            .filter_map(|query| {
                let series = query.series.as_ref()?;
                Some(format!("prometheus.{}: {} [{}={}]", query.server, query.query, series.label, series.value))
            })
            .collect()
    }
}

/// A server name: 1 to 63 lower-case letters, digits and `-` (it appears in `source_ref`).
fn check_name(path: &str, name: &str) -> Result<(), SourcesError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
    if valid { Ok(()) } else { Err(error(path, "a server name is 1 to 63 of a-z, 0-9 and -")) }
}

fn check_url(path: &str, url: &str, schemes: &[&str]) -> Result<(), SourcesError> {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    if !scheme.is_some_and(|scheme| schemes.contains(&scheme)) {
        return Err(error(path, format!("the URL's scheme must be one of {}", schemes.join(", "))));
    }
    // A Prometheus URL carries no credentials (the bearer token file does); a Redis URL may.
    if schemes != ["redis"]
        && url
            .split_once("://")
            .is_some_and(|(_, rest)| rest.split('/').next().is_some_and(|authority| authority.contains('@')))
    {
        return Err(error(path, "no credentials in the URL: use bearer_token_file"));
    }
    if url.parse::<hyper::Uri>().is_err() {
        return Err(error(path, "not a URL"));
    }
    Ok(())
}

fn check_age(path: &str, seconds: u64) -> Result<(), SourcesError> {
    if (1..=MAX_SECONDS).contains(&seconds) { Ok(()) } else { Err(error(path, format!("must be 1..={MAX_SECONDS}"))) }
}

fn check_timeout(path: &str, millis: u64) -> Result<(), SourcesError> {
    if (1..=60_000).contains(&millis) { Ok(()) } else { Err(error(path, "must be 1..=60000 ms")) }
}

fn is_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

fn is_alert_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_alphabetic())
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// The sources file's JSON Schema (draft 2020-12), as `schema/sources.schema.json` holds it.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Sources)).unwrap_or_default()
}

/// The unit a sources file is for, when `file_name` is `<namespace>.<name>.sources.<yaml|yml|json>`,
/// and whether it is YAML.
pub fn unit_of_file(file_name: &str) -> Option<(&str, bool)> {
    [(".sources.yaml", true), (".sources.yml", true), (".sources.json", false)]
        .iter()
        .find_map(|(suffix, yaml)| file_name.strip_suffix(suffix).map(|stem| (stem, *yaml)))
}
