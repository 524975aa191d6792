//! `deploy/kubernetes/`: every manifest parses as its Kubernetes API type (k8s-openapi; KEDA's
//! ScaledObject and cert-manager's resources, which have none, as the fields checked) with no
//! field the type does not know, and the wiring agrees: container ports, Service ports and target
//! ports, the service's own arguments, the webhook's service, port, path, matchConditions and side
//! effects, KEDA's scaler address, the probe paths and the webhook route as the real service serves
//! them, the grace period against the drain, the Issuer chain behind every certificate, the
//! ServiceAccount's RBAC (exactly what the watch needs), the pod's security context, and the
//! contracts of the ConfigMap (the example files, byte for byte, accepted by the component, bounds
//! equal to the ScaledObjects').
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, PodSpec, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use scale_units_host::{Candidate, Policy, PolicyRegistry};
use scale_units_server::service::{Service as DecisionService, ServiceConfig};
use scale_units_server::units::{UnitKey, Units};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use support::{Client, Running};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

/// Every manifest of `deploy/kubernetes/`, by kind: (file, document).
fn manifests() -> BTreeMap<String, Vec<(String, Value)>> {
    let mut by_kind: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml" || extension == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let documents: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        for document in documents {
            let kind = document["kind"].as_str().unwrap_or_else(|| panic!("{}: no kind", file.display())).to_owned();
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            by_kind.entry(kind).or_default().push((name, document));
        }
    }
    by_kind
}

/// The document as its API type; serialized back it must be the same document, so that a
/// misspelt or misplaced field (which the type would silently drop) fails.
fn typed<T: DeserializeOwned + serde::Serialize>(file: &str, document: &Value) -> T {
    let value: T = serde_json::from_value(document.clone()).unwrap_or_else(|error| panic!("{file}: {error}"));
    let back = serde_json::to_value(&value).unwrap();
    assert_eq!(&back, document, "{file}: a field the API type does not know, or a wrong type");
    value
}

/// The one document of `kind`.
fn one<T: DeserializeOwned + serde::Serialize>(manifests: &BTreeMap<String, Vec<(String, Value)>>, kind: &str) -> T {
    let documents = &manifests[kind];
    assert_eq!(documents.len(), 1, "one {kind}");
    typed(&documents[0].0, &documents[0].1)
}

/// The one manifest of `kind` named `name`.
fn named<T: DeserializeOwned + serde::Serialize>(
    manifests: &BTreeMap<String, Vec<(String, Value)>>,
    kind: &str,
    name: &str,
) -> T {
    let found: Vec<_> = manifests[kind].iter().filter(|(_, document)| document["metadata"]["name"] == name).collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    typed(&found[0].0, &found[0].1)
}

/// The contracts' ConfigMap.
const CONTRACTS: &str = "scale-units-contracts";
/// The ConfigMap holding `serve.yaml`, the service's configuration (`serve --config`).
const SERVE_CONFIG: &str = "scale-units-serve";

/// KEDA's ScaledObject: the fields checked (keda.sh/v1alpha1).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScaledObject {
    api_version: String,
    metadata: Metadata,
    spec: ScaledObjectSpec,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    name: String,
    namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScaledObjectSpec {
    scale_target_ref: TargetRef,
    min_replica_count: u64,
    max_replica_count: u64,
    fallback: Option<Value>,
    triggers: Vec<Trigger>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetRef {
    api_version: String,
    kind: String,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Trigger {
    #[serde(rename = "type")]
    kind: String,
    metric_type: String,
    metadata: BTreeMap<String, String>,
    authentication_ref: Option<AuthenticationRef>,
}

#[derive(Debug, Deserialize)]
struct AuthenticationRef {
    name: String,
    kind: Option<String>,
}

/// cert-manager's Certificate: the fields checked.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Certificate {
    metadata: Metadata,
    spec: CertificateSpec,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateSpec {
    secret_name: String,
    #[serde(default)]
    dns_names: Vec<String>,
    issuer_ref: Value,
    #[serde(default)]
    usages: Vec<String>,
    #[serde(default, rename = "isCA")]
    is_ca: bool,
}

/// The cert-manager Certificate named `name`.
fn certificate_named(manifests: &BTreeMap<String, Vec<(String, Value)>>, name: &str) -> Certificate {
    let found: Vec<&Value> = manifests["Certificate"]
        .iter()
        .map(|(_, document)| document)
        .filter(|document| document["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one Certificate {name}");
    serde_json::from_value(found[0].clone()).unwrap()
}

/// The deployment's one container and its pod.
fn container(deployment: &Deployment) -> (&PodSpec, &Container) {
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.containers.len(), 1);
    (pod, &pod.containers[0])
}

/// Where the container reads its configuration (`serve --config FILE`).
const CONFIG_FILE: &str = "/etc/scale-units/config/serve.yaml";

/// The value of `flag` in the service's configuration: the container runs `serve --config
/// CONFIG_FILE`, and the field is the flag's name with `_` for `-` in `serve.yaml` of the
/// ConfigMap mounted there (a list: its first item; a boolean: `true`/`false`).
fn arg(container: &Container, flag: &str) -> Option<&'static str> {
    static FIELDS: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    assert_eq!(container.args.as_deref().unwrap(), ["serve", "--config", CONFIG_FILE], "every option in the file");
    let fields = FIELDS.get_or_init(|| {
        let manifests = manifests();
        let serve: ConfigMap = named(&manifests, "ConfigMap", SERVE_CONFIG);
        let text = &serve.data.as_ref().unwrap()["serve.yaml"];
        let document: Value = serde_saphyr::from_str(text).unwrap();
        document
            .as_object()
            .unwrap()
            .iter()
            .map(|(field, value)| {
                let value = match value {
                    Value::String(text) => text.clone(),
                    Value::Array(items) => items[0].as_str().unwrap().to_owned(),
                    other => other.to_string(),
                };
                (field.clone(), value)
            })
            .collect()
    });
    fields.get(&flag.trim_start_matches("--").replace('-', "_")).map(String::as_str)
}

fn port_of(address: &str) -> i32 {
    address.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// The container port a Service target port names (by name or number).
fn container_port(container: &Container, target: &IntOrString) -> i32 {
    let ports = container.ports.as_ref().unwrap();
    match target {
        IntOrString::Int(number) => ports.iter().find(|port| port.container_port == *number),
        IntOrString::String(name) => ports.iter().find(|port| port.name.as_deref() == Some(name.as_str())),
    }
    .unwrap_or_else(|| panic!("no container port {target:?}"))
    .container_port
}

/// The mount path of the volume that holds `file` (a path in the container).
fn volume_of<'a>(pod: &'a PodSpec, container: &Container, file: &str) -> &'a k8s_openapi::api::core::v1::Volume {
    let mount = container
        .volume_mounts
        .as_ref()
        .unwrap()
        .iter()
        .find(|mount| Path::new(file).starts_with(&mount.mount_path))
        .unwrap_or_else(|| panic!("no volume mounted for {file}"));
    pod.volumes.as_ref().unwrap().iter().find(|volume| volume.name == mount.name).unwrap()
}

