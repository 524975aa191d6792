//! The real binary's listener limits (`--header-timeout-ms`, `--request-timeout-ms`,
//! `--max-connections`) on the HTTP, HTTPS and gRPC listeners: slow clients (a request head or an
//! HTTP/2 preface trickled a byte at a time, a TLS handshake never started) and idle ones are held
//! open while other clients are still served, and the slow ones are closed once the head deadline
//! passes; a body trickled past the request deadline gets `408`; at the connection cap, a new
//! client is served only once a slot is freed.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use binary::{Serve, Served};
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use support::Client;
use support::keda::{contracts_dir, transcode};

/// The head deadline of these tests.
const HEAD_MS: u64 = 1000;
/// A generous bound for "closed once the deadline passed" (no wall-time assertion beyond a hang).
const HANG: Duration = Duration::from_secs(20);

fn serve(extra: &[&str], keda: bool) -> Served {
    let head_ms = HEAD_MS.to_string();
    let mut serve =
        Serve::new(["--listen", "127.0.0.1:0", "--header-timeout-ms", &head_ms, "--request-timeout-ms", "1500"])
            .args(extra)
            .arg("--units")
            .arg(contracts_dir());
    if keda {
        serve = serve.args(["--keda-listen", "127.0.0.1:0"]).keda();
    }
    serve.start()
}

/// A client that sends `head` one byte every 100 ms (never finishing within the deadline), and
/// reports how long the server kept it open.
fn slow(address: SocketAddr, head: &'static [u8]) -> JoinHandle<Duration> {
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(address).unwrap();
        let opened = Instant::now();
        for byte in head.iter().copied().chain(std::iter::repeat(b'a')) {
            if stream.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            assert!(opened.elapsed() < HANG, "a slow client was never closed");
            if closed(&stream) {
                break;
            }
        }
        opened.elapsed()
    })
}

/// Whether the server closed `stream` (a read returns end of file or an error; a pending read
/// is still open).
fn closed(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let closed = match (&*stream).read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(error) => error.kind() != std::io::ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).unwrap();
    closed
}

/// A client that connects and sends nothing; reports when the server closed it.
fn idle(address: SocketAddr) -> JoinHandle<Duration> {
    std::thread::spawn(move || {
        let mut stream = TcpStream::connect(address).unwrap();
        let opened = Instant::now();
        stream.set_read_timeout(Some(HANG)).unwrap();
        let mut buffer = [0u8; 64];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        assert!(opened.elapsed() < HANG, "an idle client was never closed");
        opened.elapsed()
    })
}

/// Serves `/health` in a loop on fresh connections until `stop`; returns how many were answered.
fn busy(address: SocketAddr, stop: Arc<AtomicBool>) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut answered = 0;
        while !stop.load(Ordering::SeqCst) {
            let reply = Client::new(address).get("/health").expect("served while slow clients are held");
            assert_eq!(reply.status, 200);
            answered += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        answered
    })
}

