//! `scale-units serve`: the flags (or `--config FILE`) turned into a
//! [`scale_units_server::config::ServeConfig`], checked (every usage error, exit 64, before
//! anything is compiled, connected or bound), and handed to [`scale_units_server::server::Server`],
//! which owns the wiring.

use std::net::SocketAddr;
use std::path::PathBuf;

use scale_units_server::config::{AuditModeConfig, LogFormat, ServeConfig, Spelling};
use scale_units_server::server::{PolicySource, Server};
use scale_units_server::service::termination_signal;

use crate::Failure;

/// The defaults of every option: the configuration file's.
fn defaults() -> ServeConfig {
    ServeConfig::default()
}

const AFTER_HELP: &str = "\
A listener outside loopback needs a token for pushes and reads (--token-file, or --push-token-file \
and --read-token-file), and then evaluation needs the read token too; a KEDA listener outside \
loopback needs TLS with a client CA. \
Prints `listening on ADDR` on stdout once it accepts connections (and `keda external scaler \
listening on ADDR` and `envoy ext_authz listening on ADDR` before it, with --keda-listen and \
--envoy-listen); then, unless --audit-log names a file, one \
JSON line per decision served (the decision audit log). Log lines go to stderr (RUST_LOG filters \
them; default info).";

/// `scale-units serve`'s options.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP, group(clap::ArgGroup::new("flags").multiple(true)))]
pub(crate) struct ServeArgs {
    /// Read every option from FILE (YAML, or JSON: each flag a field, its name with `_` for `-`;
    /// schema/serve-config.schema.json) instead of flags; a flag beside it is refused.
    #[arg(long, value_name = "FILE", conflicts_with = "flags")]
    config: Option<PathBuf>,
    /// Address to listen on (port 0 picks one).
    #[arg(long, group = "flags", value_name = "ADDR", default_value_t = defaults().listen)]
    listen: SocketAddr,
    /// The component staged and activated at start (default: the built one, else the bundled
    /// one); its signature, when a trust key is set, in FILE.sig as hex.
    #[arg(long, group = "flags", value_name = "FILE")]
    policy: Option<PathBuf>,
    /// ed25519 public key (hex, or @FILE): every component needs a signature over its digest.
    #[arg(long, group = "flags", value_name = "HEX|@FILE")]
    trust_key: Option<String>,
    /// Bearer token of the admin role, the policy-changing routes (else $SCALE_UNITS_TOKEN);
    /// without one they are disabled. Also the push and read roles' when they have none.
    #[arg(long, group = "flags", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Bearer token of the push role: observations, and admission reviews without a client
    /// certificate. With it, the admin token is refused there.
    #[arg(long, group = "flags", value_name = "FILE")]
    push_token_file: Option<PathBuf>,
    /// Bearer token of the read role: evaluation, validation, GET /v1/policies and /v1/units…
    /// (outside loopback). With it, the admin token is refused there.
    #[arg(long, group = "flags", value_name = "FILE")]
    read_token_file: Option<PathBuf>,
    /// Vectors of the conformance gate (default: those shipped with the host).
    #[arg(long, group = "flags", value_name = "DIR")]
    conformance: Option<PathBuf>,
    /// Stage new *.wasm (and *.wasm.sig) found in DIR.
    #[arg(long, group = "flags", value_name = "DIR")]
    watch: Option<PathBuf>,
    /// How often the watched folder is scanned, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().watch_interval_ms)]
    watch_interval_ms: u64,
    /// After SIGTERM, serve on with /ready failing for this long, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().shutdown_delay_ms)]
    shutdown_delay_ms: u64,
    /// Then wait at most this long for requests in flight, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().drain_timeout_ms)]
    drain_timeout_ms: u64,
    /// Largest evaluation body, in bytes.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_body_bytes)]
    max_body_bytes: usize,
    /// Most requests in one batch.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_batch)]
    max_batch: usize,
    /// Evaluations at once (default: the number of CPUs).
    #[arg(long, group = "flags", value_name = "N")]
    workers: Option<usize>,
    /// Compile components instead of using the precompiled cache.
    #[arg(long, group = "flags")]
    no_cache: bool,
    /// Compilations kept in the precompiled cache at most; each store removes the least recently
    /// written past it.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().cache_max_entries)]
    cache_max_entries: usize,
    /// Policies kept staged at most (at least 2); a new one evicts the oldest not in use.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_staged)]
    max_staged: usize,
    /// Units pinned at once at most; a pin of one more is refused (409 pins_full).
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_pins)]
    max_pins: usize,
    /// Scale-unit contracts by unit, <namespace>.<name>.json|yaml|yml (a mounted ConfigMap),
    /// reloaded on change; enables PUT /v1/units/{ns}/{name}/observations, GET
    /// /v1/units[/{ns}/{name}] and POST /v1/admission.
    #[arg(long, group = "flags", value_name = "DIR")]
    units: Option<PathBuf>,
    /// How often the units folder is rescanned, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().units_interval_ms)]
    units_interval_ms: u64,
    /// Watch the Kubernetes API server (in a pod, with its ServiceAccount; outside a cluster,
    /// $KUBECONFIG or ~/.kube/config): ScaleUnit resources are units, and each unit's replica
    /// count and cooldowns come from its scale target as the API server holds it. Enables the
    /// unit routes, the webhook and KEDA's scaler without --units.
    #[arg(long, group = "flags")]
    kubernetes: bool,
    /// With --kubernetes: this kubeconfig file instead of the pod's ServiceAccount.
    #[arg(long, group = "flags", value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// With --kubernetes: status writes per ScaleUnit per minute at most.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().status_writes_per_minute)]
    status_writes_per_minute: u32,
    /// Keep observations in Redis (redis://host:port/db), shared by every replica (default: in
    /// this process). Visible in `ps` and the Pod spec: give a URL with a password through
    /// --redis-url-file or $SCALE_UNITS_REDIS_URL instead.
    #[arg(long, group = "flags", value_name = "URL", conflicts_with = "redis_url_file")]
    redis: Option<String>,
    /// Keep each unit's last admitted scale action and the journal of accepted decisions in a
    /// redb database in DIR (a volume), written to disk before an admission is answered. Without
    /// it or --redis they live in this process, and after a restart every unit's cooldowns count
    /// from the start.
    #[arg(long, group = "flags", value_name = "DIR", conflicts_with_all = ["redis", "redis_url_file"])]
    state_dir: Option<PathBuf>,
    /// Read the Redis URL from FILE (a mounted Secret), else from $SCALE_UNITS_REDIS_URL.
    #[arg(long, group = "flags", value_name = "FILE")]
    redis_url_file: Option<PathBuf>,
    /// For a rediss:// (TLS) Redis: trust only the CA certificates in FILE (PEM) instead of the
    /// system's roots.
    #[arg(long, group = "flags", value_name = "FILE")]
    redis_ca_file: Option<PathBuf>,
    /// How often each unit's sources file (<namespace>.<name>.sources.yaml|yml|json in --units)
    /// is collected into evidence, unless it sets interval_s, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().collect_interval_ms)]
    collect_interval_ms: u64,
    /// How long a pushed current_replicas, or a count the webhook admitted, stays evidence when
    /// the unit's sources declare no replicas.max_age_s, in seconds.
    #[arg(long, group = "flags", value_name = "S", default_value_t = defaults().replicas_max_age_s)]
    replicas_max_age_s: u64,
    /// Serve HTTPS (every route) for the admission webhook; needs --units, --tls-cert and --tls-key.
    #[arg(long, group = "flags")]
    webhook: bool,
    /// PEM certificate chain, reloaded when it changes.
    #[arg(long, group = "flags", value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// PEM private key, reloaded when it changes.
    #[arg(long, group = "flags", value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// Units in Enforce mode are answered as in Warn mode: allowed, with the would-be denial as a
    /// warning.
    #[arg(long, group = "flags")]
    webhook_dry_run: bool,
    /// Admission reviews authenticate with a client certificate signed by a CA of this PEM file
    /// (the API server's, from its webhook kubeconfig); other routes (probes) need none. A review
    /// records nothing, so this only marks the audit lines of reviews without one.
    #[arg(long, group = "flags", value_name = "FILE")]
    webhook_client_ca: Option<PathBuf>,
    /// Also serve KEDA's external scaler (gRPC) on ADDR; needs --units; drains with the service.
    #[arg(long, group = "flags", value_name = "ADDR")]
    keda_listen: Option<SocketAddr>,
    /// How often an open StreamIsActive re-reads its unit, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().keda_stream_interval_ms)]
    keda_stream_interval_ms: u64,
    /// StreamIsActive streams open at once (each polls its unit); past it one is refused
    /// ResourceExhausted.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().keda_max_streams)]
    keda_max_streams: usize,
    /// Serve the KEDA scaler over TLS with this PEM certificate chain (reloaded when it changes);
    /// needs --keda-tls-key.
    #[arg(long, group = "flags", value_name = "FILE")]
    keda_tls_cert: Option<PathBuf>,
    /// The KEDA listener's PEM private key (reloaded when it changes).
    #[arg(long, group = "flags", value_name = "FILE")]
    keda_tls_key: Option<PathBuf>,
    /// Require KEDA to present a client certificate signed by a CA of this PEM file (KEDA's
    /// tlsClientCert/tlsClientKey); needs --keda-tls-cert.
    #[arg(long, group = "flags", value_name = "FILE")]
    keda_client_ca: Option<PathBuf>,
    /// Also serve Envoy's external authorization (gRPC ext_authz) on ADDR: scale calls through
    /// Envoy are allowed or denied by their unit's decision; needs --units; drains with the
    /// service.
    #[arg(long, group = "flags", value_name = "ADDR")]
    envoy_listen: Option<SocketAddr>,
    /// The routes that say which requests are scale calls (YAML, or JSON by its .json
    /// extension; reloaded when it changes). Default: the docker, nomad and kubernetes presets.
    #[arg(long, group = "flags", value_name = "FILE")]
    envoy_routes: Option<PathBuf>,
    /// How often the routes file is checked for a change, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().envoy_routes_interval_ms)]
    envoy_routes_interval_ms: u64,
    /// Serve ext_authz over TLS with this PEM certificate chain (reloaded when it changes); needs
    /// --envoy-tls-key.
    #[arg(long, group = "flags", value_name = "FILE")]
    envoy_tls_cert: Option<PathBuf>,
    /// The Envoy listener's PEM private key (reloaded when it changes).
    #[arg(long, group = "flags", value_name = "FILE")]
    envoy_tls_key: Option<PathBuf>,
    /// Require Envoy to present a client certificate signed by a CA of this PEM file; needs
    /// --envoy-tls-cert.
    #[arg(long, group = "flags", value_name = "FILE")]
    envoy_client_ca: Option<PathBuf>,
    /// Members of GROUP (a review's userInfo.groups) may override a webhook denial: allowed with a
    /// warning, counted and audited (break glass). Repeatable; none by default.
    #[arg(long = "override-group", group = "flags", value_name = "GROUP")]
    override_groups: Vec<String>,
    /// Append the decision audit log (one JSON line per decision served) to FILE instead of
    /// stdout ("-").
    #[arg(long, group = "flags", value_name = "FILE", default_value = "-")]
    audit_log: PathBuf,
    /// When an audit line cannot be written (a stalled reader, a full disk): `batch` drops it
    /// and counts it (scale_units_audit_dropped_total) and serves the decision; `blocking-strict`
    /// fails the request (503 audit_unavailable, gRPC Unavailable) after --audit-timeout-ms.
    #[arg(long, group = "flags", value_name = "MODE", value_enum, default_value_t = AuditModeArg::Batch)]
    audit_mode: AuditModeArg,
    /// How long a request waits for its audit lines, in milliseconds: blocking-strict, until
    /// written (else 503); batch, for room in the queue while the writer makes progress (else
    /// dropped; once a write has been blocked this long, lines are dropped at once).
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().audit_timeout_ms)]
    audit_timeout_ms: u64,
    /// Audit lines waiting for the writer at most; past it batch drops, blocking-strict waits.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().audit_buffer_lines)]
    audit_buffer_lines: usize,
    /// A KEDA answer repeating the unit's previous one is summarized, but written at least this
    /// often, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().audit_summary_ms)]
    audit_summary_ms: u64,
    /// Time a new connection has for its TLS handshake and the first byte of its first request
    /// (gRPC: the HTTP/2 preface), from accept, in milliseconds: an idle socket is closed then.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().handshake_timeout_ms)]
    handshake_timeout_ms: u64,
    /// Time each request head has (HTTP: and the idle time between requests), in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().header_timeout_ms)]
    header_timeout_ms: u64,
    /// Time a request has to be read and answered, in milliseconds.
    #[arg(long, group = "flags", value_name = "MS", default_value_t = defaults().request_timeout_ms)]
    request_timeout_ms: u64,
    /// Connections open at once on each listener; past it (and the reserve) new ones wait in the
    /// backlog.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_connections)]
    max_connections: usize,
    /// Connections past --max-connections kept for callers with a trusted client certificate
    /// (--webhook-client-ca, --keda-client-ca): a flood of anonymous sockets never keeps them out.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().reserved_connections)]
    reserved_connections: usize,
    /// Anonymous connections (no trusted client certificate) from one IP address at once, on each
    /// listener; past it a new one is closed when accepted.
    #[arg(long, group = "flags", value_name = "N", default_value_t = defaults().max_connections_per_peer)]
    max_connections_per_peer: usize,
    /// The log lines on stderr: `text` or `json` (one object a line); the audit log keeps its
    /// format.
    #[arg(long, group = "flags", value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Text)]
    log_format: LogFormatArg,
}

