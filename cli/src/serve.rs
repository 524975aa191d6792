//! `scale-units serve`: the decision service (`scale_units_server::service`) over a policy
//! registry, with the given component staged through the conformance gate and activated.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scale_units_host::{ConformanceSuite, Policy, PolicyRegistry, default_cache_dir};
use scale_units_server::audit::{AuditLog, AuditMode};
use scale_units_server::collect::Collector;
use scale_units_server::keda::{KedaConfig, KedaScaler};
use scale_units_server::listen::Limits;
use scale_units_server::service::{Service, ServiceConfig, termination_signal};
use scale_units_server::units::Units;
use scale_units_server::webhook::tls::TlsFiles;

use crate::Failure;

mod envoy;

const AFTER_HELP: &str = "\
A listener outside loopback needs a token for pushes and reads (--token-file, or --push-token-file \
and --read-token-file), and then evaluation needs the read token too; a KEDA listener outside \
loopback needs TLS with a client CA. \
Prints `listening on ADDR` on stdout once it accepts connections (and `keda external scaler \
listening on ADDR` before it, with --keda-listen); then, unless --audit-log names a file, one \
JSON line per decision served (the decision audit log).";

/// `scale-units serve`'s options.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0 picks one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The component staged and activated at start (default: the built one, else the bundled
    /// one); its signature, when a trust key is set, in FILE.sig as hex.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// ed25519 public key (hex, or @FILE): every component needs a signature over its digest.
    #[arg(long, value_name = "HEX|@FILE")]
    trust_key: Option<String>,
    /// Bearer token of the admin role, the policy-changing routes (else $SCALE_UNITS_TOKEN);
    /// without one they are disabled. Also the push and read roles' when they have none.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Bearer token of the push role: observations, and admission reviews without a client
    /// certificate. With it, the admin token is refused there.
    #[arg(long, value_name = "FILE")]
    push_token_file: Option<PathBuf>,
    /// Bearer token of the read role: evaluation, validation, GET /v1/policies and /v1/units…
    /// (outside loopback). With it, the admin token is refused there.
    #[arg(long, value_name = "FILE")]
    read_token_file: Option<PathBuf>,
    /// Vectors of the conformance gate (default: those shipped with the host).
    #[arg(long, value_name = "DIR")]
    conformance: Option<PathBuf>,
    /// Stage new *.wasm (and *.wasm.sig) found in DIR.
    #[arg(long, value_name = "DIR")]
    watch: Option<PathBuf>,
    /// How often the watched folder is scanned, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    watch_interval_ms: u64,
    /// After SIGTERM, serve on with /ready failing for this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    shutdown_delay_ms: u64,
    /// Then wait at most this long for requests in flight, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 20000)]
    drain_timeout_ms: u64,
    /// Largest evaluation body, in bytes.
    #[arg(long, value_name = "N", default_value_t = 1_048_576)]
    max_body_bytes: usize,
    /// Most requests in one batch.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_batch: usize,
    /// Evaluations at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Compile components instead of using the precompiled cache.
    #[arg(long)]
    no_cache: bool,
    /// Compilations kept in the precompiled cache at most; each store removes the least recently
    /// written past it.
    #[arg(long, value_name = "N", default_value_t = scale_units_host::PolicyBuilder::DEFAULT_CACHE_MAX_ENTRIES)]
    cache_max_entries: usize,
    /// Policies kept staged at most (at least 2); a new one evicts the oldest not in use.
    #[arg(long, value_name = "N", default_value_t = scale_units_host::registry::DEFAULT_MAX_STAGED)]
    max_staged: usize,
    /// Units pinned at once at most; a pin of one more is refused (409 pins_full).
    #[arg(long, value_name = "N", default_value_t = scale_units_host::registry::DEFAULT_MAX_PINS)]
    max_pins: usize,
    /// Scale-unit contracts by unit, <namespace>.<name>.json|yaml|yml (a mounted ConfigMap),
    /// reloaded on change; enables PUT /v1/units/{ns}/{name}/observations, GET
    /// /v1/units[/{ns}/{name}] and POST /v1/admission.
    #[arg(long, value_name = "DIR")]
    units: Option<PathBuf>,
    /// How often the units folder is rescanned, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    units_interval_ms: u64,
    /// Keep observations in Redis (redis://host:port/db), shared by every replica (default: in
    /// this process). Visible in `ps` and the Pod spec: give a URL with a password through
    /// --redis-url-file or $SCALE_UNITS_REDIS_URL instead.
    #[arg(long, value_name = "URL", conflicts_with = "redis_url_file")]
    redis: Option<String>,
    /// Keep each unit's last admitted scale action and the journal of accepted decisions in a
    /// redb database in DIR (a volume), written to disk before an admission is answered. Without
    /// it or --redis they live in this process, and after a restart every unit's cooldowns count
    /// from the start.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["redis", "redis_url_file"])]
    state_dir: Option<PathBuf>,
    /// Read the Redis URL from FILE (a mounted Secret), else from $SCALE_UNITS_REDIS_URL.
    #[arg(long, value_name = "FILE")]
    redis_url_file: Option<PathBuf>,
    /// For a rediss:// (TLS) Redis: trust only the CA certificates in FILE (PEM) instead of the
    /// system's roots.
    #[arg(long, value_name = "FILE")]
    redis_ca_file: Option<PathBuf>,
    /// How often each unit's sources file (<namespace>.<name>.sources.yaml|yml|json in --units)
    /// is collected into evidence, unless it sets interval_s, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 15000)]
    collect_interval_ms: u64,
    /// How long a pushed current_replicas, or a count the webhook admitted, stays evidence when
    /// the unit's sources declare no replicas.max_age_s, in seconds.
    #[arg(long, value_name = "S", default_value_t = 300)]
    replicas_max_age_s: u64,
    /// Serve HTTPS (every route) for the admission webhook; needs --units, --tls-cert and --tls-key.
    #[arg(long)]
    webhook: bool,
    /// PEM certificate chain, reloaded when it changes.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// PEM private key, reloaded when it changes.
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// The webhook answers allowed, with the would-be denial as a warning (and records no scale
    /// action for the cooldowns).
    #[arg(long)]
    webhook_dry_run: bool,
    /// Admission reviews authenticate with a client certificate signed by a CA of this PEM file
    /// (the API server's, from its webhook kubeconfig); other routes (probes) need none. Without
    /// it, reviews need the push role's bearer token when one is configured.
    #[arg(long, value_name = "FILE")]
    webhook_client_ca: Option<PathBuf>,
    /// Also serve KEDA's external scaler (gRPC) on ADDR; needs --units; drains with the service.
    #[arg(long, value_name = "ADDR")]
    keda_listen: Option<SocketAddr>,
    /// How often an open StreamIsActive re-reads its unit, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    keda_stream_interval_ms: u64,
    /// StreamIsActive streams open at once (each polls its unit); past it one is refused
    /// ResourceExhausted.
    #[arg(long, value_name = "N", default_value_t = scale_units_server::keda::DEFAULT_MAX_STREAMS)]
    keda_max_streams: usize,
    /// Serve the KEDA scaler over TLS with this PEM certificate chain (reloaded when it changes);
    /// needs --keda-tls-key.
    #[arg(long, value_name = "FILE")]
    keda_tls_cert: Option<PathBuf>,
    /// The KEDA listener's PEM private key (reloaded when it changes).
    #[arg(long, value_name = "FILE")]
    keda_tls_key: Option<PathBuf>,
    /// Require KEDA to present a client certificate signed by a CA of this PEM file (KEDA's
    /// tlsClientCert/tlsClientKey); needs --keda-tls-cert.
    #[arg(long, value_name = "FILE")]
    keda_client_ca: Option<PathBuf>,
    /// Members of GROUP (a review's userInfo.groups) may override a webhook denial: allowed with a
    /// warning, counted and audited (break glass). Repeatable; none by default.
    #[arg(long = "override-group", value_name = "GROUP")]
    override_groups: Vec<String>,
    /// Append the decision audit log (one JSON line per decision served) to FILE instead of
    /// stdout ("-").
    #[arg(long, value_name = "FILE", default_value = "-")]
    audit_log: PathBuf,
    /// When an audit line cannot be written (a stalled reader, a full disk): `batch` drops it
    /// and counts it (scale_units_audit_dropped_total) and serves the decision; `blocking-strict`
    /// fails the request (503 audit_unavailable, gRPC Unavailable) after --audit-timeout-ms.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = AuditModeArg::Batch)]
    audit_mode: AuditModeArg,
    /// How long a request waits for its audit lines, in milliseconds: blocking-strict, until
    /// written (else 503); batch, for room in the queue while the writer makes progress (else
    /// dropped; once a write has been blocked this long, lines are dropped at once).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    audit_timeout_ms: u64,
    /// Audit lines waiting for the writer at most; past it batch drops, blocking-strict waits.
    #[arg(long, value_name = "N", default_value_t = scale_units_server::audit::QUEUE)]
    audit_buffer_lines: usize,
    /// A KEDA answer repeating the unit's previous one is summarized, but written at least this
    /// often, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60000)]
    audit_summary_ms: u64,
    /// Time a new connection has for its TLS handshake and the first byte of its first request
    /// (gRPC: the HTTP/2 preface), from accept, in milliseconds: an idle socket is closed then.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    handshake_timeout_ms: u64,
    /// Time each request head has (HTTP: and the idle time between requests), in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10000)]
    header_timeout_ms: u64,
    /// Time a request has to be read and answered, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 30000)]
    request_timeout_ms: u64,
    /// Connections open at once on each listener; past it (and the reserve) new ones wait in the
    /// backlog.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// Connections past --max-connections kept for callers with a trusted client certificate
    /// (--webhook-client-ca, --keda-client-ca): a flood of anonymous sockets never keeps them out.
    #[arg(long, value_name = "N", default_value_t = 64)]
    reserved_connections: usize,
    /// Anonymous connections (no trusted client certificate) from one IP address at once, on each
    /// listener; past it a new one is closed when accepted.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_connections_per_peer: usize,
    // Envoy's ext_authz listener (issue 26).
    #[command(flatten)]
    envoy: envoy::EnvoyArgs,
}