#[test]
fn every_manifest_is_its_api_type_and_every_kind_is_checked() {
    let manifests = manifests();
    let kinds: Vec<&str> = manifests.keys().map(String::as_str).collect();
    assert_eq!(
        kinds,
        [
            "Certificate",
            "ClusterIssuer",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterTriggerAuthentication",
            "ConfigMap",
            "CustomResourceDefinition",
            "Deployment",
            "Kustomization",
            "Namespace",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "ScaledObject",
            "Service",
            "ServiceAccount",
            "ValidatingWebhookConfiguration"
        ],
        "a new kind needs its checks here"
    );
    let _: Deployment = one(&manifests, "Deployment");
    let _: Service = one(&manifests, "Service");
    let _: ConfigMap = named(&manifests, "ConfigMap", CONTRACTS);
    let serve: ConfigMap = named(&manifests, "ConfigMap", SERVE_CONFIG);
    assert_eq!(manifests["ConfigMap"].len(), 2, "the contracts and the configuration");
    // The configuration is one `serve` accepts (its own reader: unknown fields refused).
    let text = &serve.data.as_ref().unwrap()["serve.yaml"];
    scale_units_server::config::ServeConfig::from_text(text, true)
        .unwrap_or_else(|error| panic!("serve.yaml: {error}"));
    let _: ValidatingWebhookConfiguration = one(&manifests, "ValidatingWebhookConfiguration");
    let _: Namespace = one(&manifests, "Namespace");
    let _: PodDisruptionBudget = one(&manifests, "PodDisruptionBudget");
    let _: ServiceAccount = one(&manifests, "ServiceAccount");
    let _: ClusterRole = one(&manifests, "ClusterRole");
    let _: ClusterRoleBinding = one(&manifests, "ClusterRoleBinding");
    // The ScaleUnit CRD is generated (scale-units crd) and checked against its types by
    // tests/crd.rs; here: it is the one the service watches.
    let crds = &manifests["CustomResourceDefinition"];
    assert_eq!(crds.len(), 1);
    assert_eq!(crds[0].1["metadata"]["name"], "scaleunits.scale-units.dev");
    for (file, document) in &manifests["NetworkPolicy"] {
        let _: NetworkPolicy = typed(file, document);
    }
    for (file, document) in &manifests["ScaledObject"] {
        let scaled: ScaledObject =
            serde_json::from_value(document.clone()).unwrap_or_else(|error| panic!("{file}: {error}"));
        assert_eq!(scaled.api_version, "keda.sh/v1alpha1", "{file}");
    }
    for (file, document) in manifests["Certificate"].iter().chain(&manifests["ClusterIssuer"]) {
        assert_eq!(document["apiVersion"], "cert-manager.io/v1", "{file}");
    }
}

