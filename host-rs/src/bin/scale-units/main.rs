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

mod conformance;
mod input;
mod inspect;
mod serve;
mod simulate;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use scale_units_host::{EvaluationError, HostError, Policy, default_cache_dir, default_component_path};

const USAGE: &str = "\
usage:
  scale-units eval [OPTIONS] REQUEST        evaluate a request (JSON or YAML; - for stdin)
  scale-units validate [OPTIONS] CONTRACT   validate a contract: its contract_id and contract_digest
  scale-units conformance [OPTIONS] DIR...  run every vector (*.json) below the folders
  scale-units inspect COMPONENT.wasm        digest, size, info, exported world and imports
  scale-units simulate [OPTIONS] CONTRACT TRACE.csv
                                            replay a contract over a trace: steps and a summary
  scale-units serve [OPTIONS]               the decision service over HTTP (serve --help)

options:
  --format json|text        output (default: text on a terminal, json otherwise)
  --component FILE          the evaluator component (default: the one `make component` builds)
  --expect-digest sha256:…  refuse a component with another digest
  --no-cache                compile the component instead of using the precompiled cache
  --provenance              (eval, json) wrap as {\"decision\": …, \"provenance\": …}
  --native                  (conformance) run the native core instead of the component
  --known-failures FILE     (conformance) vectors expected to fail: `<id> <reason>` a line
  --initial N               (simulate) replicas before the first step (default: min_replicas)
  --delay SECONDS           (simulate) from accepting a scale to the replicas being there
  --svg FILE                (simulate) also draw signal, replicas and blocked spans as SVG

exit: 0 ok, 1 host failure or failed vector, 2 evaluation error, 64 usage";

/// Exit codes of the command.
pub(crate) mod exit {
    /// A host failure or a failed conformance vector.
    pub const FAILURE: u8 = 1;
    /// A typed evaluation error.
    pub const EVALUATION_ERROR: u8 = 2;
    /// Bad usage.
    pub const USAGE: u8 = 64;
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Text,
}

/// The parsed command line.
struct Options {
    command: String,
    operands: Vec<String>,
    format: Format,
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

fn main() -> ExitCode {
    // `serve` has options of its own (serve.rs).
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return exit_code(serve::run(std::env::args().skip(2).collect()));
    }
    let options = match parse(std::env::args().skip(1).collect()) {
        Ok(options) => options,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("scale-units: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let outcome = match options.command.as_str() {
        "eval" => eval(&options),
        "validate" => validate(&options),
        "conformance" => conformance::run(&options),
        "inspect" => inspect::run(&options),
        "simulate" => simulate::run(&options),
        _ => Err(Failure::Usage(format!("unknown command {:?}", options.command))),
    };
    exit_code(outcome)
}

fn exit_code(outcome: Result<u8, Failure>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Failure::Usage(message)) => {
            eprintln!("scale-units: {message}\n{USAGE}");
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

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let command = match args.next() {
        None => return Err(String::new()),
        Some(flag) if flag == "-h" || flag == "--help" => {
            out!("{USAGE}");
            std::process::exit(0);
        }
        Some(flag) if flag == "-V" || flag == "--version" => {
            out!("scale-units {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        Some(command) => command,
    };
    let mut options = Options {
        command,
        operands: Vec::new(),
        format: if std::io::stdout().is_terminal() { Format::Text } else { Format::Json },
        component: None,
        expect_digest: None,
        no_cache: false,
        provenance: false,
        native: false,
        known_failures: None,
        initial_replicas: None,
        actuation_delay_s: None,
        svg: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--format" => {
                options.format = match value("--format")?.as_str() {
                    "json" => Format::Json,
                    "text" => Format::Text,
                    other => return Err(format!("--format is json or text, not {other:?}")),
                }
            }
            "--component" => options.component = Some(PathBuf::from(value("--component")?)),
            "--expect-digest" => options.expect_digest = Some(value("--expect-digest")?),
            "--known-failures" => options.known_failures = Some(PathBuf::from(value("--known-failures")?)),
            "--initial" => options.initial_replicas = Some(count(&value("--initial")?, "--initial")?),
            "--delay" => options.actuation_delay_s = Some(count(&value("--delay")?, "--delay")?),
            "--svg" => options.svg = Some(PathBuf::from(value("--svg")?)),
            "--no-cache" => options.no_cache = true,
            "--provenance" => options.provenance = true,
            "--native" => options.native = true,
            "-" => options.operands.push(arg),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            _ => options.operands.push(arg),
        }
    }
    Ok(options)
}

fn count(text: &str, name: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("{name} takes a whole number, not {text:?}"))
}

/// Loads the component the options name, or the default one.
pub(crate) fn load_policy(options: &Options, file: Option<&std::path::Path>) -> Result<Policy, Failure> {
    let path = match file.or(options.component.as_deref()) {
        Some(path) => path.to_owned(),
        None => default_component_path()?,
    };
    let mut builder = Policy::builder();
    if let Some(digest) = &options.expect_digest {
        builder = builder.expected_digest(digest.clone());
    }
    if !options.no_cache
        && let Some(dir) = default_cache_dir()
    {
        builder = builder.cache_dir(dir);
    }
    Ok(builder.load_file(path)?)
}

fn single_operand<'a>(options: &'a Options, what: &str) -> Result<&'a str, Failure> {
    match options.operands.as_slice() {
        [one] => Ok(one),
        _ => Err(Failure::Usage(format!("{} takes one {what}", options.command))),
    }
}

/// Prints a typed evaluation error as `{"error": {...}}` on stdout; returns exit code 2.
fn print_evaluation_error(error: &EvaluationError) -> u8 {
    out!("{}", serde_json::json!({ "error": error.to_json() }));
    if std::io::stderr().is_terminal() {
        eprintln!("scale-units: {error}");
    }
    exit::EVALUATION_ERROR
}

fn eval(options: &Options) -> Result<u8, Failure> {
    let source = single_operand(options, "REQUEST")?;
    let request = match input::read_json(source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error)),
    };
    let policy = load_policy(options, None)?;
    let evaluated = match policy.evaluate_json(&request)? {
        Ok(evaluated) => evaluated,
        Err(error) => return Ok(print_evaluation_error(&error)),
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

fn validate(options: &Options) -> Result<u8, Failure> {
    let source = single_operand(options, "CONTRACT")?;
    let contract = match input::read_json(source)? {
        Ok(json) => json,
        Err(error) => return Ok(print_evaluation_error(&error)),
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
        Err(error) => Ok(print_evaluation_error(&error)),
    }
}
