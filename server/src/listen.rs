//! The service's listeners, with the limits every one of them keeps ([`Limits`]): a cap on open
//! connections with room kept for authenticated callers, a cap per peer address, a short deadline
//! for a new connection's TLS handshake and first bytes, a deadline for its request head (or for
//! gRPC the HTTP/2 preface) and a deadline for each request.
//!
//! - **The cap** ([`Limits::max_connections`]) is taken before `accept`: when it and the reserve
//!   are taken, the listener stops accepting and new connections wait in the kernel's backlog until
//!   one closes (as Go's `netutil.LimitListener` does).
//! - **The reserve** ([`Limits::reserved_connections`]): past the cap, a connection is still
//!   accepted while the reserve has room, and keeps its place only when its TLS handshake presents
//!   a client certificate the listener trusts (the API server's, KEDA's); any other is closed at
//!   once. An authenticated connection moves to the reserve when it can, leaving the cap to the
//!   anonymous ones: a flood of anonymous sockets never keeps the API server out.
//! - **The cap per peer** ([`Limits::max_connections_per_peer`]): anonymous connections from one IP
//!   address, handshaking or open; past it a new one is closed as soon as it is accepted. A
//!   connection that authenticates with a trusted client certificate stops counting.
//! - **The first-bytes deadline** ([`Limits::handshake_timeout`]) starts at `accept` and covers the
//!   TLS handshake and the first byte of the first request (gRPC: the 24-byte HTTP/2 preface): an
//!   idle socket is closed within it, long before the head deadline.
//! - **The head deadline** ([`Limits::header_timeout`]) covers, over HTTP/1.1, each request head
//!   (hyper's `header_read_timeout`, which also closes a keep-alive connection that stays idle for
//!   that long). A client that trickles its head a byte at a time (slowloris) is closed when it
//!   passes.
//! - **The request deadline** ([`Limits::request_timeout`]) covers reading the body and answering:
//!   HTTP answers `408 request_timeout`; gRPC answers `Cancelled` (tonic's timeout).
//!
//! Connections are served in tasks of their own; the accept loop never waits for one.

pub mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::listen::tls::TlsFiles;

/// The limits of a listener. [`Default`]: a 3 s first-bytes deadline, a 10 s head deadline, a
/// 30 s request deadline, 1024 connections, 64 more for authenticated callers, 64 anonymous ones
/// per peer address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Time a new connection has for its TLS handshake and the first byte of its first request
    /// (gRPC: the HTTP/2 preface), from `accept`; the shorter of it and [`Self::header_timeout`]
    /// applies.
    pub handshake_timeout: Duration,
    /// Time each request head has (HTTP/1.1: and the idle time between requests).
    pub header_timeout: Duration,
    /// Time a request has to be read and answered.
    pub request_timeout: Duration,
    /// Connections open at once; past it (and the reserve) the listener stops accepting until
    /// one closes.
    pub max_connections: usize,
    /// Connections past [`Self::max_connections`] kept for callers presenting a client
    /// certificate the listener trusts.
    pub reserved_connections: usize,
    /// Anonymous connections (no trusted client certificate) from one IP address at once.
    pub max_connections_per_peer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(3),
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 1024,
            reserved_connections: 64,
            max_connections_per_peer: 64,
        }
    }
}

/// Who is on the other end of a connection: in every HTTP request's extensions, and tonic's
/// connect info of every gRPC request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The remote address.
    pub address: SocketAddr,
    /// `sha256:` and the hex sha256 of the client certificate's DER, when the client presented one
    /// (verified against the client CA: a listener without one asks for none).
    pub client_certificate: Option<String>,
}

/// Connections a listener closed on its own, by why (the service's `/metrics`:
/// `scale_units_connections_closed_total{reason}`).
#[derive(Debug, Default)]
pub struct Closed {
    /// Over its address's cap ([`Limits::max_connections_per_peer`]), at accept.
    pub peer_cap: AtomicU64,
    /// Accepted into the reserve without a trusted client certificate, with the cap full.
    pub no_certificate: AtomicU64,
    /// No TLS handshake, or no first bytes, within [`Limits::handshake_timeout`].
    pub first_bytes: AtomicU64,
}