/// `--audit-mode`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum AuditModeArg {
    Batch,
    BlockingStrict,
}

/// `--log-format`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

/// Runs `scale-units serve ARGS`; returns the exit code.
pub(crate) fn run(args: ServeArgs) -> Result<u8, Failure> {
    let usage = |error: scale_units_server::config::ConfigError| Failure::Usage(error.to_string());
    let (config, spelling) = match &args.config {
        Some(file) => (ServeConfig::from_file(file).map_err(usage)?, Spelling::Fields),
        None => (args.into_config(), Spelling::Flags),
    };
    // Every usage error before anything is compiled, connected or bound.
    let config = config.check(spelling).map_err(usage)?;
    init_logs(config.log_format());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::Host(format!("cannot start the runtime: {error}")))?;
    runtime.block_on(async move {
        let policy = match crate::ComponentSource::resolve(config.policy())? {
            crate::ComponentSource::File(path) => PolicySource::File(path),
            crate::ComponentSource::Bundled => match scale_units_host::bundled_component() {
                Some((bytes, digest)) => PolicySource::Static { bytes, digest },
                None => return Err(Failure::Host(scale_units_host::HostError::NotBundled.to_string())),
            },
        };
        let host = |error: scale_units_server::server::ServerError| Failure::Host(error.to_string());
        let server = Server::new(config, policy).await.map_err(host)?;
        for (name, address) in server.extra_listeners() {
            out!("{name} listening on {address}");
        }
        out!("listening on {}", server.local_addr());
        let clean = server.run(termination_signal()).await.map_err(host)?;
        Ok(if clean { 0 } else { crate::exit::FAILURE })
    })
}

