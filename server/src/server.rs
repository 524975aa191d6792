//! The composition root: [`Server::new`] builds everything a [`CheckedConfig`] asks for — the
//! policy registry and its first policy, the audit log, the unit registry and its collector, the
//! webhook's TLS, the KEDA listener, the HTTP listener — and [`Server::run`] serves until the
//! shutdown future completes, drains every listener together and flushes the audit log.
//!
//! `scale-units serve` only turns flags or a file into a [`crate::config::ServeConfig`], checks it
//! ([`crate::config::ServeConfig::check`], every usage error before anything here runs) and calls
//! these two.
//!
//! A listener beside the HTTP one (KEDA's, and whichever gate comes next) is an [`Extra`]: bound in
//! [`Server::new`], started by [`Server::run`] with the same shutdown signal, its drain counted in
//! the exit status.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use scale_units_host::{Candidate, ConformanceSuite, Policy, PolicyRegistry, default_cache_dir};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::audit::AuditLog;
use crate::collect::Collector;
use crate::config::{CheckedConfig, ConfigError};
use crate::envoy::{EnvoyAuthorizer, EnvoyConfig};
use crate::keda::{KedaConfig, KedaScaler};
use crate::service::{Service, ServiceConfig};
use crate::units::Units;

/// Where the first policy comes from.
pub enum PolicySource {
    /// A component file (with its `.sig` beside it when a trust key is set).
    File(PathBuf),
    /// Bytes in the binary, with the digest they must have.
    Static {
        /// The component.
        bytes: &'static [u8],
        /// Its `sha256:…` digest.
        digest: &'static str,
    },
}

/// Why the server could not start or serve.
#[derive(Debug)]
pub enum ServerError {
    /// The configuration cannot be served (a usage error).
    Config(ConfigError),
    /// Something it names could not be read, compiled, connected or bound.
    Start(String),
    /// A listener failed while serving.
    Serve(String),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config(error) => error.fmt(f),
            Self::Start(message) => f.write_str(message),
            Self::Serve(message) => write!(f, "the server failed: {message}"),
        }
    }
}

impl std::error::Error for ServerError {}

impl From<ConfigError> for ServerError {
    fn from(error: ConfigError) -> Self {
        Self::Config(error)
    }
}

fn start(message: impl Into<String>) -> ServerError {
    ServerError::Start(message.into())
}

/// A shutdown signal every listener waits on.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How a listener's serving ended: `Ok(true)` when every call finished within the drain timeout.
pub type Served = Pin<Box<dyn Future<Output = Result<bool, String>> + Send>>;

/// A listener served beside the HTTP one, bound before [`Server::run`] starts it.
pub struct Extra {
    /// What it serves, for the logs (`keda external scaler`).
    pub name: &'static str,
    /// The address it is bound to.
    pub address: SocketAddr,
    /// Starts serving; completes once it has drained after the shutdown signal.
    pub serve: Box<dyn FnOnce(Shutdown) -> Served + Send>,
}

/// Everything `scale-units serve` runs, built and bound.
pub struct Server {
    registry: Arc<PolicyRegistry>,
    service: ServiceConfig,
    audit: Arc<AuditLog>,
    listener: TcpListener,
    address: SocketAddr,
    extras: Vec<Extra>,
}

