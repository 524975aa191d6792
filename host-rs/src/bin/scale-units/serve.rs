//! `scale-units serve`: the decision service (`scale_units_host::service`) over a policy
//! registry, with the given component staged through the conformance gate and activated.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scale_units_host::keda::{KedaConfig, KedaScaler};
use scale_units_host::service::{Service, ServiceConfig, termination_signal};
use scale_units_host::units::Units;
use scale_units_host::webhook::tls::TlsFiles;
use scale_units_host::{ConformanceSuite, Policy, PolicyRegistry, default_cache_dir, default_component_path};

use crate::Failure;

pub(crate) const USAGE: &str = "\
usage: scale-units serve [OPTIONS]

  --listen ADDR              address to listen on (default 127.0.0.1:8080; port 0 picks one)
  --policy FILE              the component staged and activated at start (default: the built one;
                             its signature, when a trust key is set, in FILE.sig as hex)
  --trust-key HEX|@FILE      ed25519 public key: every component needs a signature over its digest
  --token-file FILE          bearer token of the policy-changing routes (or $SCALE_UNITS_TOKEN);
                             without one they are disabled
  --conformance DIR          vectors of the conformance gate (default: those shipped with the host)
  --watch DIR                stage new *.wasm (and *.wasm.sig) found in DIR
  --watch-interval-ms N      how often DIR is scanned (default 2000)
  --shutdown-delay-ms N      after SIGTERM, serve on with /ready failing (default 5000)
  --drain-timeout-ms N       then wait at most this long for requests in flight (default 20000)
  --max-body-bytes N         largest evaluation body (default 1048576)
  --max-batch N              most requests in one batch (default 1000)
  --workers N                evaluations at once (default: the number of CPUs)
  --no-cache                 compile components instead of using the precompiled cache
  --units DIR                scale-unit contracts by unit, <namespace>.<name>.json|yaml|yml (a mounted
                             ConfigMap), reloaded on change; enables PUT /v1/units/{ns}/{name}/observations,
                             GET /v1/units[/{ns}/{name}] and POST /v1/admission
  --units-interval-ms N      how often DIR is rescanned (default 2000)
  --redis URL                keep observations in Redis (redis://host:port/db), shared by every replica
                             (default: in this process)
  --webhook                  serve HTTPS (every route) for the admission webhook; needs --units,
                             --tls-cert and --tls-key
  --tls-cert FILE            PEM certificate chain, reloaded when it changes
  --tls-key FILE             PEM private key, reloaded when it changes
  --webhook-dry-run          the webhook answers allowed, with the would-be denial as a warning
  --keda-listen ADDR         also serve KEDA's external scaler (gRPC, plaintext) on ADDR; needs --units;
                             drains with the service
  --keda-stream-interval-ms N
                             how often an open StreamIsActive re-reads its unit (default 5000)

A listener outside loopback needs a token, and then evaluation needs it too.
Prints `listening on ADDR` on stdout once it accepts connections.";

struct ServeOptions {
    listen: SocketAddr,
    policy: Option<PathBuf>,
    trust_key: Option<String>,
    token: Option<String>,
    conformance: Option<PathBuf>,
    no_cache: bool,
    config: ServiceConfig,
    units: Option<PathBuf>,
    units_interval: Duration,
    redis: Option<String>,
    webhook: bool,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    keda_listen: Option<SocketAddr>,
    keda_stream_interval: Duration,
}

/// Runs `scale-units serve ARGS`; returns the exit code.
pub(crate) fn run(args: Vec<String>) -> Result<u8, Failure> {
    let options = parse(args).map_err(Failure::Usage)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::Host(format!("cannot start the runtime: {error}")))?;
    runtime.block_on(serve(options))
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
        policy_builder = policy_builder.cache_dir(dir);
    }
    let registry = Arc::new(builder.policy_builder(policy_builder).build());

    let path = match &options.policy {
        Some(path) => path.clone(),
        None => default_component_path()?,
    };
    let staging = Arc::clone(&registry);
    let staged = tokio::task::spawn_blocking(move || staging.stage_file(&path))
        .await
        .map_err(|error| Failure::Host(error.to_string()))?
        .map_err(|error| Failure::Host(format!("the policy was refused: {error}")))?;
    registry.activate(&staged.digest).map_err(|error| Failure::Host(error.to_string()))?;
    eprintln!(
        "scale-units serve: active policy {} (evaluator {}, {} conformance vectors passed, cache: {})",
        staged.digest, staged.evaluator_version, staged.vectors_passed, staged.cache
    );

    let mut config = options.config;
    if let Some(dir) = &options.units {
        let mut units =
            Units::builder(Arc::clone(&registry)).contracts_dir(dir).reload_interval(options.units_interval);
        if let Some(url) = &options.redis {
            units = units.redis(url);
        }
        let units = units.build().await.map_err(|error| Failure::Host(error.to_string()))?;
        eprintln!(
            "scale-units serve: {} unit contract(s) from {}, observations in {}",
            units.keys().len(),
            dir.display(),
            units.store_kind()
        );
        config.units = Some(units);
    }
    if options.webhook {
        let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) else {
            return Err(Failure::Usage("--webhook needs --tls-cert and --tls-key".to_owned()));
        };
        if options.units.is_none() {
            return Err(Failure::Usage("--webhook needs --units".to_owned()));
        }
        config.tls = Some(TlsFiles::new(cert, key));
    }

    let keda = match (options.keda_listen, &config.units) {
        (None, _) => None,
        (Some(_), None) => return Err(Failure::Usage("--keda-listen needs --units".to_owned())),
        (Some(address), Some(units)) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|error| Failure::Host(format!("cannot listen on {address}: {error}")))?;
            let keda_config = KedaConfig {
                stream_interval: options.keda_stream_interval,
                shutdown_delay: config.shutdown_delay,
                drain_timeout: config.drain_timeout,
            };
            Some((listener, KedaScaler::new(Arc::clone(units), keda_config)))
        }
    };

    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|error| Failure::Host(format!("cannot listen on {}: {error}", options.listen)))?;
    let address = listener.local_addr().map_err(|error| Failure::Host(error.to_string()))?;
    config.token = options.token;
    if !address.ip().is_loopback() {
        if config.token.is_none() {
            return Err(Failure::Usage(format!("{address} is not loopback: give a token (--token-file)")));
        }
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
    out!("listening on {address}");
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
    Ok(if report.drained && keda_drained { 0 } else { crate::exit::FAILURE })
}

