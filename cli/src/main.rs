//! `scale-units`: evaluate, validate, run the conformance vectors and inspect components, every
//! decision computed by the evaluator component.
//!
//! Exit codes: 0 success; 1 a host failure (no component, a trap, …) or a failed conformance
//! vector; 2 a typed evaluation error, printed as `{"error": {"code", "message", "path"}}`;
//! 64 bad usage.

/// `println!` that ignores a closed stdout (`scale-units … | head` must not panic).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod collect;
mod conformance;
mod input;
mod inspect;
mod serve;
mod simulate;
mod surface;
mod version;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;
use scale_units_host::{
    Diagnosis, EvaluationError, HostError, Policy, bundled_component, default_cache_dir, default_component_path,
};

/// Exit codes of the command.
pub(crate) mod exit {
    /// A host failure or a failed conformance vector.
    pub const FAILURE: u8 = 1;
    /// A typed evaluation error.
    pub const EVALUATION_ERROR: u8 = 2;
    /// Bad usage.
    pub const USAGE: u8 = 64;
}

/// How results are printed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub(crate) enum Format {
    /// The component's JSON, exactly as it wrote it.
    Json,
    /// Plain words for a person.
    Text,
}

/// The resolved options of a command: what every subcommand's own arguments come down to.
pub(crate) struct Options {
    command: &'static str,
    operands: Vec<String>,
    pub(crate) format: Format,
    component: Option<PathBuf>,
    expect_digest: Option<String>,
    no_cache: bool,
    provenance: bool,
    native: bool,
    known_failures: Option<PathBuf>,
    initial_replicas: Option<u64>,
    actuation_delay_s: Option<u64>,
    svg: Option<PathBuf>,
}

const AFTER_HELP: &str = "\
Exit codes: 0 success; 1 a host failure (no component, a trap, ...) or a failed conformance \
vector; 2 a typed evaluation error, printed as {\"error\": {\"code\", \"message\", \"path\"}}; \
64 bad usage.";

/// Evaluate, validate, simulate and check scale-unit contracts through the evaluator component,
/// and serve decisions.
#[derive(Parser)]
#[command(name = "scale-units", disable_version_flag = true, after_help = AFTER_HELP)]
struct Cli {
    /// Print the evaluator, schema and WIT versions and the digest of the component this command
    /// would use.
    #[arg(short = 'V', long, global = false)]
    version: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a request (JSON, or YAML for .yaml/.yml or text not starting with `{`).
    Eval(EvalArgs),
    /// The derivation of a request's decision: each evidence verdict, the target arithmetic and
    /// each gate with its numbers (needs a component of WIT 0.2.0 or later).
    Derive(DeriveArgs),
    /// Validate a contract: its contract_id and contract_digest, or its first error.
    Validate(ValidateArgs),
    /// Run every vector (*.json) below the folders, then print `N passed, N failed`.
    Conformance(ConformanceArgs),
    /// A component's digest, size, versions, exported world and imports.
    Inspect(InspectArgs),
    /// Replay a contract over a trace (CSV): every step and a summary.
    Simulate(SimulateArgs),
    /// Write a contract for a surface that validates, every field it requires commented.
    Init(Box<surface::InitArgs>),
    /// What a surface requires of a contract: signals, axes, continuity, partitions, quotas.
    Profile(surface::ProfileArgs),
    /// Print the ScaleUnit CustomResourceDefinition (scale-units.dev/v1alpha1) as YAML, its
    /// schema generated from the contract's and the sources' types (deploy/kubernetes/scaleunit-crd.yaml).
    Crd,
    /// The decision service over HTTP, with the unit registry, the admission webhook and the KEDA
    /// external scaler.
    Serve(Box<serve::ServeArgs>),
    /// Read each unit's sources file once (Prometheus, Redis, static) and print every source's
    /// result or refusal and the decision the evidence leads to.
    Collect(Box<collect::CollectArgs>),
    /// Print a completion script for a shell.
    Completions {
        /// The shell.
        shell: Shell,
    },
}