#[test]
fn ports_arguments_and_volumes_agree() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let service: Service = one(&manifests, "Service");
    let config_map: ConfigMap = named(&manifests, "ConfigMap", CONTRACTS);
    let (pod, container) = container(&deployment);

    // The Service selects the pods.
    let selector = service.spec.as_ref().unwrap().selector.as_ref().unwrap();
    let labels = deployment.spec.template.metadata.as_ref().unwrap().labels.as_ref().unwrap();
    assert!(selector.iter().all(|(key, value)| labels.get(key) == Some(value)), "{selector:?} ⊄ {labels:?}");
    let match_labels = deployment.spec.selector.match_labels.as_ref().unwrap();
    assert!(match_labels.iter().all(|(key, value)| labels.get(key) == Some(value)));

    // Every Service port reaches a container port, and each container port is what the service
    // listens on: HTTPS (--listen, with --webhook and its certificate) and gRPC (--keda-listen).
    let ports = service.spec.as_ref().unwrap().ports.as_ref().unwrap();
    let by_name = |name: &str| ports.iter().find(|port| port.name.as_deref() == Some(name)).unwrap();
    let https = container_port(container, by_name("https").target_port.as_ref().unwrap());
    let grpc = container_port(container, by_name("grpc").target_port.as_ref().unwrap());
    assert_eq!(ports.len(), 2);
    assert_eq!(https, port_of(arg(container, "--listen").unwrap()));
    assert_eq!(grpc, port_of(arg(container, "--keda-listen").unwrap()));
    assert_eq!(by_name("https").port, 443);
    assert_eq!(arg(container, "--webhook"), Some("true"));
    // The file `--config` names is the serve ConfigMap's `serve.yaml`, mounted read-only.
    let config = volume_of(pod, container, CONFIG_FILE);
    assert_eq!(config.config_map.as_ref().unwrap().name, SERVE_CONFIG);
    assert!(arg(container, "--listen").unwrap().starts_with("0.0.0.0:"));
    assert!(arg(container, "--keda-listen").unwrap().starts_with("0.0.0.0:"));

    // The contracts folder is the ConfigMap; the certificate and key a Secret; the token too.
    let units = volume_of(pod, container, arg(container, "--units").unwrap());
    assert_eq!(units.config_map.as_ref().unwrap().name, config_map.metadata.name.clone().unwrap());
    assert_eq!(
        Path::new(arg(container, "--units").unwrap()),
        Path::new(
            &container
                .volume_mounts
                .as_ref()
                .unwrap()
                .iter()
                .find(|mount| mount.name == units.name)
                .unwrap()
                .mount_path
        ),
        "the ConfigMap's keys are the folder's files"
    );
    let cert = volume_of(pod, container, arg(container, "--tls-cert").unwrap());
    let key = volume_of(pod, container, arg(container, "--tls-key").unwrap());
    assert_eq!(cert.name, key.name);
    assert!(cert.secret.is_some());
    // One token per role, each a file of a Secret, each its own file.
    let mut files = Vec::new();
    for flag in ["--token-file", "--push-token-file", "--read-token-file"] {
        let file = arg(container, flag).unwrap_or_else(|| panic!("{flag}"));
        assert!(volume_of(pod, container, file).secret.is_some(), "{flag}: a listener outside loopback needs a token");
        files.push(file);
    }
    files.sort_unstable();
    files.dedup();
    assert_eq!(files.len(), 3, "one file per role");
    // Idle sockets: a first-bytes deadline shorter than the head deadline, a cap per address under
    // the connection cap, and room kept for client certificates.
    let number = |flag: &str| arg(container, flag).unwrap_or_else(|| panic!("{flag}")).parse::<u64>().unwrap();
    assert!(number("--handshake-timeout-ms") < number("--header-timeout-ms"));
    assert!(number("--max-connections-per-peer") < number("--max-connections"));
    assert!(number("--reserved-connections") >= 1);
    // A read-only root: the compiled-component cache is a volume.
    let cache = container.env.as_ref().unwrap().iter().find(|env| env.name == "SCALE_UNITS_CACHE_DIR").unwrap();
    assert!(volume_of(pod, container, cache.value.as_deref().unwrap()).empty_dir.is_some());
    assert_eq!(container.security_context.as_ref().unwrap().read_only_root_filesystem, Some(true));
    // The API server is the record: the service watches it (ScaleUnits are units, each cooldown's
    // start is in its ScaleUnit's status), so one replica keeps nothing on a volume, and a review
    // carries no authority (no client CA to authenticate the API server).
    assert_eq!(arg(container, "--kubernetes"), Some("true"));
    assert_eq!(arg(container, "--state-dir"), None, "the cooldowns live in the ScaleUnits' status");
    assert_eq!(arg(container, "--webhook-client-ca"), None, "a review carries no authority");
    assert_eq!(arg(container, "--kubeconfig"), None, "in a pod: the ServiceAccount's credentials");
    assert!(pod.volumes.as_ref().unwrap().iter().all(|volume| volume.persistent_volume_claim.is_none()));
    assert_eq!(deployment.spec.replicas, Some(1), "in memory: one replica; more need `redis`");
    assert_eq!(arg(container, "--redis"), None);
    // Nothing is held by one pod: the new pod is ready before the old one stops.
    let strategy = deployment.spec.strategy.as_ref().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.as_ref().unwrap();
    assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)), "the webhook keeps an endpoint");
    assert_eq!(rolling.max_surge, Some(IntOrString::Int(1)));
    // The watch's credentials: the shipped ServiceAccount's token, mounted.
    let account: ServiceAccount = one(&manifests, "ServiceAccount");
    assert_eq!(pod.service_account_name, account.metadata.name);
    assert_eq!(account.metadata.namespace, deployment.metadata.namespace);
    assert_eq!(pod.automount_service_account_token, Some(true));
    // The readiness probe tolerates a slow answer: one failure never removes the only endpoint.
    let ready = container.readiness_probe.as_ref().unwrap();
    assert!(ready.failure_threshold.unwrap() >= 3, "{ready:?}");
    assert!(ready.period_seconds.unwrap() >= 3, "{ready:?}");
}

/// The ServiceAccount's ClusterRole is exactly what the watch needs: read the scale targets and
/// the ScaleUnits, write the ScaleUnits' status, and record Events; bound to the ServiceAccount
/// and nothing else.
#[test]
fn the_service_account_may_do_exactly_what_the_watch_needs() {
    let manifests = manifests();
    let account: ServiceAccount = one(&manifests, "ServiceAccount");
    let role: ClusterRole = one(&manifests, "ClusterRole");
    let binding: ClusterRoleBinding = one(&manifests, "ClusterRoleBinding");
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|group| (*group).to_owned()).collect()),
        resources: Some(resources.iter().map(|resource| (*resource).to_owned()).collect()),
        verbs: verbs.iter().map(|verb| (*verb).to_owned()).collect(),
        ..PolicyRule::default()
    };
    assert_eq!(
        role.rules.as_deref().unwrap(),
        [
            rule(&["apps"], &["deployments", "statefulsets"], &["get", "list", "watch"]),
            rule(&["scale-units.dev"], &["scaleunits"], &["get", "list", "watch"]),
            rule(&["scale-units.dev"], &["scaleunits/status"], &["get", "patch", "update"]),
            rule(&["events.k8s.io"], &["events"], &["create", "patch"]),
        ]
    );
    assert!(role.aggregation_rule.is_none());
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    assert_eq!(Some(&binding.role_ref.name), role.metadata.name.as_ref());
    let subjects = binding.subjects.as_deref().unwrap();
    assert_eq!(subjects.len(), 1, "the ServiceAccount only");
    assert_eq!(subjects[0].kind, "ServiceAccount");
    assert_eq!(Some(&subjects[0].name), account.metadata.name.as_ref());
    assert_eq!(subjects[0].namespace, account.metadata.namespace);
    // The CRD's group and plural are the ones the rules name.
    let crd = &manifests["CustomResourceDefinition"][0].1;
    assert_eq!(crd["spec"]["group"], "scale-units.dev");
    assert_eq!(crd["spec"]["names"]["plural"], "scaleunits");
    assert_eq!(crd["spec"]["versions"][0]["subresources"]["status"], serde_json::json!({}));
}

