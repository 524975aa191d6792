//! Shared by the service tests, the binary's tests (`cli/tests/`) and the service benchmark: a
//! minimal blocking HTTP/1.1 client for loopback load, an in-process server, and the KEDA
//! scaler's helpers.
#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use scale_units_server::service::{DrainReport, Service};

pub mod keda;

/// A keep-alive HTTP/1.1 client over one loopback connection (reconnects when the server
/// closes it). Enough for JSON with `content-length`; nothing else.
pub struct Client {
    address: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
    retry_stale: bool,
}

/// A response: status and body.
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("{error}: {}", self.body))
    }
}

impl Client {
    pub fn new(address: SocketAddr) -> Self {
        Self { address, stream: None, retry_stale: false }
    }

    /// Sends a request again, once, on a new connection when a reused one turns out closed (a
    /// server may close a connection after refusing a request without reading its body). Never
    /// for load or drain tests: there a closed connection is a failure to see.
    pub fn retrying_stale_connections(mut self) -> Self {
        self.retry_stale = true;
        self
    }

    pub fn get(&mut self, path: &str) -> std::io::Result<Reply> {
        self.send("GET", path, &[], b"")
    }

    pub fn post(&mut self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Reply> {
        self.send("POST", path, headers, body)
    }

    pub fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Reply> {
        let reused = self.stream.is_some();
        let outcome = self.send_once(method, path, headers, body);
        if self.retry_stale && reused && outcome.is_err() {
            return self.send_once(method, path, headers, body);
        }
        outcome
    }

    fn send_once(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Reply> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(self.address)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(60)))?;
            self.stream = Some(BufReader::new(stream));
        }
        let outcome = self.exchange(method, path, headers, body);
        if outcome.as_ref().map_or(true, |(_, close)| *close) {
            self.stream = None;
        }
        outcome.map(|(reply, _)| reply)
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<(Reply, bool)> {
        let reader = self.stream.as_mut().expect("connected");
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: loopback\r\ncontent-length: {}\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let stream = reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;

        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let (mut length, mut close) = (None, false);
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse::<usize>().ok(),
                "connection" => close = value.trim().eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        let length = length.ok_or_else(|| std::io::Error::other("no content-length"))?;
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        Ok((Reply { status, body: String::from_utf8(body).expect("UTF-8 body") }, close))
    }
}

/// A service running in-process on a loopback port, on its own tokio runtime.
pub struct Running {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<DrainReport>>,
}

impl Running {
    pub fn start(service: Service, async_workers: usize) -> Self {
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(async_workers)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
                address_tx.send(listener.local_addr().expect("an address")).expect("the test waits");
                service
                    .run(listener, async move {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("the server runs")
            })
        });
        let address = address_rx.recv().expect("the server starts");
        Self { address, stop: Some(stop), thread: Some(thread) }
    }

    /// Sends the shutdown signal and waits for the drain to finish.
    pub fn stop(mut self) -> DrainReport {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.thread.take().expect("running").join().expect("the server thread")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
