//! The service's listeners, with the limits every one of them keeps ([`Limits`]): a cap on open
//! connections, a deadline for a new connection's first request (its TLS handshake and its request
//! head, or for gRPC the HTTP/2 preface) and a deadline for each request.
//!
//! - **The cap** ([`Limits::max_connections`]) is taken before `accept`: at the cap the listener
//!   stops accepting and new connections wait in the kernel's backlog until one closes (as Go's
//!   `netutil.LimitListener` does), so a flood of idle sockets never reaches the process.
//! - **The head deadline** ([`Limits::header_timeout`]) covers the TLS handshake, then, over HTTP/1.1,
//!   each request head (hyper's `header_read_timeout`, which also closes a keep-alive connection
//!   that stays idle for that long), and over gRPC the 24-byte HTTP/2 preface. A client that trickles
//!   its head a byte at a time (slowloris) or sends nothing is closed when it passes.
//! - **The request deadline** ([`Limits::request_timeout`]) covers reading the body and answering:
//!   HTTP answers `408 request_timeout`; gRPC answers `Cancelled` (tonic's timeout).
//!
//! Connections are served in tasks of their own; the accept loop never waits for one.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
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

use crate::webhook::tls::TlsFiles;

/// The limits of a listener. [`Default`]: a 10 s head deadline, a 30 s request deadline, 1024
/// connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Time a new connection has for its TLS handshake and its first request head (HTTP/1.1:
    /// every request head, and the idle time between requests; gRPC: the HTTP/2 preface).
    pub header_timeout: Duration,
    /// Time a request has to be read and answered.
    pub request_timeout: Duration,
    /// Connections open at once; past it the listener stops accepting until one closes.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 1024,
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

/// The transport under a [`Connection`].
enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// How many bytes must arrive before a deadline (the HTTP/2 preface of a gRPC connection).
struct Preface {
    remaining: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

/// An accepted connection: its transport, its peer, its slot under the cap (freed when it is
/// dropped) and, for gRPC, the preface deadline.
pub struct Connection {
    transport: Transport,
    peer: Peer,
    preface: Option<Preface>,
    _slot: OwnedSemaphorePermit,
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
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no HTTP/2 preface within the header timeout",
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
    /// HTTP/1.1 (hyper's own head deadline applies).
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
    /// reloaded).
    ///
    /// # Errors
    /// The TLS files cannot be loaded.
    pub(crate) fn start(
        listener: TcpListener,
        tls: Option<TlsFiles>,
        protocol: Protocol,
        limits: Limits,
    ) -> std::io::Result<Self> {
        let (sender, incoming) = mpsc::channel(64);
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
        tokio::spawn(accept(listener, acceptor, protocol, limits, sender));
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

async fn accept(
    listener: TcpListener,
    tls: Option<Arc<ArcSwap<TlsAcceptor>>>,
    protocol: Protocol,
    limits: Limits,
    sender: mpsc::Sender<Connection>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let slot = tokio::select! {
            () = sender.closed() => return,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
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
        let _ = stream.set_nodelay(true);
        let tls = tls.as_ref().map(|acceptor| TlsAcceptor::clone(&acceptor.load()));
        let sender = sender.clone();
        tokio::spawn(async move {
            // The head deadline starts at accept: the handshake and the preface share it.
            let deadline = tokio::time::Instant::now() + limits.header_timeout;
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
                    _ => return,
                },
            };
            let preface = (protocol == Protocol::Grpc)
                .then(|| Preface { remaining: H2_PREFACE_LEN, deadline: Box::pin(tokio::time::sleep_until(deadline)) });
            let connection = Connection { transport, peer: Peer { address, client_certificate }, preface, _slot: slot };
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
