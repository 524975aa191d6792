//! The Envoy gate without Envoy: the `Check` Envoy's `ext_authz` filter sends for a scale call,
//! sent by a real gRPC client (envoy-types' `Authorization` client over tonic) to `scale-units
//! serve --envoy-listen`. The gate's admitted changes are what the state stores keep (a review
//! records nothing since issue 37), so the tests of those stores admit through it.
//!
//! The call is the routes' `kubernetes` preset: `PUT
//! /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale` with an `autoscaling/v1` `Scale`, as
//! `kubectl scale` sends it through a proxy; the unit is `{ns}/{name}`.
#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test code: a failed expectation is a test failure"
)]

use std::collections::HashMap;
use std::net::SocketAddr;

use envoy_types::pb::envoy::service::auth::v3::attribute_context::{HttpRequest, Request};
use envoy_types::pb::envoy::service::auth::v3::authorization_client::AuthorizationClient;
use envoy_types::pb::envoy::service::auth::v3::check_response::HttpResponse;
use envoy_types::pb::envoy::service::auth::v3::{AttributeContext, CheckRequest};
use serde_json::{Value, json};

/// What the gate answered one scale call.
#[derive(Clone, Debug)]
pub enum Checked {
    /// Let through, with the headers the gate adds upstream (`x-scale-units-decision`, …).
    Allowed(HashMap<String, String>),
    /// Refused: 403 with the gate's JSON body (`reason`, `message`, `decision_id`, `reasons`, …).
    Denied(Value),
}

impl Checked {
    /// The headers of an allowed call; panics on a denial, with its body.
    pub fn allowed(&self) -> &HashMap<String, String> {
        match self {
            Self::Allowed(headers) => headers,
            Self::Denied(body) => panic!("denied: {body}"),
        }
    }

    /// The body of a denial; panics on an allowed call.
    pub fn denied(&self) -> &Value {
        match self {
            Self::Denied(body) => body,
            Self::Allowed(headers) => panic!("allowed: {headers:?}"),
        }
    }
}

/// The `CheckRequest` of `PUT …/deployments/{name}/scale` to `replicas`, Envoy's request id `id`.
pub fn scale_request(id: &str, unit: &str, replicas: u64) -> CheckRequest {
    workload_scale_request(id, "deployments", unit, replicas)
}

/// The `CheckRequest` of `PUT …/{resource}/{name}/scale` (`deployments`, `statefulsets`) to
/// `replicas`, Envoy's request id `id`.
pub fn workload_scale_request(id: &str, resource: &str, unit: &str, replicas: u64) -> CheckRequest {
    let (namespace, name) = unit.split_once('/').expect("unit is namespace/name");
    let body = json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas}
    });
    let http = HttpRequest {
        id: id.to_owned(),
        method: "PUT".to_owned(),
        path: format!("/apis/apps/v1/namespaces/{namespace}/{resource}/{name}/scale"),
        host: "kubernetes.default.svc".to_owned(),
        headers: HashMap::from([("content-type".to_owned(), "application/json".to_owned())]),
        raw_body: body.to_string().into_bytes(),
        ..HttpRequest::default()
    };
    CheckRequest {
        attributes: Some(AttributeContext {
            request: Some(Request { http: Some(http), ..Request::default() }),
            ..AttributeContext::default()
        }),
    }
}

/// Sends `request` to the authorizer at `envoy` (plaintext gRPC): the gate's answer. A gRPC
/// error (no answer at all) panics.
pub async fn check(envoy: SocketAddr, request: CheckRequest) -> Checked {
    let mut client = AuthorizationClient::connect(format!("http://{envoy}")).await.unwrap();
    let response = client.check(request).await.unwrap().into_inner();
    let code = response.status.as_ref().map_or(-1, |status| status.code);
    match response.http_response {
        Some(HttpResponse::OkResponse(ok)) => {
            assert_eq!(code, 0, "an OK response with status {code}");
            let headers = ok
                .headers
                .into_iter()
                .filter_map(|option| option.header)
                .map(|header| (header.key, header.value))
                .collect();
            Checked::Allowed(headers)
        }
        Some(HttpResponse::DeniedResponse(denied)) => {
            // google.rpc.Code PERMISSION_DENIED, HTTP 403.
            assert_eq!(code, 7, "a denied response with status {code}");
            assert_eq!(denied.status.map(|status| status.code), Some(403));
            Checked::Denied(
                serde_json::from_str(&denied.body).unwrap_or_else(|error| panic!("{error}: {}", denied.body)),
            )
        }
        other => panic!("neither OK nor denied: {other:?} (status {code})"),
    }
}

/// [`check`] of [`scale_request`].
pub async fn scale(envoy: SocketAddr, id: &str, unit: &str, replicas: u64) -> Checked {
    check(envoy, scale_request(id, unit, replicas)).await
}

/// [`scale`] from a test that runs no tokio runtime of its own.
pub fn scale_blocking(envoy: SocketAddr, id: &str, unit: &str, replicas: u64) -> Checked {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(scale(envoy, id, unit, replicas))
}

/// Whether a denial's decision `reasons` name `reason` (`cooldown`, …).
pub fn names_reason(body: &Value, reason: &str) -> bool {
    body["reasons"].as_array().is_some_and(|reasons| reasons.iter().any(|named| named == reason))
}
