//! What a surface requires, from the component's `surface-profile`: `scale-units profile SURFACE`
//! prints it, and `scale-units init --surface SURFACE` writes a contract built from it that
//! validates — every field the surface requires, with a comment on each in YAML.
//!
//! `init --format scale-unit` writes the same contract inside a `ScaleUnit` resource
//! (`scale-units.dev/v1alpha1`) for `kubectl apply`; `scale-units crd` prints that resource's
//! CustomResourceDefinition.
//!
//! The rules (which signals, axes, engine axes, continuity modes, partitions and leases, provider
//! quotas) come only from the profile the component reports; this module adds example numbers
//! and words, never a rule. Before writing, the skeleton is validated by the same component.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use scale_units_host::{CapacityAxis, ContinuityMode, Profile, SurfaceKind};

use crate::{ComponentArgs, Failure, Format, Options, load_policy, print_evaluation_error};

/// `scale-units profile SURFACE`.
#[derive(Args)]
pub(crate) struct ProfileArgs {
    /// The surface (SPEC §4.3), such as `dispatch_worker`.
    #[arg(value_name = "SURFACE", value_parser = surface_parser())]
    surface: String,
    /// Output (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    #[command(flatten)]
    component: ComponentArgs,
}

/// How `init` writes the contract.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub(crate) enum ContractFormat {
    /// YAML with a comment on every field (what `scale-units` reads for `.yaml`/`.yml`).
    Yaml,
    /// JSON (no comments: JSON has none).
    Json,
    /// A ScaleUnit resource (scale-units.dev/v1alpha1) holding the contract, YAML with a comment
    /// on every field, for `kubectl apply` (see --name, --namespace, --target, --mode).
    ScaleUnit,
}

/// `scale-units init --surface SURFACE`.
#[derive(Args)]
pub(crate) struct InitArgs {
    /// The surface (SPEC §4.3) the contract is for, such as `dispatch_worker`.
    #[arg(long, value_name = "SURFACE", value_parser = surface_parser())]
    surface: String,
    /// yaml (with a comment on every field), json, or scale-unit (a ScaleUnit resource holding
    /// the contract, for kubectl apply) (default: json for an --out ending in .json, else yaml).
    #[arg(long, value_enum)]
    format: Option<ContractFormat>,
    /// Write the contract to FILE (refused when it exists, unless --force) instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Overwrite --out when it exists.
    #[arg(long, requires = "out")]
    force: bool,
    /// The unit's reference (default: unit:my-team/<surface>).
    #[arg(long, value_name = "REF")]
    unit_ref: Option<String>,
    /// YAML only: write `# yaml-language-server: $schema=LOCATION` first, so that editors with
    /// the YAML language server check the file as it is typed (a URL, or a path relative to the
    /// file, of schema/scale-unit-contract.schema.json).
    #[arg(long, value_name = "LOCATION")]
    schema: Option<String>,
    /// scale-unit only: the ScaleUnit's name (default: the target's name, else the surface's
    /// name with - for _).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// scale-unit only: its namespace, the target's too (default: none written, so kubectl's
    /// current namespace).
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,
    /// scale-unit only: the workload whose replicas it gates, KIND/NAME (default:
    /// Deployment/<name>).
    #[arg(long, value_name = "KIND/NAME")]
    target: Option<String>,
    /// scale-unit only: the target's apiVersion (default: apps/v1 for a Deployment, StatefulSet or
    /// ReplicaSet; needed for any other kind).
    #[arg(long, value_name = "API_VERSION")]
    target_api_version: Option<String>,
    /// scale-unit only: Enforce (the default) denies a change the decision does not allow, Warn
    /// allows it with an admission warning, Monitor allows it; both record it.
    #[arg(long, value_name = "MODE", value_parser = ["Monitor", "Warn", "Enforce"], ignore_case = true)]
    mode: Option<String>,
    #[command(flatten)]
    component: ComponentArgs,
}

/// Surface names as clap shows and suggests them: the core's vocabulary.
fn surface_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(SurfaceKind::ALL.iter().map(|surface| surface.as_str()))
}