/// The process's log subscriber (the library crates log through `tracing`): words by default,
/// one JSON object a line with `--log-format json`, on stderr; `RUST_LOG` filters (default info).
fn init_logs(format: LogFormat) {
    use std::io::IsTerminal as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second initialisation (never in this binary) is not worth failing over.
    let _ = match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

impl ServeArgs {
    /// The flags as a configuration: each flag its field.
    fn into_config(self) -> ServeConfig {
        ServeConfig {
            listen: self.listen,
            policy: self.policy,
            trust_key: self.trust_key,
            token_file: self.token_file,
            push_token_file: self.push_token_file,
            read_token_file: self.read_token_file,
            conformance: self.conformance,
            watch: self.watch,
            watch_interval_ms: self.watch_interval_ms,
            shutdown_delay_ms: self.shutdown_delay_ms,
            drain_timeout_ms: self.drain_timeout_ms,
            max_body_bytes: self.max_body_bytes,
            max_batch: self.max_batch,
            workers: self.workers,
            no_cache: self.no_cache,
            cache_max_entries: self.cache_max_entries,
            max_staged: self.max_staged,
            max_pins: self.max_pins,
            units: self.units,
            kubernetes: self.kubernetes,
            kubeconfig: self.kubeconfig,
            status_writes_per_minute: self.status_writes_per_minute,
            units_interval_ms: self.units_interval_ms,
            redis: self.redis,
            state_dir: self.state_dir,
            redis_url_file: self.redis_url_file,
            redis_ca_file: self.redis_ca_file,
            collect_interval_ms: self.collect_interval_ms,
            replicas_max_age_s: self.replicas_max_age_s,
            webhook: self.webhook,
            tls_cert: self.tls_cert,
            tls_key: self.tls_key,
            webhook_dry_run: self.webhook_dry_run,
            webhook_client_ca: self.webhook_client_ca,
            keda_listen: self.keda_listen,
            keda_stream_interval_ms: self.keda_stream_interval_ms,
            keda_max_streams: self.keda_max_streams,
            keda_tls_cert: self.keda_tls_cert,
            keda_tls_key: self.keda_tls_key,
            keda_client_ca: self.keda_client_ca,
            envoy_listen: self.envoy_listen,
            envoy_routes: self.envoy_routes,
            envoy_routes_interval_ms: self.envoy_routes_interval_ms,
            envoy_tls_cert: self.envoy_tls_cert,
            envoy_tls_key: self.envoy_tls_key,
            envoy_client_ca: self.envoy_client_ca,
            override_groups: self.override_groups,
            audit_log: self.audit_log,
            audit_mode: match self.audit_mode {
                AuditModeArg::Batch => AuditModeConfig::Batch,
                AuditModeArg::BlockingStrict => AuditModeConfig::BlockingStrict,
            },
            audit_timeout_ms: self.audit_timeout_ms,
            audit_buffer_lines: self.audit_buffer_lines,
            audit_summary_ms: self.audit_summary_ms,
            handshake_timeout_ms: self.handshake_timeout_ms,
            header_timeout_ms: self.header_timeout_ms,
            request_timeout_ms: self.request_timeout_ms,
            max_connections: self.max_connections,
            reserved_connections: self.reserved_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            log_format: match self.log_format {
                LogFormatArg::Text => LogFormat::Text,
                LogFormatArg::Json => LogFormat::Json,
            },
        }
    }
}