/// `--audit-mode`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum AuditModeArg {
    Batch,
    BlockingStrict,
}

/// The options, resolved.
struct ServeOptions {
    listen: SocketAddr,
    policy: Option<PathBuf>,
    trust_key: Option<String>,
    token: Option<String>,
    push_token: Option<String>,
    read_token: Option<String>,
    conformance: Option<PathBuf>,
    no_cache: bool,
    cache_max_entries: usize,
    max_staged: usize,
    max_pins: usize,
    config: ServiceConfig,
    units: Option<PathBuf>,
    units_interval: Duration,
    redis: Option<String>,
    redis_ca: Option<Vec<u8>>,
    state_dir: Option<PathBuf>,
    collect_interval: Duration,
    replicas_max_age: Duration,
    webhook: bool,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    webhook_client_ca: Option<PathBuf>,
    keda_listen: Option<SocketAddr>,
    keda_stream_interval: Duration,
    keda_max_streams: usize,
    keda_tls: Option<TlsFiles>,
    audit_log: PathBuf,
    audit_summary: Duration,
    audit_mode: AuditMode,
    audit_timeout: Duration,
    audit_buffer: usize,
    envoy: envoy::EnvoyArgs,
}

/// Runs `scale-units serve ARGS`; returns the exit code.
pub(crate) fn run(args: ServeArgs) -> Result<u8, Failure> {
    let options = options(args).map_err(Failure::Usage)?;
    // Every usage error before anything is compiled, connected or bound.
    check_usage(&options).map_err(Failure::Usage)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::Host(format!("cannot start the runtime: {error}")))?;
    runtime.block_on(serve(options))
}

