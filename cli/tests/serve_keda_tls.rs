//! The real binary serving KEDA's external scaler over TLS (`--keda-tls-cert/--keda-tls-key`),
//! with client certificates required (`--keda-client-ca`), called by a real tonic client over
//! rustls as KEDA calls it (`caCert`, `tlsClientCert`, `tlsClientKey`): with the right client
//! certificate, without one, with one from another CA, and in plaintext. The same run shows a
//! blocked unit at zero staying inactive, and the audit log summarizing repeated KEDA answers.
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
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use scale_units_server::keda::METRIC_NAME;
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use scale_units_server::keda::proto::{GetMetricSpecResponse, GetMetricsRequest};
use serde_json::{Value, json};
use support::keda::{contracts_dir, fresh_observations, push, transcode};
use tonic::transport::{Channel, Endpoint};

/// A CA and what it signs.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        Self { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf for `names` with `usage`: (certificate PEM, key PEM, certificate DER, key DER).
    fn leaf(
        &self,
        names: &[&str],
        usage: ExtendedKeyUsagePurpose,
    ) -> (String, String, CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params =
            CertificateParams::new(names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>()).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key_der = PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone(), key_der)
    }
}

struct Scaler {
    child: Child,
    http: SocketAddr,
    keda: SocketAddr,
}

fn start(dir: &Path, tls: &[(&str, PathBuf)], audit: &Path) -> Scaler {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scale-units"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--shutdown-delay-ms", "0"])
        .arg("--units")
        .arg(dir)
        .arg("--audit-log")
        .arg(audit);
    for (flag, path) in tls {
        command.arg(flag).arg(path);
    }
    let mut child = command
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
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
    Scaler { child, http, keda }
}

impl Scaler {
    fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "{exit:?}");
    }
}

/// A gRPC client over rustls to `address`, trusting `ca`, presenting `identity` when given, ALPN
/// `h2` (as grpc-go, KEDA's client, offers).
async fn client(
    address: SocketAddr,
    ca: &CertificateDer<'static>,
    identity: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> Result<ExternalScalerClient<Channel>, tonic::transport::Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => builder.with_client_auth_cert(vec![cert], key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let channel = Endpoint::from_static("http://localhost")
        .connect_timeout(Duration::from_secs(10))
        .connect_with_connector(tower::service_fn(move |_: hyper::Uri| {
            let connector = connector.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(address).await?;
                let tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
            }
        }))
        .await?;
    Ok(ExternalScalerClient::new(channel))
}