/// Which component to use.
#[derive(Args, Clone, Default)]
pub(crate) struct ComponentArgs {
    /// The evaluator component (default: $SCALE_UNITS_COMPONENT, the one `make component` built,
    /// else the one bundled into this binary).
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
    /// Refuse a component with another digest.
    #[arg(long, value_name = "sha256:HEX")]
    expect_digest: Option<String>,
    /// Compile the component instead of using the precompiled cache.
    #[arg(long)]
    no_cache: bool,
}

#[derive(Args)]
struct EvalArgs {
    /// The request: a file, or - for stdin.
    request: String,
    /// Output (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// With --format json, wrap as {"decision": ..., "provenance": ...}.
    #[arg(long)]
    provenance: bool,
    #[command(flatten)]
    component: ComponentArgs,
}

#[derive(Args)]
struct DeriveArgs {
    /// The request: a file, or - for stdin.
    request: String,
    /// Output (default: text on a terminal, json otherwise): the derivation's compact JSON, or
    /// its lines in words.
    #[arg(long, value_enum)]
    format: Option<Format>,
    #[command(flatten)]
    component: ComponentArgs,
}

#[derive(Args)]
struct ValidateArgs {
    /// The contract: a file, or - for stdin.
    contract: String,
    /// Output (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    #[command(flatten)]
    component: ComponentArgs,
}

#[derive(Args)]
struct ConformanceArgs {
    /// Folders of vectors, searched recursively (and every folder of $SCALE_UNITS_VECTORS,
    /// separated by `:`).
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
    /// Run the native core instead of the component.
    #[arg(long)]
    native: bool,
    /// Vectors expected to fail: `<id> <reason>` a line; a listed vector that passes fails the run.
    #[arg(long, value_name = "FILE")]
    known_failures: Option<PathBuf>,
    #[command(flatten)]
    component: ComponentArgs,
}

#[derive(Args)]
struct InspectArgs {
    /// The component to inspect.
    #[arg(value_name = "COMPONENT.wasm")]
    file: String,
    /// Refuse a component with another digest.
    #[arg(long, value_name = "sha256:HEX")]
    expect_digest: Option<String>,
    /// Compile the component instead of using the precompiled cache.
    #[arg(long)]
    no_cache: bool,
}

#[derive(Args)]
struct SimulateArgs {
    /// The contract (JSON or YAML), or - for stdin.
    contract: String,
    /// The trace: a CSV file, or - for stdin.
    #[arg(value_name = "TRACE.csv")]
    trace: String,
    /// Replicas before the first step (default: the contract's min_replicas).
    #[arg(long, value_name = "N")]
    initial: Option<u64>,
    /// Seconds from accepting a scale to the replicas being there.
    #[arg(long, value_name = "SECONDS")]
    delay: Option<u64>,
    /// Also draw signal, replicas and blocked spans as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Output (default: text on a terminal, json otherwise).
    #[arg(long, value_enum)]
    format: Option<Format>,
    #[command(flatten)]
    component: ComponentArgs,
}

