//! The server's configuration: [`ServeConfig`], every option of `scale-units serve` as a field
//! (the flag's name with `_` for `-`), read from flags by the CLI or from a YAML/JSON file
//! (`scale-units serve --config FILE`, [`ServeConfig::from_file`]; its JSON Schema is
//! `schema/serve-config.schema.json`, [`schema`]).
//!
//! [`ServeConfig::check`] turns it into a [`CheckedConfig`]: the token and Redis files read, the
//! environment's fallbacks applied, every refused combination reported as a [`ConfigError`] —
//! before anything is compiled, connected or bound. [`crate::server::Server`] then owns the
//! wiring.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::audit::AuditMode;
use crate::listen::Limits;
use crate::listen::tls::TlsFiles;
use crate::service::ServiceConfig;

/// Every option of `scale-units serve`. Absent fields take the flag's default; an unknown field
/// is refused.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServeConfig {
    /// Address to listen on (port 0 picks one).
    pub listen: SocketAddr,
    /// The component staged and activated at start (default: the built one, else the bundled
    /// one); its signature, when a trust key is set, in FILE.sig as hex.
    pub policy: Option<PathBuf>,
    /// ed25519 public key (hex, or @FILE): every component needs a signature over its digest.
    pub trust_key: Option<String>,
    /// Bearer token of the admin role, the policy-changing routes (else $SCALE_UNITS_TOKEN);
    /// without one they are disabled. Also the push and read roles' when they have none.
    pub token_file: Option<PathBuf>,
    /// Bearer token of the push role: observations, and admission reviews without a client
    /// certificate. With it, the admin token is refused there.
    pub push_token_file: Option<PathBuf>,
    /// Bearer token of the read role: evaluation, validation, GET /v1/policies and /v1/units…
    /// (outside loopback). With it, the admin token is refused there.
    pub read_token_file: Option<PathBuf>,
    /// Vectors of the conformance gate (default: those shipped with the host).
    pub conformance: Option<PathBuf>,
    /// Stage new *.wasm (and *.wasm.sig) found in this folder.
    pub watch: Option<PathBuf>,
    /// How often the watched folder is scanned, in milliseconds.
    pub watch_interval_ms: u64,
    /// After SIGTERM, serve on with /ready failing for this long, in milliseconds.
    pub shutdown_delay_ms: u64,
    /// Then wait at most this long for requests in flight, in milliseconds.
    pub drain_timeout_ms: u64,
    /// Largest evaluation body, in bytes.
    pub max_body_bytes: usize,
    /// Most requests in one batch.
    pub max_batch: usize,
    /// Evaluations at once (default: the number of CPUs).
    pub workers: Option<usize>,
    /// Compile components instead of using the precompiled cache.
    pub no_cache: bool,
    /// Compilations kept in the precompiled cache at most.
    pub cache_max_entries: usize,
    /// Policies kept staged at most (at least 2); a new one evicts the oldest not in use.
    pub max_staged: usize,
    /// Units pinned at once at most; a pin of one more is refused (409 pins_full).
    pub max_pins: usize,
    /// Scale-unit contracts by unit, <namespace>.<name>.json|yaml|yml (a mounted ConfigMap),
    /// reloaded on change; enables the unit routes and the admission webhook.
    pub units: Option<PathBuf>,
    /// Watch the Kubernetes API server (in a pod, with its ServiceAccount; outside a cluster,
    /// $KUBECONFIG or ~/.kube/config): ScaleUnit resources are units, and each unit's replica
    /// count and cooldowns come from its scale target as the API server holds it. Enables the
    /// unit routes, the admission webhook and KEDA's scaler without `units`.
    pub kubernetes: bool,
    /// With `kubernetes`: this kubeconfig file instead of the pod's ServiceAccount.
    pub kubeconfig: Option<PathBuf>,
    /// With `kubernetes`: status writes per ScaleUnit per minute at most.
    pub status_writes_per_minute: u32,
    /// How often the units folder is rescanned, in milliseconds.
    pub units_interval_ms: u64,
    /// Keep observations in Redis (redis://host:port/db). A URL with a password belongs in
    /// `redis_url_file` or $SCALE_UNITS_REDIS_URL.
    pub redis: Option<String>,
    /// Keep each unit's last admitted scale action and the journal in a redb database in this
    /// folder (a volume).
    pub state_dir: Option<PathBuf>,
    /// Read the Redis URL from this file (a mounted Secret), else from $SCALE_UNITS_REDIS_URL.
    pub redis_url_file: Option<PathBuf>,
    /// For a rediss:// Redis: trust only the CA certificates in this PEM file.
    pub redis_ca_file: Option<PathBuf>,
    /// How often each unit's sources file is collected, unless it sets interval_s, in
    /// milliseconds.
    pub collect_interval_ms: u64,
    /// How long a pushed or admitted replica count stays evidence when the unit's sources declare
    /// no replicas.max_age_s, in seconds.
    pub replicas_max_age_s: u64,
    /// Serve HTTPS (every route) for the admission webhook; needs `units`, `tls_cert`, `tls_key`.
    pub webhook: bool,
    /// PEM certificate chain, reloaded when it changes.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key, reloaded when it changes.
    pub tls_key: Option<PathBuf>,
    /// The webhook answers allowed, with the would-be denial as a warning.
    pub webhook_dry_run: bool,
    /// Admission reviews authenticate with a client certificate signed by a CA of this PEM file.
    pub webhook_client_ca: Option<PathBuf>,
    /// Also serve KEDA's external scaler (gRPC) on this address; needs `units`.
    pub keda_listen: Option<SocketAddr>,
    /// How often an open StreamIsActive re-reads its unit, in milliseconds.
    pub keda_stream_interval_ms: u64,
    /// StreamIsActive streams open at once; past it one is refused ResourceExhausted.
    pub keda_max_streams: usize,
    /// Serve the KEDA scaler over TLS with this PEM certificate chain; needs `keda_tls_key`.
    pub keda_tls_cert: Option<PathBuf>,
    /// The KEDA listener's PEM private key.
    pub keda_tls_key: Option<PathBuf>,
    /// Require KEDA to present a client certificate signed by a CA of this PEM file.
    pub keda_client_ca: Option<PathBuf>,
    /// Also serve Envoy's external authorization (gRPC ext_authz) on this address: scale calls
    /// through Envoy are allowed or denied by their unit's decision; needs `units`.
    pub envoy_listen: Option<SocketAddr>,
    /// The routes that say which requests are scale calls (YAML, or JSON by its .json
    /// extension; reloaded when it changes). Default: the docker, nomad and kubernetes presets.
    pub envoy_routes: Option<PathBuf>,
    /// How often the routes file is checked for a change, in milliseconds.
    pub envoy_routes_interval_ms: u64,
    /// Serve ext_authz over TLS with this PEM certificate chain; needs `envoy_tls_key`.
    pub envoy_tls_cert: Option<PathBuf>,
    /// The Envoy listener's PEM private key.
    pub envoy_tls_key: Option<PathBuf>,
    /// Require Envoy to present a client certificate signed by a CA of this PEM file.
    pub envoy_client_ca: Option<PathBuf>,
    /// Members of these groups may override a webhook denial (break glass); the flag
    /// `--override-group`, repeated.
    pub override_groups: Vec<String>,
    /// Append the decision audit log to this file instead of stdout ("-").
    pub audit_log: PathBuf,
    /// When an audit line cannot be written: `batch` drops and counts it, `blocking-strict`
    /// fails the request after `audit_timeout_ms`.
    pub audit_mode: AuditModeConfig,
    /// How long a request waits for its audit lines, in milliseconds.
    pub audit_timeout_ms: u64,
    /// Audit lines waiting for the writer at most.
    pub audit_buffer_lines: usize,
    /// A KEDA answer repeating the unit's previous one is summarized, but written at least this
    /// often, in milliseconds.
    pub audit_summary_ms: u64,
    /// Time a new connection has for its TLS handshake and its first byte, in milliseconds.
    pub handshake_timeout_ms: u64,
    /// Time each request head has, in milliseconds.
    pub header_timeout_ms: u64,
    /// Time a request has to be read and answered, in milliseconds.
    pub request_timeout_ms: u64,
    /// Connections open at once on each listener.
    pub max_connections: usize,
    /// Connections past `max_connections` kept for callers with a trusted client certificate.
    pub reserved_connections: usize,
    /// Anonymous connections from one IP address at once, on each listener.
    pub max_connections_per_peer: usize,
    /// The process's log lines on stderr: `text` or `json` (one object a line). The audit log
    /// is not a log: it keeps its format.
    pub log_format: LogFormat,
}

