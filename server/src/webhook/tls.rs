//! HTTPS for the service (`serve --webhook`): rustls with the `ring` provider, the certificate
//! chain and key read from PEM files and read again when either file changes (a renewed
//! cert-manager Secret), for new connections. Handshakes run in their own tasks, so a slow client
//! never holds up the others; a handshake that does not finish in 10 s is dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificate and key files of the HTTPS listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM (leaf first).
    pub cert: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// How often both files are checked for a change.
    pub reload_interval: Duration,
}

impl TlsFiles {
    /// The files, checked every 2 s.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self { cert: cert.into(), key: key.into(), reload_interval: Duration::from_secs(2) }
    }

    /// Reads both files into a server configuration (HTTP/1.1 over ALPN).
    ///
    /// # Errors
    /// A message naming the file that cannot be read or the pair rustls refuses.
    pub fn load(&self) -> Result<Arc<ServerConfig>, String> {
        let certs = CertificateDer::pem_file_iter(&self.cert)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| format!("cannot read the certificate {}: {error}", self.cert.display()))?;
        if certs.is_empty() {
            return Err(format!("{} holds no certificate", self.cert.display()));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|error| format!("cannot read the key {}: {error}", self.key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|error| format!("the certificate and key are refused: {error}"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    fn stamp(&self) -> [Option<(SystemTime, u64)>; 2] {
        let stamp = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        };
        [stamp(&self.cert), stamp(&self.key)]
    }
}

/// A listener handing axum TLS streams whose handshake has completed.
pub(crate) struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Loads the files and starts accepting on `listener`, and watching the files.
    pub(crate) fn start(listener: TcpListener, files: TlsFiles) -> std::io::Result<Self> {
        let config = files.load().map_err(std::io::Error::other)?;
        let local = listener.local_addr()?;
        let acceptor = Arc::new(ArcSwap::from_pointee(TlsAcceptor::from(config)));
        let (sender, incoming) = mpsc::channel(1024);
        tokio::spawn(reload(files, Arc::clone(&acceptor), sender.clone()));
        tokio::spawn(accept(listener, acceptor, sender));
        Ok(Self { incoming, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The accept task ended (it never does while this listener lives): serve no more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn accept(
    listener: TcpListener,
    acceptor: Arc<ArcSwap<TlsAcceptor>>,
    sender: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = tokio::select! {
            () = sender.closed() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let acceptor = TlsAcceptor::clone(&acceptor.load());
        let sender = sender.clone();
        tokio::spawn(async move {
            if let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                let _ = sender.send((stream, peer)).await;
            }
        });
    }
}

async fn reload(
    files: TlsFiles,
    acceptor: Arc<ArcSwap<TlsAcceptor>>,
    sender: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let mut seen = files.stamp();
    let mut interval = tokio::time::interval(files.reload_interval);
    loop {
        tokio::select! {
            () = sender.closed() => return,
            _ = interval.tick() => {}
        }
        let stamp = files.stamp();
        if stamp == seen {
            continue;
        }
        seen = stamp;
        match files.load() {
            Ok(config) => {
                acceptor.store(Arc::new(TlsAcceptor::from(config)));
                eprintln!("scale-units serve: TLS certificate reloaded from {}", files.cert.display());
            }
            Err(error) => {
                eprintln!("scale-units serve: TLS files changed but refused, the previous pair stays: {error}")
            }
        }
    }
}
