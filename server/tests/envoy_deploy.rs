//! deploy/envoy/: the files parse as what they are, and every one keeps the gate fail closed with
//! the body sent. The bootstrap (envoy.yaml) is also run by the real Envoy in cli/tests/envoy.rs;
//! the Istio and Envoy Gateway files are only parsed here: neither was run (no Istio, no Envoy
//! Gateway on the machines this project tests on).
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::path::PathBuf;

use scale_units_server::envoy::{Decoder, load_routes};
use serde_json::Value;

fn file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/envoy").join(name)
}

fn documents(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(file(name)).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|error| panic!("{name}: {error}"))
}

#[test]
fn the_bootstrap_fails_closed_sends_the_body_and_asks_scale_units_over_http2() {
    let [bootstrap] = documents("envoy.yaml").try_into().unwrap();
    let listener = &bootstrap["static_resources"]["listeners"][0];
    let manager = &listener["filter_chains"][0]["filters"][0]["typed_config"];
    let filters = manager["http_filters"].as_array().unwrap();
    assert_eq!(filters[0]["name"], "envoy.filters.http.ext_authz", "the check runs first");
    assert_eq!(filters.last().unwrap()["name"], "envoy.filters.http.router");
    let authz = &filters[0]["typed_config"];
    assert_eq!(authz["failure_mode_allow"], false);
    assert_eq!(authz["status_on_error"]["code"], "ServiceUnavailable");
    assert_eq!(authz["with_request_body"]["allow_partial_message"], true, "a large body is marked partial");
    assert_eq!(authz["with_request_body"]["pack_as_bytes"], true);
    assert_eq!(authz["grpc_service"]["timeout"], "0.5s");
    let cluster = authz["grpc_service"]["envoy_grpc"]["cluster_name"].as_str().unwrap();
    let clusters = bootstrap["static_resources"]["clusters"].as_array().unwrap();
    let scale_units = clusters.iter().find(|c| c["name"] == cluster).unwrap();
    let options =
        &scale_units["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
    assert!(options["explicit_http_config"]["http2_protocol_options"].is_object(), "gRPC needs HTTP/2");
}

#[test]
fn the_istio_provider_fails_closed_and_sends_the_body() {
    let documents = documents("istio-custom-provider.yaml");
    assert_eq!(documents.len(), 2);
    let provider = &documents[0]["spec"]["meshConfig"]["extensionProviders"][0];
    let grpc = &provider["envoyExtAuthzGrpc"];
    assert_eq!(grpc["failOpen"], false);
    assert_eq!(grpc["port"], 9191);
    assert_eq!(grpc["includeRequestBodyInCheck"]["allowPartialMessage"], true);
    assert_eq!(grpc["includeRequestBodyInCheck"]["packAsBytes"], true);
    let policy = &documents[1];
    assert_eq!(
        (policy["apiVersion"].as_str(), policy["kind"].as_str()),
        (Some("security.istio.io/v1"), Some("AuthorizationPolicy"))
    );
    assert_eq!(policy["spec"]["action"], "CUSTOM");
    assert_eq!(policy["spec"]["provider"]["name"], provider["name"]);
}

#[test]
fn the_envoy_gateway_policy_fails_closed_and_sends_the_body() {
    let documents = documents("envoy-gateway-security-policy.yaml");
    let policy = &documents[0];
    assert_eq!(
        (policy["apiVersion"].as_str(), policy["kind"].as_str()),
        (Some("gateway.envoyproxy.io/v1alpha1"), Some("SecurityPolicy"))
    );
    let auth = &policy["spec"]["extAuth"];
    assert_eq!(auth["failOpen"], false);
    assert!(auth["bodyToExtAuth"]["maxRequestBytes"].as_u64().is_some());
    let backend = &auth["grpc"]["backendRefs"][0];
    assert_eq!(backend["port"], 9191);
    let grant = &documents[1];
    assert_eq!(grant["kind"], "ReferenceGrant");
    assert_eq!(grant["spec"]["to"][0]["name"], backend["name"]);
    assert_eq!(grant["metadata"]["namespace"], backend["namespace"]);
}

#[test]
fn the_shipped_routes_file_loads() {
    let routes = load_routes(&file("routes.yaml")).unwrap();
    // The Docker CLI's path names the service by its ID; the unit is the body's Name.
    let docker = routes.matching("POST", "/v1.45/services/9xp1ihyk7tkqsffc1dzl04ndf/update").unwrap();
    assert_eq!(docker.decoder, Decoder::Go);
    assert_eq!(docker.resolve(br#"{"Name":"web","Mode":{"Replicated":{"Replicas":5}}}"#).unwrap(), "swarm/web");
    let nomad = routes.matching("POST", "/v1/job/api/scale").unwrap();
    assert_eq!((nomad.unit.as_str(), nomad.decoder), ("nomad/api", Decoder::Go));
    let kubernetes = routes.matching("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web/scale").unwrap();
    assert_eq!((kubernetes.unit.as_str(), kubernetes.decoder), ("shop/web", Decoder::Kubernetes));
    let pool = routes.matching("POST", "/v2/pools/gpu/size").unwrap();
    assert_eq!((pool.replicas.as_str(), pool.decoder), ("/size", Decoder::Strict));
}

#[test]
fn the_quick_start_contract_and_observations_are_what_the_service_reads() {
    let dir = file("quickstart");
    let contract: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("units/swarm.web.yaml")).unwrap()).unwrap();
    scale_units_core::validate_contract_json(&contract.to_string()).unwrap_or_else(|error| panic!("{error}"));
    let observations = std::fs::read_to_string(dir.join("observations.json")).unwrap();
    let observations: Value = serde_json::from_str(&observations).unwrap();
    assert_eq!(observations["current_replicas"], 3, "the replica count is evidence too");
}
