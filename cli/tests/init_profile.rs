//! `scale-units init` and `scale-units profile` through the real binary: for each of the nine
//! surfaces, `init` writes a contract (YAML and JSON) that `scale-units validate` accepts, built
//! from the profile the component reports; `profile` prints that profile.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use scale_units_core::SurfaceKind;
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    let _ = common::component_bytes();
    Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(args)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"))
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn words(list: &Value) -> Vec<String> {
    list.as_array().expect("a list").iter().map(|w| w.as_str().expect("a word").to_owned()).collect()
}

#[test]
fn init_writes_a_contract_that_validates_for_every_surface_in_both_formats() {
    let dir = temp_dir("init");
    for surface in SurfaceKind::ALL {
        let name = surface.as_str();
        let mut identities = Vec::new();
        for format in ["yaml", "json"] {
            let file = dir.join(format!("{name}.{format}"));
            let path = file.to_str().expect("utf-8");
            let output = run(&["init", "--surface", name, "--format", format, "--out", path]);
            assert_eq!(output.status.code(), Some(0), "init {name} {format}: {}", stderr(&output));
            assert!(stderr(&output).contains(&format!("scale-units validate {path}")), "{}", stderr(&output));
            let output = run(&["validate", "--format", "json", path]);
            assert_eq!(output.status.code(), Some(0), "validate {name} {format}: {}", stdout(&output));
            let identity: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
            identities.push(identity["contract_id"].clone());

            // The same contract on stdout, byte for byte.
            let printed = run(&["init", "--surface", name, "--format", format]);
            assert_eq!(printed.status.code(), Some(0));
            assert_eq!(stdout(&printed), std::fs::read_to_string(&file).expect("written"), "{name} {format}");
        }
        // YAML and JSON are one contract: the same identity.
        assert_eq!(identities[0], identities[1], "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_skeleton_comes_from_the_profile_the_component_reports() {
    for surface in SurfaceKind::ALL {
        let name = surface.as_str();
        let output = run(&["profile", name, "--format", "json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let reported: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
        // The component's profile is the core's (SPEC §4.3).
        let profile = surface.profile();
        let wire =
            |items: &[scale_units_core::CapacityAxis]| items.iter().map(|a| a.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(reported["surface"], name);
        assert_eq!(
            words(&reported["allowed_signals"]),
            profile.allowed_signals.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>()
        );
        assert_eq!(words(&reported["required_capacity_axes"]), wire(profile.required_capacity_axes));
        assert_eq!(words(&reported["engine_authority_axes"]), wire(profile.engine_authority_axes));
        assert_eq!(words(&reported["provider_quota_axes"]), wire(profile.provider_quota_axes));
        assert_eq!(
            words(&reported["continuity_modes"]),
            profile.continuity_modes.iter().map(|m| m.as_str().to_owned()).collect::<Vec<_>>()
        );
        assert_eq!(reported["partition_and_fenced_lease"], profile.partition_and_fenced_lease);

        let init = run(&["init", "--surface", name, "--format", "json"]);
        let contract: Value = serde_json::from_str(&stdout(&init)).expect("JSON");
        assert_eq!(contract["surface"], name);
        assert_eq!(contract["required_capacity_axes"], reported["required_capacity_axes"], "{name}");
        let demands: Vec<&str> =
            contract["replica_demands"].as_array().unwrap().iter().map(|d| d["axis"].as_str().unwrap()).collect();
        assert_eq!(demands, words(&reported["required_capacity_axes"]), "{name}: a demand for every required axis");
        let signals = words(&reported["allowed_signals"]);
        assert!(signals.contains(&contract["policy"]["target_signal"].as_str().unwrap().to_owned()), "{name}");
        let mode = contract["continuity"]["mode"].as_str().unwrap().to_owned();
        assert!(words(&reported["continuity_modes"]).contains(&mode), "{name}");
        // A stateless contract writes the flag whose default the SPEC refuses.
        if mode == "stateless" {
            assert_eq!(contract["continuity"]["block_scale_down_with_active"], false, "{name}");
        }
        let leased = reported["partition_and_fenced_lease"] == true;
        assert_eq!(contract.get("partition_lease").is_some(), leased, "{name}");
        let engine = &reported["engine_authority_axes"];
        match contract.get("engine_authority_axes") {
            Some(axes) => assert_eq!(axes, engine, "{name}"),
            None => assert_eq!(engine, &serde_json::json!([]), "{name}"),
        }
        let provider = words(&reported["provider_quota_axes"]);
        match contract.get("quotas").and_then(Value::as_array) {
            Some(quotas) => {
                assert!(!provider.is_empty(), "{name}");
                assert_eq!(quotas[0]["scope"], "provider_global", "{name}");
                assert!(provider.contains(&quotas[0]["axis"].as_str().unwrap().to_owned()), "{name}");
            }
            None => assert!(provider.is_empty(), "{name}"),
        }
    }
}

#[test]
fn yaml_skeletons_comment_every_field_and_can_name_their_schema() {
    let output =
        run(&["init", "--surface", "dispatch_worker", "--schema", "../schema/scale-unit-contract.schema.json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let yaml = stdout(&output);
    assert_eq!(yaml.lines().next(), Some("# yaml-language-server: $schema=../schema/scale-unit-contract.schema.json"));
    let mut fields = 0;
    for line in yaml.lines().filter(|line| !line.trim_start().starts_with('#')) {
        let code = line.trim_start().trim_start_matches("- ");
        // Every field line but a demand's `axis` (its comment is on `per_replica`, beside it)
        // says what the field is.
        if code.contains(':') && !code.starts_with("axis:") {
            fields += 1;
            assert!(line.contains("  # "), "no comment: {line}");
        }
    }
    assert!(fields >= 25, "{fields} fields:\n{yaml}");
    // A JSON contract cannot carry `$schema` (the evaluator refuses unknown fields): bad usage.
    let refused = run(&["init", "--surface", "dispatch_worker", "--format", "json", "--schema", "x.json"]);
    assert_eq!(refused.status.code(), Some(64));
    assert!(stderr(&refused).contains("editor's settings"), "{}", stderr(&refused));
}

#[test]
fn init_refuses_to_overwrite_and_reports_a_bad_unit_ref() {
    let dir = temp_dir("init-refusals");
    let file = dir.join("contract.yaml");
    std::fs::write(&file, "mine").expect("write");
    let path = file.to_str().expect("utf-8");
    let output = run(&["init", "--surface", "api_gateway", "--out", path]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("--force"), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "mine");
    let output = run(&["init", "--surface", "api_gateway", "--out", path, "--force"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(std::fs::read_to_string(&file).expect("written").contains("surface: api_gateway"));
    // An --out ending in .json is JSON unless --format says otherwise.
    let json = dir.join("c.json");
    assert_eq!(run(&["init", "--surface", "api_gateway", "--out", json.to_str().unwrap()]).status.code(), Some(0));
    let _: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("JSON");

    let output = run(&["init", "--surface", "api_gateway", "--unit-ref", "not a ref", "--format", "json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(stderr(&output).contains("invalid_ref at unit_ref"), "{}", stderr(&output));
    assert!(stdout(&output).is_empty(), "nothing written: {}", stdout(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_surface_is_bad_usage_with_a_suggestion() {
    for args in [&["profile", "dispatch-worker"][..], &["init", "--surface", "dispatch_workr"]] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(64), "{args:?}");
        let text = stderr(&output);
        assert!(text.contains("dispatch_worker") && text.contains("rlm_pool"), "{text}");
    }
    let output = run(&["profile", "ingest_worker", "--format", "text"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("engine authority axes       engine_write_bytes_per_s fsync_iops"), "{text}");
    assert!(text.contains("partitions and fenced lease required"), "{text}");
}

/// `init --format scale-unit` with `args` for `surface`: the YAML, parsed.
fn scale_unit(surface: &str, args: &[&str]) -> (String, Value) {
    let mut all = vec!["init", "--surface", surface, "--format", "scale-unit"];
    all.extend_from_slice(args);
    let output = run(&all);
    assert_eq!(output.status.code(), Some(0), "{all:?}: {}", stderr(&output));
    let yaml = stdout(&output);
    let value: Value = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{surface}: {e}\n{yaml}"));
    (yaml, value)
}

#[test]
fn init_writes_a_scale_unit_whose_contract_validates_for_every_surface() {
    let dir = temp_dir("init-scale-unit");
    for surface in SurfaceKind::ALL {
        let name = surface.as_str();
        let (yaml, value) =
            scale_unit(name, &["--namespace", "team-a", "--name", "gate", "--target", "StatefulSet/worker-0"]);
        assert_eq!(value["apiVersion"], "scale-units.dev/v1alpha1", "{name}");
        assert_eq!(value["kind"], "ScaleUnit");
        assert_eq!(value["metadata"], serde_json::json!({"name": "gate", "namespace": "team-a"}));
        assert_eq!(
            value["spec"]["scaleTargetRef"],
            serde_json::json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "worker-0"})
        );
        assert_eq!(value["spec"]["mode"], "Enforce", "the default mode, written out");
        // The service's own type reads it.
        let resource: scale_units_server::kubernetes::resource::ScaleUnit =
            serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(resource.spec.scale_target_ref.display(), "StatefulSet/worker-0");
        // Its contract is the contract `init` writes alone, with the unit named after the
        // resource, and the component validates it.
        let contract = &value["spec"]["contract"];
        assert_eq!(contract["unit_ref"], "unit:team-a/gate");
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, contract.to_string()).unwrap();
        let output = run(&["validate", "--format", "json", file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0), "validate {name}: {}", stdout(&output));
        let plain = run(&["init", "--surface", name, "--format", "json", "--unit-ref", "unit:team-a/gate"]);
        let plain: Value = serde_json::from_str(&stdout(&plain)).unwrap();
        assert_eq!(contract, &plain, "{name}");
        // A comment on every field of the contract, as in the YAML contract.
        let commented = yaml.lines().filter(|line| line.starts_with("    ") && line.contains(": ")).count();
        assert!(commented >= 20, "{name}: {commented}");
        assert!(
            yaml.lines()
                .filter(|l| l.starts_with("    ") && l.contains(": "))
                .all(|l| l.contains("  # ") || l.trim_start().trim_start_matches("- ").starts_with("axis:")),
            "{yaml}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn init_scale_unit_defaults_and_modes() {
    // No flags: a Deployment named after the surface, no namespace (kubectl's current one).
    let (_, value) = scale_unit("media_pool", &[]);
    assert_eq!(value["metadata"], serde_json::json!({"name": "media-pool"}));
    assert_eq!(value["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(value["spec"]["scaleTargetRef"]["name"], "media-pool");
    assert_eq!(value["spec"]["contract"]["unit_ref"], "unit:my-team/media-pool");
    // The target's name names the resource when --name is not given.
    let (_, value) = scale_unit("media_pool", &["--target", "Deployment/transcode"]);
    assert_eq!(value["metadata"]["name"], "transcode");
    for (flag, mode) in [("monitor", "Monitor"), ("Warn", "Warn"), ("ENFORCE", "Enforce")] {
        let (yaml, value) = scale_unit("media_pool", &["--mode", flag]);
        assert_eq!(value["spec"]["mode"], mode);
        assert!(yaml.contains(&format!("  mode: {mode}  ")), "{yaml}");
    }
    // Another kind, with its apiVersion.
    let (_, value) =
        scale_unit("media_pool", &["--target", "Rollout/transcode", "--target-api-version", "argoproj.io/v1alpha1"]);
    assert_eq!(value["spec"]["scaleTargetRef"]["apiVersion"], "argoproj.io/v1alpha1");
    // Written to a file, with the next step on stderr.
    let dir = temp_dir("init-scale-unit-out");
    let file = dir.join("unit.yaml");
    let path = file.to_str().unwrap();
    let output = run(&["init", "--surface", "media_pool", "--format", "scale-unit", "--out", path]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains(&format!("kubectl apply -f {path}")), "{}", stderr(&output));
    assert!(std::fs::read_to_string(&file).unwrap().contains("kind: ScaleUnit"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn init_scale_unit_refuses_bad_names_and_misplaced_flags_as_usage() {
    let cases: [(&[&str], &str); 9] = [
        (&["--format", "scale-unit", "--target", "worker"], "KIND/NAME"),
        (&["--format", "scale-unit", "--target", "deployment/worker"], "not a kind"),
        (&["--format", "scale-unit", "--target", "Rollout/worker"], "--target-api-version"),
        (&["--format", "scale-unit", "--name", "Worker_1"], "not a Kubernetes object name"),
        (&["--format", "scale-unit", "--namespace", "team.a"], "not a namespace"),
        (&["--format", "scale-unit", "--target-api-version", "apps v1"], "not an apiVersion"),
        (&["--format", "scale-unit", "--schema", "x.json"], "CRD"),
        (&["--format", "yaml", "--namespace", "team-a"], "--format scale-unit"),
        (&["--mode", "Warn"], "--format scale-unit"),
    ];
    for (args, words) in cases {
        let mut all = vec!["init", "--surface", "api_gateway"];
        all.extend_from_slice(args);
        let output = run(&all);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(words), "{args:?}: {}", stderr(&output));
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
    let output = run(&["init", "--surface", "api_gateway", "--format", "scale-unit", "--mode", "Audit"]);
    assert_eq!(output.status.code(), Some(64), "an unknown mode: {}", stderr(&output));
}

#[test]
fn crd_prints_the_committed_custom_resource_definition() {
    let output = run(&["crd"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let committed = std::fs::read_to_string(root.join("deploy/kubernetes/scaleunit-crd.yaml")).unwrap();
    assert_eq!(stdout(&output), committed);
    let crd: Value = serde_saphyr::from_str(&committed).unwrap();
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "scaleunits.scale-units.dev");
}