fn surface(name: &str) -> Result<SurfaceKind, Failure> {
    // clap has already checked the name against the same vocabulary.
    SurfaceKind::parse(name).ok_or_else(|| Failure::Usage(format!("`{name}` is not a surface")))
}

/// The wire words of `items` joined by `separator`, or `(none)`.
fn joined<T: Copy>(items: &[T], wire: fn(T) -> &'static str, separator: &str) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.iter().map(|&item| wire(item)).collect::<Vec<_>>().join(separator)
    }
}

/// For a table: separated by spaces.
fn words<T: Copy>(items: &[T], wire: fn(T) -> &'static str) -> String {
    joined(items, wire, " ")
}

/// For a sentence: separated by commas.
fn listed<T: Copy>(items: &[T], wire: fn(T) -> &'static str) -> String {
    joined(items, wire, ", ")
}

pub(crate) fn profile(args: ProfileArgs) -> Result<u8, Failure> {
    let options = Options::new("profile", args.format, args.component);
    let surface = surface(&args.surface)?;
    let profile = load_policy(&options, None)?.surface_profile(surface)?;
    match options.format {
        Format::Json => out!("{}", profile_json(&profile)),
        Format::Text => {
            out!("surface                     {}", profile.surface);
            out!(
                "allowed signals             {}",
                words(&profile.allowed_signals, scale_units_host::SignalKind::as_str)
            );
            out!("required capacity axes      {}", words(&profile.required_capacity_axes, CapacityAxis::as_str));
            out!("engine authority axes       {}", words(&profile.engine_authority_axes, CapacityAxis::as_str));
            out!("continuity modes            {}", words(&profile.continuity_modes, ContinuityMode::as_str));
            out!(
                "partitions and fenced lease {}",
                if profile.partition_and_fenced_lease { "required" } else { "not required" }
            );
            out!("provider quota axes         {}", words(&profile.provider_quota_axes, CapacityAxis::as_str));
            out!("");
            out!("A skeleton that validates: scale-units init --surface {}", profile.surface);
        }
    }
    Ok(0)
}

/// The profile as JSON, its fields named as in the WIT record (snake case).
fn profile_json(profile: &Profile) -> serde_json::Value {
    let list = |items: Vec<&'static str>| serde_json::Value::from(items);
    serde_json::json!({
        "surface": profile.surface.as_str(),
        "allowed_signals": list(profile.allowed_signals.iter().map(|s| s.as_str()).collect()),
        "required_capacity_axes": list(profile.required_capacity_axes.iter().map(|a| a.as_str()).collect()),
        "engine_authority_axes": list(profile.engine_authority_axes.iter().map(|a| a.as_str()).collect()),
        "continuity_modes": list(profile.continuity_modes.iter().map(|m| m.as_str()).collect()),
        "partition_and_fenced_lease": profile.partition_and_fenced_lease,
        "provider_quota_axes": list(profile.provider_quota_axes.iter().map(|a| a.as_str()).collect()),
    })
}

/// A value of the skeleton: what both renderings (JSON, YAML with comments) are written from.
enum Node {
    /// A string.
    Text(String),
    /// An integer.
    Int(u64),
    /// A boolean.
    Bool(bool),
    /// A list.
    List(Vec<Node>),
    /// An object: its fields in order, each with a comment.
    Map(Vec<Field>),
}

struct Field {
    key: &'static str,
    value: Node,
    comment: String,
}

fn field(key: &'static str, value: Node, comment: impl Into<String>) -> Field {
    Field { key, value, comment: comment.into() }
}

fn text(value: &str) -> Node {
    Node::Text(value.to_owned())
}

fn word_list<T: Copy>(items: &[T], wire: fn(T) -> &'static str) -> Node {
    Node::List(items.iter().map(|&item| text(wire(item))).collect())
}

