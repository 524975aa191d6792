//! Checks of the typed model (SPEC §3–§6), in the SPEC's order where it names one. Produces a
//! [`Checked`] request whose times are parsed and whose contract identity is computed.
//!
//! Every check reports to a [`Sink`]: [`First`] stops at the first fault (the SPEC's error),
//! [`crate::diagnose::Collect`] records each fault with a hint and goes on. A check that reads a
//! value already found unreadable is not judged when collecting (its hint closure returns `None`).

use crate::cache::ContractCache;
use crate::diagnose::{First, Notes, Sink, listed, listed_or};
use crate::error::{ErrorCode, EvaluationError};
use crate::identity;
use crate::json::{Path, field_name, invalid_field};
use crate::model::{
    CapacityObservation, ContinuityObservation, ContractIdentity, EvaluationRequest, QuotaObservation,
    SafetyObservation, ScaleUnitContract, SignalObservation,
};
use crate::scalar;
use crate::time::{self, TimeError};
use crate::vocab::{CapacityAxis, ContinuityMode, QuotaScope, SignalKind};

pub(crate) const MAX_SIGNALS: usize = 16;
pub(crate) const MAX_CAPACITY_AXES: usize = 32;
pub(crate) const MAX_DEMANDS: usize = 32;
pub(crate) const MAX_QUOTAS: usize = 16;
pub(crate) const MAX_OBSERVATIONS: usize = 64;
pub(crate) const MAX_REPLICAS: u64 = 10_000;
pub(crate) const MAX_SECONDS: u64 = 86_400;
pub(crate) const MAX_AMOUNT: u64 = 1_000_000_000_000_000;
const MAX_TARGET: u64 = 1_000_000_000_000;
const MAX_SESSIONS: u64 = 1_000_000_000_000;
const MAX_PARTITIONS: u64 = 1_000_000;
const MAX_VERSION: u64 = 2_147_483_647;
const MAX_CONTRACT_ID_CHARS: usize = 100;
const ONE_MILLION_PPM: i64 = 1_000_000;

/// The documented bounds of an integer field, by its wire name (every name has one meaning in
/// schema 1), for messages about integers that do not even fit the field's type. The checks
/// below use the same constants; a test holds the two to each other.
pub(crate) fn bounds(name: &str) -> Option<(u64, u64)> {
    Some(match name {
        "min_replicas" | "current_replicas" => (0, MAX_REPLICAS),
        "max_replicas" | "scale_up_step" | "scale_down_step" => (1, MAX_REPLICAS),
        "target" => (1, MAX_TARGET),
        "scale_up_cooldown_s" | "scale_down_cooldown_s" | "drain_seconds" | "lease_ttl_s" | "max_drain_seconds" => {
            (0, MAX_SECONDS)
        }
        "version" => (1, MAX_VERSION),
        "per_replica" | "value" | "allocatable" | "reserved" | "used" | "limit" => (0, MAX_AMOUNT),
        "partitions_per_replica" => (0, MAX_PARTITIONS),
        "active_sessions" | "active_streams" => (0, MAX_SESSIONS),
        _ => return None,
    })
}

/// An observation's freshness window, in microseconds since the epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    observed_at: i64,
    expires_at: i64,
}

impl Window {
    /// Fresh means `observed_at <= now < expires_at` (SPEC §5).
    pub(crate) fn is_fresh(self, now: i64) -> bool {
        self.observed_at <= now && now < self.expires_at
    }

    /// `(observed_at, expires_at)`, for a derivation.
    pub(crate) fn bounds(self) -> (i64, i64) {
        (self.observed_at, self.expires_at)
    }
}

/// A request that passed every precondition, with its times parsed.
pub(crate) struct Checked<'a> {
    pub request: &'a EvaluationRequest,
    pub contract_id: String,
    pub now: i64,
    pub last_action_at: Option<i64>,
    pub signal: Option<Window>,
    /// One window per entry of `request.capacities`, same order.
    pub capacities: Vec<Window>,
    /// One window per entry of `request.quotas`, same order.
    pub quotas: Vec<Window>,
    pub continuity: Option<Window>,
    pub safety: Option<Window>,
}

// Out of line, as the other error builders and `knows_items`/`knows_all`/`bounded`: called from
// dozens of checks, inlined at each they cost the component kilobytes (docs/DECISIONS.md, "The
// component's size").
#[inline(never)]
fn error(code: ErrorCode, path: &Path<'_>, message: impl Into<String>) -> EvaluationError {
    EvaluationError::new(code, message, path.render())
}

/// An error whose message names the last field of its path.
#[inline(never)]
fn named_error(code: ErrorCode, path: &Path<'_>, message: impl FnOnce(&str) -> String) -> EvaluationError {
    let path = path.render();
    let message = message(field_name(&path));
    EvaluationError::new(code, message, path)
}

/// The last field name of a path.
fn name_of(path: &Path<'_>) -> String {
    field_name(&path.render()).to_owned()
}

/// Whether the list at `list` and the named fields of each of its `len` items can be judged.
#[inline(never)]
fn knows_items(notes: &Notes, list: &Path<'_>, len: usize, fields: &[&str]) -> bool {
    notes.knows_shallow(list) && (0..len).all(|i| fields.iter().all(|f| notes.knows(&list.index(i).field(f))))
}

/// Whether every path can be judged (nothing at, above or below it was unreadable).
#[inline(never)]
fn knows_all(notes: &Notes, paths: &[Path<'_>]) -> bool {
    paths.iter().all(|path| notes.knows(path))
}

#[inline(never)]
fn bounded<S: Sink>(sink: &mut S, value: u64, low: u64, high: u64, path: &Path<'_>) -> Result<(), S::Stop> {
    if (low..=high).contains(&value) {
        return Ok(());
    }
    sink.unreadable(
        path,
        || named_error(ErrorCode::InvalidField, path, |name| format!("{name} must be in {low}..={high}, not {value}")),
        |notes| notes.knows(path).then(|| format!("set `{}` to a value in {low}..={high}", name_of(path))),
    )
}

fn at_most<S: Sink>(sink: &mut S, len: usize, max: usize, path: &Path<'_>) -> Result<(), S::Stop> {
    if len <= max {
        return Ok(());
    }
    sink.fault(
        || {
            named_error(ErrorCode::InvalidField, path, |name| {
                format!("{name} may hold at most {max} entries, not {len}")
            })
        },
        |notes| {
            notes
                .knows_shallow(path)
                .then(|| format!("remove {} of the entries of `{}` (at most {max})", len - max, name_of(path)))
        },
    )
}

/// What is wrong with a string that is not a bounded opaque reference.
fn ref_fault(value: &str) -> String {
    let count = value.chars().count();
    let allowed = "a reference is 1 to 256 characters: a letter or digit, then letters, digits and `. _ : / @ + -`";
    if value.is_empty() {
        return format!("it is empty; {allowed}, such as `unit:checkout`");
    }
    if count > 256 {
        return format!("it is {count} characters long; {allowed}");
    }
    let mut chars = value.chars();
    if let Some(first) = chars.next()
        && !first.is_ascii_alphanumeric()
    {
        return format!("it starts with {}; {allowed}", char_text(first));
    }
    // A `matches!`, not `"._:/@+-".contains(c)`: for a non-ASCII `c` that is a substring search,
    // whose code (about 3.5 KB) the component need not carry.
    match value
        .chars()
        .enumerate()
        .skip(1)
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '@' | '+' | '-')))
    {
        Some((at, c)) => format!("{} at character {} is not allowed; {allowed}", char_text(c), at + 1),
        None => allowed.to_owned(),
    }
}

