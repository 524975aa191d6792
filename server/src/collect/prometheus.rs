//! Instant queries against a Prometheus server's HTTP API (`GET /api/v1/query`), on hyper's
//! HTTP/1.1 client over a tokio socket (TLS by tokio-rustls with the configured CA file).
//!
//! An instant query's answer carries its evaluation time, not the sample's: Prometheus answers
//! with the last sample it holds within its lookback (5 min), so after an outage it serves a
//! value from before it as if read now. [`query_dated`] dates a sample by the sample, through
//! `timestamp()`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::Refusal;
use crate::sources::PrometheusServer;

/// Largest answer read for a unit's own query (meant to answer one sample).
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Largest answer read for a shared query (one series per unit: ~150 bytes each, 100 000 units).
pub(crate) const MAX_SHARED_ANSWER_BYTES: usize = 64 << 20;

/// What a query answered: the exact body and the samples in it.
pub(crate) struct Answer {
    /// The body, byte for byte (part of the `source_digest`).
    pub(crate) body: Bytes,
    /// Each series' labels and sample (evaluation time in seconds, value text).
    pub(crate) samples: Vec<Sample>,
    /// The answer was a scalar (no series, so no sample time to read).
    pub(crate) scalar: bool,
    /// [`query_dated`]: the body of the `timestamp()` answer the samples were dated by.
    pub(crate) dated_by: Option<Bytes>,
}

impl Answer {
    /// The exact answers read, for the `source_digest`: the value's, then the dating one's.
    pub(crate) fn read_bytes(&self) -> Vec<u8> {
        let mut bytes = self.body.to_vec();
        if let Some(dated) = &self.dated_by {
            bytes.push(b'\n');
            bytes.extend_from_slice(dated);
        }
        bytes
    }
}

/// One series' sample.
pub(crate) struct Sample {
    /// The series' labels.
    pub(crate) labels: serde_json::Map<String, Value>,
    /// The sample's timestamp, in milliseconds since the epoch.
    pub(crate) at_ms: i64,
    /// The value as Prometheus wrote it (`"42"`, `"NaN"`, `"+Inf"`).
    pub(crate) value: String,
    /// The series as answered (`{"metric": …, "value": …}`), for a shared query's digest.
    pub(crate) raw: Value,
}

/// Runs `query` on `server` and reads every sample of its answer.
///
/// # Errors
/// A [`Refusal`] with cause `timeout`, `query_error` (connection, TLS, HTTP status, an
/// answer with `status` other than `success`) or `bad_answer` (not the API's JSON).
pub(crate) async fn query(server: &PrometheusServer, query: &str) -> Result<Answer, Refusal> {
    query_limited(server, query, MAX_ANSWER_BYTES).await
}

/// [`query`], reading an answer of up to `max_bytes`.
///
/// # Errors
/// As [`query`].
pub(crate) async fn query_limited(server: &PrometheusServer, query: &str, max_bytes: usize) -> Result<Answer, Refusal> {
    let timeout = Duration::from_millis(server.timeout_ms);
    match tokio::time::timeout(timeout, fetch(server, query, max_bytes)).await {
        Ok(result) => result,
        Err(_) => Err(Refusal::new("timeout", format!("no answer within {} ms", server.timeout_ms))),
    }
}

/// Runs `query` and dates its samples by their own time: `timestamp(QUERY)` is asked first, then
/// QUERY, and every sample's `at_ms` is the oldest time the first answered (a sample scraped in
/// between is dated older than it is, never newer). For a plain selector that is the scraped
/// sample's time; for an expression over several series (`sum(…)`) Prometheus can only answer
/// its evaluation time. A scalar answer has no sample time: it is dated by its evaluation.
///
/// # Errors
/// As [`query`]; `undated` when the vector's sample time cannot be read.
pub(crate) async fn query_dated(server: &PrometheusServer, text: &str) -> Result<Answer, Refusal> {
    let dated = query(server, &format!("timestamp({text})")).await;
    let mut answer = query(server, text).await?;
    let dated = match dated {
        Ok(dated) => dated,
        Err(_) if answer.scalar => return Ok(answer),
        Err(error) => {
            return Err(Refusal::new("undated", format!("timestamp() of the query failed: {}", error.message)));
        }
    };
    let oldest = dated
        .samples
        .iter()
        .map(|sample| sample.value.parse::<f64>().ok().filter(|seconds| seconds.is_finite()))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| Refusal::new("undated", "timestamp() answered something other than times"))?
        .into_iter()
        // INVARIANT: finite seconds since the epoch; the millisecond value is far inside i64.
        .map(|seconds| {
            #[expect(clippy::cast_possible_truncation, reason = "finite, milliseconds since the epoch")]
            let at_ms = (seconds * 1000.0).floor() as i64;
            at_ms
        })
        .min();
    match oldest {
        Some(at_ms) => {
            for sample in &mut answer.samples {
                sample.at_ms = sample.at_ms.min(at_ms);
            }
        }
        // A series that appeared between the two queries has no time of its own: not dated.
        None if !answer.samples.is_empty() => {
            return Err(Refusal::new("undated", "timestamp() of the query answered no series"));
        }
        None => {}
    }
    answer.dated_by = Some(dated.body);
    Ok(answer)
}

