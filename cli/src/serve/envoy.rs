//! `scale-units serve`'s Envoy flags (issue 26): the `ext_authz` listener beside the service.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scale_units_server::audit::AuditLog;
use scale_units_server::envoy::{EnvoyAuthorizer, EnvoyConfig, load_routes};
use scale_units_server::service::ServiceConfig;
use scale_units_server::units::Units;
use scale_units_server::webhook::tls::TlsFiles;
use tokio::task::JoinHandle;

use crate::Failure;

/// Envoy's external authorization.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct EnvoyArgs {
    /// Also serve Envoy's external authorization (gRPC ext_authz) on ADDR: scale calls through
    /// Envoy are allowed or denied by their unit's decision; needs --units; drains with the
    /// service.
    #[arg(long, value_name = "ADDR")]
    envoy_listen: Option<SocketAddr>,
    /// The routes that say which requests are scale calls (YAML, or JSON by its .json
    /// extension; reloaded when it changes). Default: the docker, nomad and kubernetes presets.
    #[arg(long, value_name = "FILE")]
    envoy_routes: Option<PathBuf>,
    /// How often the routes file is checked for a change, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    envoy_routes_interval_ms: u64,
    /// Serve ext_authz over TLS with this PEM certificate chain (reloaded when it changes); needs
    /// --envoy-tls-key.
    #[arg(long, value_name = "FILE")]
    envoy_tls_cert: Option<PathBuf>,
    /// The Envoy listener's PEM private key (reloaded when it changes).
    #[arg(long, value_name = "FILE")]
    envoy_tls_key: Option<PathBuf>,
    /// Require Envoy to present a client certificate signed by a CA of this PEM file; needs
    /// --envoy-tls-cert.
    #[arg(long, value_name = "FILE")]
    envoy_client_ca: Option<PathBuf>,
}

/// The authorizer, bound, waiting to run.
pub(crate) type Bound = (tokio::net::TcpListener, EnvoyAuthorizer);

impl EnvoyArgs {
    fn tls(&self) -> Result<Option<TlsFiles>, String> {
        match (&self.envoy_tls_cert, &self.envoy_tls_key, &self.envoy_client_ca) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), ca) => {
                let files = TlsFiles::new(cert, key);
                Ok(Some(match ca {
                    Some(ca) => files.client_ca(ca),
                    None => files,
                }))
            }
            (None, None, Some(_)) => Err("--envoy-client-ca needs --envoy-tls-cert and --envoy-tls-key".to_owned()),
            _ => Err("--envoy-tls-cert and --envoy-tls-key go together".to_owned()),
        }
    }

    /// The usage errors of these flags (exit 64), the routes file's included.
    pub(crate) fn check(&self, units: bool) -> Result<(), String> {
        let tls = self.tls()?;
        let Some(address) = self.envoy_listen else {
            if tls.is_some() || self.envoy_routes.is_some() {
                return Err("--envoy-tls-cert and --envoy-routes need --envoy-listen".to_owned());
            }
            return Ok(());
        };
        if !units {
            return Err("--envoy-listen needs --units".to_owned());
        }
        // The KEDA rule: outside loopback only a caller with Envoy's client certificate may ask.
        if !address.ip().is_loopback() && tls.as_ref().is_none_or(|tls| tls.client_ca.is_none()) {
            return Err(format!(
                "--envoy-listen {address} is not loopback: give --envoy-tls-cert, --envoy-tls-key and --envoy-client-ca"
            ));
        }
        if let Some(path) = &self.envoy_routes {
            load_routes(path).map_err(|error| format!("--envoy-routes: {error}"))?;
        }
        Ok(())
    }

    /// Binds the listener and loads the routes (check made sure --envoy-listen has --units).
    pub(crate) async fn bind(
        &self,
        units: Option<&Arc<Units>>,
        config: &ServiceConfig,
        audit: &Arc<AuditLog>,
    ) -> Result<Option<Bound>, Failure> {
        let (Some(address), Some(units)) = (self.envoy_listen, units) else { return Ok(None) };
        let envoy_config = EnvoyConfig {
            tls: self.tls().map_err(Failure::Usage)?,
            limits: config.limits,
            audit: Some(Arc::clone(audit)),
            routes_file: self.envoy_routes.clone(),
            reload_interval: Duration::from_millis(self.envoy_routes_interval_ms).max(Duration::from_millis(10)),
            shutdown_delay: config.shutdown_delay,
            drain_timeout: config.drain_timeout,
        };
        let authorizer =
            EnvoyAuthorizer::new(Arc::clone(units), envoy_config).map_err(|error| Failure::Host(error.to_string()))?;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| Failure::Host(format!("cannot listen on {address}: {error}")))?;
        Ok(Some((listener, authorizer)))
    }
}

/// Runs a bound authorizer until `shutdown`, after printing `envoy ext_authz listening on ADDR`;
/// the task ends with whether it drained.
pub(crate) fn spawn(
    bound: Option<Bound>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Option<JoinHandle<bool>>, Failure> {
    let Some((listener, authorizer)) = bound else { return Ok(None) };
    let address = listener.local_addr().map_err(|error| Failure::Host(error.to_string()))?;
    out!("envoy ext_authz listening on {address}");
    Ok(Some(tokio::spawn(async move {
        match authorizer.run(listener, shutdown).await {
            Ok(drained) => drained,
            Err(error) => {
                eprintln!("scale-units serve: the Envoy authorizer failed: {error}");
                false
            }
        }
    })))
}

/// Whether the authorizer drained (true when there is none).
pub(crate) async fn join(task: Option<JoinHandle<bool>>) -> bool {
    match task {
        None => true,
        Some(task) => task.await.unwrap_or_else(|error| {
            eprintln!("scale-units serve: the Envoy authorizer stopped: {error}");
            false
        }),
    }
}
