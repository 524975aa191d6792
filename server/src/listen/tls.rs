//! TLS for the service's listeners (`serve --webhook`, and the KEDA scaler with `--keda-tls-cert`):
//! rustls with the `ring` provider, the certificate chain and key read from PEM files and read
//! again when either file changes (a renewed cert-manager Secret), for new connections. With a
//! client CA, a client must present a certificate that CA signed (mutual TLS). Handshakes run in
//! tasks of their own under the listener's head deadline (`crate::listen`).
//!
//! A changed pair that does not load leaves the previous one served: [`TlsStatus`] counts the
//! refusal and keeps the served certificate's expiry, both in `/metrics` (issue 19), so that a
//! renewal that never takes is seen before the certificate expires.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

/// The certificate and key files of a TLS listener, and the client CA when clients must present a
/// certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM (leaf first).
    pub cert: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// How often the files are checked for a change.
    pub reload_interval: Duration,
    /// CA certificates (PEM) that must have signed a client's certificate; `None`: no client
    /// certificate is asked for.
    pub client_ca: Option<PathBuf>,
    /// With a client CA: a client without a certificate still connects (a presented one must
    /// verify), and each route decides whether it needs one (the webhook listener: the kubelet's
    /// probes present none, the API server's admission reviews must).
    pub client_certificate_optional: bool,
    /// ALPN protocols offered (default `http/1.1`; the gRPC listener offers `h2`).
    pub alpn: Vec<Vec<u8>>,
    /// What was loaded: shared by the clones, updated by [`Self::load`] and the watcher.
    pub status: Arc<TlsStatus>,
}

/// The state of a listener's certificate: when the served one expires and how many changed
/// pairs were refused.
#[derive(Debug, Default)]
pub struct TlsStatus {
    /// `notAfter` of the served leaf certificate, in Unix seconds; `i64::MIN` before a load.
    not_after: AtomicI64,
    reload_failures: AtomicU64,
}

impl PartialEq for TlsStatus {
    /// The status is no part of the files' identity.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for TlsStatus {}

impl TlsStatus {
    /// `notAfter` of the served leaf certificate, in Unix seconds (`None` before a load, or
    /// when the certificate's validity cannot be read).
    pub fn not_after(&self) -> Option<i64> {
        Some(self.not_after.load(Ordering::Relaxed)).filter(|at| *at != i64::MIN)
    }

    /// Changed pairs refused since the start (the previous pair stayed served).
    pub fn reload_failures(&self) -> u64 {
        self.reload_failures.load(Ordering::Relaxed)
    }
}

/// `notAfter` of a DER certificate, in Unix seconds.
fn not_after(certificate: &CertificateDer<'_>) -> Option<i64> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

impl TlsFiles {
    /// The files, checked every 2 s; no client certificate; HTTP/1.1 over ALPN.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self {
            cert: cert.into(),
            key: key.into(),
            reload_interval: Duration::from_secs(2),
            client_ca: None,
            client_certificate_optional: false,
            alpn: vec![b"http/1.1".to_vec()],
            status: Arc::new(TlsStatus { not_after: AtomicI64::new(i64::MIN), reload_failures: AtomicU64::new(0) }),
        }
    }

    /// With a client CA, lets a client without a certificate connect; the routes that need one
    /// check [`crate::listen::Peer::client_certificate`].
    #[must_use]
    pub fn client_certificate_optional(mut self) -> Self {
        self.client_certificate_optional = true;
        self
    }

    /// Requires a client certificate signed by a CA of `file` (PEM), reloaded as the pair is.
    #[must_use]
    pub fn client_ca(mut self, file: impl Into<PathBuf>) -> Self {
        self.client_ca = Some(file.into());
        self
    }

    /// Offers these ALPN protocols instead.
    #[must_use]
    pub fn alpn(mut self, protocols: Vec<Vec<u8>>) -> Self {
        self.alpn = protocols;
        self
    }

    /// Reads the files into a server configuration, and notes the leaf's expiry in
    /// [`Self::status`] (the caller serves it).
    ///
    /// # Errors
    /// A message naming the file that cannot be read or the pair (or CA) rustls refuses.
    pub fn load(&self) -> Result<Arc<ServerConfig>, String> {
        let certs = CertificateDer::pem_file_iter(&self.cert)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| format!("cannot read the certificate {}: {error}", self.cert.display()))?;
        let Some(leaf) = certs.first() else {
            return Err(format!("{} holds no certificate", self.cert.display()));
        };
        let expires = not_after(leaf);
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|error| format!("cannot read the key {}: {error}", self.key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(file) => {
                let mut roots = rustls::RootCertStore::empty();
                for certificate in CertificateDer::pem_file_iter(file)
                    .map_err(|error| format!("cannot read the client CA {}: {error}", file.display()))?
                {
                    let certificate = certificate
                        .map_err(|error| format!("cannot read the client CA {}: {error}", file.display()))?;
                    roots
                        .add(certificate)
                        .map_err(|error| format!("the client CA {} is refused: {error}", file.display()))?;
                }
                if roots.is_empty() {
                    return Err(format!("{} holds no certificate", file.display()));
                }
                let mut verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                if self.client_certificate_optional {
                    verifier = verifier.allow_unauthenticated();
                }
                let verifier = verifier
                    .build()
                    .map_err(|error| format!("the client CA {} is refused: {error}", file.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|error| format!("the certificate and key are refused: {error}"))?;
        config.alpn_protocols.clone_from(&self.alpn);
        self.status.not_after.store(expires.unwrap_or(i64::MIN), Ordering::Relaxed);
        if let Some(expires) = expires
            && let Ok(now) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH)
            && expires <= i64::try_from(now.as_secs()).unwrap_or(i64::MAX)
        {
            tracing::error!(cert = %self.cert.display(), "the TLS certificate {} has expired: renew it", self.cert.display());
        }
        Ok(Arc::new(config))
    }

    fn stamp(&self) -> [Option<(SystemTime, u64)>; 3] {
        let stamp = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        };
        [stamp(&self.cert), stamp(&self.key), self.client_ca.as_deref().and_then(stamp)]
    }

    /// Checks the files every [`Self::reload_interval`] until `stop` completes, and stores each
    /// changed set that loads into `acceptor`; a set that does not load is logged and the previous
    /// one stays.
    pub(crate) async fn watch(self, acceptor: Arc<ArcSwap<TlsAcceptor>>, stop: impl std::future::Future<Output = ()>) {
        let mut stop = std::pin::pin!(stop);
        let mut seen = self.stamp();
        let mut interval = tokio::time::interval(self.reload_interval);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = interval.tick() => {}
            }
            let stamp = self.stamp();
            if stamp == seen {
                continue;
            }
            seen = stamp;
            match self.load() {
                Ok(config) => {
                    acceptor.store(Arc::new(TlsAcceptor::from(config)));
                    tracing::info!(cert = %self.cert.display(), "TLS certificate reloaded from {}", self.cert.display());
                }
                Err(error) => {
                    self.status.reload_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(cert = %self.cert.display(), "TLS files changed but refused, the previous ones stay: {error}");
                }
            }
        }
    }
}