impl Options {
    pub(crate) fn new(command: &'static str, format: Option<Format>, component: ComponentArgs) -> Self {
        Self {
            command,
            operands: Vec::new(),
            format: format.unwrap_or(if std::io::stdout().is_terminal() { Format::Text } else { Format::Json }),
            component: component.component,
            expect_digest: component.expect_digest,
            no_cache: component.no_cache,
            provenance: false,
            native: false,
            known_failures: None,
            initial_replicas: None,
            actuation_delay_s: None,
            svg: None,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // --help is not an error (exit 0); every usage error exits 64, as documented.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { exit::USAGE } else { 0 });
        }
    };
    if cli.version {
        version::print();
        return ExitCode::SUCCESS;
    }
    let Some(command) = cli.command else {
        let _ = Cli::command().print_help();
        return ExitCode::from(exit::USAGE);
    };
    let outcome = match command {
        Command::Eval(args) => {
            let mut options = Options::new("eval", args.format, args.component);
            options.operands = vec![args.request];
            options.provenance = args.provenance;
            eval(&options)
        }
        Command::Derive(args) => {
            let mut options = Options::new("derive", args.format, args.component);
            options.operands = vec![args.request];
            derive(&options)
        }
        Command::Validate(args) => {
            let mut options = Options::new("validate", args.format, args.component);
            options.operands = vec![args.contract];
            validate(&options)
        }
        Command::Conformance(args) => {
            let mut options = Options::new("conformance", None, args.component);
            options.operands = args.dirs;
            if let Some(dirs) = std::env::var_os("SCALE_UNITS_VECTORS") {
                let dirs = dirs.to_string_lossy().into_owned();
                options.operands.extend(dirs.split(':').filter(|dir| !dir.is_empty()).map(str::to_owned));
            }
            options.native = args.native;
            options.known_failures = args.known_failures;
            conformance::run(&options)
        }
        Command::Inspect(args) => {
            let component =
                ComponentArgs { component: None, expect_digest: args.expect_digest, no_cache: args.no_cache };
            let mut options = Options::new("inspect", None, component);
            options.operands = vec![args.file];
            inspect::run(&options)
        }
        Command::Simulate(args) => {
            let mut options = Options::new("simulate", args.format, args.component);
            options.operands = vec![args.contract, args.trace];
            options.initial_replicas = args.initial;
            options.actuation_delay_s = args.delay;
            options.svg = args.svg;
            simulate::run(&options)
        }
        Command::Init(args) => surface::init(*args),
        Command::Profile(args) => surface::profile(args),
        Command::Crd => surface::crd(),
        Command::Serve(args) => serve::run(*args),
        Command::Collect(args) => collect::run(*args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "scale-units", &mut std::io::stdout());
            Ok(0)
        }
    };
    exit_code(outcome)
}

fn exit_code(outcome: Result<u8, Failure>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(message)) => {
            eprintln!("scale-units: {message}\n(scale-units --help lists the commands and their options)");
            ExitCode::from(exit::USAGE)
        }
        Err(Failure::Host(message)) => {
            eprintln!("scale-units: {message}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// Why a command could not run.
pub(crate) enum Failure {
    /// Bad usage.
    Usage(String),
    /// A host failure: the message is printed on stderr.
    Host(String),
}

impl From<HostError> for Failure {
    fn from(error: HostError) -> Self {
        Self::Host(error.to_string())
    }
}

/// Where the component a command uses comes from.
pub(crate) enum ComponentSource {
    /// A file: `--component`, `$SCALE_UNITS_COMPONENT`, or the one `make component` built.
    File(PathBuf),
    /// The component bundled into this binary (through `scale-units-host`).
    Bundled,
}

impl ComponentSource {
    /// `--component` when given, else [`default_component_path`], else the bundled component.
    pub(crate) fn resolve(explicit: Option<&std::path::Path>) -> Result<Self, HostError> {
        if let Some(path) = explicit {
            return Ok(Self::File(path.to_owned()));
        }
        match default_component_path() {
            Ok(path) => Ok(Self::File(path)),
            // $SCALE_UNITS_COMPONENT naming a missing file is an error, never a silent fallback.
            Err(error) if std::env::var_os("SCALE_UNITS_COMPONENT").is_some_and(|value| !value.is_empty()) => {
                Err(error)
            }
            Err(error) => bundled_component().map(|_| Self::Bundled).ok_or(error),
        }
    }

    /// Stages this component in `registry` (off the async runtime: compiling takes a while).
    pub(crate) async fn stage_in(
        self,
        registry: &std::sync::Arc<scale_units_host::PolicyRegistry>,
    ) -> Result<scale_units_host::registry::StagedPolicy, Failure> {
        let staging = std::sync::Arc::clone(registry);
        tokio::task::spawn_blocking(move || match self {
            Self::File(path) => staging.stage_file(&path),
            Self::Bundled => match bundled_component() {
                Some((bytes, digest)) => staging.stage(scale_units_host::Candidate::new(bytes).expected_digest(digest)),
                None => Err(scale_units_host::RegistryError::Host(HostError::NotBundled)),
            },
        })
        .await
        .map_err(|error| Failure::Host(error.to_string()))?
        .map_err(|error| Failure::Host(format!("the policy was refused: {error}")))
    }
}

/// Loads the component the options name, or the default one.
pub(crate) fn load_policy(options: &Options, file: Option<&std::path::Path>) -> Result<Policy, Failure> {
    let source = ComponentSource::resolve(file.or(options.component.as_deref()))?;
    let mut builder = Policy::builder();
    if !options.no_cache
        && let Some(dir) = default_cache_dir()
    {
        builder = builder.cache_dir(dir);
    }
    Ok(load(builder, &source, options.expect_digest.as_deref())?)
}

/// Loads `source` with `builder`, refusing any digest but `expect_digest` when one is given.
pub(crate) fn load(
    builder: scale_units_host::PolicyBuilder,
    source: &ComponentSource,
    expect_digest: Option<&str>,
) -> Result<Policy, HostError> {
    let builder = match expect_digest {
        Some(digest) => builder.expected_digest(digest),
        None => builder,
    };
    match source {
        ComponentSource::File(path) => builder.load_file(path),
        ComponentSource::Bundled => {
            let (_, recorded) = bundled_component().ok_or(HostError::NotBundled)?;
            if let Some(expected) = expect_digest
                && expected != recorded
            {
                return Err(HostError::DigestMismatch { expected: expected.to_owned(), actual: recorded.to_owned() });
            }
            Policy::bundled_with(builder)
        }
    }
}

fn single_operand<'a>(options: &'a Options, what: &str) -> Result<&'a str, Failure> {
    match options.operands.as_slice() {
        [one] => Ok(one),
        _ => Err(Failure::Usage(format!("{} takes one {what}", options.command))),
    }
}