fn parse(args: Vec<String>) -> Result<ServeOptions, String> {
    let mut options = ServeOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
        policy: None,
        trust_key: None,
        token: std::env::var("SCALE_UNITS_TOKEN").ok().filter(|token| !token.is_empty()),
        conformance: None,
        no_cache: false,
        config: ServiceConfig::default(),
        units: None,
        units_interval: Duration::from_secs(2),
        redis: None,
        webhook: false,
        tls_cert: None,
        tls_key: None,
        keda_listen: None,
        keda_stream_interval: Duration::from_secs(5),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let millis = |text: String, name: &str| {
            text.parse::<u64>().map(Duration::from_millis).map_err(|_| format!("{name} takes milliseconds"))
        };
        let count = |text: String, name: &str| text.parse::<usize>().map_err(|_| format!("{name} takes a number"));
        match arg.as_str() {
            "-h" | "--help" => {
                out!("{USAGE}");
                std::process::exit(0);
            }
            "--listen" => {
                options.listen = value("--listen")?.parse().map_err(|_| "--listen takes HOST:PORT".to_owned())?;
            }
            "--policy" => options.policy = Some(PathBuf::from(value("--policy")?)),
            "--trust-key" => options.trust_key = Some(value("--trust-key")?),
            "--token-file" => {
                let file = value("--token-file")?;
                let token = std::fs::read_to_string(&file).map_err(|error| format!("cannot read {file}: {error}"))?;
                options.token = Some(token.trim().to_owned()).filter(|token| !token.is_empty());
            }
            "--conformance" => options.conformance = Some(PathBuf::from(value("--conformance")?)),
            "--watch" => options.config.watch_dir = Some(PathBuf::from(value("--watch")?)),
            "--watch-interval-ms" => {
                options.config.watch_interval = millis(value(&arg)?, &arg)?.max(Duration::from_millis(10));
            }
            "--shutdown-delay-ms" => options.config.shutdown_delay = millis(value(&arg)?, &arg)?,
            "--drain-timeout-ms" => options.config.drain_timeout = millis(value(&arg)?, &arg)?,
            "--max-body-bytes" => options.config.max_body_bytes = count(value(&arg)?, &arg)?,
            "--max-batch" => options.config.max_batch = count(value(&arg)?, &arg)?,
            "--workers" => options.config.workers = count(value(&arg)?, &arg)?.max(1),
            "--no-cache" => options.no_cache = true,
            "--units" => options.units = Some(PathBuf::from(value("--units")?)),
            "--units-interval-ms" => {
                options.units_interval = millis(value(&arg)?, &arg)?.max(Duration::from_millis(10));
            }
            "--redis" => options.redis = Some(value("--redis")?),
            "--webhook" => options.webhook = true,
            "--tls-cert" => options.tls_cert = Some(PathBuf::from(value("--tls-cert")?)),
            "--tls-key" => options.tls_key = Some(PathBuf::from(value("--tls-key")?)),
            "--webhook-dry-run" => options.config.admission_dry_run = true,
            "--keda-listen" => {
                let text = value(&arg)?;
                options.keda_listen = Some(text.parse().map_err(|_| "--keda-listen takes HOST:PORT".to_owned())?);
            }
            "--keda-stream-interval-ms" => {
                options.keda_stream_interval = millis(value(&arg)?, &arg)?.max(Duration::from_millis(10));
            }
            other => return Err(format!("serve: unknown option {other}\n{USAGE}")),
        }
    }
    Ok(options)
}