/// The flag combinations `serve` refuses (exit 64), checked before anything is compiled,
/// connected or bound.
fn check_usage(options: &ServeOptions) -> Result<(), String> {
    let fail = |message: &str| Err(message.to_owned());
    if options.redis_ca.is_some() && options.redis.is_none() {
        return fail("--redis-ca-file needs a rediss:// Redis URL");
    }
    if options.state_dir.is_some() && options.redis.is_some() {
        return fail("--state-dir and a Redis URL ($SCALE_UNITS_REDIS_URL) exclude each other");
    }
    if options.state_dir.is_some() && options.units.is_none() {
        return fail("--state-dir needs --units");
    }
    if options.webhook {
        if options.tls_cert.is_none() || options.tls_key.is_none() {
            return fail("--webhook needs --tls-cert and --tls-key");
        }
        if options.units.is_none() {
            return fail("--webhook needs --units");
        }
    } else if options.webhook_client_ca.is_some() {
        return fail("--webhook-client-ca needs --webhook");
    }
    if options.keda_tls.is_some() && options.keda_listen.is_none() {
        return fail("--keda-tls-cert needs --keda-listen");
    }
    if let Some(address) = options.keda_listen {
        if options.units.is_none() {
            return fail("--keda-listen needs --units");
        }
        // The HTTP rule, for gRPC: outside loopback only a caller with KEDA's client certificate
        // may read any unit's metric.
        if !address.ip().is_loopback() && options.keda_tls.as_ref().is_none_or(|tls| tls.client_ca.is_none()) {
            return Err(format!(
                "--keda-listen {address} is not loopback: give --keda-tls-cert, --keda-tls-key and --keda-client-ca"
            ));
        }
    }
    options.envoy.check(options.units.is_some())?;
    if !options.listen.ip().is_loopback() {
        let push = options.push_token.is_some() || options.token.is_some();
        let read = options.read_token.is_some() || options.token.is_some();
        if !push || !read {
            return Err(format!(
                "{} is not loopback: give a token (--token-file, or --push-token-file and --read-token-file)",
                options.listen
            ));
        }
    }
    Ok(())
}