/// Prints a typed evaluation error once; returns exit code 2. `--format json`: the error object
/// `{"error": {"code", "message", "path"}}` on stdout (and, when stdout goes to a program and
/// stderr to a person, the same in words on stderr). `--format text`: in words on stderr only.
pub(crate) fn print_evaluation_error(error: &EvaluationError, format: Format) -> u8 {
    print_diagnosed_error(error, format, None)
}

/// [`print_evaluation_error`] with the core's diagnosis of the same input under the error: every
/// fault with its hint. `--format json` adds `"diagnosis": {"faults": [...], "omitted": N}` beside
/// `"error"` (the error object and the exit code are unchanged); `--format text` lists the
/// faults after the error line. Without a diagnosis (a component of WIT 0.1), as
/// [`print_evaluation_error`].
pub(crate) fn print_diagnosed_error(error: &EvaluationError, format: Format, diagnosis: Option<&Diagnosis>) -> u8 {
    let words = || {
        let mut words = match error.path() {
            "" => format!("scale-units: {}: {}", error.code(), error.message()),
            path => format!("scale-units: {} at {path}: {}", error.code(), error.message()),
        };
        if let Some(diagnosis) = diagnosis.filter(|diagnosis| !diagnosis.is_empty()) {
            let count = diagnosis.len();
            words.push_str("\nDiagnosis: ");
            words.push_str(&count.to_string());
            words.push_str(if count == 1 { " fault found\n" } else { " faults found\n" });
            for line in diagnosis.to_text().lines() {
                words.push_str("  ");
                words.push_str(line);
                words.push('\n');
            }
            words.pop();
        }
        words
    };
    match format {
        Format::Json => {
            let faults = diagnosis
                .filter(|diagnosis| !diagnosis.is_empty())
                .and_then(|diagnosis| serde_json::from_str::<serde_json::Value>(&diagnosis.to_json()).ok());
            let body = match faults {
                Some(faults) => serde_json::json!({ "error": error.to_json(), "diagnosis": faults }),
                None => serde_json::json!({ "error": error.to_json() }),
            };
            out!("{body}");
            if std::io::stderr().is_terminal() && !std::io::stdout().is_terminal() {
                eprintln!("{}", words());
            }
        }
        Format::Text => eprintln!("{}", words()),
    }
    exit::EVALUATION_ERROR
}

/// The component's diagnosis of a request or contract, when it has the function: `None` for a
/// component of WIT 0.1 or when the call fails (the error is printed either way).
fn diagnosis_of(policy: &Policy, text: &str, contract: bool) -> Option<Diagnosis> {
    let diagnosis = if contract { policy.diagnose_contract_json(text) } else { policy.diagnose_request_json(text) };
    diagnosis.ok()
}