#[test]
fn the_grace_period_covers_the_pre_stop_the_shutdown_delay_and_the_drain() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let (pod, container) = container(&deployment);
    let defaults = ServiceConfig::default();
    let millis = |flag: &str, default: Duration| {
        arg(container, flag).map_or(default, |value| Duration::from_millis(value.parse().unwrap()))
    };
    let delay = millis("--shutdown-delay-ms", defaults.shutdown_delay);
    let drain = millis("--drain-timeout-ms", defaults.drain_timeout);
    let pre_stop = container.lifecycle.as_ref().unwrap().pre_stop.as_ref().unwrap();
    let sleep = Duration::from_secs(pre_stop.sleep.as_ref().unwrap().seconds.try_into().unwrap());
    let grace = Duration::from_secs(pod.termination_grace_period_seconds.unwrap().try_into().unwrap());
    assert!(grace >= sleep + delay + drain, "{grace:?} < {sleep:?} + {delay:?} + {drain:?}");
    assert!(delay >= defaults.shutdown_delay && drain >= defaults.drain_timeout, "no shorter than the defaults");
}

#[test]
fn the_webhook_calls_the_service_on_its_route_and_fails_closed() {
    let manifests = manifests();
    let webhook: ValidatingWebhookConfiguration = one(&manifests, "ValidatingWebhookConfiguration");
    let service: Service = one(&manifests, "Service");
    let certificate = certificate_named(&manifests, "scale-units-webhook");
    let deployment: Deployment = one(&manifests, "Deployment");
    let (pod, container) = container(&deployment);

    let hooks = webhook.webhooks.as_ref().unwrap();
    assert_eq!(hooks.len(), 1);
    let hook = &hooks[0];
    assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    assert!((1..=5).contains(&hook.timeout_seconds.unwrap()), "a short timeout");
    // A review is a question: the service records nothing from it (the watch is the record).
    assert_eq!(hook.side_effects, "None");
    // Only replica changes are sent: one CEL condition comparing the new spec.replicas with the
    // old, absent read as the API's default (1 for the workloads, 0 for a Scale, which omits a
    // zero). The API server evaluates it (tests/kubernetes: `kubectl set image` passes with the
    // service down); here, its shape.
    let conditions = hook.match_conditions.as_deref().unwrap();
    assert_eq!(conditions.len(), 1);
    let expression: String = conditions[0].expression.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        expression,
        "(has(object.spec) && has(object.spec.replicas) ? object.spec.replicas : (request.subResource == 'scale' ? 0 : 1)) \
         != (has(oldObject.spec) && has(oldObject.spec.replicas) ? oldObject.spec.replicas : (request.subResource == 'scale' ? 0 : 1))"
    );
    assert_eq!(hook.admission_review_versions, ["v1"]);
    let target = hook.client_config.service.as_ref().unwrap();
    assert_eq!(Some(&target.name), service.metadata.name.as_ref());
    assert_eq!(target.path.as_deref(), Some("/v1/admission"));
    let https = service
        .spec
        .as_ref()
        .unwrap()
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .find(|port| port.name.as_deref() == Some("https"));
    assert_eq!(target.port, Some(https.unwrap().port));
    let namespace = &target.namespace;

    // Replica changes of Deployments and StatefulSets, and of their scale subresource.
    let rules = hook.rules.as_ref().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].api_groups.as_deref(), Some(&["apps".to_owned()][..]));
    assert_eq!(rules[0].operations.as_deref(), Some(&["UPDATE".to_owned()][..]));
    let mut resources = rules[0].resources.clone().unwrap();
    resources.sort();
    assert_eq!(resources, ["deployments", "deployments/scale", "statefulsets", "statefulsets/scale"]);
    // Never the service's own namespace: with failurePolicy Fail, the webhook could otherwise
    // refuse its own rollout.
    let excluded = hook.namespace_selector.as_ref().unwrap().match_expressions.as_ref().unwrap();
    assert!(excluded.iter().any(|expression| expression.key == "kubernetes.io/metadata.name"
        && expression.operator == "NotIn"
        && expression.values.as_ref().unwrap().contains(namespace)));

    // The serving certificate: named for the Service, in the Secret the pod mounts, its CA
    // injected into this configuration.
    assert!(certificate.spec.dns_names.contains(&format!("{}.{namespace}.svc", target.name)));
    let tls = volume_of(pod, container, arg(container, "--tls-cert").unwrap());
    assert_eq!(tls.secret.as_ref().unwrap().secret_name.as_deref(), Some(certificate.spec.secret_name.as_str()));
    assert_eq!(certificate.metadata.namespace.as_deref(), Some(namespace.as_str()));
    assert_eq!(certificate.spec.usages, ["server auth"]);
    // The Issuer chain: the serving certificate is signed by a CA issuer, the caBundle is injected
    // from that CA's own Certificate (so a renewal of the serving certificate, with its new key,
    // leaves the API server's trust as it is), and the CA is made by a self-signed issuer and
    // keeps its key when renewed (what it signed stays valid).
    let (issuer, authority) = issuer_chain(&manifests, &certificate);
    let metadata = webhook.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        metadata["cert-manager.io/inject-ca-from"],
        format!("{}/{}", authority.metadata.namespace.as_deref().unwrap(), authority.metadata.name)
    );
    assert_ne!(authority.metadata.name, certificate.metadata.name, "the CA, not the serving certificate");
    assert_eq!(issuer["kind"], "ClusterIssuer");
}