/// A character as a hint shows it: in backquotes, with its code point unless it is plain ASCII.
/// Control characters and whitespace other than the space are escaped (`\n`, `\u{a0}`), every
/// other character is shown as it is. Not `char::escape_debug`: its tables of printable and
/// combining characters were kilobytes of the component for this one hint.
fn char_text(c: char) -> String {
    if c.is_control() || (c.is_whitespace() && c != ' ') {
        format!("`{}` (U+{:04X})", c.escape_default(), u32::from(c))
    } else if !c.is_ascii() || c == ' ' {
        format!("`{c}` (U+{:04X})", u32::from(c))
    } else {
        format!("`{c}`")
    }
}

fn check_ref<S: Sink>(sink: &mut S, value: &str, path: &Path<'_>) -> Result<(), S::Stop> {
    if !scalar::is_ref(value) {
        return sink.unreadable(
            path,
            || named_error(ErrorCode::InvalidRef, path, |name| format!("{name} must be a bounded opaque reference")),
            |notes| notes.knows(path).then(|| format!("fix `{}`: {}", name_of(path), ref_fault(value))),
        );
    }
    if scalar::looks_like_credential(value) {
        return sink.unreadable(
            path,
            || {
                named_error(ErrorCode::CredentialInRef, path, |name| {
                    format!("{name} must not contain credentials or raw payloads")
                })
            },
            |notes| {
                notes.knows(path).then(|| {
                    let word = scalar::credential_word(value).unwrap_or("a credential word");
                    format!(
                        "`{}` contains `{word}`, which reads as a credential or raw payload: name the thing by an \
                         opaque reference (such as `vault:db-main`), never carry a secret or payload in a ref",
                        name_of(path)
                    )
                })
            },
        );
    }
    Ok(())
}

/// What is wrong with a string that is not a digest.
fn digest_fault(value: &str) -> String {
    let form = "a digest is `sha256:` followed by 64 lower-case hex digits";
    let Some(hex) = value.strip_prefix("sha256:") else {
        return match value.split_once(':') {
            Some((algorithm, _)) if algorithm.eq_ignore_ascii_case("sha256") => {
                format!("write the prefix `sha256:` in lower case; {form}")
            }
            Some((algorithm, _)) => format!("`{algorithm}` is not supported; {form}"),
            None => format!("it has no `sha256:` prefix; {form}"),
        };
    };
    if hex.bytes().all(|b| b.is_ascii_hexdigit()) && hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return format!("write the hex digits in lower case; {form}");
    }
    if let Some(c) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return format!("{} is not a hex digit; {form}", char_text(c));
    }
    format!("it has {} hex digits; {form}", hex.chars().count())
}

fn check_digest<S: Sink>(sink: &mut S, value: &str, path: &Path<'_>) -> Result<(), S::Stop> {
    if scalar::is_digest(value) {
        return Ok(());
    }
    sink.unreadable(
        path,
        || {
            named_error(ErrorCode::InvalidDigest, path, |name| {
                format!("{name} must be sha256: followed by 64 lower-case hex digits")
            })
        },
        |notes| notes.knows(path).then(|| format!("fix `{}`: {}", name_of(path), digest_fault(value))),
    )
}

/// Parses a wire time found at `path` (`0` stands in for a bad one when collecting).
pub(crate) fn check_time<S: Sink>(sink: &mut S, value: &str, path: &Path<'_>) -> Result<i64, S::Stop> {
    let fault = match time::parse(value) {
        Ok(at) => return Ok(at),
        Err(fault) => fault,
    };
    sink.unreadable(
        path,
        || {
            let path = path.render();
            let name = field_name(&path);
            let message = match fault {
                TimeError::Naive => format!("{name} must be timezone-aware"),
                TimeError::OutOfRange => format!("{name} is outside the supported time range"),
                TimeError::Malformed => {
                    format!("{name} must be an RFC 3339 time such as 2026-08-19T12:00:00Z")
                }
            };
            EvaluationError::new(ErrorCode::InvalidTime, message, path)
        },
        |notes| {
            notes.knows(path).then(|| {
                let name = name_of(path);
                match fault {
                    TimeError::Naive => {
                        format!("add an offset to `{name}`: `{value}Z` for UTC, or `+HH:MM`/`-HH:MM` after the time")
                    }
                    TimeError::OutOfRange => {
                        format!("give `{name}` a time whose UTC year is in 2000..=2300")
                    }
                    TimeError::Malformed => format!(
                        "write `{name}` as `YYYY-MM-DDTHH:MM:SS`, optionally `.` and 1 to 6 digits, then `Z` or \
                         `+HH:MM`/`-HH:MM` (upper-case T and Z, a real calendar date): `{value}` is not one"
                    ),
                }
            })
        },
    )?;
    Ok(0)
}

#[inline(never)]
fn policy_error(path: &Path<'_>, message: &str) -> EvaluationError {
    error(ErrorCode::InvalidPolicy, path, message)
}

#[inline(never)]
fn contract_error(path: &Path<'_>, message: impl Into<String>) -> EvaluationError {
    error(ErrorCode::InvalidContract, path, message)
}

/// Whether two items are equal. Quadratic, on lists already bounded to at most 64 entries: no
/// allocation of a set, and less code in the component than a sorted set.
fn has_duplicates<T: PartialEq>(items: impl IntoIterator<Item = T>) -> bool {
    let items: Vec<T> = items.into_iter().collect();
    items.iter().enumerate().any(|(i, item)| items.get(..i).is_some_and(|before| before.contains(item)))
}

/// The items that appear more than once, each once, in first-seen order.
fn repeated<T: PartialEq + Copy>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let items: Vec<T> = items.into_iter().collect();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let seen_before = items.get(..i).is_some_and(|before| before.contains(item));
        if seen_before && !out.contains(item) {
            out.push(*item);
        }
    }
    out
}

/// Validates a contract found at `path` (SPEC §4) and returns its computed identity.
pub(crate) fn contract(contract: &ScaleUnitContract, path: &Path<'_>) -> Result<ContractIdentity, EvaluationError> {
    contract_in(&mut First, contract, path)
}

