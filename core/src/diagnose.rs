//! The diagnosis: every fault of a contract or a request at once, each with a hint naming what
//! to change (DECISIONS.md, "Diagnosis").
//!
//! There is one rule set. Every check of [`crate::parse`] and [`crate::validate`] reports its
//! fault to a [`Sink`]: [`First`] turns the first into the SPEC's error and stops (the path of
//! `evaluate_json` and `validate_contract_json`, which costs nothing more than a `return`), and
//! [`Collect`] records it, with its hint, and lets the checks go on. Both run the same checks in
//! the same order, so a diagnosis's first fault is the SPEC's error by construction.
//!
//! After a fault the checks go on with a stand-in value, so a later rule could judge a value
//! the caller never wrote. To avoid that, a field whose value breaks its own rule (missing,
//! `null`, a wrong type, outside its vocabulary or bounds, a malformed ref, digest or time) is
//! *unreadable*: a later check that reads it is not judged. A misspelt word close to exactly one
//! word of its vocabulary is the exception: it is read as that word, and the hint says so.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::error::{ErrorCode, EvaluationError};
use crate::json::Path;

/// One fault: the error the SPEC names for it (code, message, path) and a hint that says what
/// to add or change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fault {
    code: ErrorCode,
    message: String,
    path: String,
    hint: String,
}

impl Fault {
    /// A fault from its parts, for a face that carries a diagnosis across a boundary (the WIT
    /// `fault` record). Checks nothing: the core's diagnosis functions are what find faults.
    pub fn new(code: ErrorCode, message: impl Into<String>, path: impl Into<String>, hint: impl Into<String>) -> Self {
        Self { code, message: message.into(), path: path.into(), hint: hint.into() }
    }

    /// The stable error code (SPEC §9).
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// What is wrong, as the SPEC's error says it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON path of the offending field or object (`""` for the input as a whole).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What to add or change; never empty.
    pub fn hint(&self) -> &str {
        &self.hint
    }

    /// The fault as the [`EvaluationError`] an evaluation would return for it.
    pub fn to_error(&self) -> EvaluationError {
        EvaluationError::new(self.code, self.message.clone(), self.path.clone())
    }
}

/// Every fault found in one contract or request, in the order the checks run: the first is
/// exactly the error `evaluate_json` (or `validate_contract_json`) returns for the same input.
/// Empty for an input with no fault. Blocked decisions are outcomes, not faults: missing or
/// stale evidence never appears here.
///
/// At most [`Diagnosis::MAX_FAULTS`] faults are listed; the ones past it are only counted
/// ([`Diagnosis::omitted`]), so hostile input (an object of a million unknown fields) cannot make
/// a diagnosis many times larger than itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    faults: Vec<Fault>,
    omitted: u64,
}

impl Diagnosis {
    /// The most faults a diagnosis lists (a valid-shaped request has far fewer places to fail).
    pub const MAX_FAULTS: usize = 1000;

    /// A diagnosis from its parts, for a face that carries one across a boundary (the WIT
    /// `diagnosis` record): `faults` in order, and how many more were counted but not listed.
    pub fn new(faults: Vec<Fault>, omitted: u64) -> Self {
        Self { faults, omitted }
    }

    /// The faults, first the SPEC's error.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Whether no fault was found (the input validates).
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// How many faults are listed.
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    /// How many faults were found past [`Diagnosis::MAX_FAULTS`] and not listed (0 nearly always).
    pub fn omitted(&self) -> u64 {
        self.omitted
    }

    /// The first fault: the SPEC's error for the input, `None` when it validates.
    pub fn first(&self) -> Option<&Fault> {
        self.faults.first()
    }

    /// The diagnosis as plain text, one fault to a line (`path: message`, or the message alone
    /// for the input as a whole), each followed by `  hint: …` on its own line, and a last line
    /// `… and N more faults` when some were omitted; `""` when empty. Every face prints these
    /// words.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for fault in &self.faults {
            if !fault.path.is_empty() {
                out.push_str(&fault.path);
                out.push_str(": ");
            }
            out.push_str(&fault.message);
            out.push_str("\n  hint: ");
            out.push_str(&fault.hint);
            out.push('\n');
        }
        if self.omitted > 0 {
            out.push_str(&format!("… and {} more faults\n", self.omitted));
        }
        out
    }

    /// The diagnosis as compact JSON:
    /// `{"faults":[{"code","message","path","hint"}, …],"omitted":0}`, fields in that order,
    /// faults in the diagnosis's order. The same diagnosis always gives the same bytes.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + 256 * self.faults.len());
        out.push_str("{\"faults\":[");
        for (i, fault) in self.faults.iter().enumerate() {
            out.push_str(if i > 0 { ",{\"code\":" } else { "{\"code\":" });
            crate::canonical::write_json_string(fault.code.as_str(), false, &mut out);
            out.push_str(",\"message\":");
            crate::canonical::write_json_string(&fault.message, false, &mut out);
            out.push_str(",\"path\":");
            crate::canonical::write_json_string(&fault.path, false, &mut out);
            out.push_str(",\"hint\":");
            crate::canonical::write_json_string(&fault.hint, false, &mut out);
            out.push('}');
        }
        out.push_str("],\"omitted\":");
        crate::canonical::push_decimal(self.omitted, 1, &mut out);
        out.push('}');
        out
    }
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