/// The issuer of `certificate` (a CA ClusterIssuer) and the CA Certificate behind it, checked to
/// be a CA made by a self-signed ClusterIssuer, keeping its key across renewals, in the namespace
/// where a ClusterIssuer reads its Secret (cert-manager's).
fn issuer_chain<'a>(
    manifests: &'a BTreeMap<String, Vec<(String, Value)>>,
    certificate: &Certificate,
) -> (&'a Value, Certificate) {
    assert_eq!(certificate.spec.issuer_ref["kind"], "ClusterIssuer");
    let issuer_name = certificate.spec.issuer_ref["name"].as_str().unwrap();
    let (_, issuer) = manifests["ClusterIssuer"]
        .iter()
        .find(|(_, issuer)| issuer["metadata"]["name"] == issuer_name)
        .unwrap_or_else(|| panic!("no ClusterIssuer {issuer_name}"));
    let ca_secret = issuer["spec"]["ca"]["secretName"].as_str().expect("a CA issuer");
    let (_, document) = manifests["Certificate"]
        .iter()
        .find(|(_, document)| document["spec"]["secretName"] == ca_secret)
        .unwrap_or_else(|| panic!("no Certificate makes the Secret {ca_secret}"));
    let authority: Certificate = serde_json::from_value(document.clone()).unwrap();
    assert!(authority.spec.is_ca);
    assert_eq!(authority.metadata.namespace.as_deref(), Some("cert-manager"), "where a ClusterIssuer reads");
    assert_eq!(document["spec"]["privateKey"]["rotationPolicy"], "Never", "a renewed CA keeps its key");
    assert_eq!(authority.spec.issuer_ref["kind"], "ClusterIssuer");
    let (_, root) = manifests["ClusterIssuer"]
        .iter()
        .find(|(_, root)| root["metadata"]["name"] == authority.spec.issuer_ref["name"])
        .unwrap();
    assert_eq!(root["spec"], serde_json::json!({"selfSigned": {}}));
    (issuer, authority)
}

#[test]
fn every_scaled_object_asks_the_service_about_a_unit_of_the_config_map() {
    let manifests = manifests();
    let service: Service = one(&manifests, "Service");
    let config_map: ConfigMap = named(&manifests, "ConfigMap", CONTRACTS);
    let webhook: ValidatingWebhookConfiguration = one(&manifests, "ValidatingWebhookConfiguration");
    let namespace = &webhook.webhooks.as_ref().unwrap()[0].client_config.service.as_ref().unwrap().namespace;
    let grpc =
        service.spec.as_ref().unwrap().ports.as_ref().unwrap().iter().find(|port| port.name.as_deref() == Some("grpc"));
    let address = format!("{}.{namespace}.svc:{}", service.metadata.name.as_ref().unwrap(), grpc.unwrap().port);
    let contracts: std::collections::BTreeMap<String, String> =
        config_map.data.clone().unwrap().into_iter().filter(|(key, _)| !key.contains(".sources.")).collect();

    let scaled_objects = &manifests["ScaledObject"];
    assert_eq!(scaled_objects.len(), contracts.len(), "one ScaledObject per unit");
    for (file, document) in scaled_objects {
        let scaled: ScaledObject = serde_json::from_value(document.clone()).unwrap();
        assert_eq!(scaled.spec.scale_target_ref.api_version, "apps/v1", "{file}");
        assert_eq!(scaled.spec.scale_target_ref.kind, "Deployment", "{file}");
        // A fallback would replace the current count by a fixed one when the scaler fails.
        assert!(scaled.spec.fallback.is_none(), "{file}: no fallback");
        assert_eq!(scaled.spec.triggers.len(), 1, "{file}");
        let trigger = &scaled.spec.triggers[0];
        assert_eq!(trigger.kind, "external", "{file}");
        assert_eq!(trigger.metric_type, "AverageValue", "{file}: the HPA divides the metric by the target of 1");
        assert_eq!(trigger.metadata["scalerAddress"], address, "{file}");
        // The unit the scaler reads: the ScaledObject's namespace and the `unit` metadata.
        let unit_namespace = scaled.metadata.namespace.as_deref().unwrap();
        let unit_name = trigger.metadata.get("unit").unwrap_or(&scaled.metadata.name);
        assert_eq!(unit_name, &scaled.spec.scale_target_ref.name, "{file}: the unit is the workload it scales");
        let key = format!("{unit_namespace}.{unit_name}.json");
        let contract: Value =
            serde_json::from_str(contracts.get(&key).unwrap_or_else(|| panic!("{file}: no contract {key}"))).unwrap();
        assert_eq!(contract["unit_ref"], format!("unit:{unit_namespace}/{unit_name}"), "{file}");
        // KEDA's bounds are the contract's.
        assert_eq!(scaled.spec.min_replica_count, contract["policy"]["min_replicas"].as_u64().unwrap(), "{file}");
        assert_eq!(scaled.spec.max_replica_count, contract["policy"]["max_replicas"].as_u64().unwrap(), "{file}");
        let to_zero = contract["policy"]["allow_scale_to_zero"].as_bool().unwrap_or(false);
        assert_eq!(scaled.spec.min_replica_count == 0, to_zero, "{file}: zero only where the contract allows it");
    }
}