/// [`contract`], reporting to a sink.
pub(crate) fn contract_in<S: Sink>(
    sink: &mut S,
    contract: &ScaleUnitContract,
    path: &Path<'_>,
) -> Result<ContractIdentity, S::Stop> {
    let at = |name: &'static str| path.field(name);
    let c = contract;

    if c.schema_version != crate::SCHEMA_VERSION {
        let version_path = at("schema_version");
        sink.unreadable(
            &version_path,
            || invalid_field(version_path.render(), "schema_version must be \"1\""),
            |notes| {
                notes
                    .knows(&version_path)
                    .then(|| "write `\"schema_version\": \"1\"` (a string), or leave it out".to_owned())
            },
        )?;
    }
    check_ref(sink, &c.unit_ref, &at("unit_ref"))?;
    bounded(sink, c.version, 1, MAX_VERSION, &at("version"))?;

    policy_in(sink, c, path)?;

    at_most(sink, c.allowed_signals.len(), MAX_SIGNALS, &at("allowed_signals"))?;
    at_most(sink, c.required_capacity_axes.len(), MAX_CAPACITY_AXES, &at("required_capacity_axes"))?;
    at_most(sink, c.replica_demands.len(), MAX_DEMANDS, &at("replica_demands"))?;
    at_most(sink, c.quotas.len(), MAX_QUOTAS, &at("quotas"))?;
    at_most(sink, c.engine_authority_axes.len(), MAX_CAPACITY_AXES, &at("engine_authority_axes"))?;

    parts_in(sink, c, path)?;

    let id_path = at("contract_id");
    if c.contract_id.chars().count() > MAX_CONTRACT_ID_CHARS {
        sink.unreadable(
            &id_path,
            || invalid_field(id_path.render(), "contract_id may be at most 100 characters"),
            |notes| {
                notes.knows(&id_path).then(|| {
                    format!(
                        "`contract_id` is {} characters: leave it out (the identity is computed) or write the computed one",
                        c.contract_id.chars().count()
                    )
                })
            },
        )?;
    }
    let digest_path = at("contract_digest");
    if !c.contract_digest.is_empty() {
        check_digest(sink, &c.contract_digest, &digest_path)?;
    }

    profile_in(sink, c, path)?;

    let identity = identity::contract(c);
    if !c.contract_id.is_empty() && c.contract_id != identity.contract_id {
        sink.fault(
            || error(ErrorCode::IdentityMismatch, &id_path, "contract_id does not match immutable identity"),
            |notes| {
                notes.knows(path).then(|| {
                    format!(
                        "this contract's id is `{}`: write that, or leave `contract_id` out to skip the check (a \
                         changed field changes the id)",
                        identity.contract_id
                    )
                })
            },
        )?;
    }
    if !c.contract_digest.is_empty() && c.contract_digest != identity.contract_digest {
        sink.fault(
            || error(ErrorCode::IdentityMismatch, &digest_path, "contract_digest does not match immutable identity"),
            |notes| {
                notes.knows(path).then(|| {
                    format!(
                        "this contract's digest is `{}`: write that, or leave `contract_digest` out to skip the check",
                        identity.contract_digest
                    )
                })
            },
        )?;
    }
    Ok(identity)
}

/// SPEC §4.1: the policy's bounds, then its rules in order.
fn policy_in<S: Sink>(sink: &mut S, c: &ScaleUnitContract, path: &Path<'_>) -> Result<(), S::Stop> {
    let at = |name: &'static str| path.field(name);
    let policy_path = at("policy");
    let p = &c.policy;
    let pp = |name: &'static str| policy_path.field(name);
    bounded(sink, p.min_replicas, 0, MAX_REPLICAS, &pp("min_replicas"))?;
    bounded(sink, p.max_replicas, 1, MAX_REPLICAS, &pp("max_replicas"))?;
    bounded(sink, p.target, 1, MAX_TARGET, &pp("target"))?;
    bounded(sink, p.scale_up_step, 1, MAX_REPLICAS, &pp("scale_up_step"))?;
    bounded(sink, p.scale_down_step, 1, MAX_REPLICAS, &pp("scale_down_step"))?;
    bounded(sink, p.scale_up_cooldown_s, 0, MAX_SECONDS, &pp("scale_up_cooldown_s"))?;
    bounded(sink, p.scale_down_cooldown_s, 0, MAX_SECONDS, &pp("scale_down_cooldown_s"))?;
    bounded(sink, p.drain_seconds, 0, MAX_SECONDS, &pp("drain_seconds"))?;
    let (min, max) = (pp("min_replicas"), pp("max_replicas"));
    if p.min_replicas > p.max_replicas {
        sink.fault(
            || policy_error(&policy_path, "min_replicas cannot exceed max_replicas"),
            |notes| {
                knows_all(notes, &[min, max]).then(|| {
                    format!(
                        "{} and {}: raise `max_replicas` to at least {} or lower `min_replicas`",
                        notes.value_of(&min, p.min_replicas),
                        notes.value_of(&max, p.max_replicas),
                        p.min_replicas
                    )
                })
            },
        )?;
    }
    let to_zero = pp("allow_scale_to_zero");
    if p.allow_scale_to_zero && p.min_replicas != 0 {
        sink.fault(
            || policy_error(&policy_path, "scale-to-zero requires min_replicas=0"),
            |notes| {
                knows_all(notes, &[to_zero, min]).then(|| {
                    format!(
                        "{}: set `min_replicas` to 0, or `allow_scale_to_zero` to false",
                        notes.value_of(&min, p.min_replicas)
                    )
                })
            },
        )?;
    }
    for (step_name, step, message) in [
        ("scale_up_step", p.scale_up_step, "scale_up_step cannot exceed max_replicas"),
        ("scale_down_step", p.scale_down_step, "scale_down_step cannot exceed max_replicas"),
    ] {
        if step > p.max_replicas {
            let step_path = pp(step_name);
            sink.fault(
                || policy_error(&policy_path, message),
                |notes| {
                    knows_all(notes, &[step_path, max]).then(|| {
                        format!(
                            "{} and {}: raise `max_replicas` to at least {step} or lower `{step_name}`",
                            notes.value_of(&step_path, step),
                            notes.value_of(&max, p.max_replicas)
                        )
                    })
                },
            )?;
        }
    }

    Ok(())
}