async fn serve(options: ServeOptions) -> Result<u8, Failure> {
    let mut builder = PolicyRegistry::builder();
    if let Some(key) = &options.trust_key {
        let hex = match key.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|error| Failure::Host(format!("cannot read the trust key {file}: {error}")))?,
            None => key.clone(),
        };
        builder = builder.trust_key_hex(&hex).map_err(|error| Failure::Host(error.to_string()))?;
    }
    if let Some(dir) = &options.conformance {
        builder =
            builder.conformance(ConformanceSuite::from_dir(dir).map_err(|error| Failure::Host(error.to_string()))?);
    }
    let mut policy_builder = Policy::builder();
    if !options.no_cache
        && let Some(dir) = default_cache_dir()
    {
        policy_builder = policy_builder.cache_dir(dir).cache_max_entries(options.cache_max_entries);
    }
    let registry = Arc::new(
        builder.policy_builder(policy_builder).max_staged(options.max_staged).max_pins(options.max_pins).build(),
    );

    let source = crate::ComponentSource::resolve(options.policy.as_deref())?;
    let staged = source.stage_in(&registry).await?;
    registry.activate(&staged.digest).map_err(|error| Failure::Host(error.to_string()))?;
    eprintln!(
        "scale-units serve: active policy {} (evaluator {}, {} conformance vectors passed, cache: {})",
        staged.digest, staged.evaluator_version, staged.vectors_passed, staged.cache
    );

    let mut config = options.config;
    let mut audit = if options.audit_log.as_os_str() == "-" {
        AuditLog::stdout(options.audit_buffer)
    } else {
        AuditLog::file(&options.audit_log, options.audit_buffer).map_err(|error| {
            Failure::Host(format!("cannot open the audit log {}: {error}", options.audit_log.display()))
        })?
    };
    audit.summary_interval = options.audit_summary;
    audit.mode = options.audit_mode;
    audit.timeout = options.audit_timeout;
    let audit = Arc::new(audit);
    config.audit = Some(Arc::clone(&audit));
    if let Some(dir) = &options.units {
        let mut units = Units::builder(Arc::clone(&registry))
            .contracts_dir(dir)
            .reload_interval(options.units_interval)
            .replicas_max_age(options.replicas_max_age)
            // One evaluation limit for the HTTP routes, the webhook, KEDA and the collectors.
            .workers(scale_units_server::workers::Workers::new(config.workers));
        if let Some(url) = &options.redis {
            units = units.redis(url);
        }
        if let Some(ca) = &options.redis_ca {
            units = units.redis_ca(ca.clone());
        }
        if let Some(state) = &options.state_dir {
            units = units.state_dir(state);
        }
        let units = units.build().await.map_err(|error| Failure::Host(error.to_string()))?;
        eprintln!(
            "scale-units serve: {} unit contract(s) from {}, observations in {}, admitted scale actions in {}",
            units.keys().len(),
            dir.display(),
            units.store_kind(),
            match &options.state_dir {
                Some(state) => format!("{} ({})", units.state_kind(), state.display()),
                None => units.state_kind().to_owned(),
            }
        );
        if units.state_kind() == "memory" {
            eprintln!(
                "scale-units serve: admitted scale actions are not kept across restarts (no --state-dir or \
                 --redis): every unit's cooldowns count from this start"
            );
        }
        // Every replica of the service collects every unit with sources: each observation carries
        // its own expiry, so the writes are idempotent (docs/DECISIONS.md, "Evidence collectors").
        let collector = Arc::new(Collector::new(Arc::clone(&units)));
        tokio::spawn(collector.run(options.collect_interval));
        config.units = Some(units);
    }
    // check_usage made sure --webhook has its certificate, key and units.
    if options.webhook
        && let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key)
    {
        let files = TlsFiles::new(cert, key);
        config.tls = Some(match &options.webhook_client_ca {
            Some(ca) => files.client_ca(ca).client_certificate_optional(),
            None => files,
        });
    }

    // The KEDA listener's certificate shows in the service's /metrics (the clones share its status).
    config.keda_tls.clone_from(&options.keda_tls);
    let keda = match (options.keda_listen, &config.units) {
        (Some(address), Some(units)) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|error| Failure::Host(format!("cannot listen on {address}: {error}")))?;
            let keda_config = KedaConfig {
                tls: options.keda_tls.clone(),
                limits: config.limits,
                audit: Some(Arc::clone(&audit)),
                stream_interval: options.keda_stream_interval,
                max_streams: options.keda_max_streams,
                shutdown_delay: config.shutdown_delay,
                drain_timeout: config.drain_timeout,
            };
            Some((listener, KedaScaler::new(Arc::clone(units), keda_config)))
        }
        // check_usage made sure --keda-listen has --units.
        _ => None,
    };

    let envoy = options.envoy.bind(config.units.as_ref(), &config, &audit).await?;

    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|error| Failure::Host(format!("cannot listen on {}: {error}", options.listen)))?;
    let address = listener.local_addr().map_err(|error| Failure::Host(error.to_string()))?;
    config.token = options.token;
    config.push_token = options.push_token;
    config.read_token = options.read_token;
    if !address.ip().is_loopback() {
        // check_usage made sure a listener outside loopback has its tokens.
        config.token_for_evaluation = true;
    }
    // One signal for both servers: they drain together.
    let (signal_tx, signal_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        termination_signal().await;
        let _ = signal_tx.send(true);
    });
    let signalled = |mut signal: tokio::sync::watch::Receiver<bool>| async move {
        let _ = signal.wait_for(|signalled| *signalled).await;
    };
    let keda = match keda {
        Some((listener, scaler)) => {
            let keda_address = listener.local_addr().map_err(|error| Failure::Host(error.to_string()))?;
            out!("keda external scaler listening on {keda_address}");
            Some(tokio::spawn(scaler.run(listener, signalled(signal_rx.clone()))))
        }
        None => None,
    };
    let envoy = envoy::spawn(envoy, signalled(signal_rx.clone()))?;
    out!("listening on {address}");
    let drain_timeout = config.drain_timeout;
    let report = Service::new(registry, config)
        .run(listener, signalled(signal_rx))
        .await
        .map_err(|error| Failure::Host(format!("the server failed: {error}")))?;
    let keda_drained = match keda {
        None => true,
        Some(task) => match task.await {
            Ok(Ok(drained)) => drained,
            Ok(Err(error)) => {
                eprintln!("scale-units serve: the KEDA external scaler failed: {error}");
                false
            }
            Err(error) => {
                eprintln!("scale-units serve: the KEDA external scaler stopped: {error}");
                false
            }
        },
    };
    let envoy_drained = envoy::join(envoy).await;
    // A stalled reader must not keep the process from exiting: the flush waits at most the drain
    // timeout, then what is still queued is lost (and said so).
    let flushed = audit.flush(drain_timeout).await;
    if !flushed {
        eprintln!(
            "scale-units serve: the audit log was not flushed within the drain timeout ({} ms): {} line(s) \
             still queued are lost",
            drain_timeout.as_millis(),
            audit.queued()
        );
    }
    Ok(if report.drained && keda_drained && envoy_drained && flushed { 0 } else { crate::exit::FAILURE })
}