async fn spec(
    client: Result<ExternalScalerClient<Channel>, tonic::transport::Error>,
) -> Result<GetMetricSpecResponse, String> {
    let mut client = client.map_err(|error| format!("connect: {error}"))?;
    tokio::time::timeout(Duration::from_secs(20), client.get_metric_spec(transcode()))
        .await
        .expect("an answer or an error, not a hang")
        .map(tonic::Response::into_inner)
        .map_err(|status| format!("call: {status}"))
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keda_over_tls_with_client_certificates_blocked_at_zero_inactive_and_audited() {
    let dir = contracts_dir();
    let ca = Authority::new("scale-units test CA");
    let other = Authority::new("someone else's CA");
    let (server_pem, server_key, _, _) = ca.leaf(&["localhost", "127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
    let (_, _, client_der, client_key) = ca.leaf(&["keda-operator.keda.svc"], ExtendedKeyUsagePurpose::ClientAuth);
    let (_, _, stranger_der, stranger_key) =
        other.leaf(&["keda-operator.keda.svc"], ExtendedKeyUsagePurpose::ClientAuth);
    let tls_dir = dir.join("tls");
    std::fs::create_dir_all(&tls_dir).unwrap();
    std::fs::write(tls_dir.join("tls.crt"), &server_pem).unwrap();
    std::fs::write(tls_dir.join("tls.key"), &server_key).unwrap();
    std::fs::write(tls_dir.join("ca.crt"), ca.issuer.pem()).unwrap();
    let audit = dir.join("tls").join("audit.log");

    // Mutual TLS.
    let flags = [
        ("--keda-tls-cert", tls_dir.join("tls.crt")),
        ("--keda-tls-key", tls_dir.join("tls.key")),
        ("--keda-client-ca", tls_dir.join("ca.crt")),
    ];
    let scaler = start(&dir, &flags, &audit);
    let served = spec(client(scaler.keda, &ca.der(), Some((client_der.clone(), client_key.clone_key()))).await).await;
    assert_eq!(served.unwrap().metric_specs[0].metric_name, METRIC_NAME, "KEDA with its client certificate");
    let refused = spec(client(scaler.keda, &ca.der(), None).await).await;
    assert!(refused.is_err(), "no client certificate: {refused:?}");
    let refused = spec(client(scaler.keda, &ca.der(), Some((stranger_der, stranger_key))).await).await;
    assert!(refused.is_err(), "a certificate of another CA: {refused:?}");
    let plain = ExternalScalerClient::connect(format!("http://{}", scaler.keda)).await;
    let plain = match plain {
        Ok(mut plain) => {
            tokio::time::timeout(Duration::from_secs(20), plain.get_metric_spec(transcode())).await.unwrap().is_err()
        }
        Err(_) => true,
    };
    assert!(plain, "plaintext gRPC is not served on the TLS listener");

    // media/transcode allows zero. At zero with a fresh, busy signal: scale up, active.
    let mut keda = client(scaler.keda, &ca.der(), Some((client_der, client_key))).await.unwrap();
    push(scaler.http, "media", "transcode", &fresh_observations("media-pool", 0, 75)).await;
    assert!(keda.is_active(transcode()).await.unwrap().into_inner().result);
    // The signal is gone (its source is down): blocked at zero holds zero, so the unit stays
    // inactive rather than KEDA waking it to one replica the decision did not allow.
    push(scaler.http, "media", "transcode", &json!({"signal": null})).await;
    for _ in 0..5 {
        assert!(!keda.is_active(transcode()).await.unwrap().into_inner().result, "blocked at zero is inactive");
    }
    let request = GetMetricsRequest { scaled_object_ref: Some(transcode()), metric_name: METRIC_NAME.into() };
    assert_eq!(keda.get_metrics(request).await.unwrap().into_inner().metric_values[0].metric_value, 0);
    // Above zero, blocked stays active (the HPA holds the count; KEDA must not deactivate it).
    push(scaler.http, "media", "transcode", &json!({"current_replicas": 2})).await;
    assert!(keda.is_active(transcode()).await.unwrap().into_inner().result, "blocked above zero stays active");
    scaler.stop();

    // The audit log: the five identical IsActive answers are one line, and the next IsActive line
    // of the unit counts the four left out (a GetMetrics between them is a line of its own).
    let lines = audit_lines(&audit);
    let is_active: Vec<&Value> =
        lines.iter().filter(|line| line["source"] == "keda" && line["detail"]["call"] == "IsActive").collect();
    assert_eq!(is_active.len(), 3, "{is_active:#?}");
    assert_eq!(
        (is_active[0]["action"].as_str(), is_active[0]["detail"]["answer"]["active"].as_bool()),
        (Some("scale_up"), Some(true))
    );
    assert_eq!((is_active[1]["action"].as_str(), is_active[1]["current"].as_u64()), (Some("blocked"), Some(0)));
    assert!(is_active[1]["reasons"].as_array().unwrap().contains(&json!("signal_missing")));
    assert_eq!(is_active[1]["detail"]["answer"]["active"], false);
    assert_eq!(is_active[2]["repeated"], 4, "the summary of the repeats: {}", is_active[2]);
    assert_eq!((is_active[2]["action"].as_str(), is_active[2]["current"].as_u64()), (Some("blocked"), Some(2)));
    let metrics: Vec<&Value> = lines.iter().filter(|line| line["detail"]["call"] == "GetMetrics").collect();
    assert_eq!((metrics.len(), metrics[0]["detail"]["answer"]["metric"].as_u64()), (1, Some(0)));
    for line in lines.iter().filter(|line| line["source"] == "keda") {
        assert_eq!(line["unit"], "media/transcode");
        assert!(line["caller"]["client_certificate"].as_str().unwrap().starts_with("sha256:"), "{line}");
        assert!(line["component_digest"].as_str().unwrap().starts_with("sha256:"));
    }

    // TLS without client certificates: any client that trusts the server's CA is served.
    let flags = [("--keda-tls-cert", tls_dir.join("tls.crt")), ("--keda-tls-key", tls_dir.join("tls.key"))];
    let scaler = start(&dir, &flags, &dir.join("tls").join("audit-2.log"));
    let served = spec(client(scaler.keda, &ca.der(), None).await).await;
    assert!(served.is_ok(), "{served:?}");
    scaler.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_ca_without_a_certificate_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--keda-client-ca", "/nonexistent/ca.crt"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(64), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--keda-client-ca"), "{output:?}");
}