impl Server {
    /// Builds the registry and stages and activates `policy` through the conformance gate, opens
    /// the audit log, loads the units (connecting to Redis or opening the state folder) and starts
    /// their collector, and binds every listener.
    ///
    /// # Errors
    /// [`ServerError::Start`] naming what could not be read, compiled, connected or bound.
    pub async fn new(config: CheckedConfig, policy: PolicySource) -> Result<Self, ServerError> {
        let registry = registry(&config)?;
        let staged = {
            let staging = Arc::clone(&registry);
            tokio::task::spawn_blocking(move || match policy {
                PolicySource::File(path) => staging.stage_file(&path),
                PolicySource::Static { bytes, digest } => staging.stage(Candidate::new(bytes).expected_digest(digest)),
            })
            .await
            .map_err(|error| start(error.to_string()))?
            .map_err(|error| start(format!("the policy was refused: {error}")))?
        };
        registry.activate(&staged.digest).map_err(|error| start(error.to_string()))?;
        tracing::info!(
            digest = %staged.digest,
            "active policy {} (evaluator {}, {} conformance vectors passed, cache: {})",
            staged.digest,
            staged.evaluator_version,
            staged.vectors_passed,
            staged.cache
        );

        let audit = Arc::new(audit_log(&config)?);
        let mut service = config.service;
        service.audit = Some(Arc::clone(&audit));
        service.tls = config.webhook_tls;
        // The KEDA listener's certificate shows in the service's /metrics (the clones share its status).
        service.keda_tls.clone_from(&config.keda_tls);
        if config.units.is_some() || config.kubernetes.is_some() {
            let mut units = Units::builder(Arc::clone(&registry))
                .reload_interval(config.units_interval)
                .replicas_max_age(config.replicas_max_age)
                // One evaluation limit for the HTTP routes, the webhook, KEDA and the collectors.
                .workers(crate::workers::Workers::new(service.workers));
            if let Some(dir) = &config.units {
                units = units.contracts_dir(dir);
            }
            if config.kubernetes.is_some() {
                units = units.kubernetes();
            }
            if let Some(url) = &config.redis {
                units = units.redis(url);
            }
            if let Some(ca) = &config.redis_ca {
                units = units.redis_ca(ca.clone());
            }
            if let Some(state) = &config.state_dir {
                units = units.state_dir(state);
            }
            let units = units.build().await.map_err(|error| start(error.to_string()))?;
            tracing::info!(
                "{} unit contract(s) from {}, observations in {}, admitted scale actions in {}",
                units.keys().len(),
                config.units.as_ref().map_or_else(|| "no contracts folder".to_owned(), |dir| dir.display().to_string()),
                units.store_kind(),
                match &config.state_dir {
                    Some(state) => format!("{} ({})", units.state_kind(), state.display()),
                    None => units.state_kind().to_owned(),
                }
            );
            if let Some(options) = &config.kubernetes {
                let options =
                    crate::kubernetes::KubernetesOptions { audit: Some(Arc::clone(&audit)), ..options.clone() };
                let cluster = crate::kubernetes::Cluster::connect(Arc::clone(&units), options)
                    .await
                    .map_err(|error| start(error.to_string()))?;
                cluster.start();
                tracing::info!(
                    "watching the Kubernetes API server: ScaleUnits, and each unit's scale target; the replica counts \
                     and the cooldowns are the API server's (the service is ready once the watch is in step)"
                );
                service.kubernetes = Some(cluster);
            } else if units.state_kind() == "memory" {
                tracing::warn!(
                    "admitted scale actions are not kept across restarts (no --state-dir or --redis): every \
                     unit's cooldowns count from this start"
                );
            }
            // With Redis, replicas share the units under leases with fencing tokens; otherwise this
            // process collects every unit with sources (docs/DECISIONS.md, "Collection at scale").
            let collector = Arc::new(Collector::new(Arc::clone(&units)));
            tokio::spawn(collector.run(config.collect_interval));
            service.units = Some(units);
        }

        let mut extras = Vec::new();
        // check() made sure keda_listen has units.
        if let (Some(address), Some(units)) = (config.keda_listen, &service.units) {
            let keda = KedaConfig {
                tls: config.keda_tls.clone(),
                limits: service.limits,
                audit: Some(Arc::clone(&audit)),
                stream_interval: config.keda_stream_interval,
                max_streams: config.keda_max_streams,
                shutdown_delay: service.shutdown_delay,
                drain_timeout: service.drain_timeout,
            };
            let scaler = KedaScaler::new(Arc::clone(units), keda);
            extras.push(
                extra("keda external scaler", address, move |listener, shutdown| {
                    Box::pin(async move { scaler.run(listener, shutdown).await.map_err(|error| error.to_string()) })
                })
                .await?,
            );
        }
        // check() made sure envoy_listen has units, and read its routes file once.
        if let (Some(address), Some(units)) = (config.envoy_listen, &service.units) {
            let envoy = EnvoyConfig {
                tls: config.envoy_tls.clone(),
                limits: service.limits,
                audit: Some(Arc::clone(&audit)),
                routes_file: config.envoy_routes.clone(),
                reload_interval: config.envoy_routes_interval,
                shutdown_delay: service.shutdown_delay,
                drain_timeout: service.drain_timeout,
            };
            let authorizer =
                EnvoyAuthorizer::new(Arc::clone(units), envoy).map_err(|error| start(error.to_string()))?;
            extras.push(
                extra("envoy ext_authz", address, move |listener, shutdown| {
                    Box::pin(async move { authorizer.run(listener, shutdown).await.map_err(|error| error.to_string()) })
                })
                .await?,
            );
        }
        // Further listeners are pushed here the same way.

        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|error| start(format!("cannot listen on {}: {error}", config.listen)))?;
        let address = listener.local_addr().map_err(|error| start(error.to_string()))?;
        Ok(Self { registry, service, audit, listener, address, extras })
    }

    /// The HTTP listener's address (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The listeners beside the HTTP one: what each serves and its address.
    pub fn extra_listeners(&self) -> impl Iterator<Item = (&'static str, SocketAddr)> + '_ {
        self.extras.iter().map(|extra| (extra.name, extra.address))
    }

    /// Adds a listener served beside the HTTP one, started and drained with it.
    pub fn add_listener(&mut self, extra: Extra) {
        self.extras.push(extra);
    }

    /// The policy registry.
    pub fn registry(&self) -> &Arc<PolicyRegistry> {
        &self.registry
    }

    /// The unit registry, when the configuration names a contracts folder.
    pub fn units(&self) -> Option<&Arc<Units>> {
        self.service.units.as_ref()
    }

    /// The decision audit log.
    pub fn audit(&self) -> &Arc<AuditLog> {
        &self.audit
    }

    /// The listeners' limits.
    pub fn limits(&self) -> crate::listen::Limits {
        self.service.limits
    }

    /// Serves every listener until `shutdown` completes, drains them together, then flushes the
    /// audit log (waiting at most the drain timeout). Returns whether everything drained and the
    /// audit log was flushed.
    ///
    /// # Errors
    /// [`ServerError::Serve`] when the HTTP listener fails.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<bool, ServerError> {
        // One signal for every listener: they drain together.
        let (signal_tx, signal_rx) = watch::channel(false);
        tokio::spawn(async move {
            shutdown.await;
            let _ = signal_tx.send(true);
        });
        let signalled = |mut signal: watch::Receiver<bool>| -> Shutdown {
            Box::pin(async move {
                let _ = signal.wait_for(|signalled| *signalled).await;
            })
        };
        let tasks: Vec<_> = self
            .extras
            .into_iter()
            .map(|extra| (extra.name, tokio::spawn((extra.serve)(signalled(signal_rx.clone())))))
            .collect();
        let drain_timeout = self.service.drain_timeout;
        let report = Service::new(self.registry, self.service)
            .run(self.listener, signalled(signal_rx))
            .await
            .map_err(|error| ServerError::Serve(error.to_string()))?;
        let mut drained = report.drained;
        for (name, task) in tasks {
            match task.await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => drained = false,
                Ok(Err(error)) => {
                    tracing::error!("the {name} failed: {error}");
                    drained = false;
                }
                Err(error) => {
                    tracing::error!("the {name} stopped: {error}");
                    drained = false;
                }
            }
        }
        // A stalled reader must not keep the process from exiting: the flush waits at most the
        // drain timeout, then what is still queued is lost (and said so).
        let flushed = self.audit.flush(drain_timeout).await;
        if !flushed {
            tracing::error!(
                "the audit log was not flushed within the drain timeout ({} ms): {} line(s) still queued are lost",
                drain_timeout.as_millis(),
                self.audit.queued()
            );
        }
        Ok(drained && flushed)
    }
}