fn options(args: ServeArgs) -> Result<ServeOptions, String> {
    let millis = Duration::from_millis;
    let token = match &args.token_file {
        Some(file) => read_token(file)?,
        // Trimmed as the file's is (and as a presented token is): `"token\n"` from a Secret works.
        None => std::env::var("SCALE_UNITS_TOKEN")
            .ok()
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty()),
    };
    let push_token = args.push_token_file.as_deref().map(read_token).transpose()?.flatten();
    let read_token = args.read_token_file.as_deref().map(read_token).transpose()?.flatten();
    // A token shared by two roles would open both's routes: the roles must be told apart.
    let tokens = [("--token-file", &token), ("--push-token-file", &push_token), ("--read-token-file", &read_token)];
    for (index, (flag, value)) in tokens.iter().enumerate() {
        for (other, other_value) in tokens.iter().skip(index + 1) {
            if value.is_some() && value == other_value {
                return Err(format!("{flag} and {other} hold the same token: give each role its own"));
            }
        }
    }
    let defaults = ServiceConfig::default();
    let config = ServiceConfig {
        watch_dir: args.watch,
        watch_interval: millis(args.watch_interval_ms).max(Duration::from_millis(10)),
        shutdown_delay: millis(args.shutdown_delay_ms),
        drain_timeout: millis(args.drain_timeout_ms),
        max_body_bytes: args.max_body_bytes,
        max_batch: args.max_batch,
        workers: args.workers.map_or(defaults.workers, |workers| workers.max(1)),
        admission_dry_run: args.webhook_dry_run,
        override_groups: args.override_groups,
        limits: Limits {
            handshake_timeout: millis(args.handshake_timeout_ms).max(Duration::from_millis(10)),
            header_timeout: millis(args.header_timeout_ms).max(Duration::from_millis(10)),
            request_timeout: millis(args.request_timeout_ms).max(Duration::from_millis(10)),
            max_connections: args.max_connections.max(1),
            reserved_connections: args.reserved_connections,
            max_connections_per_peer: args.max_connections_per_peer.max(1),
        },
        ..defaults
    };
    let keda_tls = match (args.keda_tls_cert, args.keda_tls_key, args.keda_client_ca) {
        (None, None, None) => None,
        (Some(cert), Some(key), ca) => {
            let files = TlsFiles::new(cert, key);
            Some(match ca {
                Some(ca) => files.client_ca(ca),
                None => files,
            })
        }
        (None, None, Some(_)) => return Err("--keda-client-ca needs --keda-tls-cert and --keda-tls-key".to_owned()),
        _ => return Err("--keda-tls-cert and --keda-tls-key go together".to_owned()),
    };
    Ok(ServeOptions {
        listen: args.listen,
        policy: args.policy,
        trust_key: args.trust_key,
        token,
        push_token,
        read_token,
        conformance: args.conformance,
        no_cache: args.no_cache,
        cache_max_entries: args.cache_max_entries,
        max_staged: args.max_staged,
        max_pins: args.max_pins,
        config,
        units: args.units,
        units_interval: millis(args.units_interval_ms).max(Duration::from_millis(10)),
        redis: match (args.redis, &args.redis_url_file) {
            (Some(url), _) => Some(url),
            (None, Some(file)) => {
                let url = std::fs::read_to_string(file)
                    .map_err(|error| format!("cannot read the Redis URL from {}: {error}", file.display()))?;
                Some(url.trim().to_owned()).filter(|url| !url.is_empty())
            }
            (None, None) => std::env::var("SCALE_UNITS_REDIS_URL")
                .ok()
                .map(|url| url.trim().to_owned())
                .filter(|url| !url.is_empty()),
        },
        redis_ca: match &args.redis_ca_file {
            Some(file) => Some(
                std::fs::read(file)
                    .map_err(|error| format!("cannot read the Redis CA from {}: {error}", file.display()))?,
            ),
            None => None,
        },
        state_dir: args.state_dir,
        collect_interval: millis(args.collect_interval_ms).max(Duration::from_millis(10)),
        replicas_max_age: Duration::from_secs(args.replicas_max_age_s.max(1)),
        webhook: args.webhook,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        webhook_client_ca: args.webhook_client_ca,
        keda_listen: args.keda_listen,
        keda_stream_interval: millis(args.keda_stream_interval_ms).max(Duration::from_millis(10)),
        keda_max_streams: args.keda_max_streams.max(1),
        keda_tls,
        audit_log: args.audit_log,
        audit_summary: millis(args.audit_summary_ms),
        audit_mode: match args.audit_mode {
            AuditModeArg::Batch => AuditMode::Batch,
            AuditModeArg::BlockingStrict => AuditMode::BlockingStrict,
        },
        audit_timeout: millis(args.audit_timeout_ms).max(Duration::from_millis(1)),
        audit_buffer: args.audit_buffer_lines.max(1),
        envoy: args.envoy,
    })
}

/// A token file's token, trimmed (`"token\n"` from a Secret works); `None` when it is empty.
fn read_token(file: &std::path::Path) -> Result<Option<String>, String> {
    let token = std::fs::read_to_string(file).map_err(|error| format!("cannot read {}: {error}", file.display()))?;
    Ok(Some(token.trim().to_owned()).filter(|token| !token.is_empty()))
}