/// SPEC §4.2: demands, quota bindings, the partition lease and continuity, in that order.
fn parts_in<S: Sink>(sink: &mut S, c: &ScaleUnitContract, path: &Path<'_>) -> Result<(), S::Stop> {
    let at = |name: &'static str| path.field(name);
    let demands_path = at("replica_demands");
    for (i, demand) in c.replica_demands.iter().enumerate() {
        bounded(sink, demand.per_replica, 0, MAX_AMOUNT, &demands_path.index(i).field("per_replica"))?;
    }
    let quotas_path = at("quotas");
    for (i, binding) in c.quotas.iter().enumerate() {
        let binding_path = quotas_path.index(i);
        let (scope, per_replica) = (binding_path.field("scope"), binding_path.field("per_replica"));
        check_ref(sink, &binding.quota_ref, &binding_path.field("quota_ref"))?;
        bounded(sink, binding.per_replica, 0, MAX_AMOUNT, &per_replica)?;
        if binding.scope == QuotaScope::ProviderGlobal && binding.multiplicative {
            let multiplicative = binding_path.field("multiplicative");
            sink.fault(
                || contract_error(&binding_path, "provider-global quota cannot be multiplied per replica"),
                |notes| {
                    knows_all(notes, &[scope, multiplicative]).then(|| {
                        "set `multiplicative` to false (or leave it out): a provider-global limit is one limit \
                         shared by every replica, it does not grow with them"
                            .to_owned()
                    })
                },
            )?;
        }
        if binding.scope == QuotaScope::ProviderGlobal && binding.per_replica == 0 {
            sink.fault(
                || contract_error(&binding_path, "provider-global quota requires a declared per-replica demand"),
                |notes| {
                    knows_all(notes, &[scope, per_replica]).then(|| {
                        "set `per_replica` to what one replica draws from the provider quota (at least 1)".to_owned()
                    })
                },
            )?;
        }
    }
    let lease_path = at("partition_lease");
    let lease = &c.partition_lease;
    let lp = |name: &'static str| lease_path.field(name);
    bounded(sink, lease.partitions_per_replica, 0, MAX_PARTITIONS, &lp("partitions_per_replica"))?;
    bounded(sink, lease.lease_ttl_s, 0, MAX_SECONDS, &lp("lease_ttl_s"))?;
    let (partitioned, per_replica) = (lp("partitioned"), lp("partitions_per_replica"));
    let (leased, ttl, fencing) = (lp("lease_required"), lp("lease_ttl_s"), lp("fencing_required"));
    if lease.partitioned && lease.partitions_per_replica < 1 {
        sink.fault(
            || contract_error(&lease_path, "partitioned surfaces require partitions_per_replica"),
            |notes| {
                knows_all(notes, &[partitioned, per_replica]).then(|| {
                    format!(
                        "{}: set `partitions_per_replica` to the partitions one replica owns (at least 1)",
                        notes.value_of(&per_replica, lease.partitions_per_replica)
                    )
                })
            },
        )?;
    }
    if lease.lease_required && (lease.lease_ttl_s < 1 || !lease.fencing_required) {
        sink.fault(
            || contract_error(&lease_path, "leased surfaces require a TTL and fencing"),
            |notes| {
                knows_all(notes, &[leased, ttl, fencing]).then(|| {
                    let mut fixes = Vec::new();
                    if lease.lease_ttl_s < 1 {
                        fixes.push(format!(
                            "{}: set it to the lease's time-to-live in seconds (at least 1)",
                            notes.value_of(&ttl, lease.lease_ttl_s)
                        ));
                    }
                    if !lease.fencing_required {
                        fixes.push(format!("{}: set it to true", notes.value_of(&fencing, false)));
                    }
                    fixes.join("; ")
                })
            },
        )?;
    }
    if lease.fencing_required && !lease.lease_required {
        sink.fault(
            || contract_error(&lease_path, "fencing cannot be declared without leases"),
            |notes| {
                knows_all(notes, &[leased, fencing]).then(|| {
                    format!(
                        "{}: set it to true (with `lease_ttl_s`), or set `fencing_required` to false",
                        notes.value_of(&leased, false)
                    )
                })
            },
        )?;
    }
    let continuity_path = at("continuity");
    let continuity = &c.continuity;
    let (mode_path, store_path) = (continuity_path.field("mode"), continuity_path.field("external_store_ref"));
    if let Some(store) = &continuity.external_store_ref {
        check_ref(sink, store, &store_path)?;
    }
    bounded(sink, continuity.max_drain_seconds, 0, MAX_SECONDS, &continuity_path.field("max_drain_seconds"))?;
    match (continuity.mode, &continuity.external_store_ref) {
        (ContinuityMode::Externalized, None) => {
            sink.fault(
                || contract_error(&continuity_path, "externalized continuity requires a store reference"),
                |notes| {
                    knows_all(notes, &[mode_path, store_path]).then(|| {
                        "add `external_store_ref`, the reference of the store that holds the sessions (such as \
                         `store:sessions`), or choose another `mode`"
                            .to_owned()
                    })
                },
            )?;
        }
        (ContinuityMode::Stateless | ContinuityMode::SessionAffine, Some(_)) => {
            sink.fault(
                || contract_error(&continuity_path, "only externalized continuity may declare a store reference"),
                |notes| {
                    knows_all(notes, &[mode_path, store_path]).then(|| {
                        format!(
                            "`mode` is {}: remove `external_store_ref`, or set `mode` to `externalized`",
                            continuity.mode
                        )
                    })
                },
            )?;
        }
        _ => {}
    }
    if continuity.mode == ContinuityMode::Stateless && continuity.block_scale_down_with_active {
        let block = continuity_path.field("block_scale_down_with_active");
        sink.fault(
            || contract_error(&continuity_path, "stateless continuity cannot block scale-down on active sessions"),
            |notes| {
                knows_all(notes, &[mode_path, block]).then(|| {
                    if notes.is_default(&block) {
                        "`block_scale_down_with_active` is not written, so it takes its default true, which a \
                         stateless contract refuses: write `\"block_scale_down_with_active\": false` in `continuity`"
                            .to_owned()
                    } else {
                        "set `block_scale_down_with_active` to false: stateless replicas hold no sessions to wait for"
                            .to_owned()
                    }
                })
            },
        )?;
    }

    Ok(())
}