fn eval(options: &Options) -> Result<u8, Failure> {
    let source = single_operand(options, "REQUEST")?;
    let request = match input::read_json(source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    let policy = load_policy(options, None)?;
    let evaluated = match policy.evaluate_json(&request)? {
        Ok(evaluated) => evaluated,
        Err(error) => {
            let diagnosis = diagnosis_of(&policy, &request, false);
            return Ok(print_diagnosed_error(&error, options.format, diagnosis.as_ref()));
        }
    };
    let provenance = &evaluated.provenance;
    let mut out = std::io::stdout().lock();
    match options.format {
        Format::Json if options.provenance => {
            let provenance = serde_json::json!({
                "component_digest": provenance.component_digest,
                "evaluator_version": provenance.evaluator_version,
            });
            // The decision's bytes are passed through exactly as the component wrote them.
            let _ = writeln!(out, "{{\"decision\":{},\"provenance\":{provenance}}}", evaluated.decision);
        }
        Format::Json => {
            let _ = writeln!(out, "{}", evaluated.decision);
        }
        Format::Text => {
            let decision: scale_units_host::Decision = serde_json::from_str(&evaluated.decision)
                .map_err(|error| Failure::Host(format!("the component returned unreadable JSON: {error}")))?;
            let explanation = policy.explain(&decision)?;
            let _ = write!(out, "{}", explanation.to_text());
            // The numbers behind the reasons; a component of WIT 0.1 has no `derive-json`.
            match policy.derive_json(&request) {
                Ok(Ok(json)) => {
                    let derivation: scale_units_host::Derivation = serde_json::from_str(&json).map_err(|error| {
                        Failure::Host(format!("the component returned an unreadable derivation: {error}"))
                    })?;
                    let _ = write!(out, "\nDerivation:\n");
                    for line in derivation.to_text().lines() {
                        let _ = writeln!(out, "  {line}");
                    }
                }
                Ok(Err(error)) => {
                    return Err(Failure::Host(format!(
                        "the component derived no derivation for its decision: {error}"
                    )));
                }
                Err(HostError::Unsupported { wit_version, .. }) => {
                    let _ = writeln!(out, "\n(No derivation: the component speaks WIT {wit_version}, before 0.2.0.)");
                }
                Err(error) => return Err(error.into()),
            }
            let _ = writeln!(out, "\nDecision {} ({})", decision.decision_id, decision.decision_digest);
            let _ = writeln!(
                out,
                "Evaluated by component {} (evaluator {})",
                provenance.component_digest, provenance.evaluator_version
            );
        }
    }
    Ok(0)
}

fn derive(options: &Options) -> Result<u8, Failure> {
    let source = single_operand(options, "REQUEST")?;
    let request = match input::read_json(source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    let policy = load_policy(options, None)?;
    let json = match policy.derive_json(&request)? {
        Ok(json) => json,
        Err(error) => {
            let diagnosis = diagnosis_of(&policy, &request, false);
            return Ok(print_diagnosed_error(&error, options.format, diagnosis.as_ref()));
        }
    };
    match options.format {
        // The derivation's bytes are passed through exactly as the component wrote them.
        Format::Json => out!("{json}"),
        Format::Text => {
            let derivation: scale_units_host::Derivation = serde_json::from_str(&json)
                .map_err(|error| Failure::Host(format!("the component returned an unreadable derivation: {error}")))?;
            let _ = write!(std::io::stdout().lock(), "{}", derivation.to_text());
        }
    }
    Ok(0)
}

fn validate(options: &Options) -> Result<u8, Failure> {
    let source = single_operand(options, "CONTRACT")?;
    let contract = match input::read_json(source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error, options.format)),
    };
    let policy = load_policy(options, None)?;
    match policy.validate_contract_json(&contract)? {
        Ok(identity) => {
            match options.format {
                Format::Json => out!(
                    "{}",
                    serde_json::json!({
                        "contract_id": identity.contract_id,
                        "contract_digest": identity.contract_digest,
                    })
                ),
                Format::Text => {
                    out!("valid contract");
                    out!("  contract_id      {}", identity.contract_id);
                    out!("  contract_digest  {}", identity.contract_digest);
                }
            }
            Ok(0)
        }
        Err(error) => {
            let diagnosis = diagnosis_of(&policy, &contract, true);
            Ok(print_diagnosed_error(&error, options.format, diagnosis.as_ref()))
        }
    }
}