#[test]
fn the_config_map_holds_the_example_contracts_and_the_component_accepts_them() {
    let manifests = manifests();
    let config_map: ConfigMap = named(&manifests, "ConfigMap", CONTRACTS);
    let data = config_map.data.as_ref().unwrap();
    let contracts: std::collections::BTreeMap<&String, &String> =
        data.iter().filter(|(key, _)| !key.contains(".sources.")).collect();
    let examples = [("zentinelle.gateway.json", "api-gateway"), ("media.transcode.json", "media-pool")];
    assert_eq!(contracts.len(), examples.len());
    for (key, example) in examples {
        assert_eq!(data[key], common::example(&format!("{example}/contract.json")), "{key}: byte for byte");
        UnitKey::from_file_name(key).unwrap();
    }

    // Mounted as a folder, the unit registry loads both through the component.
    let dir = std::env::temp_dir().join(format!("scale-units-manifests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (key, text) in data {
        std::fs::write(dir.join(key), text).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let units =
        runtime.block_on(async { Units::builder(Arc::new(registry())).contracts_dir(&dir).build().await.unwrap() });
    let mut keys: Vec<String> = units.keys().iter().map(ToString::to_string).collect();
    keys.sort();
    assert_eq!(keys, ["media/transcode", "zentinelle/gateway"]);
    // Each unit's sources file (issue 15) is valid and loaded beside its contract.
    let mut sourced: Vec<String> = units.source_keys().iter().map(ToString::to_string).collect();
    sourced.sort();
    assert_eq!(sourced, keys, "every unit has its sources");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_probe_paths_and_the_webhook_path_are_served() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let webhook: ValidatingWebhookConfiguration = one(&manifests, "ValidatingWebhookConfiguration");
    let (_, container) = container(&deployment);
    let probe = |probe: Option<&k8s_openapi::api::core::v1::Probe>| {
        let get = probe.unwrap().http_get.clone().unwrap();
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"), "the listener is HTTPS with --webhook");
        assert_eq!(get.port, IntOrString::String("https".to_owned()));
        get.path.unwrap()
    };
    let ready = probe(container.readiness_probe.as_ref());
    let live = probe(container.liveness_probe.as_ref());
    let startup = probe(container.startup_probe.as_ref());
    assert_eq!((ready.as_str(), live.as_str()), ("/ready", "/health"));

    // The real service (HTTP here; the same router is served over HTTPS) answers them.
    let registry = Arc::new(registry());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let units = runtime.block_on(async { Units::builder(Arc::clone(&registry)).build().await.unwrap() });
    let config = ServiceConfig { units: Some(units), shutdown_delay: Duration::ZERO, ..ServiceConfig::default() };
    let running = Running::start(DecisionService::new(registry, config), 1);
    let mut client = Client::new(running.address);
    for path in [&ready, &live, &startup] {
        let reply = client.get(path).unwrap();
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    }
    let path = webhook.webhooks.as_ref().unwrap()[0].client_config.service.as_ref().unwrap().path.clone().unwrap();
    let reply = client.post(&path, &[("content-type", "application/json")], b"{}").unwrap();
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    assert_eq!(reply.json()["kind"], "AdmissionReview", "{path} answers a review: {}", reply.body);
    assert_eq!(client.get("/no-such-route").unwrap().status, 404, "an unknown path would not pass");
    running.stop();
}

/// A registry with the built component active.
fn registry() -> PolicyRegistry {
    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    let digest = registry.stage(Candidate::new(common::component_bytes())).unwrap().digest;
    registry.activate(&digest).unwrap();
    registry
}

#[test]
fn the_pod_passes_the_restricted_pod_security_standard() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let (pod, container) = container(&deployment);
    let pod_context = pod.security_context.as_ref().unwrap();
    let context = container.security_context.as_ref().unwrap();
    // runAsNonRoot (pod or container), a non-zero user, RuntimeDefault seccomp, no escalation,
    // every capability dropped, not privileged, and a read-only root.
    assert!(pod_context.run_as_non_root == Some(true) || context.run_as_non_root == Some(true));
    assert!(pod_context.run_as_user.unwrap_or(0) > 0 && context.run_as_user.unwrap_or(1) > 0);
    // Volumes belong to the process's group, whoever the plugin made their owner.
    assert_eq!(pod_context.fs_group, pod_context.run_as_group);
    assert!(pod_context.fs_group.unwrap_or(0) > 0);
    for seccomp in [pod_context.seccomp_profile.as_ref(), context.seccomp_profile.as_ref()].into_iter().flatten() {
        assert_eq!(seccomp.type_, "RuntimeDefault");
    }
    assert!(pod_context.seccomp_profile.is_some() || context.seccomp_profile.is_some());
    assert_eq!(context.allow_privilege_escalation, Some(false));
    assert_ne!(context.privileged, Some(true));
    assert_eq!(context.read_only_root_filesystem, Some(true));
    let capabilities = context.capabilities.as_ref().unwrap();
    assert_eq!(capabilities.drop.as_deref(), Some(&["ALL".to_owned()][..]));
    assert!(capabilities.add.as_ref().is_none_or(Vec::is_empty), "restricted adds nothing but NET_BIND_SERVICE");
    // No host namespaces, host ports or host paths; only the volume types `restricted` allows.
    assert_ne!(pod.host_network, Some(true));
    assert_ne!(pod.host_pid, Some(true));
    assert_ne!(pod.host_ipc, Some(true));
    assert!(container.ports.as_ref().unwrap().iter().all(|port| port.host_port.is_none()));
    for volume in pod.volumes.as_ref().unwrap() {
        let allowed = volume.config_map.is_some()
            || volume.secret.is_some()
            || volume.empty_dir.is_some()
            || volume.projected.is_some()
            || volume.persistent_volume_claim.is_some()
            || volume.downward_api.is_some();
        assert!(allowed && volume.host_path.is_none(), "{}: a volume type restricted allows", volume.name);
    }
    // Resources: requests for CPU and memory, a memory limit.
    let resources = container.resources.as_ref().unwrap();
    let requests = resources.requests.as_ref().unwrap();
    assert!(requests.contains_key("cpu") && requests.contains_key("memory"));
    assert!(resources.limits.as_ref().unwrap().contains_key("memory"));
    // The namespace enforces `restricted`, and it is the one the service lives in.
    let namespace: Namespace = one(&manifests, "Namespace");
    let labels = namespace.metadata.labels.as_ref().unwrap();
    for mode in ["enforce", "warn", "audit"] {
        assert_eq!(labels[&format!("pod-security.kubernetes.io/{mode}")], "restricted", "{mode}");
    }
    assert_eq!(deployment.metadata.namespace, namespace.metadata.name);
}

#[test]
fn a_disruption_budget_and_network_policies_cover_the_pods_and_their_two_ports() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let (_, container) = container(&deployment);
    let labels = deployment.spec.template.metadata.as_ref().unwrap().labels.clone().unwrap();
    let selects = |selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector| {
        let wanted = selector.match_labels.as_ref().unwrap();
        !wanted.is_empty() && wanted.iter().all(|(key, value)| labels.get(key) == Some(value))
    };

    let budget: PodDisruptionBudget = one(&manifests, "PodDisruptionBudget");
    let spec = budget.spec.as_ref().unwrap();
    assert!(selects(spec.selector.as_ref().unwrap()));
    assert_eq!(budget.metadata.namespace, deployment.metadata.namespace);
    // One replica: the budget must let a drain evict it (minAvailable 1 of 1 would block it forever).
    let replicas = deployment.spec.replicas.unwrap();
    match (&spec.max_unavailable, &spec.min_available) {
        (Some(IntOrString::Int(max)), None) => assert!(*max >= 1),
        (None, Some(IntOrString::Int(min))) => assert!(*min < replicas),
        other => panic!("a budget as a count: {other:?}"),
    }

    // Every container port is admitted by a policy selecting the pods, and nothing else.
    let policies: Vec<NetworkPolicy> =
        manifests["NetworkPolicy"].iter().map(|(file, document)| typed(file, document)).collect();
    let mut admitted = Vec::new();
    for policy in &policies {
        let spec = policy.spec.as_ref().unwrap();
        assert!(selects(spec.pod_selector.as_ref().unwrap()), "{:?} selects the pods", policy.metadata.name);
        assert_eq!(spec.policy_types.as_deref(), Some(&["Ingress".to_owned()][..]));
        assert_eq!(policy.metadata.namespace, deployment.metadata.namespace);
        for rule in spec.ingress.as_ref().unwrap() {
            for port in rule.ports.as_ref().unwrap() {
                let port = container_port(container, port.port.as_ref().unwrap());
                admitted.push((port, rule.from.clone()));
            }
        }
    }
    let grpc = port_of(arg(container, "--keda-listen").unwrap());
    let https = port_of(arg(container, "--listen").unwrap());
    let mut ports: Vec<i32> = admitted.iter().map(|(port, _)| *port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports, [https, grpc], "the two listeners");
    // gRPC from KEDA's namespace only.
    let grpc_rules: Vec<_> = admitted.iter().filter(|(port, _)| *port == grpc).collect();
    assert_eq!(grpc_rules.len(), 1);
    let peers = grpc_rules[0].1.as_ref().unwrap();
    assert_eq!(peers.len(), 1);
    let namespaces = peers[0].namespace_selector.as_ref().unwrap().match_labels.as_ref().unwrap();
    assert_eq!(namespaces["kubernetes.io/metadata.name"], "keda");
    // HTTPS from any source, as shipped: where the API server's calls come from is not knowable
    // on a managed cluster, and a wrong guess refuses every replica change the webhook judges
    // (components/control-plane-cidr narrows it; the next test).
    let https_rules: Vec<_> = admitted.iter().filter(|(port, _)| *port == https).collect();
    assert_eq!(https_rules.len(), 1);
    assert!(https_rules[0].1.as_ref().is_none_or(Vec::is_empty), "no `from`: every source");
}