/// An example amount one replica consumes of `axis`, and the unit it is counted in. Numbers for
/// a person to replace; no rule depends on them.
const fn example_demand(axis: CapacityAxis) -> (u64, &'static str) {
    match axis {
        CapacityAxis::CpuMilli => (500, "CPU in millicores"),
        CapacityAxis::MemoryMib => (1024, "memory in MiB"),
        CapacityAxis::GpuCount => (1, "whole GPUs"),
        CapacityAxis::GpuMemoryMib => (16_384, "GPU memory in MiB"),
        CapacityAxis::PartitionSlots => (1, "partition slots"),
        CapacityAxis::LeaseSlots => (1, "lease slots"),
        CapacityAxis::EngineBytes => (1_000_000_000, "engine bytes"),
        CapacityAxis::EngineWriteBytesPerS => (10_000_000, "engine write bytes per second"),
        CapacityAxis::FsyncIops => (100, "fsync operations per second"),
        CapacityAxis::ReadAdmissionSlots => (50, "read-admission slots"),
        CapacityAxis::SessionSlots => (100, "session slots"),
        CapacityAxis::ContinuitySlots => (100, "continuity slots"),
        CapacityAxis::UpstreamRate => (50, "upstream requests per second"),
        CapacityAxis::ProviderGlobalQuota => (10, "units of the provider's global quota"),
    }
}

/// The skeleton of a contract for the surface `profile` describes.
fn skeleton(profile: &Profile, unit_ref: &str) -> Node {
    let name = profile.surface.as_str();
    let signals = listed(&profile.allowed_signals, scale_units_host::SignalKind::as_str);
    let axes = listed(&profile.required_capacity_axes, CapacityAxis::as_str);
    let modes = listed(&profile.continuity_modes, ContinuityMode::as_str);
    let mut fields = vec![
        field("schema_version", text("1"), "the wire schema: always \"1\""),
        field("unit_ref", text(unit_ref), "the unit's stable reference (letters, digits and ._:/@+-)"),
        field(
            "surface",
            text(name),
            format!("the kind of service; `scale-units profile {name}` says what it requires"),
        ),
        field("version", Node::Int(1), "this contract's version: raise it when you change the contract"),
    ];
    let target_signal = profile.allowed_signals.first().map_or("", |signal| signal.as_str());
    fields.push(field(
        "policy",
        Node::Map(vec![
            field("min_replicas", Node::Int(1), "floor: never fewer replicas"),
            field("max_replicas", Node::Int(10), "ceiling: never more replicas"),
            field("target", Node::Int(100), "the signal value one replica should carry: replace with yours"),
            field("target_signal", text(target_signal), "the signal tracked; one of allowed_signals"),
            field("scale_up_step", Node::Int(2), "most replicas one decision adds"),
            field("scale_down_step", Node::Int(1), "most replicas one decision removes"),
            field("scale_up_cooldown_s", Node::Int(30), "seconds after the last action before a scale-up"),
            field("scale_down_cooldown_s", Node::Int(300), "seconds after the last action before a scale-down"),
            field("drain_seconds", Node::Int(60), "seconds a replica needs to drain"),
            field("allow_scale_to_zero", Node::Bool(false), "whether the unit may go to zero (then min_replicas: 0)"),
            field("allow_scale_from_zero", Node::Bool(true), "whether a unit at zero may start"),
        ]),
        "replica bounds, the tracked signal and target, steps and cooldowns",
    ));
    fields.push(field(
        "allowed_signals",
        Node::List(vec![text(target_signal)]),
        format!("signals the unit may be observed by; {name} allows {signals}"),
    ));
    fields.push(field(
        "required_capacity_axes",
        word_list(&profile.required_capacity_axes, CapacityAxis::as_str),
        format!("hard capacity axes; {name} requires {axes} (you may add more)"),
    ));
    let demands = profile
        .required_capacity_axes
        .iter()
        .map(|&axis| {
            let (amount, unit) = example_demand(axis);
            Node::Map(vec![
                field("axis", text(axis.as_str()), ""),
                field("per_replica", Node::Int(amount), format!("{unit} one replica takes: replace with yours")),
            ])
        })
        .collect();
    fields.push(field("replica_demands", Node::List(demands), "what one replica consumes of each required axis"));
    if !profile.engine_authority_axes.is_empty() {
        fields.push(field(
            "engine_authority_axes",
            word_list(&profile.engine_authority_axes, CapacityAxis::as_str),
            format!("axes where the engine, not {name}, is the bottleneck: exactly these for {name}"),
        ));
    }
    if let Some(&axis) = profile.provider_quota_axes.first() {
        let allowed = listed(&profile.provider_quota_axes, CapacityAxis::as_str);
        fields.push(field(
            "quotas",
            Node::List(vec![Node::Map(vec![
                field("quota_ref", text("quota:my-provider/global"), "the quota's reference; observations name it"),
                field("axis", text(axis.as_str()), format!("one of {allowed}")),
                field("scope", text("provider_global"), format!("{name} requires one provider-global quota binding")),
                field("per_replica", Node::Int(1), "what one replica draws from the quota (1 or more)"),
                field("multiplicative", Node::Bool(false), "a provider-global quota never grows with replicas"),
            ])]),
            "quotas the unit draws on",
        ));
    }
    if profile.partition_and_fenced_lease {
        fields.push(field(
            "partition_lease",
            Node::Map(vec![
                field("partitioned", Node::Bool(true), "work is partitioned across replicas"),
                field("partitions_per_replica", Node::Int(1), "partitions each replica owns"),
                field("lease_required", Node::Bool(true), "a replica must hold a lease"),
                field("lease_ttl_s", Node::Int(30), "the lease's time to live, in seconds"),
                field("fencing_required", Node::Bool(true), "leases are fenced"),
            ]),
            format!("{name} requires partitions and a fenced lease"),
        ));
    }
    let mode = profile.continuity_modes.first().copied().unwrap_or(ContinuityMode::Externalized);
    let mut continuity =
        vec![field("mode", text(mode.as_str()), format!("where session state lives; {name} supports {modes}"))];
    if mode == ContinuityMode::Externalized {
        continuity.push(field(
            "external_store_ref",
            text("store:my-sessions"),
            "the external session store's reference",
        ));
    }
    continuity.push(field("drain_required", Node::Bool(true), "a scale-down drains replicas first"));
    let block = mode != ContinuityMode::Stateless;
    continuity.push(field(
        "block_scale_down_with_active",
        Node::Bool(block),
        if block {
            "active sessions or streams block a scale-down"
        } else {
            "must be false for stateless continuity (the default, true, is refused)"
        },
    ));
    continuity.push(field("max_drain_seconds", Node::Int(300), "the longest drain allowed, in seconds"));
    fields.push(field("continuity", Node::Map(continuity), "session state and draining"));
    fields.push(field(
        "safety_required",
        Node::Bool(true),
        "every decision needs safety evidence (overload, noisy neighbour)",
    ));
    Node::Map(fields)
}

