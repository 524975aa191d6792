//! The real binary serving KEDA's external scaler beside HTTP (`serve --keda-listen`), through a
//! real gRPC client, and draining both on SIGTERM.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../server/tests/support/mod.rs"]
mod support;

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};

use scale_units_server::keda::METRIC_NAME;
use scale_units_server::keda::proto::GetMetricsRequest;
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use support::keda::{contracts_dir, fresh_observations, next, push, transcode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_the_scaler_beside_http_and_drains_both_on_sigterm() {
    let dir = contracts_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--keda-stream-interval-ms", "50"])
        .args(["--shutdown-delay-ms", "200", "--drain-timeout-ms", "10000", "--units"])
        .arg(&dir)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = |prefix: &str| {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim().strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix}: {line}")).parse::<SocketAddr>().unwrap()
    };
    let keda = line("keda external scaler listening on ");
    let http = line("listening on ");

    push(http, "media", "transcode", &fresh_observations("media-pool", 1, 75)).await;
    let mut client = ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap();
    let request = GetMetricsRequest { scaled_object_ref: Some(transcode()), metric_name: METRIC_NAME.into() };
    let metric = client.get_metrics(request.clone()).await.unwrap().into_inner().metric_values[0].metric_value;
    assert_eq!(metric, 3, "1 -> 3 replicas for a queue of 75 (target 20, step 2)");
    let mut stream = client.stream_is_active(transcode()).await.unwrap().into_inner();
    assert!(next(&mut stream).await.unwrap().unwrap().result);
    push(http, "media", "transcode", &fresh_observations("media-pool", 1, 0)).await;
    assert!(!next(&mut stream).await.unwrap().unwrap().result, "scale to zero allowed");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    // The open stream ends with the drain, and the process exits 0 (both servers drained).
    assert!(next(&mut stream).await.unwrap().is_none());
    let exit = tokio::task::spawn_blocking(move || {
        let exit = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (exit, stderr)
    })
    .await
    .unwrap();
    assert!(exit.0.success(), "{:?}\n{}", exit.0, exit.1);
    assert!(client.get_metrics(request).await.is_err(), "nothing listens after the drain");
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