/// `audit_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AuditModeConfig {
    /// Drop and count a line that cannot be written.
    #[default]
    Batch,
    /// Fail the request when its line is not written in time.
    BlockingStrict,
}

/// `log_format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// One line of words per event.
    #[default]
    Text,
    /// One JSON object per event.
    Json,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            policy: None,
            trust_key: None,
            token_file: None,
            push_token_file: None,
            read_token_file: None,
            conformance: None,
            watch: None,
            watch_interval_ms: 2000,
            shutdown_delay_ms: 5000,
            drain_timeout_ms: 20_000,
            max_body_bytes: 1_048_576,
            max_batch: 1000,
            workers: None,
            no_cache: false,
            cache_max_entries: scale_units_host::PolicyBuilder::DEFAULT_CACHE_MAX_ENTRIES,
            max_staged: scale_units_host::registry::DEFAULT_MAX_STAGED,
            max_pins: scale_units_host::registry::DEFAULT_MAX_PINS,
            units: None,
            kubernetes: false,
            kubeconfig: None,
            status_writes_per_minute: 6,
            units_interval_ms: 2000,
            redis: None,
            state_dir: None,
            redis_url_file: None,
            redis_ca_file: None,
            collect_interval_ms: 15_000,
            replicas_max_age_s: 300,
            webhook: false,
            tls_cert: None,
            tls_key: None,
            webhook_dry_run: false,
            webhook_client_ca: None,
            keda_listen: None,
            keda_stream_interval_ms: 5000,
            keda_max_streams: crate::keda::DEFAULT_MAX_STREAMS,
            keda_tls_cert: None,
            keda_tls_key: None,
            keda_client_ca: None,
            envoy_listen: None,
            envoy_routes: None,
            envoy_routes_interval_ms: 2000,
            envoy_tls_cert: None,
            envoy_tls_key: None,
            envoy_client_ca: None,
            override_groups: Vec::new(),
            audit_log: PathBuf::from("-"),
            audit_mode: AuditModeConfig::Batch,
            audit_timeout_ms: 1000,
            audit_buffer_lines: crate::audit::QUEUE,
            audit_summary_ms: 60_000,
            handshake_timeout_ms: 3000,
            header_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            max_connections: 1024,
            reserved_connections: 64,
            max_connections_per_peer: 64,
            log_format: LogFormat::Text,
        }
    }
}