/// JSON text of a node, two-space indented.
fn to_json(node: &Node) -> serde_json::Value {
    match node {
        Node::Text(value) => serde_json::Value::from(value.as_str()),
        Node::Int(value) => serde_json::Value::from(*value),
        Node::Bool(value) => serde_json::Value::from(*value),
        Node::List(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Node::Map(fields) => {
            serde_json::Value::Object(fields.iter().map(|f| (f.key.to_owned(), to_json(&f.value))).collect())
        }
    }
}

/// A YAML scalar: a wire word plain, anything else as a JSON string (valid YAML), so that "1"
/// stays a string and a ref's `:` never starts a mapping.
fn yaml_scalar(node: &Node) -> String {
    match node {
        Node::Text(value)
            if !value.is_empty()
                && value.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && !matches!(value.as_str(), "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n") =>
        {
            value.clone()
        }
        // A kind or a mode (ScaleUnit, Deployment, Enforce): CamelCase letters, never a YAML 1.1
        // boolean or null.
        Node::Text(value)
            if value.starts_with(|c: char| c.is_ascii_uppercase())
                && value.chars().all(|c| c.is_ascii_alphanumeric())
                && !matches!(
                    value.to_ascii_lowercase().as_str(),
                    "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
                ) =>
        {
            value.clone()
        }
        Node::Text(value) => serde_json::Value::from(value.as_str()).to_string(),
        Node::Int(value) => value.to_string(),
        Node::Bool(value) => value.to_string(),
        Node::List(_) | Node::Map(_) => String::new(),
    }
}

/// Comments start at this column when the line leaves room.
const COMMENT_COLUMN: usize = 40;

fn yaml_line(out: &mut String, code: &str, comment: &str) {
    if comment.is_empty() {
        let _ = writeln!(out, "{code}");
    } else {
        let pad = COMMENT_COLUMN.saturating_sub(code.chars().count()).max(2);
        let _ = writeln!(out, "{code}{:pad$}# {comment}", "");
    }
}

/// The fields of a map at `indent`; `first_prefix` replaces the indent of the first line (`- `
/// for a map in a list).
fn yaml_map(out: &mut String, fields: &[Field], indent: usize, first_prefix: Option<&str>) {
    for (i, f) in fields.iter().enumerate() {
        let lead = match (i, first_prefix) {
            (0, Some(prefix)) => format!("{}{prefix}", " ".repeat(indent.saturating_sub(prefix.len()))),
            _ => " ".repeat(indent),
        };
        match &f.value {
            Node::Map(inner) => {
                yaml_line(out, &format!("{lead}{}:", f.key), &f.comment);
                yaml_map(out, inner, indent + 2, None);
            }
            Node::List(items) if items.is_empty() => yaml_line(out, &format!("{lead}{}: []", f.key), &f.comment),
            Node::List(items) => {
                yaml_line(out, &format!("{lead}{}:", f.key), &f.comment);
                for item in items {
                    match item {
                        Node::Map(inner) => yaml_map(out, inner, indent + 4, Some("- ")),
                        scalar => {
                            let _ = writeln!(out, "{}  - {}", " ".repeat(indent), yaml_scalar(scalar));
                        }
                    }
                }
            }
            scalar => yaml_line(out, &format!("{lead}{}: {}", f.key, yaml_scalar(scalar)), &f.comment),
        }
    }
}

fn to_yaml(node: &Node, surface: &str, schema: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(location) = schema {
        let _ = writeln!(out, "# yaml-language-server: $schema={location}");
    }
    let _ = writeln!(
        out,
        "# A scale-unit contract for the surface {surface} (docs/SPEC.md §4), written by `scale-units init`."
    );
    let _ = writeln!(out, "# It validates as written; replace the example numbers with your unit's, then check it:");
    let _ = writeln!(out, "#   scale-units validate FILE");
    if schema.is_none() {
        let _ = writeln!(
            out,
            "# Editors check it as you type with the JSON Schema: `init --schema LOCATION`, schema/README.md."
        );
    }
    if let Node::Map(fields) = node {
        yaml_map(&mut out, fields, 0, None);
    }
    out
}

pub(crate) fn init(args: InitArgs) -> Result<u8, Failure> {
    let options = Options::new("init", None, args.component.clone());
    let surface = surface(&args.surface)?;
    let format = args.format.unwrap_or_else(|| {
        match args.out.as_deref().and_then(Path::extension).and_then(|extension| extension.to_str()) {
            Some("json") => ContractFormat::Json,
            _ => ContractFormat::Yaml,
        }
    });
    let resource = resource_of(&args, format, surface)?;
    if args.schema.is_some() && format == ContractFormat::ScaleUnit {
        return Err(Failure::Usage(
            "--schema is for a contract file: a ScaleUnit is checked by the API server against its CRD (`scale-units crd`)"
                .to_owned(),
        ));
    }
    if args.schema.is_some() && format == ContractFormat::Json {
        return Err(Failure::Usage(
            "--schema is for YAML: a JSON contract cannot name its schema (the evaluator refuses an unknown \
             field such as `$schema`); map the file to the schema in the editor's settings instead"
                .to_owned(),
        ));
    }
    if let Some(path) = &args.out
        && path.exists()
        && !args.force
    {
        return Err(Failure::Host(format!(
            "{} exists: choose another --out, or add --force to overwrite it",
            path.display()
        )));
    }
    let policy = load_policy(&options, None)?;
    let profile = policy.surface_profile(surface)?;
    let unit_ref = args.unit_ref.clone().unwrap_or_else(|| match &resource {
        Some(Resource { namespace: Some(namespace), name, .. }) => format!("unit:{namespace}/{name}"),
        _ => format!("unit:my-team/{}", surface.as_str().replace('_', "-")),
    });
    let node = skeleton(&profile, &unit_ref);
    let json = to_json(&node);
    // The component judges the skeleton before anyone sees it: `init` never writes a contract
    // that does not validate (an unusable --unit-ref is the one input that can break it).
    if let Err(error) = policy.validate_contract_json(&json.to_string())? {
        // On stderr in words: stdout is where the contract goes (`init > file`).
        return Ok(print_evaluation_error(&error, Format::Text));
    }
    let text = match format {
        ContractFormat::Json => format!("{}\n", serde_json::to_string_pretty(&json).unwrap_or_default()),
        ContractFormat::Yaml => to_yaml(&node, surface.as_str(), args.schema.as_deref()),
        ContractFormat::ScaleUnit => match &resource {
            Some(resource) => scale_unit_yaml(resource, node, surface.as_str()),
            None => String::new(),
        },
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, text)
                .map_err(|error| Failure::Host(format!("cannot write {}: {error}", path.display())))?;
            if format == ContractFormat::ScaleUnit {
                eprintln!(
                    "scale-units: wrote a ScaleUnit for a {surface} contract to {path}; replace its example numbers, \
                     then run `kubectl apply -f {path}` (the CRD first: `scale-units crd | kubectl apply -f -`)",
                    path = path.display()
                );
            } else {
                eprintln!(
                    "scale-units: wrote a {surface} contract to {path}; replace its example numbers, then run \
                     `scale-units validate {path}`",
                    path = path.display()
                );
            }
        }
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    Ok(0)
}

