//! Oversized bodies through the real `scale-units serve`, from a raw socket (issue 24): a client
//! that sends its whole 2 MiB body before reading (declared or chunked) reads the 413 with
//! `Connection: close` instead of a reset, and a body far past what the service discards does not
//! keep it from serving the next client.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod binary;
#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use binary::Serve;

const MIB: usize = 1 << 20;

/// Sends `head` and then `body` in 64 KiB writes, all of it, before reading anything: the answer.
fn send_all_then_read(address: std::net::SocketAddr, head: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    for chunk in body.chunks(64 << 10) {
        stream.write_all(chunk).unwrap_or_else(|error| panic!("the service stopped reading the body: {error}"));
    }
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap_or_else(|error| panic!("no answer, {error}: {answer:?}"));
    String::from_utf8_lossy(&answer).into_owned()
}

fn assert_413(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("\"payload_too_large\""), "{answer}");
}

#[test]
fn a_client_sending_2_mib_reads_the_413() {
    let served = Serve::new(["--listen", "127.0.0.1:0"]).start();
    let body = vec![b' '; 2 * MIB];

    let head = format!(
        "POST /v1/evaluate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    assert_413(&send_all_then_read(served.http, &head, &body));

    // The same 2 MiB chunked, its length unknown until the limit is passed.
    let mut chunked = Vec::new();
    for chunk in body.chunks(32 << 10) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = "POST /v1/evaluate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_413(&send_all_then_read(served.http, head, &chunked));

    // With a smaller limit, a body 6 MiB past it is still read and dropped.
    drop(served);
    let served = Serve::new(["--listen", "127.0.0.1:0", "--max-body-bytes", "65536"]).start();
    let body = vec![b' '; 6 * MIB];
    let head = format!("POST /v1/evaluate HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n", body.len());
    assert_413(&send_all_then_read(served.http, &head, &body));
    served.stop();
}

#[test]
fn a_body_past_what_is_discarded_is_cut_off_and_the_service_keeps_serving() {
    let served = Serve::new(["--listen", "127.0.0.1:0", "--max-body-bytes", "65536"]).start();
    // 1 GiB declared: the service reads at most 8 MiB of it, then closes.
    let mut stream = TcpStream::connect(served.http).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(b"POST /v1/evaluate HTTP/1.1\r\nHost: test\r\nContent-Length: 1073741824\r\n\r\n").unwrap();
    let chunk = vec![b' '; 64 << 10];
    let mut sent = 0_usize;
    while sent < 1 << 30 {
        if stream.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    assert!(sent < 64 * MIB, "the service kept reading: {sent} bytes taken");
    let reply = support::Client::new(served.http).post("/v1/evaluate", &[], common::good_request().as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    served.stop();
}