impl Closed {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The transport under a [`Connection`].
enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// How many bytes must arrive before a deadline (the first byte of an HTTP/1.1 connection, the
/// HTTP/2 preface of a gRPC connection).
struct Preface {
    remaining: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
    closed: Arc<Closed>,
}

/// An accepted connection: its transport, its peer, its slot under the cap or in the reserve and
/// its place under its peer's cap (both freed when it is dropped), and the first-bytes deadline.
pub struct Connection {
    transport: Transport,
    peer: Peer,
    preface: Option<Preface>,
    _slot: OwnedSemaphorePermit,
    _counted: Option<PeerCount>,
}

impl Connection {
    /// The peer of this connection.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }
}

impl AsyncRead for Connection {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = match &mut this.transport {
            Transport::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        };
        if let Some(preface) = &mut this.preface {
            match polled {
                Poll::Ready(Ok(())) => {
                    let read = buf.filled().len().saturating_sub(before);
                    preface.remaining = preface.remaining.saturating_sub(read);
                    if preface.remaining == 0 {
                        this.preface = None;
                    }
                }
                Poll::Pending => {
                    if preface.deadline.as_mut().poll(cx).is_ready() {
                        Closed::count(&preface.closed.first_bytes);
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no first bytes within the handshake timeout",
                        )));
                    }
                }
                Poll::Ready(Err(_)) => {}
            }
        }
        polled
    }
}