/// Binds `address` and wraps `serve` as an [`Extra`].
///
/// # Errors
/// [`ServerError::Start`] when the address cannot be bound.
pub async fn extra(
    name: &'static str,
    address: SocketAddr,
    serve: impl FnOnce(TcpListener, Shutdown) -> Served + Send + 'static,
) -> Result<Extra, ServerError> {
    let listener =
        TcpListener::bind(address).await.map_err(|error| start(format!("cannot listen on {address}: {error}")))?;
    let address = listener.local_addr().map_err(|error| start(error.to_string()))?;
    Ok(Extra { name, address, serve: Box::new(move |shutdown| serve(listener, shutdown)) })
}

fn registry(config: &CheckedConfig) -> Result<Arc<PolicyRegistry>, ServerError> {
    let mut builder = PolicyRegistry::builder();
    if let Some(key) = &config.trust_key {
        let hex = match key.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|error| start(format!("cannot read the trust key {file}: {error}")))?,
            None => key.clone(),
        };
        builder = builder.trust_key_hex(&hex).map_err(|error| start(error.to_string()))?;
    }
    if let Some(dir) = &config.conformance {
        builder = builder.conformance(ConformanceSuite::from_dir(dir).map_err(|error| start(error.to_string()))?);
    }
    let mut policy_builder = Policy::builder();
    if !config.no_cache
        && let Some(dir) = default_cache_dir()
    {
        policy_builder = policy_builder.cache_dir(dir).cache_max_entries(config.cache_max_entries);
    }
    Ok(Arc::new(builder.policy_builder(policy_builder).max_staged(config.max_staged).max_pins(config.max_pins).build()))
}

fn audit_log(config: &CheckedConfig) -> Result<AuditLog, ServerError> {
    let mut audit = if config.audit_log.as_os_str() == "-" {
        AuditLog::stdout(config.audit_buffer)
    } else {
        AuditLog::file(&config.audit_log, config.audit_buffer)
            .map_err(|error| start(format!("cannot open the audit log {}: {error}", config.audit_log.display())))?
    };
    audit.summary_interval = config.audit_summary;
    audit.mode = config.audit_mode;
    audit.timeout = config.audit_timeout;
    Ok(audit)
}