/// SPEC §4.3: the contract checks against the surface profile, in this exact order (1–14).
fn profile_in<S: Sink>(sink: &mut S, c: &ScaleUnitContract, path: &Path<'_>) -> Result<(), S::Stop> {
    let at = |name: &'static str| path.field(name);
    let policy_path = at("policy");
    let pp = |name: &'static str| policy_path.field(name);
    let p = &c.policy;
    let lease = &c.partition_lease;
    let continuity = &c.continuity;
    let continuity_path = at("continuity");
    let mode_path = continuity_path.field("mode");
    let lease_path = at("partition_lease");
    let demands_path = at("replica_demands");
    let quotas_path = at("quotas");
    let here = path;
    let surface = c.surface.as_str();
    let profile = c.surface.profile();
    let surface_path = at("surface");
    let signals = at("allowed_signals");
    let axes = at("required_capacity_axes");
    let engine = at("engine_authority_axes");
    let target_signal = pp("target_signal");
    if has_duplicates(&c.allowed_signals) {
        sink.fault(
            || contract_error(here, "allowed signal names must be unique"),
            |notes| {
                notes.knows(&signals).then(|| {
                    format!("remove the repeated {} from `allowed_signals`", listed(repeated(&c.allowed_signals)))
                })
            },
        )?;
    }
    if has_duplicates(&c.required_capacity_axes) {
        sink.fault(
            || contract_error(here, "required capacity axes must be unique"),
            |notes| {
                notes.knows(&axes).then(|| {
                    format!(
                        "remove the repeated {} from `required_capacity_axes`",
                        listed(repeated(&c.required_capacity_axes))
                    )
                })
            },
        )?;
    }
    if c.allowed_signals.is_empty() || !c.allowed_signals.iter().all(|s| profile.allowed_signals.contains(s)) {
        sink.fault(
            || contract_error(here, format!("{surface} contract declares a signal outside its allowed vocabulary")),
            |notes| {
                knows_all(notes, &[surface_path, signals]).then(|| {
                    let outside: Vec<_> =
                        c.allowed_signals.iter().filter(|s| !profile.allowed_signals.contains(s)).collect();
                    if outside.is_empty() {
                        format!(
                            "`allowed_signals` is empty: add the signals the unit is observed by, from {}",
                            listed(profile.allowed_signals)
                        )
                    } else {
                        format!(
                            "remove {} from `allowed_signals`: {surface} allows {}",
                            listed(outside),
                            listed(profile.allowed_signals)
                        )
                    }
                })
            },
        )?;
    }
    if !c.allowed_signals.contains(&p.target_signal) {
        sink.fault(
            || contract_error(here, "target_signal must be in allowed_signals"),
            |notes| {
                knows_all(notes, &[signals, target_signal, surface_path]).then(|| {
                    let target = p.target_signal;
                    if profile.allowed_signals.contains(&target) {
                        format!("add `{target}` to `allowed_signals`, or set `policy.target_signal` to one of them")
                    } else {
                        format!(
                            "`{target}` is not a signal of {surface}: set `policy.target_signal` to one of {}",
                            listed(profile.allowed_signals)
                        )
                    }
                })
            },
        )?;
    }
    // The lists a hint names are made only for the hint: the SPEC's path tests membership alone.
    let not_held = |axes: &'static [CapacityAxis]| axes.iter().filter(|a| !c.required_capacity_axes.contains(a));
    let omitted = !profile.required_capacity_axes.iter().all(|a| c.required_capacity_axes.contains(a));
    if omitted {
        sink.fault(
            || contract_error(here, format!("{surface} contract omitted a required hard capacity axis")),
            |notes| {
                knows_all(notes, &[surface_path, axes]).then(|| {
                    let missing_axes: Vec<_> = not_held(profile.required_capacity_axes).collect();
                    let undemanded = missing_axes.iter().filter(|a| !c.replica_demands.iter().any(|d| d.axis == ***a));
                    let demands = listed(undemanded);
                    let demands = if demands.is_empty() {
                        String::new()
                    } else {
                        format!(", and to `replica_demands` a demand for {demands}")
                    };
                    format!(
                        "add {} to `required_capacity_axes`{demands} ({surface} requires {})",
                        listed(&missing_axes),
                        listed(profile.required_capacity_axes)
                    )
                })
            },
        )?;
    }
    // Every profile's engine axes are among its required axes, so when check 5 fired this one
    // says nothing new; the SPEC's path never gets here then (check 5 stopped it).
    if !omitted && !profile.engine_authority_axes.iter().all(|a| c.required_capacity_axes.contains(a)) {
        sink.fault(
            || contract_error(here, format!("{surface} engine authority axes must be hard capacity axes")),
            |notes| {
                knows_all(notes, &[surface_path, axes]).then(|| {
                    format!("add {} to `required_capacity_axes`", listed(not_held(profile.engine_authority_axes)))
                })
            },
        )?;
    }
    if has_duplicates(&c.engine_authority_axes) {
        sink.fault(
            || contract_error(here, "engine authority axes must be unique"),
            |notes| {
                notes.knows(&engine).then(|| {
                    format!(
                        "remove the repeated {} from `engine_authority_axes`",
                        listed(repeated(&c.engine_authority_axes))
                    )
                })
            },
        )?;
    }
    // The same sets (neither list repeats an axis).
    let same = c.engine_authority_axes.iter().all(|a| profile.engine_authority_axes.contains(a))
        && profile.engine_authority_axes.iter().all(|a| c.engine_authority_axes.contains(a));
    if !same {
        sink.fault(
            || contract_error(here, "engine_authority_axes must match the surface profile"),
            |notes| knows_all(notes, &[surface_path, engine]).then(|| engine_hint(notes, c, &engine)),
        )?;
    }
    if !profile.continuity_modes.contains(&continuity.mode) {
        sink.fault(
            || contract_error(here, format!("{surface} does not support continuity mode {}", continuity.mode)),
            |notes| {
                knows_all(notes, &[surface_path, mode_path]).then(|| {
                    let externalized = if profile.continuity_modes.contains(&ContinuityMode::Externalized) {
                        " (`externalized` also needs `external_store_ref`)"
                    } else {
                        ""
                    };
                    format!(
                        "set `continuity.mode` to {}: the modes {surface} supports{externalized}",
                        listed_or(profile.continuity_modes)
                    )
                })
            },
        )?;
    }
    if profile.partition_and_fenced_lease && !(lease.partitioned && lease.lease_required && lease.fencing_required) {
        sink.fault(
            || contract_error(here, format!("{surface} requires partition and fenced lease contracts")),
            |notes| knows_all(notes, &[surface_path, lease_path]).then(|| lease_hint(notes, c, &lease_path)),
        )?;
    }
    let knows_demand_axes = |notes: &Notes| knows_items(notes, &demands_path, c.replica_demands.len(), &["axis"]);
    if has_duplicates(c.replica_demands.iter().map(|d| d.axis)) {
        sink.fault(
            || contract_error(here, "replica demand axes must be unique"),
            |notes| {
                knows_demand_axes(notes).then(|| {
                    format!(
                        "keep one demand per axis in `replica_demands`: there is more than one for {}",
                        listed(repeated(c.replica_demands.iter().map(|d| d.axis)))
                    )
                })
            },
        )?;
    }
    if !c.required_capacity_axes.iter().all(|axis| c.replica_demands.iter().any(|d| d.axis == *axis)) {
        sink.fault(
            || contract_error(here, "every required capacity axis needs a per-replica demand"),
            |notes| {
                (notes.knows(&axes) && knows_demand_axes(notes)).then(|| {
                    let undemanded: Vec<_> = c
                        .required_capacity_axes
                        .iter()
                        .filter(|axis| !c.replica_demands.iter().any(|d| d.axis == **axis))
                        .collect();
                    let example = undemanded.first().map_or(String::new(), |axis| {
                        format!(", such as `{{\"axis\": \"{axis}\", \"per_replica\": 1}}` with what one replica uses")
                    });
                    format!("add to `replica_demands` a demand for {}{example}", listed(&undemanded))
                })
            },
        )?;
    }
    if has_duplicates(c.quotas.iter().map(|q| q.quota_ref.as_str())) {
        sink.fault(
            || contract_error(here, "quota bindings must be unique"),
            |notes| {
                knows_items(notes, &quotas_path, c.quotas.len(), &["quota_ref"]).then(|| {
                    format!(
                        "keep one binding per `quota_ref` in `quotas`: there is more than one for {}",
                        listed(repeated(c.quotas.iter().map(|q| q.quota_ref.as_str())))
                    )
                })
            },
        )?;
    }
    if !profile.provider_quota_axes.is_empty() {
        let knows_bindings = |notes: &Notes, fields: &[&str]| {
            notes.knows(&surface_path) && knows_items(notes, &quotas_path, c.quotas.len(), fields)
        };
        let mut provider = c.quotas.iter().filter(|q| q.scope == QuotaScope::ProviderGlobal).peekable();
        let axes_text = || listed_or(profile.provider_quota_axes);
        if provider.peek().is_none() {
            sink.fault(
                || contract_error(here, format!("{surface} requires one provider-global quota binding")),
                |notes| {
                    knows_bindings(notes, &["scope"]).then(|| {
                        let axis = profile.provider_quota_axes.first().map_or("", |a| a.as_str());
                        let axes_text = axes_text();
                        format!(
                            "add to `quotas` a binding with `\"scope\": \"provider_global\"` on {axes_text}, such as \
                             `{{\"quota_ref\": \"provider:name\", \"axis\": \"{axis}\", \"scope\": \"provider_global\", \
                             \"per_replica\": 1}}`"
                        )
                    })
                },
            )?;
        } else if !provider.any(|q| profile.provider_quota_axes.contains(&q.axis)) {
            sink.fault(
                || contract_error(here, format!("{surface} provider quota binding has an unsupported axis")),
                |notes| {
                    knows_bindings(notes, &["scope", "axis"]).then(|| {
                        let axes_text = axes_text();
                        format!(
                            "set the `axis` of a provider-global binding to {axes_text}, the axes {surface} supports"
                        )
                    })
                },
            )?;
        }
    }

    Ok(())
}

