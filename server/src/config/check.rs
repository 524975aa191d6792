//! [`ServeConfig::check`]: the files a configuration names read, and every combination that
//! cannot be served refused, before anything is compiled, connected or bound.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{AuditModeConfig, CheckedConfig, ConfigError, ServeConfig, Spelling};
use crate::audit::AuditMode;
use crate::listen::Limits;
use crate::listen::tls::TlsFiles;
use crate::service::ServiceConfig;

fn refuse(message: impl Into<String>) -> ConfigError {
    ConfigError { path: String::new(), message: message.into() }
}

fn refuse_at(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError { path: field.to_owned(), message: message.into() }
}

/// A token file's token, trimmed (`"token\n"` from a Secret works); `None` when it is empty.
fn read_token(field: &str, file: &Path) -> Result<Option<String>, ConfigError> {
    let token = std::fs::read_to_string(file)
        .map_err(|error| refuse_at(field, format!("cannot read {}: {error}", file.display())))?;
    Ok(Some(token.trim().to_owned()).filter(|token| !token.is_empty()))
}

/// A gRPC listener's TLS from its certificate, key and client CA fields (`names`, in that order):
/// none, or a certificate with its key and perhaps a client CA.
fn listener_tls(
    [cert, key, ca]: [&Option<PathBuf>; 3],
    [cert_name, key_name, ca_name]: [&str; 3],
    spelling: Spelling,
) -> Result<Option<TlsFiles>, ConfigError> {
    let name = |field: &str| spelling.name(field);
    match (cert, key, ca) {
        (None, None, None) => Ok(None),
        (Some(cert), Some(key), ca) => {
            let files = TlsFiles::new(cert, key);
            Ok(Some(match ca {
                Some(ca) => files.client_ca(ca),
                None => files,
            }))
        }
        (None, None, Some(_)) => {
            Err(refuse(format!("{} needs {} and {}", name(ca_name), name(cert_name), name(key_name))))
        }
        _ => Err(refuse(format!("{} and {} go together", name(cert_name), name(key_name)))),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

pub(super) fn check(config: ServeConfig, spelling: Spelling) -> Result<CheckedConfig, ConfigError> {
    let name = |field: &str| spelling.name(field);
    let millis = Duration::from_millis;
    // A deadline or interval of 0 would spin or refuse everything: 10 ms at least.
    let at_least = |ms: u64| millis(ms).max(Duration::from_millis(10));

    let token = match &config.token_file {
        Some(file) => read_token("token_file", file)?,
        // Trimmed as the file's is (and as a presented token is).
        None => env("SCALE_UNITS_TOKEN"),
    };
    let push_token =
        config.push_token_file.as_deref().map(|file| read_token("push_token_file", file)).transpose()?.flatten();
    let read_token =
        config.read_token_file.as_deref().map(|file| read_token("read_token_file", file)).transpose()?.flatten();
    // A token shared by two roles would open both's routes: the roles must be told apart.
    let tokens = [("token_file", &token), ("push_token_file", &push_token), ("read_token_file", &read_token)];
    for (index, (field, value)) in tokens.iter().enumerate() {
        for (other, other_value) in tokens.iter().skip(index + 1) {
            if value.is_some() && value == other_value {
                return Err(refuse(format!(
                    "{} and {} hold the same token: give each role its own",
                    name(field),
                    name(other)
                )));
            }
        }
    }
    if config.redis.is_some() && config.redis_url_file.is_some() {
        return Err(refuse(format!("{} and {} exclude each other", name("redis"), name("redis_url_file"))));
    }
    let redis = match (&config.redis, &config.redis_url_file) {
        (Some(url), _) => Some(url.clone()),
        (None, Some(file)) => {
            let url = std::fs::read_to_string(file).map_err(|error| {
                refuse_at("redis_url_file", format!("cannot read the Redis URL from {}: {error}", file.display()))
            })?;
            Some(url.trim().to_owned()).filter(|url| !url.is_empty())
        }
        (None, None) => env("SCALE_UNITS_REDIS_URL"),
    };
    let redis_ca = match &config.redis_ca_file {
        Some(file) => Some(std::fs::read(file).map_err(|error| {
            refuse_at("redis_ca_file", format!("cannot read the Redis CA from {}: {error}", file.display()))
        })?),
        None => None,
    };
    let keda_tls = listener_tls(
        [&config.keda_tls_cert, &config.keda_tls_key, &config.keda_client_ca],
        ["keda_tls_cert", "keda_tls_key", "keda_client_ca"],
        spelling,
    )?;

    // The combinations refused.
    if redis_ca.is_some() && redis.is_none() {
        return Err(refuse(format!("{} needs a rediss:// Redis URL", name("redis_ca_file"))));
    }
    if config.state_dir.is_some() && redis.is_some() {
        return Err(refuse(format!(
            "{} and a Redis URL ($SCALE_UNITS_REDIS_URL) exclude each other",
            name("state_dir")
        )));
    }
    // Units come from a contracts folder, from ScaleUnit resources, or both.
    let has_units = config.units.is_some() || config.kubernetes;
    if config.state_dir.is_some() && !has_units {
        return Err(refuse(format!("{} needs {} or {}", name("state_dir"), name("units"), name("kubernetes"))));
    }
    if config.kubeconfig.is_some() && !config.kubernetes {
        return Err(refuse(format!("{} needs {}", name("kubeconfig"), name("kubernetes"))));
    }
    let webhook_tls = if config.webhook {
        let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) else {
            return Err(refuse(format!("{} needs {} and {}", name("webhook"), name("tls_cert"), name("tls_key"))));
        };
        if !has_units {
            return Err(refuse(format!("{} needs {} or {}", name("webhook"), name("units"), name("kubernetes"))));
        }
        let files = TlsFiles::new(cert, key);
        Some(match &config.webhook_client_ca {
            Some(ca) => files.client_ca(ca).client_certificate_optional(),
            None => files,
        })
    } else {
        if config.webhook_client_ca.is_some() {
            return Err(refuse(format!("{} needs {}", name("webhook_client_ca"), name("webhook"))));
        }
        None
    };
    if keda_tls.is_some() && config.keda_listen.is_none() {
        return Err(refuse(format!("{} needs {}", name("keda_tls_cert"), name("keda_listen"))));
    }
    if let Some(address) = config.keda_listen {
        if !has_units {
            return Err(refuse(format!("{} needs {} or {}", name("keda_listen"), name("units"), name("kubernetes"))));
        }
        // The HTTP rule, for gRPC: outside loopback only a caller with KEDA's client certificate
        // may read any unit's metric.
        if !address.ip().is_loopback() && keda_tls.as_ref().is_none_or(|tls| tls.client_ca.is_none()) {
            return Err(refuse(format!(
                "{} {address} is not loopback: give {}, {} and {}",
                name("keda_listen"),
                name("keda_tls_cert"),
                name("keda_tls_key"),
                name("keda_client_ca")
            )));
        }
    }
    let envoy_tls = listener_tls(
        [&config.envoy_tls_cert, &config.envoy_tls_key, &config.envoy_client_ca],
        ["envoy_tls_cert", "envoy_tls_key", "envoy_client_ca"],
        spelling,
    )?;
    match config.envoy_listen {
        None if envoy_tls.is_some() || config.envoy_routes.is_some() => {
            return Err(refuse(format!(
                "{} and {} need {}",
                name("envoy_tls_cert"),
                name("envoy_routes"),
                name("envoy_listen")
            )));
        }
        None => {}
        Some(address) => {
            if !has_units {
                return Err(refuse(format!(
                    "{} needs {} or {}",
                    name("envoy_listen"),
                    name("units"),
                    name("kubernetes")
                )));
            }
            // The KEDA rule: outside loopback only a caller with Envoy's client certificate may ask.
            if !address.ip().is_loopback() && envoy_tls.as_ref().is_none_or(|tls| tls.client_ca.is_none()) {
                return Err(refuse(format!(
                    "{} {address} is not loopback: give {}, {} and {}",
                    name("envoy_listen"),
                    name("envoy_tls_cert"),
                    name("envoy_tls_key"),
                    name("envoy_client_ca")
                )));
            }
            if let Some(path) = &config.envoy_routes {
                crate::envoy::load_routes(path).map_err(|error| refuse_at("envoy_routes", error.to_string()))?;
            }
        }
    }
    let outside_loopback = !config.listen.ip().is_loopback();
    if outside_loopback {
        let push = push_token.is_some() || token.is_some();
        let read = read_token.is_some() || token.is_some();
        if !push || !read {
            return Err(refuse(format!(
                "{} is not loopback: give a token ({}, or {} and {})",
                config.listen,
                name("token_file"),
                name("push_token_file"),
                name("read_token_file")
            )));
        }
    }

    let defaults = ServiceConfig::default();
    let limits = Limits {
        handshake_timeout: at_least(config.handshake_timeout_ms),
        header_timeout: at_least(config.header_timeout_ms),
        request_timeout: at_least(config.request_timeout_ms),
        max_connections: config.max_connections.max(1),
        reserved_connections: config.reserved_connections,
        max_connections_per_peer: config.max_connections_per_peer.max(1),
    };
    let service = ServiceConfig {
        token,
        push_token,
        read_token,
        // A listener outside loopback has its tokens (above): evaluation needs the read one too.
        token_for_evaluation: outside_loopback,
        watch_dir: config.watch,
        watch_interval: at_least(config.watch_interval_ms),
        shutdown_delay: millis(config.shutdown_delay_ms),
        drain_timeout: millis(config.drain_timeout_ms),
        max_body_bytes: config.max_body_bytes,
        max_batch: config.max_batch,
        workers: config.workers.map_or(defaults.workers, |workers| workers.max(1)),
        admission_dry_run: config.webhook_dry_run,
        override_groups: config.override_groups,
        limits,
        ..defaults
    };
    Ok(CheckedConfig {
        listen: config.listen,
        policy: config.policy,
        trust_key: config.trust_key,
        conformance: config.conformance,
        no_cache: config.no_cache,
        cache_max_entries: config.cache_max_entries,
        max_staged: config.max_staged,
        max_pins: config.max_pins,
        service,
        units: config.units,
        kubernetes: config.kubernetes.then(|| crate::kubernetes::KubernetesOptions {
            kubeconfig: config.kubeconfig,
            status_writes_per_minute: config.status_writes_per_minute.max(1),
            ..crate::kubernetes::KubernetesOptions::default()
        }),
        units_interval: at_least(config.units_interval_ms),
        redis,
        redis_ca,
        state_dir: config.state_dir,
        collect_interval: at_least(config.collect_interval_ms),
        replicas_max_age: Duration::from_secs(config.replicas_max_age_s.max(1)),
        webhook_tls,
        keda_listen: config.keda_listen,
        keda_stream_interval: at_least(config.keda_stream_interval_ms),
        keda_max_streams: config.keda_max_streams.max(1),
        keda_tls,
        envoy_listen: config.envoy_listen,
        envoy_routes: config.envoy_routes,
        envoy_routes_interval: at_least(config.envoy_routes_interval_ms),
        envoy_tls,
        audit_log: config.audit_log,
        audit_summary: millis(config.audit_summary_ms),
        audit_mode: match config.audit_mode {
            AuditModeConfig::Batch => AuditMode::Batch,
            AuditModeConfig::BlockingStrict => AuditMode::BlockingStrict,
        },
        audit_timeout: millis(config.audit_timeout_ms).max(Duration::from_millis(1)),
        audit_buffer: config.audit_buffer_lines.max(1),
        log_format: config.log_format,
    })
}