// ---- `init --format scale-unit` and `crd`: the contract as a Kubernetes resource. ----

/// What `init --format scale-unit` writes around the contract.
struct Resource {
    name: String,
    namespace: Option<String>,
    kind: String,
    target: String,
    api_version: String,
    mode: &'static str,
}

/// A DNS-1123 label (a namespace): lowercase letters, digits and `-`, at most 63, alphanumeric at
/// both ends.
fn is_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// A DNS-1123 subdomain (an object's name): labels joined by `.`, at most 253 characters.
fn is_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_label)
}

/// The resource `init` wraps the contract in: `None` for a contract file, where the resource's
/// flags are a usage error.
fn resource_of(args: &InitArgs, format: ContractFormat, surface: SurfaceKind) -> Result<Option<Resource>, Failure> {
    if format != ContractFormat::ScaleUnit {
        let given = [
            ("--name", args.name.is_some()),
            ("--namespace", args.namespace.is_some()),
            ("--target", args.target.is_some()),
            ("--target-api-version", args.target_api_version.is_some()),
            ("--mode", args.mode.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(Failure::Usage(format!("{flag} is for a ScaleUnit: add --format scale-unit")));
        }
        return Ok(None);
    }
    let (kind, target) = match &args.target {
        Some(target) => {
            let (kind, name) = target.split_once('/').ok_or_else(|| {
                Failure::Usage(format!("--target {target}: write KIND/NAME, such as Deployment/dispatch-worker"))
            })?;
            (kind.to_owned(), Some(name.to_owned()))
        }
        None => ("Deployment".to_owned(), None),
    };
    let kind_ok = kind.len() <= 63
        && kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !kind_ok {
        return Err(Failure::Usage(format!(
            "--target: `{kind}` is not a kind (CamelCase letters and digits, such as Deployment)"
        )));
    }
    let name = args.name.clone().or_else(|| target.clone()).unwrap_or_else(|| surface.as_str().replace('_', "-"));
    let target = target.unwrap_or_else(|| name.clone());
    for (flag, value) in [("--name", &name), ("--target", &target)] {
        if !is_subdomain(value) {
            return Err(Failure::Usage(format!(
                "{flag}: `{value}` is not a Kubernetes object name (lowercase letters, digits, - and ., at most 253)"
            )));
        }
    }
    if let Some(namespace) = &args.namespace
        && !is_label(namespace)
    {
        return Err(Failure::Usage(format!(
            "--namespace: `{namespace}` is not a namespace (lowercase letters, digits and -, at most 63)"
        )));
    }
    let api_version = match (&args.target_api_version, kind.as_str()) {
        (Some(version), _) => {
            let parts: Vec<&str> = version.split('/').collect();
            let valid = parts.len() <= 2
                && parts.iter().all(|part| {
                    !part.is_empty()
                        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
                });
            if !valid {
                return Err(Failure::Usage(format!(
                    "--target-api-version: `{version}` is not an apiVersion (GROUP/VERSION, such as apps/v1)"
                )));
            }
            version.clone()
        }
        (None, "Deployment" | "StatefulSet" | "ReplicaSet") => "apps/v1".to_owned(),
        (None, other) => {
            return Err(Failure::Usage(format!(
                "--target {other}/…: add --target-api-version (the apiVersion of a {other}, such as argoproj.io/v1alpha1)"
            )));
        }
    };
    let mode = match args.mode.as_deref() {
        Some(mode) if mode.eq_ignore_ascii_case("monitor") => "Monitor",
        Some(mode) if mode.eq_ignore_ascii_case("warn") => "Warn",
        _ => "Enforce",
    };
    Ok(Some(Resource { name, namespace: args.namespace.clone(), kind, target, api_version, mode }))
}

/// The ScaleUnit holding `contract`, as YAML with a comment on every field.
fn scale_unit_yaml(resource: &Resource, contract: Node, surface: &str) -> String {
    let mut metadata = vec![field("name", text(&resource.name), "")];
    if let Some(namespace) = &resource.namespace {
        metadata.push(field("namespace", text(namespace), "the target's namespace too"));
    }
    let mode_comment = match resource.mode {
        "Monitor" => "Monitor allows what the decision does not, and records it (Event, audit, metric)",
        "Warn" => "Warn allows what the decision does not, with an admission warning, and records it",
        _ => "Enforce denies what the decision does not allow; Warn or Monitor only record it",
    };
    let spec = vec![
        field(
            "scaleTargetRef",
            Node::Map(vec![
                field("apiVersion", text(&resource.api_version), "the target's API group and version"),
                field("kind", text(&resource.kind), "any kind with a scale subresource"),
                field("name", text(&resource.target), "in the ScaleUnit's namespace"),
            ]),
            "the workload whose replica count the unit gates",
        ),
        field("mode", text(resource.mode), mode_comment),
        field("contract", contract, "the scale-unit contract (docs/SPEC.md §4)"),
    ];
    let document = Node::Map(vec![
        field("apiVersion", text("scale-units.dev/v1alpha1"), ""),
        field("kind", text("ScaleUnit"), ""),
        field("metadata", Node::Map(metadata), ""),
        field("spec", Node::Map(spec), ""),
    ]);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A ScaleUnit for the surface {surface} (scale-units.dev/v1alpha1), written by `scale-units init`."
    );
    let _ = writeln!(out, "# Its contract validates as written; replace the example numbers with your unit's, then:");
    let _ = writeln!(out, "#   kubectl apply -f FILE        (the CRD first: scale-units crd | kubectl apply -f -)");
    let _ = writeln!(out, "# The API server checks it against the CRD's schema; the service judges the contract and");
    let _ = writeln!(out, "# reports a refusal in the Ready condition (kubectl describe scaleunit NAME).");
    if let Node::Map(fields) = &document {
        yaml_map(&mut out, fields, 0, None);
    }
    out
}

/// `scale-units crd`: the ScaleUnit CustomResourceDefinition as YAML on stdout.
pub(crate) fn crd() -> Result<u8, Failure> {
    let text =
        scale_units_server::kubernetes::crd::scale_unit_crd_yaml().map_err(|error| Failure::Host(error.to_string()))?;
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(0)
}