/// What a [`Collect`]ing check may ask about the input read so far. Paths are kept sorted, so
/// each question costs a few set lookups however many faults came before (a list of a million
/// misspelt words is diagnosed in linear time).
#[derive(Debug, Default)]
pub(crate) struct Notes {
    /// Paths whose value broke its own rule; checks that read them are not judged.
    unreadable: BTreeSet<String>,
    /// Paths of optional fields that were not written and took their default.
    defaulted: BTreeSet<String>,
}

/// `path` and every path above it, the document (`""`) first: `a`, `a.b`, `a.b[0]` for `a.b[0]`.
fn self_and_above(path: &str) -> impl Iterator<Item = &str> {
    let cuts = path.char_indices().filter(|&(_, c)| c == '.' || c == '[').map(|(i, _)| i);
    std::iter::once("").chain(cuts.filter_map(|i| path.get(..i))).chain(std::iter::once(path))
}

/// Whether `set` holds a path strictly below `path` (`path.x`, `path[0]`).
fn holds_below(set: &BTreeSet<String>, path: &str) -> bool {
    if path.is_empty() {
        return set.iter().any(|p| !p.is_empty());
    }
    ['.', '['].into_iter().any(|separator| {
        let prefix = format!("{path}{separator}");
        set.range(prefix.clone()..).next().is_some_and(|p| p.starts_with(&prefix))
    })
}

impl Notes {
    // Out of line (as `knows_shallow` and `is_default`): every hint asks, and inlined at each they
    // cost the component kilobytes (docs/DECISIONS.md, "The component's size").
    /// Whether the value at `path` can be judged: nothing at it, above it or below it was
    /// unreadable.
    #[inline(never)]
    pub(crate) fn knows(&self, path: &Path<'_>) -> bool {
        let path = path.render();
        !self_and_above(&path).any(|p| self.unreadable.contains(p)) && !holds_below(&self.unreadable, &path)
    }

    /// Whether the value at `path` itself can be judged, ignoring unreadable parts below it
    /// (a list whose items are judged one by one).
    #[inline(never)]
    pub(crate) fn knows_shallow(&self, path: &Path<'_>) -> bool {
        let path = path.render();
        !self_and_above(&path).any(|p| self.unreadable.contains(p))
    }

    /// Whether the value at `path` was not written and took its default (it, or an optional
    /// object holding it, was omitted).
    #[inline(never)]
    pub(crate) fn is_default(&self, path: &Path<'_>) -> bool {
        let path = path.render();
        self_and_above(&path).any(|p| self.defaulted.contains(p))
    }

    /// `` `name` is value``, adding that it was not written when it took its default.
    pub(crate) fn value_of(&self, path: &Path<'_>, value: impl fmt::Display) -> String {
        let text = path.render();
        let name = crate::json::field_name(&text);
        if self.is_default(path) {
            format!("`{name}` is not written, so it takes its default {value}")
        } else {
            format!("`{name}` is {value}")
        }
    }
}

/// Where a check reports its faults: stop at the first, or collect them all.
pub(crate) trait Sink {
    /// What stops the checks: the SPEC's error, or nothing.
    type Stop;

    /// Reports a fault. `error` builds the SPEC's error; `hint` (called only when collecting)
    /// says what to change, or `None` when the check reads a value that was unreadable, so the
    /// fault is not judged.
    fn fault(
        &mut self,
        error: impl FnOnce() -> EvaluationError,
        hint: impl FnOnce(&Notes) -> Option<String>,
    ) -> Result<(), Self::Stop>;

    /// Reports a fault that leaves the value at `path` unreadable (a stand-in takes its place).
    fn unreadable(
        &mut self,
        path: &Path<'_>,
        error: impl FnOnce() -> EvaluationError,
        hint: impl FnOnce(&Notes) -> Option<String>,
    ) -> Result<(), Self::Stop>;

