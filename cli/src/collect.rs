//! `scale-units collect --once --units DIR [UNIT]`: reads each unit's sources file once, as the
//! service's collector does, and prints every source's result or refusal and the decision the
//! evidence leads to (scale_units_server::collect).

use std::path::PathBuf;
use std::sync::Arc;

use scale_units_host::{Policy, PolicyRegistry, default_cache_dir};
use scale_units_server::collect::{Collected, Collector};
use scale_units_server::units::{UnitKey, UnitVerdict, Units};
use serde_json::{Value, json};

use crate::{ComponentArgs, Failure, Format};

const AFTER_HELP: &str = "\
Evidence is kept in this process only (nothing is written to a service's store), and no scale \
action is assumed: the decision is the one the evidence leads to with the cooldowns elapsed (the \
service applies the last action it recorded). Exit codes: 0 \
every source stored an observation; 1 a source was refused (its cause printed), or a host \
failure; 64 bad usage.";

/// `scale-units collect`'s options.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct CollectArgs {
    /// Collect once and exit (the only mode; the service collects continuously).
    #[arg(long)]
    once: bool,
    /// The units folder: contracts and their <namespace>.<name>.sources.yaml|yml|json.
    #[arg(long, value_name = "DIR")]
    units: PathBuf,
    /// Only this unit (<namespace>/<name>).
    unit: Option<String>,
    /// Output (default: text on a terminal, json otherwise): one JSON line per unit.
    #[arg(long, value_enum)]
    format: Option<Format>,
    #[command(flatten)]
    component: ComponentArgs,
}

/// Runs `scale-units collect ARGS`; returns the exit code.
pub(crate) fn run(args: CollectArgs) -> Result<u8, Failure> {
    if !args.once {
        return Err(Failure::Usage("collect needs --once (scale-units serve collects continuously)".to_owned()));
    }
    let only = match &args.unit {
        None => None,
        Some(unit) => {
            let (namespace, name) =
                unit.split_once('/').ok_or_else(|| Failure::Usage(format!("{unit}: a unit is <namespace>/<name>")))?;
            Some(UnitKey::new(namespace, name).map_err(|error| Failure::Usage(error.to_string()))?)
        }
    };
    let format = args.format.unwrap_or_else(|| {
        if std::io::IsTerminal::is_terminal(&std::io::stdout()) { Format::Text } else { Format::Json }
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::Host(format!("cannot start the runtime: {error}")))?;
    runtime.block_on(collect(args.units, args.component, only, format))
}

async fn collect(dir: PathBuf, component: ComponentArgs, only: Option<UnitKey>, format: Format) -> Result<u8, Failure> {
    let mut policy_builder = Policy::builder();
    if !component.no_cache
        && let Some(cache) = default_cache_dir()
    {
        policy_builder = policy_builder.cache_dir(cache);
    }
    let registry = Arc::new(PolicyRegistry::builder().policy_builder(policy_builder).build());
    let source = crate::ComponentSource::resolve(component.component.as_deref())?;
    let staged = source.stage_in(&registry).await?;
    if let Some(expected) = &component.expect_digest
        && *expected != staged.digest
    {
        return Err(Failure::Host(format!("the component's digest is {}, not {expected}", staged.digest)));
    }
    registry.activate(&staged.digest).map_err(|error| Failure::Host(error.to_string()))?;
    let units = Units::builder(registry)
        .contracts_dir(&dir)
        .no_prior_actions()
        .build()
        .await
        .map_err(|error| Failure::Host(error.to_string()))?;
    let keys = match only {
        Some(key) => {
            if units.sources(&key).is_none() {
                return Err(Failure::Host(format!("{key} has no sources file in {}", dir.display())));
            }
            vec![key]
        }
        None => units.source_keys(),
    };
    let collector = Collector::new(Arc::clone(&units));
    let mut refused = false;
    for key in keys {
        let collected = collector.collect(&key).await.unwrap_or_default();
        refused |= collected.iter().any(|collected| collected.result.is_err());
        let decided = units.decide(&key, None).await;
        let decision = match &decided {
            Ok(decided) => match (&decided.verdict, &decided.decision_json) {
                (UnitVerdict::Decided { .. }, Some(json)) => serde_json::from_str::<Value>(json).unwrap_or(Value::Null),
                _ => json!({"error": {"code": "unknown_unit", "message": "no contract is loaded for the unit"}}),
            },
            Err(error) => json!({"error": {"code": error.code(), "message": error.to_string()}}),
        };
        match format {
            Format::Json => {
                out!("{}", json!({"unit": key.to_string(), "sources": lines(&collected), "decision": decision}))
            }
            Format::Text => print_text(&key, &collected, &decision),
        }
    }
    Ok(if refused { crate::exit::FAILURE } else { 0 })
}

fn lines(collected: &[Collected]) -> Vec<Value> {
    collected
        .iter()
        .map(|collected| match &collected.result {
            Ok(stored) => json!({"source": collected.source, "stored": stored, "shared": collected.shared}),
            Err(refusal) => json!({
                "source": collected.source,
                "refused": {"cause": refusal.cause, "message": refusal.message},
                "shared": collected.shared,
            }),
        })
        .collect()
}

fn print_text(key: &UnitKey, collected: &[Collected], decision: &Value) {
    out!("{key}");
    for collected in collected {
        match &collected.result {
            Ok(stored) => out!("  {:<24} stored   {stored}", collected.source),
            Err(refusal) => out!("  {:<24} REFUSED  {}: {}", collected.source, refusal.cause, refusal.message),
        }
        for shared in &collected.shared {
            out!("  {:<24} shared   {shared}", "");
        }
    }
    match decision.get("error") {
        Some(error) => out!(
            "  decision: none ({}: {})",
            error.get("code").and_then(Value::as_str).unwrap_or_default(),
            error.get("message").and_then(Value::as_str).unwrap_or_default()
        ),
        None => out!(
            "  decision: {} {} -> {} replicas (reasons: {})",
            decision.get("action").and_then(Value::as_str).unwrap_or_default(),
            decision.get("current_replicas").unwrap_or(&Value::Null),
            decision.get("desired_replicas").unwrap_or(&Value::Null),
            decision
                .get("reasons")
                .and_then(Value::as_array)
                .map(|reasons| reasons.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default()
        ),
    }
}