fn report(what: &str, held: &[Duration]) {
    eprintln!("{what}: closed after {:?} (head deadline {HEAD_MS} ms)", held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_while_others_are_served_on_http_and_grpc() {
    let served = serve(&["--max-connections", "64"], true);
    let keda = served.keda.unwrap();
    let slow_http = [
        slow(served.http, b"GET /health HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaa"),
        slow(served.http, b"POST /v1/evaluate HTTP/1.1\r\n"),
    ];
    let idle_http = [idle(served.http), idle(served.http)];
    // gRPC: a preface trickled, and a connection that never sends one.
    let slow_grpc = slow(keda, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let idle_grpc = idle(keda);
    let stop = Arc::new(AtomicBool::new(false));
    let health = busy(served.http, Arc::clone(&stop));
    // Meanwhile KEDA's calls are answered.
    let mut scaler = ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap();
    for _ in 0..5 {
        let spec = scaler.get_metric_spec(transcode()).await.unwrap().into_inner();
        assert_eq!(spec.metric_specs.len(), 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held_http: Vec<Duration> =
        slow_http.into_iter().chain(idle_http).map(|client| client.join().unwrap()).collect();
    let held_grpc: Vec<Duration> = [slow_grpc, idle_grpc].into_iter().map(|client| client.join().unwrap()).collect();
    stop.store(true, Ordering::SeqCst);
    let answered = health.join().unwrap();
    assert!(answered >= 3, "{answered} health checks answered while the slow clients were held");
    report("HTTP slow, slow, idle, idle", &held_http);
    report("gRPC slow preface, idle", &held_grpc);
    // An established gRPC client outlives the deadline: it sent its preface.
    assert_eq!(scaler.get_metric_spec(transcode()).await.unwrap().into_inner().metric_specs.len(), 1);

    // A body trickled past the request deadline: 408, and the connection closes.
    let mut stream = TcpStream::connect(served.http).unwrap();
    stream
        .write_all(
            b"POST /v1/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n",
        )
        .unwrap();
    let writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        let mut writer = writer;
        for _ in 0..100 {
            if writer.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    stream.set_read_timeout(Some(HANG)).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    trickle.join().unwrap();
    served.stop();
}

#[test]
fn at_the_connection_cap_a_new_client_waits_for_a_free_slot() {
    let served = serve(&["--max-connections", "4"], false);
    // Four idle connections take every slot (the server holds them until the head deadline).
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(served.http).unwrap()).collect();
    // Let the server accept all four before the fifth connects.
    std::thread::sleep(Duration::from_millis(200));
    let reply = Client::new(served.http).get("/health").unwrap();
    assert_eq!(reply.status, 200);
    // The fifth was answered only once a slot was freed: by then an idle one had been closed.
    let freed = held.iter().filter(|stream| closed(stream)).count();
    assert!(freed >= 1, "the fifth client was served while four connections held every slot");
    served.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_closes_a_client_that_never_starts_its_handshake_or_trickles_its_head() {
    let dir = support::keda::contracts_dir();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("tls.crt"), certified.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), certified.signing_key.serialize_pem()).unwrap();
    let cert = dir.join("tls.crt").to_string_lossy().into_owned();
    let key = dir.join("tls.key").to_string_lossy().into_owned();
    let served = serve(&["--webhook", "--tls-cert", &cert, "--tls-key", &key], false);
    let no_handshake = idle(served.http);

    // A TLS client that completes its handshake, then trickles its head.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = Arc::new(config);
    let connect = |config: Arc<rustls::ClientConfig>| {
        let tcp = TcpStream::connect(served.http).unwrap();
        let connection =
            rustls::ClientConnection::new(config, rustls::pki_types::ServerName::try_from("localhost").unwrap())
                .unwrap();
        rustls::StreamOwned::new(connection, tcp)
    };
    let mut trickling = connect(Arc::clone(&config));
    let opened = Instant::now();
    let mut head_closed = false;
    for byte in b"GET /health HTTP/1.1\r\nhost: localhost\r\nx-slow: ".iter().copied().chain(std::iter::repeat(b'a')) {
        if trickling.write_all(&[byte]).and_then(|()| trickling.flush()).is_err() {
            head_closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        assert!(opened.elapsed() < HANG, "the trickling TLS client was never closed");
        trickling.sock.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let state = trickling.read(&mut byte);
        trickling.sock.set_nonblocking(false).unwrap();
        match state {
            Ok(0) => {
                head_closed = true;
                break;
            }
            Err(error) if error.kind() != std::io::ErrorKind::WouldBlock => {
                head_closed = true;
                break;
            }
            _ => {}
        }
        // Meanwhile a well-behaved HTTPS client is served.
        if opened.elapsed() < Duration::from_millis(HEAD_MS / 2) {
            let mut good = connect(Arc::clone(&config));
            good.write_all(b"GET /health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").unwrap();
            let mut answer = String::new();
            let _ = good.read_to_string(&mut answer);
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        }
    }
    assert!(head_closed);
    report("HTTPS trickled head", &[opened.elapsed()]);
    report("HTTPS no handshake", &[no_handshake.join().unwrap()]);
    served.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