    /// Notes that the optional field at `path` was not written and took its default.
    fn defaulted(&mut self, path: &Path<'_>);

    /// Whether this sink collects (and so wants the names a reader knows for its hints).
    fn collects(&self) -> bool;
}

/// Where the checks report, as one type so that every reader and check is compiled once for
/// both paths (with a type per path the component carried each of them twice: BENCHMARKS.md,
/// "One instantiation of the checks").
#[derive(Debug)]
pub(crate) enum Report {
    /// The SPEC's path: the first fault is the error.
    First,
    /// The diagnosis's path: every fault, with its hint.
    Collect(Collect),
}

/// The SPEC's path, as the checks are called with it (`&mut First`).
pub(crate) use Report::First;

impl Report {
    /// A report that collects every fault.
    pub(crate) fn collecting() -> Self {
        Self::Collect(Collect::default())
    }

    /// The faults collected, in the order they were found (none on the SPEC's path, which
    /// stops at the first).
    pub(crate) fn into_diagnosis(self) -> Diagnosis {
        match self {
            Self::First => Diagnosis::default(),
            Self::Collect(collect) => collect.into_diagnosis(),
        }
    }
}

impl Sink for Report {
    type Stop = EvaluationError;

    #[inline]
    fn fault(
        &mut self,
        error: impl FnOnce() -> EvaluationError,
        hint: impl FnOnce(&Notes) -> Option<String>,
    ) -> Result<(), EvaluationError> {
        match self {
            Self::First => Err(error()),
            Self::Collect(collect) => {
                collect.fault(error, hint);
                Ok(())
            }
        }
    }

    #[inline]
    fn unreadable(
        &mut self,
        path: &Path<'_>,
        error: impl FnOnce() -> EvaluationError,
        hint: impl FnOnce(&Notes) -> Option<String>,
    ) -> Result<(), EvaluationError> {
        match self {
            Self::First => Err(error()),
            Self::Collect(collect) => {
                collect.unreadable(path, error, hint);
                Ok(())
            }
        }
    }

    #[inline]
    fn defaulted(&mut self, path: &Path<'_>) {
        if let Self::Collect(collect) = self {
            collect.notes.defaulted.insert(path.render());
        }
    }

    #[inline]
    fn collects(&self) -> bool {
        matches!(self, Self::Collect(_))
    }
}

/// The diagnosis's path: every fault, with its hint.
#[derive(Debug, Default)]
pub(crate) struct Collect {
    notes: Notes,
    faults: Vec<Fault>,
    omitted: u64,
}

impl Collect {
    fn push(&mut self, error: EvaluationError, hint: String) {
        if self.faults.len() >= Diagnosis::MAX_FAULTS {
            self.omitted = self.omitted.saturating_add(1);
            return;
        }
        self.faults.push(Fault {
            code: error.code(),
            message: error.message().to_owned(),
            path: error.path().to_owned(),
            hint,
        });
    }

    /// The faults collected, in the order they were found.
    fn into_diagnosis(self) -> Diagnosis {
        Diagnosis { faults: self.faults, omitted: self.omitted }
    }
}

impl Collect {
    fn fault(&mut self, error: impl FnOnce() -> EvaluationError, hint: impl FnOnce(&Notes) -> Option<String>) {
        if let Some(hint) = hint(&self.notes) {
            self.push(error(), hint);
        }
    }

    fn unreadable(
        &mut self,
        path: &Path<'_>,
        error: impl FnOnce() -> EvaluationError,
        hint: impl FnOnce(&Notes) -> Option<String>,
    ) {
        // Judged before the path is marked: a value below an unreadable one is not reported.
        let judged = hint(&self.notes);
        self.notes.unreadable.insert(path.render());
        if let Some(hint) = judged {
            self.push(error(), hint);
        }
    }
}

/// The edit distance (Levenshtein, by characters) between two words.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // previous[j]: the distance between the part of `a` read so far and the first j of `b`.
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = Vec::with_capacity(previous.len());
        row.push(i + 1);
        for ((&cb, &diagonal), &up) in b.iter().zip(&previous).zip(previous.iter().skip(1)) {
            let left = row.last().copied().unwrap_or(0);
            row.push((diagonal + usize::from(ca != cb)).min(up + 1).min(left + 1));
        }
        previous = row;
    }
    previous.last().copied().unwrap_or(0)
}

/// A spelling compared loosely: lower case, `-` and spaces as `_`.
fn loose(word: &str) -> String {
    word.trim().chars().map(|c| if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// The word of `known` nearest to `word`, when it is near enough to be what was meant: the same
/// word loosely compared (case, `-` for `_`), or at most two edits away and fewer than half its
/// length. `unique` is whether no other word is as near.
pub(crate) fn nearest<'k>(word: &str, known: impl IntoIterator<Item = &'k str>) -> Option<Near<'k>> {
    let target = loose(word);
    let mut best: Option<Near<'k>> = None;
    let length = target.chars().count();
    for candidate in known {
        // Words whose lengths differ by more than two are more than two edits apart.
        if candidate.chars().count().abs_diff(length) > 2 {
            continue;
        }
        let distance = edit_distance(&target, candidate);
        match &mut best {
            Some(near) if distance == near.distance => near.unique = false,
            Some(near) if distance > near.distance => {}
            _ => best = Some(Near { word: candidate, distance, unique: true }),
        }
    }
    best.filter(|near| near.distance == 0 || (near.distance <= 2 && near.distance * 2 < length))
}