/// What `engine_authority_axes` must be for the contract's surface.
fn engine_hint(notes: &Notes, c: &ScaleUnitContract, engine: &Path<'_>) -> String {
    let profile = c.surface.profile();
    let wanted = profile.engine_authority_axes.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
    if notes.is_default(engine) {
        return format!(
            "`engine_authority_axes` is not written, so it takes its default []: write `\"engine_authority_axes\": \
             [{wanted}]` ({} requires them; they are never filled in for you)",
            c.surface
        );
    }
    if profile.engine_authority_axes.is_empty() {
        return format!("remove `engine_authority_axes` or leave it empty: {} has no engine authority axes", c.surface);
    }
    let missing: Vec<_> =
        profile.engine_authority_axes.iter().filter(|a| !c.engine_authority_axes.contains(a)).collect();
    let extra: Vec<_> = c.engine_authority_axes.iter().filter(|a| !profile.engine_authority_axes.contains(a)).collect();
    let mut detail = Vec::new();
    if !missing.is_empty() {
        detail.push(format!("missing {}", listed(missing)));
    }
    if !extra.is_empty() {
        detail.push(format!("not of {}: {}", c.surface, listed(extra)));
    }
    format!("write `\"engine_authority_axes\": [{wanted}]` ({})", detail.join("; "))
}

/// What `partition_lease` must say for a surface that needs partitions and a fenced lease.
fn lease_hint(notes: &Notes, c: &ScaleUnitContract, lease_path: &Path<'_>) -> String {
    let example = "`\"partition_lease\": {\"partitioned\": true, \"partitions_per_replica\": 1, \"lease_required\": \
                   true, \"lease_ttl_s\": 30, \"fencing_required\": true}` with your values";
    if notes.is_default(lease_path) {
        return format!(
            "`partition_lease` is not written, so every field takes its default (false, 0): write {example} ({} needs \
             partitions and a fenced lease)",
            c.surface
        );
    }
    let lease = &c.partition_lease;
    let unset: Vec<&str> = [
        ("partitioned", lease.partitioned),
        ("lease_required", lease.lease_required),
        ("fencing_required", lease.fencing_required),
    ]
    .into_iter()
    .filter(|(_, set)| !set)
    .map(|(name, _)| name)
    .collect();
    let defaulted: Vec<&str> = unset.iter().copied().filter(|name| notes.is_default(&lease_path.field(name))).collect();
    let note = if defaulted.is_empty() {
        String::new()
    } else {
        format!(" ({} not written: the default is false)", listed(&defaulted))
    };
    format!("set {} to true in `partition_lease`{note}; in full: {example}", listed(&unset))
}

/// The checked parts of a request's observations and times.
struct Observed {
    now: i64,
    last_action_at: Option<i64>,
    signal: Option<Window>,
    capacities: Vec<Window>,
    quotas: Vec<Window>,
    continuity: Option<Window>,
    safety: Option<Window>,
}

/// Checks the four fields every observation carries and returns its window.
fn window<S: Sink>(
    sink: &mut S,
    kind: &str,
    path: &Path<'_>,
    observed_at: &str,
    expires_at: &str,
    source_ref: &str,
    source_digest: &str,
) -> Result<Window, S::Stop> {
    check_ref(sink, source_ref, &path.field("source_ref"))?;
    check_digest(sink, source_digest, &path.field("source_digest"))?;
    let (observed_path, expires_path) = (path.field("observed_at"), path.field("expires_at"));
    let observed = check_time(sink, observed_at, &observed_path)?;
    let expires = check_time(sink, expires_at, &expires_path)?;
    if expires <= observed {
        sink.fault(
            || error(ErrorCode::InvalidObservation, path, format!("{kind} expires_at must follow observed_at")),
            |notes| {
                knows_all(notes, &[observed_path, expires_path]).then(|| {
                    format!(
                        "`expires_at` ({expires_at}) is not after `observed_at` ({observed_at}): an observation is \
                         evidence from `observed_at` until `expires_at`, so give a later `expires_at`"
                    )
                })
            },
        )?;
    }
    Ok(Window { observed_at: observed, expires_at: expires })
}

fn signal<S: Sink>(sink: &mut S, s: &SignalObservation, path: &Path<'_>) -> Result<Window, S::Stop> {
    let window = window(sink, "signal", path, &s.observed_at, &s.expires_at, &s.source_ref, &s.source_digest)?;
    let value_path = path.field("value");
    if s.value < 0 {
        sink.unreadable(
            &value_path,
            || {
                error(
                    ErrorCode::InvalidObservation,
                    &value_path,
                    "scale signal values must be finite non-negative integers",
                )
            },
            |notes| {
                notes.knows(&value_path).then(|| {
                    format!(
                        "`value` is {}: report the signal as 0 or more (a failed read is a missing signal)",
                        s.value
                    )
                })
            },
        )?;
    }
    if matches!(s.signal, SignalKind::ErrorRatePpm | SignalKind::GpuUtilizationPpm) && s.value > ONE_MILLION_PPM {
        let signal_path = path.field("signal");
        sink.unreadable(
            &value_path,
            || {
                error(
                    ErrorCode::InvalidObservation,
                    &value_path,
                    format!("{} must be bounded to one million ppm", s.signal),
                )
            },
            |notes| {
                knows_all(notes, &[value_path, signal_path]).then(|| {
                    format!(
                        "`value` is {} ppm: a ppm value is at most 1000000 (100 %); check the unit of the source",
                        s.value
                    )
                })
            },
        )?;
    }
    bounded(sink, s.value.unsigned_abs(), 0, MAX_AMOUNT, &value_path)?;
    Ok(window)
}