/// A configuration that cannot be served: a usage error (the CLI's exit 64), found before
/// anything is compiled, connected or bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: a field's path in the file (`keda_listen`), empty for a rule over several fields.
    pub path: String,
    /// What is wrong, naming the options as they were given (flags or fields).
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.path.as_str() {
            "" => f.write_str(&self.message),
            path => write!(f, "at {path}: {}", self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// How the options were given: their names in messages follow (`--tls-cert` or `tls_cert`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags.
    #[default]
    Flags,
    /// Fields of a configuration file.
    Fields,
}

impl Spelling {
    fn name(self, field: &str) -> String {
        match self {
            Self::Flags => format!("--{}", field.replace('_', "-")),
            Self::Fields => field.to_owned(),
        }
    }
}

impl ServeConfig {
    /// Reads a configuration file: YAML (`.yaml`, `.yml`; YAML 1.2 booleans, a duplicate key
    /// refused) or JSON. Fails with the error at its path (`keda_listen: invalid socket address`),
    /// or on an unknown field.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
            path: String::new(),
            message: format!("cannot read the configuration {}: {error}", path.display()),
        })?;
        let yaml = path.extension().is_some_and(|extension| extension == "yaml" || extension == "yml");
        Self::from_text(&text, yaml)
            .map_err(|error| ConfigError { message: format!("in {}: {}", path.display(), error.message), ..error })
    }

    /// [`Self::from_file`] over a document already read.
    pub fn from_text(text: &str, yaml: bool) -> Result<Self, ConfigError> {
        let value: serde_json::Value = if yaml {
            let options = serde_saphyr::options! {
                strict_booleans: true,
                duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            };
            serde_saphyr::from_str_with_options(text, options).map_err(|error| ConfigError {
                path: String::new(),
                message: format!("the document is not valid YAML: {error}"),
            })?
        } else {
            serde_json::from_str(text).map_err(|error| ConfigError {
                path: String::new(),
                message: format!("the document is not valid JSON: {error}"),
            })?
        };
        // An empty document is the defaults.
        let value = if value.is_null() { serde_json::Value::Object(serde_json::Map::new()) } else { value };
        serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            ConfigError {
                path: if path == "." { String::new() } else { path },
                message: error.into_inner().to_string(),
            }
        })
    }

    /// Reads the files the configuration names (tokens, the Redis URL and CA), applies the
    /// environment's fallbacks ($SCALE_UNITS_TOKEN, $SCALE_UNITS_REDIS_URL) and refuses every
    /// combination that cannot be served — naming the options as `spelling` says.
    pub fn check(self, spelling: Spelling) -> Result<CheckedConfig, ConfigError> {
        crate::config::check::check(self, spelling)
    }
}