/// A known word near a misspelt one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Near<'k> {
    /// The known word.
    pub word: &'k str,
    /// Its edit distance from the loosely compared misspelling.
    pub distance: usize,
    /// Whether no other known word is as near.
    pub unique: bool,
}

/// `a`, `b`, `c` in backquotes.
pub(crate) fn listed<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    joined(items, ", ")
}

/// `a` or `b` or `c` in backquotes.
pub(crate) fn listed_or<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    joined(items, " or ")
}

fn joined<T: fmt::Display>(items: impl IntoIterator<Item = T>, separator: &str) -> String {
    let mut out = String::new();
    for item in items {
        push_listed(&item, separator, &mut out);
    }
    out
}

/// One item of [`listed`], compiled once for every item type (the hints list eight kinds).
fn push_listed(item: &dyn fmt::Display, separator: &str, out: &mut String) {
    if !out.is_empty() {
        out.push_str(separator);
    }
    // Writing to a String cannot fail.
    let _ = write!(out, "`{item}`");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use std::collections::BTreeSet;

    use super::{edit_distance, holds_below, nearest, self_and_above};

    /// The textbook recursion, for short words.
    fn oracle(a: &[char], b: &[char]) -> usize {
        match (a.split_last(), b.split_last()) {
            (None, _) => b.len(),
            (_, None) => a.len(),
            (Some((x, ra)), Some((y, rb))) => {
                let replace = oracle(ra, rb) + usize::from(x != y);
                replace.min(oracle(ra, b) + 1).min(oracle(a, rb) + 1)
            }
        }
    }

    #[test]
    fn nearest_words() {
        let surfaces = ["ingest_worker", "dispatch_worker", "api_gateway"];
        assert_eq!(nearest("dispatch_workr", surfaces).map(|n| n.word), Some("dispatch_worker"));
        assert_eq!(nearest("Dispatch-Worker", surfaces).map(|n| (n.word, n.distance)), Some(("dispatch_worker", 0)));
        assert_eq!(nearest("queue", surfaces), None);
        assert_eq!(nearest("", surfaces), None);
    }

    #[test]
    fn paths_above_and_below() {
        let above: Vec<&str> = self_and_above("contract.quotas[0].scope").collect();
        assert_eq!(above, ["", "contract", "contract.quotas", "contract.quotas[0]", "contract.quotas[0].scope"]);
        assert_eq!(self_and_above("").collect::<Vec<_>>(), ["", ""]);
        let set: BTreeSet<String> = ["contract.policy.target", "contract.quotas[1]", "contract.policyx"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert!(holds_below(&set, "contract.policy"));
        assert!(holds_below(&set, "contract.quotas"));
        assert!(holds_below(&set, "contract"));
        assert!(holds_below(&set, ""));
        assert!(!holds_below(&set, "contract.policy.target"));
        assert!(!holds_below(&set, "contract.quotas[1]"));
        assert!(!holds_below(&set, "contract.continuity"));
        let sibling: BTreeSet<String> = ["contract.policyx".to_owned()].into();
        assert!(!holds_below(&sibling, "contract.policy"));
    }

    /// The definition: `inner` is `outer` or lies below it.
    fn within(inner: &str, outer: &str) -> bool {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| outer.is_empty() || rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![Just(".a"), Just(".ab"), Just(".b"), Just("[0]"), Just("[1]")], 0..4)
            .prop_map(|parts| parts.concat().trim_start_matches('.').to_owned())
    }

    proptest! {
        #[test]
        fn set_lookups_follow_the_definition(
            set in proptest::collection::btree_set(path(), 0..6),
            probe in path(),
        ) {
            let above = self_and_above(&probe).any(|p| set.contains(p));
            let below = holds_below(&set, &probe);
            prop_assert_eq!(above, set.iter().any(|bad| within(&probe, bad)));
            prop_assert_eq!(above || below, set.iter().any(|bad| within(&probe, bad) || within(bad, &probe)));
        }

        #[test]
        fn edit_distance_is_levenshtein(a in "[abc_]{0,6}", b in "[abc_]{0,6}") {
            let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
            prop_assert_eq!(edit_distance(&a, &b), oracle(&ca, &cb));
        }
    }
}