/// The component components/control-plane-cidr narrows the webhook port to the control plane's
/// addresses: its input `CONTROL_PLANE_CIDR` (control-plane.env, a CIDR) is what kustomize writes
/// into the ipBlock of the rules its patch puts in the webhook's policy, beside the pods of
/// opted-in client namespaces.
#[test]
fn the_control_plane_cidr_component_narrows_the_webhook_port() {
    let component_dir = deploy_dir().join("components/control-plane-cidr");
    let component: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(component_dir.join("kustomization.yaml")).unwrap()).unwrap();
    assert_eq!(component["kind"], "Component");
    let generator = &component["configMapGenerator"][0];
    assert_eq!(generator["options"]["annotations"]["config.kubernetes.io/local-config"], "true", "never applied");
    let env = generator["envs"][0].as_str().unwrap();
    let text = std::fs::read_to_string(component_dir.join(env)).unwrap();
    let cidr = text
        .lines()
        .find_map(|line| line.strip_prefix("CONTROL_PLANE_CIDR="))
        .expect("control-plane.env sets CONTROL_PLANE_CIDR")
        .trim();
    let (address, prefix) = cidr.split_once('/').expect("a CIDR");
    assert!(address.parse::<std::net::IpAddr>().is_ok() && prefix.parse::<u8>().is_ok_and(|p| p <= 128), "{cidr}");

    // The patch replaces the webhook policy's rules (the policy exists and is the HTTPS one).
    let manifests = manifests();
    let patch = &component["patches"][0];
    let target = patch["target"]["name"].as_str().unwrap();
    let (file, policy) = manifests["NetworkPolicy"]
        .iter()
        .find(|(_, document)| document["metadata"]["name"] == target)
        .expect("the policy the patch names");
    let operations: Value = serde_saphyr::from_str(patch["patch"].as_str().unwrap()).unwrap();
    assert_eq!(operations.as_array().unwrap().len(), 1);
    assert_eq!(operations[0]["op"], "replace");
    assert_eq!(operations[0]["path"], "/spec/ingress");
    let mut patched = policy.clone();
    patched["spec"]["ingress"] = operations[0]["value"].clone();
    let patched: NetworkPolicy = typed(file, &patched);
    let rules = patched.spec.as_ref().unwrap().ingress.clone().unwrap();
    assert_eq!(rules.len(), 2);
    for rule in &rules {
        let ports = rule.ports.as_ref().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].port, Some(IntOrString::String("https".to_owned())));
        assert_eq!(rule.from.as_ref().unwrap().len(), 1, "one source per rule");
    }
    let block = rules[0].from.as_ref().unwrap()[0].ip_block.as_ref().expect("the control plane's addresses");
    assert!(block.except.is_none());
    let clients = rules[1].from.as_ref().unwrap()[0].namespace_selector.as_ref().unwrap();
    assert_eq!(clients.match_labels.as_ref().unwrap()["scale-units.io/client"], "true");

    // The replacement writes the input into that ipBlock.
    let replacement = &component["replacements"][0];
    assert_eq!(replacement["source"]["name"], generator["name"]);
    assert_eq!(replacement["source"]["fieldPath"], "data.CONTROL_PLANE_CIDR");
    let replaced = &replacement["targets"][0];
    assert_eq!(replaced["select"]["kind"], "NetworkPolicy");
    assert_eq!(replaced["select"]["name"], target);
    assert_eq!(replaced["fieldPaths"][0], "spec.ingress.0.from.0.ipBlock.cidr");
}