mod check;

/// A configuration [`ServeConfig::check`] accepted: what [`crate::server::Server::new`] wires.
pub struct CheckedConfig {
    pub(crate) listen: SocketAddr,
    pub(crate) policy: Option<PathBuf>,
    pub(crate) trust_key: Option<String>,
    pub(crate) conformance: Option<PathBuf>,
    pub(crate) no_cache: bool,
    pub(crate) cache_max_entries: usize,
    pub(crate) max_staged: usize,
    pub(crate) max_pins: usize,
    pub(crate) service: ServiceConfig,
    pub(crate) units: Option<PathBuf>,
    pub(crate) kubernetes: Option<crate::kubernetes::KubernetesOptions>,
    pub(crate) units_interval: Duration,
    pub(crate) redis: Option<String>,
    pub(crate) redis_ca: Option<Vec<u8>>,
    pub(crate) state_dir: Option<PathBuf>,
    pub(crate) collect_interval: Duration,
    pub(crate) replicas_max_age: Duration,
    pub(crate) webhook_tls: Option<TlsFiles>,
    pub(crate) keda_listen: Option<SocketAddr>,
    pub(crate) keda_stream_interval: Duration,
    pub(crate) keda_max_streams: usize,
    pub(crate) keda_tls: Option<TlsFiles>,
    pub(crate) envoy_listen: Option<SocketAddr>,
    pub(crate) envoy_routes: Option<PathBuf>,
    pub(crate) envoy_routes_interval: Duration,
    pub(crate) envoy_tls: Option<TlsFiles>,
    pub(crate) audit_log: PathBuf,
    pub(crate) audit_summary: Duration,
    pub(crate) audit_mode: AuditMode,
    pub(crate) audit_timeout: Duration,
    pub(crate) audit_buffer: usize,
    pub(crate) log_format: LogFormat,
}

impl CheckedConfig {
    /// The component to stage at start, when the configuration names one.
    pub fn policy(&self) -> Option<&Path> {
        self.policy.as_deref()
    }

    /// The log format asked for (the binary installs the subscriber).
    pub fn log_format(&self) -> LogFormat {
        self.log_format
    }

    /// The HTTP listener's limits (shared by every listener).
    pub fn limits(&self) -> Limits {
        self.service.limits
    }
}

/// The configuration file's JSON Schema (draft 2020-12), as `schema/serve-config.schema.json`
/// holds it.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ServeConfig)).unwrap_or_default()
}