fn capacity<S: Sink>(sink: &mut S, o: &CapacityObservation, path: &Path<'_>) -> Result<Window, S::Stop> {
    let window = window(sink, "capacity", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    let fields = [path.field("allocatable"), path.field("reserved"), path.field("used")];
    for (value, field) in [o.allocatable, o.reserved, o.used].into_iter().zip(&fields) {
        bounded(sink, value, 0, MAX_AMOUNT, field)?;
    }
    if !(o.used <= o.reserved && o.reserved <= o.allocatable) {
        sink.fault(
            || error(ErrorCode::InvalidObservation, path, "capacity must satisfy used <= reserved <= allocatable"),
            |notes| {
                knows_all(notes, &fields).then(|| {
                    let broken = if o.used > o.reserved {
                        format!("`used` {} is more than `reserved` {}", o.used, o.reserved)
                    } else {
                        format!("`reserved` {} is more than `allocatable` {}", o.reserved, o.allocatable)
                    };
                    format!(
                        "{broken}: `allocatable` is the axis's total, `reserved` what replicas hold of it, `used` what \
                         they use of that"
                    )
                })
            },
        )?;
    }
    Ok(window)
}

fn quota<S: Sink>(sink: &mut S, o: &QuotaObservation, path: &Path<'_>) -> Result<Window, S::Stop> {
    check_ref(sink, &o.quota_ref, &path.field("quota_ref"))?;
    let window = window(sink, "quota", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    let (limit, used) = (path.field("limit"), path.field("used"));
    bounded(sink, o.limit, 0, MAX_AMOUNT, &limit)?;
    bounded(sink, o.used, 0, MAX_AMOUNT, &used)?;
    if o.used > o.limit {
        sink.fault(
            || error(ErrorCode::InvalidObservation, path, "quota usage cannot exceed its limit"),
            |notes| {
                knows_all(notes, &[limit, used]).then(|| {
                    format!(
                        "`used` {} is more than `limit` {}: report the quota's real limit, or `used` equal to it when \
                         it is exhausted",
                        o.used, o.limit
                    )
                })
            },
        )?;
    }
    Ok(window)
}

fn continuity<S: Sink>(sink: &mut S, o: &ContinuityObservation, path: &Path<'_>) -> Result<Window, S::Stop> {
    let window = window(sink, "continuity", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    bounded(sink, o.active_sessions, 0, MAX_SESSIONS, &path.field("active_sessions"))?;
    bounded(sink, o.active_streams, 0, MAX_SESSIONS, &path.field("active_streams"))?;
    Ok(window)
}

fn safety<S: Sink>(sink: &mut S, o: &SafetyObservation, path: &Path<'_>) -> Result<Window, S::Stop> {
    let reason_path = path.field("reason_ref");
    if let Some(reason_ref) = &o.reason_ref {
        check_ref(sink, reason_ref, &reason_path)?;
    }
    let window = window(sink, "safety", path, &o.observed_at, &o.expires_at, &o.source_ref, &o.source_digest)?;
    if (o.overloaded || o.noisy_neighbor) && o.reason_ref.is_none() {
        sink.fault(
            || {
                error(
                    ErrorCode::InvalidObservation,
                    path,
                    "overload and noisy-neighbor evidence require a reason reference",
                )
            },
            |notes| {
                notes.knows(&reason_path).then(|| {
                    "add `reason_ref`, a reference to the incident or alert that reports it (such as `incident:4711`)"
                        .to_owned()
                })
            },
        )?;
    }
    Ok(window)
}

/// Checks every precondition of SPEC §6 and returns the request ready to evaluate.
pub(crate) fn request(request: &EvaluationRequest) -> Result<Checked<'_>, EvaluationError> {
    request_with(request, None)
}

/// [`request`], the contract's validation and identity taken from `cache` when it has them.
pub(crate) fn request_with<'r>(
    request: &'r EvaluationRequest,
    cache: Option<&mut ContractCache>,
) -> Result<Checked<'r>, EvaluationError> {
    let contract_path = Path::Text("contract");
    let identity = match cache {
        Some(cache) => cache.identity(&request.contract, &contract_path)?,
        None => contract(&request.contract, &contract_path)?,
    };
    let o = observations(&mut First, request, true)?;
    Ok(Checked {
        request,
        contract_id: identity.contract_id,
        now: o.now,
        last_action_at: o.last_action_at,
        signal: o.signal,
        capacities: o.capacities,
        quotas: o.quotas,
        continuity: o.continuity,
        safety: o.safety,
    })
}

/// Every check of [`request`], reporting to a sink.
pub(crate) fn request_in<S: Sink>(sink: &mut S, request: &EvaluationRequest) -> Result<(), S::Stop> {
    contract_in(sink, &request.contract, &Path::Text("contract"))?;
    observations(sink, request, true)?;
    Ok(())
}

/// The checks of [`request`] but the bounds of `current_replicas`: the contract (§4) and every
/// observation (§5, §6 preconditions 4–6), for a host that checks evidence before it has a count.
pub(crate) fn evidence(request: &EvaluationRequest) -> Result<(), EvaluationError> {
    contract(&request.contract, &Path::Text("contract"))?;
    observations(&mut First, request, false)?;
    Ok(())
}