#[test]
fn keda_reaches_the_scaler_over_mutual_tls() {
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let (pod, container) = container(&deployment);
    // The server's pair and the client CA come from one Secret: cert-manager's `scale-units-grpc`,
    // whose ca.crt is the CA that also signs KEDA's client certificate.
    let cert = volume_of(pod, container, arg(container, "--keda-tls-cert").unwrap());
    let key = volume_of(pod, container, arg(container, "--keda-tls-key").unwrap());
    let ca = volume_of(pod, container, arg(container, "--keda-client-ca").unwrap());
    assert_eq!((cert.name.as_str(), key.name.as_str()), (ca.name.as_str(), ca.name.as_str()));
    assert!(arg(container, "--keda-client-ca").unwrap().ends_with("/ca.crt"), "cert-manager's ca.crt key");
    let server = certificate_named(&manifests, "scale-units-grpc");
    assert_eq!(ca.secret.as_ref().unwrap().secret_name.as_deref(), Some(server.spec.secret_name.as_str()));
    let client = certificate_named(&manifests, "scale-units-keda-client");
    assert_eq!(server.spec.issuer_ref, client.spec.issuer_ref, "one CA signs both");
    assert_eq!(client.spec.usages, ["client auth"]);
    assert_eq!(server.spec.usages, ["server auth"]);
    assert_eq!(
        client.metadata.namespace.as_deref(),
        Some("keda"),
        "a ClusterTriggerAuthentication reads KEDA's namespace"
    );
    // The issuer is the CA ClusterIssuer, backed by a CA certificate: the webhook's CA too.
    let (_, authority) = issuer_chain(&manifests, &server);
    let webhook = certificate_named(&manifests, "scale-units-webhook");
    assert_eq!(issuer_chain(&manifests, &webhook).1.metadata.name, authority.metadata.name, "one CA");
    // The service's DNS name is on the serving certificate (KEDA checks it against scalerAddress).
    let service: Service = one(&manifests, "Service");
    let namespace = service.metadata.namespace.clone().unwrap();
    assert!(server.spec.dns_names.contains(&format!("{}.{namespace}.svc", service.metadata.name.clone().unwrap())));

    // KEDA's authentication hands the client Secret's three keys to the trigger.
    let authentication = &manifests["ClusterTriggerAuthentication"];
    assert_eq!(authentication.len(), 1);
    let authentication = &authentication[0].1;
    let targets: BTreeMap<&str, (&str, &str)> = authentication["spec"]["secretTargetRef"]
        .as_array()
        .unwrap()
        .iter()
        .map(|target| {
            (target["parameter"].as_str().unwrap(), (target["name"].as_str().unwrap(), target["key"].as_str().unwrap()))
        })
        .collect();
    let secret = client.spec.secret_name.as_str();
    assert_eq!(
        targets,
        BTreeMap::from([
            ("caCert", (secret, "ca.crt")),
            ("tlsClientCert", (secret, "tls.crt")),
            ("tlsClientKey", (secret, "tls.key"))
        ])
    );
    for (file, document) in &manifests["ScaledObject"] {
        let scaled: ScaledObject = serde_json::from_value(document.clone()).unwrap();
        let reference = scaled.spec.triggers[0].authentication_ref.as_ref().unwrap_or_else(|| panic!("{file}"));
        assert_eq!(reference.name, authentication["metadata"]["name"].as_str().unwrap(), "{file}");
        assert_eq!(reference.kind.as_deref(), Some("ClusterTriggerAuthentication"), "{file}");
    }
}

#[test]
fn the_kustomization_lists_every_manifest_but_the_scaled_objects_and_names_the_built_image() {
    let kustomization: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(deploy_dir().join("kustomization.yaml")).unwrap()).unwrap();
    assert_eq!(kustomization["apiVersion"], "kustomize.config.k8s.io/v1beta1");
    assert!(kustomization.get("namespace").is_none(), "a namespace transformer would move every resource");
    let mut listed: Vec<String> =
        kustomization["resources"].as_array().unwrap().iter().map(|file| file.as_str().unwrap().to_owned()).collect();
    listed.sort();
    let mut files: Vec<String> = std::fs::read_dir(deploy_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") && name != "kustomization.yaml" && !name.starts_with("scaledobject-"))
        .collect();
    files.sort();
    assert_eq!(listed, files);

    // The image is the one `make image` tags: the Makefile's IMAGE_NAME, the workspace version.
    let makefile = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Makefile")).unwrap();
    let image_name = makefile
        .lines()
        .find_map(|line| line.strip_prefix("IMAGE_NAME ?= "))
        .expect("the Makefile's IMAGE_NAME")
        .trim();
    let manifests = manifests();
    let deployment: Deployment = one(&manifests, "Deployment");
    let (_, container) = container(&deployment);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(container.image.as_deref(), Some(format!("{image_name}:{version}").as_str()));
    let images = kustomization["images"].as_array().unwrap();
    assert_eq!(images[0]["name"], image_name);
    assert_eq!(images[0]["newTag"], version);
    // The Helm chart runs the same image: its repository, and the chart's appVersion as the tag.
    let chart_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/helm/scale-units");
    let chart: Value = serde_saphyr::from_str(&std::fs::read_to_string(chart_dir.join("Chart.yaml")).unwrap()).unwrap();
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["appVersion"], version);
    let values: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(chart_dir.join("values.yaml")).unwrap()).unwrap();
    assert_eq!(values["image"]["repository"], image_name);
    assert_eq!(values["image"]["tag"], "", "the appVersion");
    // The service runs the component from the image, under the image's non-root user.
    assert_eq!(arg(container, "--policy"), Some("/opt/scale-units/scale_units_evaluator.wasm"));
    let (pod, _) = self::container(&deployment);
    assert_eq!(pod.security_context.as_ref().unwrap().run_as_user, Some(65532));
}
