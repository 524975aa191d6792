//! Host errors: everything that can go wrong around an evaluation rather than inside it.
//!
//! A request the evaluator refuses is not a host error: it is a
//! [`scale_units_core::EvaluationError`] value, returned in the inner `Result` of every call.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::EvaluatorInfo;

/// Why a component could not be loaded or a call could not complete.
///
/// Load-time variants refuse a component; call-time variants (`OutOfFuel`, `MemoryLimit`,
/// `Trap`) mean the instance that failed was discarded and the [`Policy`](crate::Policy) keeps
/// serving later calls with fresh instances.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// The component file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// No component at any default location (see [`default_component_path`](crate::default_component_path)).
    ComponentNotFound {
        /// Every place that was looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// [`Policy::bundled`](crate::Policy::bundled) in a build that carries no component: a
    /// workspace checkout before `make component` (a crate from the registry always carries one).
    NotBundled,
    /// An expected digest was given and the component's sha256 differs.
    DigestMismatch {
        /// The digest the caller expected.
        expected: String,
        /// The digest of the bytes that were given.
        actual: String,
    },
    /// An expected digest is not `sha256:` followed by 64 lower-case hex digits.
    InvalidExpectedDigest(String),
    /// The bytes are not a valid component for this engine (corrupt, truncated, a core module…).
    InvalidComponent {
        /// The component's digest.
        digest: String,
        /// What wasmtime reported.
        reason: String,
    },
    /// The component imports something; the evaluator must import nothing.
    Imports {
        /// The names of its imports.
        imports: Vec<String>,
    },
    /// The component does not export the `scale-units:evaluator/evaluator` interface of a WIT
    /// version this host speaks (`0.1.x` or `0.2.x`) with the expected types.
    WrongWorld {
        /// What did not match.
        reason: String,
    },
    /// The component's `info` names a schema or WIT version this host does not support.
    Incompatible {
        /// What the component reported.
        info: EvaluatorInfo,
        /// Which version is unsupported.
        reason: String,
    },
    /// The loaded component predates `function`: its WIT version (same major, an earlier minor)
    /// does not export it. The component still serves every function it has.
    Unsupported {
        /// The WIT name of the function, such as `derive-json`.
        function: &'static str,
        /// The component's WIT version, such as `0.1.0`.
        wit_version: String,
    },
    /// A call used up its fuel budget (a loop that does not end, or far too much work).
    OutOfFuel {
        /// The budget, in fuel units (about one per WebAssembly instruction).
        budget: u64,
    },
    /// The component tried to grow its memory past the limit.
    MemoryLimit {
        /// The limit, in bytes.
        limit_bytes: usize,
    },
    /// The component trapped, or returned a value the host could not read.
    Trap {
        /// What wasmtime reported.
        message: String,
    },
    /// JSON text longer than [`MAX_REQUEST_BYTES`](crate::MAX_REQUEST_BYTES), refused before the
    /// component is called.
    RequestTooLarge {
        /// The text's length in bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The wasmtime engine could not be configured.
    Engine {
        /// What wasmtime reported.
        message: String,
    },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::ComponentNotFound { searched } => {
                write!(f, "no evaluator component found (build it with `make component`); looked at:")?;
                for path in searched {
                    write!(f, " {}", path.display())?;
                }
                Ok(())
            }
            Self::NotBundled => write!(
                f,
                "this build of scale-units-host carries no evaluator component; in the workspace, \
                 `make component` bundles one (a crate from the registry always carries it)"
            ),
            Self::DigestMismatch { expected, actual } => {
                write!(f, "component digest mismatch: expected {expected}, got {actual}")
            }
            Self::InvalidExpectedDigest(digest) => {
                write!(f, "expected digest {digest:?} is not sha256: and 64 lower-case hex digits")
            }
            Self::InvalidComponent { digest, reason } => write!(f, "invalid component {digest}: {reason}"),
            Self::Imports { imports } => {
                write!(f, "the component must import nothing, but imports: {}", imports.join(", "))
            }
            Self::WrongWorld { reason } => {
                write!(f, "the component does not export scale-units:evaluator/evaluator@0.1 or @0.2: {reason}")
            }
            Self::Incompatible { info, reason } => write!(
                f,
                "unsupported evaluator (version {}, schema {}, WIT {}): {reason}",
                info.evaluator_version, info.schema_version, info.wit_version
            ),
            Self::Unsupported { function, wit_version } => write!(
                f,
                "the component (WIT {wit_version}) does not export `{function}`; load a component of WIT 0.2.0 or later"
            ),
            Self::OutOfFuel { budget } => write!(f, "the evaluator ran out of fuel (budget {budget})"),
            Self::MemoryLimit { limit_bytes } => {
                write!(f, "the evaluator exceeded its memory limit of {limit_bytes} bytes")
            }
            Self::Trap { message } => write!(f, "the evaluator trapped: {message}"),
            Self::RequestTooLarge { bytes, limit } => {
                write!(f, "the request is {bytes} bytes, more than the limit of {limit}")
            }
            Self::Engine { message } => write!(f, "cannot configure wasmtime: {message}"),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