/// The checks of SPEC §6 after the contract's.
fn observations<S: Sink>(sink: &mut S, r: &EvaluationRequest, replicas: bool) -> Result<Observed, S::Stop> {
    let signal = match &r.signal {
        Some(s) => Some(signal(sink, s, &Path::Text("signal"))?),
        None => None,
    };
    let capacities_path = Path::Text("capacities");
    at_most(sink, r.capacities.len(), MAX_OBSERVATIONS, &capacities_path)?;
    let mut capacities = Vec::with_capacity(r.capacities.len());
    for (i, o) in r.capacities.iter().enumerate() {
        capacities.push(capacity(sink, o, &capacities_path.index(i))?);
    }
    let quotas_path = Path::Text("quotas");
    at_most(sink, r.quotas.len(), MAX_OBSERVATIONS, &quotas_path)?;
    let mut quotas = Vec::with_capacity(r.quotas.len());
    for (i, o) in r.quotas.iter().enumerate() {
        quotas.push(quota(sink, o, &quotas_path.index(i))?);
    }
    let continuity = match &r.continuity {
        Some(o) => Some(continuity(sink, o, &Path::Text("continuity"))?),
        None => None,
    };
    let safety = match &r.safety {
        Some(o) => Some(safety(sink, o, &Path::Text("safety"))?),
        None => None,
    };
    let now = check_time(sink, &r.now, &Path::Text("now"))?;

    let replicas_path = Path::Text("current_replicas");
    let within = u64::try_from(r.current_replicas).is_ok_and(|n| n <= MAX_REPLICAS);
    if !replicas {
        // The caller checks evidence alone: the count is not part of the question.
    } else if !within {
        sink.unreadable(
            &replicas_path,
            || error(ErrorCode::ReplicasOutOfBounds, &replicas_path, "current_replicas is outside bounds"),
            |notes| {
                notes.knows(&replicas_path).then(|| {
                    format!(
                        "`current_replicas` is {}: give the replicas running now, in 0..={MAX_REPLICAS}",
                        r.current_replicas
                    )
                })
            },
        )?;
    } else if r.current_replicas.unsigned_abs() < r.contract.policy.min_replicas {
        let policy = Path::Text("contract.policy");
        let min = policy.field("min_replicas");
        sink.fault(
            || error(ErrorCode::ReplicasOutOfBounds, &replicas_path, "current_replicas is below the contract floor"),
            |notes| {
                knows_all(notes, &[replicas_path, min]).then(|| {
                    format!(
                        "`current_replicas` is {} and {}: report the replicas really running, or lower `min_replicas`",
                        r.current_replicas,
                        notes.value_of(&min, r.contract.policy.min_replicas)
                    )
                })
            },
        )?;
    }
    if has_duplicates(r.capacities.iter().map(|o| o.axis)) {
        sink.fault(
            || error(ErrorCode::DuplicateObservation, &capacities_path, "duplicate capacity axis observation"),
            |notes| {
                knows_items(notes, &capacities_path, r.capacities.len(), &["axis"]).then(|| {
                    format!(
                        "keep one observation per axis in `capacities`: there is more than one for {}",
                        listed(repeated(r.capacities.iter().map(|o| o.axis)))
                    )
                })
            },
        )?;
    }
    if has_duplicates(r.quotas.iter().map(|o| o.quota_ref.as_str())) {
        sink.fault(
            || error(ErrorCode::DuplicateObservation, &quotas_path, "duplicate quota observation"),
            |notes| {
                knows_items(notes, &quotas_path, r.quotas.len(), &["quota_ref"]).then(|| {
                    format!(
                        "keep one observation per `quota_ref` in `quotas`: there is more than one for {}",
                        listed(repeated(r.quotas.iter().map(|o| o.quota_ref.as_str())))
                    )
                })
            },
        )?;
    }
    let last_action_at = match r.last_action_at.as_deref() {
        Some(t) => Some(check_time(sink, t, &Path::Text("last_action_at"))?),
        None => None,
    };
    Ok(Observed { now, last_action_at, signal, capacities, quotas, continuity, safety })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test fails by panicking")]

    use super::{bounds, char_text, request};
    use crate::conformance::Vector;
    use crate::model::EvaluationRequest;

    /// How a hint shows a character that a reference or a digest may not hold.
    #[test]
    fn characters_in_hints() {
        assert_eq!(char_text('x'), "`x`");
        assert_eq!(char_text(' '), "` ` (U+0020)");
        assert_eq!(char_text('\n'), "`\\n` (U+000A)");
        assert_eq!(char_text('\u{1b}'), "`\\u{1b}` (U+001B)");
        assert_eq!(char_text('\u{a0}'), "`\\u{a0}` (U+00A0)");
        assert_eq!(char_text('é'), "`é` (U+00E9)");
        assert_eq!(char_text('\u{1F600}'), "`\u{1F600}` (U+1F600)");
    }

    /// Every bounded field set far out of its bounds: the check's message states exactly the
    /// bounds [`bounds`] gives for the field's name (the table the too-large-integer messages use).
    #[test]
    fn bounds_table_matches_the_checks() {
        let text = include_str!("../../tests/vectors/reference/t01-mcp-target-tracks-deterministically.json");
        let valid: EvaluationRequest = crate::parse_request(&Vector::parse(text).unwrap().request_text).unwrap();
        assert!(request(&valid).is_ok());
        type Edit = fn(&mut EvaluationRequest);
        let edits: [(&str, Edit); 21] = [
            ("version", |r| r.contract.version = u64::MAX),
            ("min_replicas", |r| r.contract.policy.min_replicas = u64::MAX),
            ("max_replicas", |r| r.contract.policy.max_replicas = u64::MAX),
            ("target", |r| r.contract.policy.target = u64::MAX),
            ("scale_up_step", |r| r.contract.policy.scale_up_step = u64::MAX),
            ("scale_down_step", |r| r.contract.policy.scale_down_step = u64::MAX),
            ("scale_up_cooldown_s", |r| r.contract.policy.scale_up_cooldown_s = u64::MAX),
            ("scale_down_cooldown_s", |r| r.contract.policy.scale_down_cooldown_s = u64::MAX),
            ("drain_seconds", |r| r.contract.policy.drain_seconds = u64::MAX),
            ("per_replica", |r| r.contract.replica_demands[0].per_replica = u64::MAX),
            ("per_replica", |r| r.contract.quotas[0].per_replica = u64::MAX),
            ("partitions_per_replica", |r| r.contract.partition_lease.partitions_per_replica = u64::MAX),
            ("lease_ttl_s", |r| r.contract.partition_lease.lease_ttl_s = u64::MAX),
            ("max_drain_seconds", |r| r.contract.continuity.max_drain_seconds = u64::MAX),
            ("value", |r| r.signal.as_mut().unwrap().value = i64::MAX),
            ("allocatable", |r| r.capacities[0].allocatable = u64::MAX),
            ("reserved", |r| r.capacities[0].reserved = u64::MAX),
            ("used", |r| r.capacities[0].used = u64::MAX),
            ("limit", |r| r.quotas[0].limit = u64::MAX),
            ("active_sessions", |r| r.continuity.as_mut().unwrap().active_sessions = u64::MAX),
            ("active_streams", |r| r.continuity.as_mut().unwrap().active_streams = u64::MAX),
        ];
        for (name, edit) in edits {
            let mut r = valid.clone();
            edit(&mut r);
            let error = request(&r).err().unwrap();
            let (low, high) = bounds(name).unwrap();
            let expected = format!("{name} must be in {low}..={high}, not ");
            assert!(error.message().starts_with(&expected), "{name}: {}", error.message());
        }
        let mut r = valid;
        r.current_replicas = 10_001;
        assert_eq!(bounds("current_replicas"), Some((0, 10_000)));
        assert_eq!(request(&r).err().unwrap().message(), "current_replicas is outside bounds");
    }
}