async fn fetch(server: &PrometheusServer, query: &str, max_bytes: usize) -> Result<Answer, Refusal> {
    let failed = |message: String| Refusal::new("query_error", message);
    let base: Uri = server.url.parse().map_err(|_| failed("the server URL is not a URL".to_owned()))?;
    let host = base.host().ok_or_else(|| failed("the server URL has no host".to_owned()))?.to_owned();
    let https = base.scheme_str() == Some("https");
    let port = base.port_u16().unwrap_or(if https { 443 } else { 80 });
    let prefix = base.path().trim_end_matches('/');
    let path = format!("{prefix}/api/v1/query?query={}", encode(query));
    let mut request = Request::get(path)
        .header(hyper::header::HOST, base.authority().map_or(host.as_str(), |authority| authority.as_str()))
        .header(hyper::header::ACCEPT, "application/json");
    if let Some(file) = &server.bearer_token_file {
        // A few bytes from a mounted secret: read in place.
        let token = std::fs::read_to_string(file)
            .map_err(|error| failed(format!("cannot read the bearer token file {}: {error}", file.display())))?;
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {}", token.trim()));
    }
    let request = request.body(Empty::<Bytes>::new()).map_err(|error| failed(format!("bad request: {error}")))?;
    let stream = tokio::net::TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port))
        .await
        .map_err(|error| failed(format!("cannot connect: {error}")))?;
    let response = if https {
        let config = client_config(server)?;
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned())
            .map_err(|error| failed(format!("bad server name: {error}")))?;
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, stream)
            .await
            .map_err(|error| failed(format!("TLS: {error}")))?;
        send(TokioIo::new(tls), request).await?
    } else {
        send(TokioIo::new(stream), request).await?
    };
    let status = response.status();
    let body = Limited::new(response.into_body(), max_bytes)
        .collect()
        .await
        .map_err(|error| failed(format!("cannot read the answer: {error}")))?
        .to_bytes();
    let value: Value = serde_json::from_slice(&body)
        .map_err(|error| Refusal::new("bad_answer", format!("HTTP {status}, not JSON: {error}")))?;
    if !status.is_success() || value.get("status").and_then(Value::as_str) != Some("success") {
        let reason = value.get("error").and_then(Value::as_str).unwrap_or("no error text");
        return Err(failed(format!("HTTP {status}: {reason}")));
    }
    let samples = samples(&value).ok_or_else(|| Refusal::new("bad_answer", "not a vector or scalar answer"))?;
    let scalar = value.pointer("/data/resultType").and_then(Value::as_str) == Some("scalar");
    Ok(Answer { body, samples, scalar, dated_by: None })
}

async fn send<T>(
    io: TokioIo<T>,
    request: Request<Empty<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, Refusal>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| Refusal::new("query_error", format!("HTTP handshake: {error}")))?;
    tokio::spawn(connection);
    sender.send_request(request).await.map_err(|error| Refusal::new("query_error", format!("HTTP: {error}")))
}

fn client_config(server: &PrometheusServer) -> Result<Arc<rustls::ClientConfig>, Refusal> {
    let failed = |message: String| Refusal::new("query_error", message);
    let mut roots = rustls::RootCertStore::empty();
    if let Some(file) = &server.ca_file {
        let certificates = CertificateDer::pem_file_iter(file)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| failed(format!("cannot read the CA file {}: {error}", file.display())))?;
        for certificate in certificates {
            roots.add(certificate).map_err(|error| failed(format!("the CA file is refused: {error}")))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|error| failed(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The samples of a `vector` or `scalar` answer.
fn samples(value: &Value) -> Option<Vec<Sample>> {
    let data = value.get("data")?;
    let pair = |pair: &Value| -> Option<(i64, String)> {
        let [at, value] = pair.as_array()?.as_slice() else { return None };
        #[expect(clippy::cast_possible_truncation, reason = "seconds with millisecond precision, bounded by the year")]
        let at_ms = (at.as_f64()? * 1000.0).round() as i64;
        Some((at_ms, value.as_str()?.to_owned()))
    };
    match data.get("resultType")?.as_str()? {
        "vector" => data
            .get("result")?
            .as_array()?
            .iter()
            .map(|series| {
                let (at_ms, value) = pair(series.get("value")?)?;
                let labels = series.get("metric").and_then(Value::as_object).cloned().unwrap_or_default();
                Some(Sample { labels, at_ms, value, raw: series.clone() })
            })
            .collect(),
        "scalar" => {
            let (at_ms, value) = pair(data.get("result")?)?;
            Some(vec![Sample { labels: serde_json::Map::new(), at_ms, value, raw: data.clone() }])
        }
        _ => None,
    }
}

/// Percent-encodes a query parameter (everything but RFC 3986's unreserved characters).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The alert query of a safety source: the firing alerts among `names`.
pub(crate) fn alerts_query(names: &[&str]) -> String {
    format!("ALERTS{{alertstate=\"firing\",alertname=~\"{}\"}}", names.join("|"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn queries_are_percent_encoded() {
        assert_eq!(super::encode("sum(x{a=\"b c\"})"), "sum%28x%7Ba%3D%22b%20c%22%7D%29");
    }
}