impl AsyncWrite for Connection {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().transport {
            Transport::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().transport {
            Transport::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.transport {
            Transport::Plain(stream) => stream.is_write_vectored(),
            Transport::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().transport {
            Transport::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().transport {
            Transport::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

impl tonic::transport::server::Connected for Connection {
    type ConnectInfo = Peer;

    fn connect_info(&self) -> Peer {
        self.peer.clone()
    }
}

/// What a listener speaks, for the TLS handshake's ALPN and the preface deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1 (the first byte, then hyper's own head deadline).
    Http1,
    /// gRPC: HTTP/2, with the preface deadline.
    Grpc,
}

/// The HTTP/2 connection preface (RFC 9113 §3.4), 24 bytes.
const H2_PREFACE_LEN: usize = 24;

/// Accepts connections under the cap, completes their TLS handshakes in tasks of their own, and
/// hands them over; ends when it is dropped.
pub(crate) struct Acceptor {
    incoming: mpsc::Receiver<Connection>,
}

impl Acceptor {
    /// Starts accepting on `listener`, over TLS when `tls` is given (its files watched and
    /// reloaded), counting in `closed` the connections it closes on its own.
    ///
    /// # Errors
    /// The TLS files cannot be loaded.
    pub(crate) fn start(
        listener: TcpListener,
        tls: Option<TlsFiles>,
        protocol: Protocol,
        limits: Limits,
        closed: Arc<Closed>,
    ) -> std::io::Result<Self> {
        let (sender, incoming) = mpsc::channel(64);
        // The reserve is for trusted client certificates: a listener that verifies none keeps none.
        let mut limits = limits;
        if tls.as_ref().is_none_or(|files| files.client_ca.is_none()) {
            limits.reserved_connections = 0;
        }
        let acceptor = match tls {
            Some(files) => {
                let files = match protocol {
                    Protocol::Http1 => files,
                    Protocol::Grpc => files.alpn(vec![b"h2".to_vec()]),
                };
                let config = files.load().map_err(std::io::Error::other)?;
                let acceptor = Arc::new(ArcSwap::from_pointee(TlsAcceptor::from(config)));
                let watched = Arc::clone(&acceptor);
                let closed = sender.clone();
                tokio::spawn(async move { files.watch(watched, closed.closed()).await });
                Some(acceptor)
            }
            None => None,
        };
        tokio::spawn(accept(listener, acceptor, protocol, limits, sender, closed));
        Ok(Self { incoming })
    }

    /// The next connection; `None` once the accept task ended.
    pub(crate) async fn next(&mut self) -> Option<Connection> {
        self.incoming.recv().await
    }

    /// The connections as a stream, for tonic.
    pub(crate) fn into_stream(self) -> impl tokio_stream::Stream<Item = std::io::Result<Connection>> + Send {
        use tokio_stream::StreamExt as _;
        tokio_stream::wrappers::ReceiverStream::new(self.incoming).map(Ok)
    }
}

/// How a gRPC listener stops: it keeps serving `shutdown_delay` after the signal (endpoints
/// update), then accepts nothing new and waits at most `drain_timeout` for calls in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Drain {
    pub(crate) shutdown_delay: Duration,
    pub(crate) drain_timeout: Duration,
}

/// Serves the gRPC `routes` on the connections `acceptor` takes (TLS, the connection caps and
/// deadlines of [`Limits`]) until `shutdown` completes, then drains as [`Drain`] says; `stopping`
/// runs once the shutdown delay is over, just before new calls are refused (KEDA ends its
/// streams there). Returns whether everything drained in time (the KEDA scaler and the Envoy
/// authorizer share it).
pub(crate) async fn serve_grpc(
    routes: tonic::service::Routes,
    acceptor: Acceptor,
    limits: Limits,
    drain: Drain,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    stopping: impl FnOnce(),
) -> Result<bool, tonic::transport::Error> {
    let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tonic::transport::Server::builder()
        .timeout(limits.request_timeout)
        // A peer that stops answering pings is dropped; long-lived connections stay open otherwise.
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .add_routes(routes)
        .serve_with_incoming_shutdown(acceptor.into_stream(), async {
            let _ = close_rx.await;
        });
    let mut server = tokio::spawn(server);
    tokio::select! {
        outcome = &mut server => {
            return match outcome {
                Ok(result) => result.map(|()| true),
                Err(_) => Ok(false),
            };
        }
        () = shutdown => {}
    }
    tokio::time::sleep(drain.shutdown_delay).await;
    stopping();
    let _ = close_tx.send(());
    match tokio::time::timeout(drain.drain_timeout, &mut server).await {
        Ok(Ok(result)) => result.map(|()| true),
        Ok(Err(_)) => Ok(false),
        Err(_) => {
            server.abort();
            Ok(false)
        }
    }
}

/// Anonymous connections by peer address.
#[derive(Default)]
struct Peers {
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// A connection counted under its peer's cap; uncounted when dropped.
struct PeerCount {
    peers: Arc<Peers>,
    address: IpAddr,
}

impl Peers {
    /// Counts one more connection from `address`, unless it has `cap` already.
    fn enter(self: &Arc<Self>, address: IpAddr, cap: usize) -> Option<PeerCount> {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(address).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(PeerCount { peers: Arc::clone(self), address })
    }
}

impl Drop for PeerCount {
    fn drop(&mut self) {
        let mut counts = self.peers.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.address);
            }
        }
    }
}

/// Where an accepted connection holds its place.
enum Slot {
    /// Under [`Limits::max_connections`].
    Cap(OwnedSemaphorePermit),
    /// In [`Limits::reserved_connections`]: kept only with a trusted client certificate.
    Reserve(OwnedSemaphorePermit),
}

async fn accept(
    listener: TcpListener,
    tls: Option<Arc<ArcSwap<TlsAcceptor>>>,
    protocol: Protocol,
    limits: Limits,
    sender: mpsc::Sender<Connection>,
    closed: Arc<Closed>,
) {
    let cap = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let reserve = Arc::new(Semaphore::new(limits.reserved_connections));
    let peers = Arc::new(Peers::default());
    loop {
        let slot = tokio::select! {
            biased;
            () = sender.closed() => return,
            slot = Arc::clone(&cap).acquire_owned() => match slot {
                Ok(slot) => Slot::Cap(slot),
                Err(_) => return,
            },
            slot = Arc::clone(&reserve).acquire_owned() => match slot {
                Ok(slot) => Slot::Reserve(slot),
                Err(_) => return,
            },
        };
        let (stream, address) = tokio::select! {
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
        // Over its peer's cap: closed at once, its slot free for the next.
        let Some(counted) = peers.enter(address.ip().to_canonical(), limits.max_connections_per_peer.max(1)) else {
            Closed::count(&closed.peer_cap);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let tls = tls.as_ref().map(|acceptor| TlsAcceptor::clone(&acceptor.load()));
        let sender = sender.clone();
        let (cap, reserve, closed) = (Arc::clone(&cap), Arc::clone(&reserve), Arc::clone(&closed));
        tokio::spawn(async move {
            // The first-bytes deadline starts at accept: the handshake and the first bytes share it.
            let deadline = tokio::time::Instant::now() + limits.handshake_timeout.min(limits.header_timeout);
            let (transport, client_certificate) = match tls {
                None => (Transport::Plain(stream), None),
                Some(acceptor) => match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let certificate = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(<[_]>::first)
                            .map(|der| format!("sha256:{}", hex(&Sha256::digest(der.as_ref()))));
                        (Transport::Tls(Box::new(stream)), certificate)
                    }
                    // A failed or slow handshake: the connection and its slot are dropped.
                    Ok(Err(_)) => return,
                    Err(_) => {
                        Closed::count(&closed.first_bytes);
                        return;
                    }
                },
            };
            // A certificate the listener verified (against its client CA: a listener without one
            // asks for none) authenticates the connection: it moves to the reserve when it can
            // and no longer counts under its peer's cap. Any other leaves the reserve or closes.
            let (slot, counted) = match (client_certificate.is_some(), slot) {
                (true, Slot::Cap(slot)) => match reserve.try_acquire_owned() {
                    Ok(reserved) => {
                        drop(slot);
                        (reserved, None)
                    }
                    Err(_) => (slot, None),
                },
                (true, Slot::Reserve(slot)) => (slot, None),
                (false, Slot::Cap(slot)) => (slot, Some(counted)),
                (false, Slot::Reserve(reserved)) => match cap.try_acquire_owned() {
                    Ok(slot) => {
                        drop(reserved);
                        (slot, Some(counted))
                    }
                    Err(_) => {
                        Closed::count(&closed.no_certificate);
                        return;
                    }
                },
            };
            let remaining = match protocol {
                Protocol::Http1 => 1,
                Protocol::Grpc => H2_PREFACE_LEN,
            };
            let preface = Some(Preface { remaining, deadline: Box::pin(tokio::time::sleep_until(deadline)), closed });
            let connection = Connection {
                transport,
                peer: Peer { address, client_certificate },
                preface,
                _slot: slot,
                _counted: counted,
            };
            let _ = sender.send(connection).await;
        });
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

/// Serves `router` over HTTP/1.1 on the connections of `acceptor` until `close` fires, then stops
/// accepting and waits for the connections to finish their requests in flight (idle ones close at
/// once).
pub(crate) fn serve_http(
    mut acceptor: Acceptor,
    router: Router,
    limits: Limits,
    close: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let router = router.layer(axum::middleware::from_fn_with_state(limits.request_timeout, deadline));
    tokio::spawn(async move {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut close = std::pin::pin!(close);
        loop {
            let connection = tokio::select! {
                _ = &mut close => break,
                connection = acceptor.next() => match connection {
                    Some(connection) => connection,
                    None => break,
                },
            };
            let peer = connection.peer().clone();
            let router = router.clone();
            let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(peer.clone());
                tower::ServiceExt::oneshot(router.clone(), request)
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let served = graceful.watch(builder.serve_connection(TokioIo::new(connection), service));
            tokio::spawn(async move {
                let _ = served.await;
            });
        }
        drop(acceptor);
        graceful.shutdown().await;
        Ok(())
    })
}

/// The request deadline: `408 request_timeout` when reading and answering takes longer.
async fn deadline(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            let body = serde_json::json!({"error": {
                "code": "request_timeout",
                "message": format!("the request was not read and answered within {} ms", limit.as_millis()),
            }});
            let mut response = (StatusCode::REQUEST_TIMEOUT, body.to_string()).into_response();
            response
                .headers_mut()
                .insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
            response
                .headers_mut()
                .insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
            response
        }
    }
}
