//! What an actuator reads from a scale call's query string beside the body, read as Go's
//! `Request.URL.Query().Get` reads it: Docker's `rollback=previous` makes Swarm apply the
//! service's previous spec (and its replica count) instead of the body's, and Nomad's
//! `namespace` says which job of that name is scaled. A preset names these parameters; the gate
//! refuses a value it cannot judge, and names the unit from one it can.

use super::decoder::BodyError;

/// A query parameter a preset's actuator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryRule {
    /// The parameter, as Go matches it (case-sensitive, after unescaping).
    pub param: &'static str,
    /// Its value when absent or empty.
    pub default: &'static str,
    /// The values the gate judges, any other refused (`query_refused`); empty: any value.
    pub judged: &'static [&'static str],
    /// The unit template's variable it fills; a template without it judges `default` only.
    pub variable: Option<&'static str>,
    /// Why another value is refused.
    pub why: &'static str,
}

/// The value the actuator reads for `rule` in `query` (`default` when absent or empty).
///
/// # Errors
/// `count_ambiguous` when Go releases (or a repeated parameter) read it differently,
/// `query_refused` for a value the gate cannot judge, `invalid_unit` for a variable's value that
/// cannot name a unit, or one the template has no place for.
pub fn value(query: &str, rule: &QueryRule, in_template: bool) -> Result<String, BodyError> {
    let modern = values(query, rule.param, false);
    let legacy = values(query, rule.param, true);
    let mut all = modern.clone();
    all.extend(legacy.iter().cloned());
    all.dedup();
    let first = modern.first().cloned().unwrap_or_default();
    if legacy.first().cloned().unwrap_or_default() != first || all.iter().any(|value| *value != first) {
        return Err(BodyError {
            code: "count_ambiguous",
            message: format!(
                "the query gives {} more than one way ({}): Go reads the first, and Go before 1.17 also split at `;`",
                rule.param,
                all.iter().map(|value| format!("{value:?}")).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let value = if first.is_empty() { rule.default.to_owned() } else { first };
    if !rule.judged.is_empty() && !rule.judged.contains(&value.as_str()) {
        return Err(BodyError {
            code: "query_refused",
            message: format!("the query asks {}={value:?}: {}", rule.param, rule.why),
        });
    }
    if rule.variable.is_some() && !in_template && value != rule.default {
        return Err(BodyError {
            code: "invalid_unit",
            message: format!(
                "the query asks {}={value:?}, and the route's unit names no {{{}}}: only {:?} is judged",
                rule.param,
                rule.variable.unwrap_or_default(),
                rule.default
            ),
        });
    }
    if rule.variable.is_some() && (value.contains(['/', '{', '}']) || value.chars().any(char::is_control)) {
        return Err(BodyError {
            code: "invalid_unit",
            message: format!("the query's {} is {value:?}: a name, without / or braces", rule.param),
        });
    }
    Ok(value)
}

/// Every value of `param` in `query`, in order, as Go's `url.ParseQuery` reads it: pairs split at
/// `&` (and at `;` too with `legacy`, as Go did before 1.17; since then a pair with a `;` is
/// skipped), split at the first `=`, `+` read as a space and `%XX` decoded; a pair whose escapes
/// do not decode is skipped. A value that is not UTF-8 is kept lossily (never a judged one).
fn values(query: &str, param: &str, legacy: bool) -> Vec<String> {
    let separators: &[char] = if legacy { &['&', ';'] } else { &['&'] };
    let mut out = Vec::new();
    for pair in query.split(separators) {
        if pair.is_empty() || (!legacy && pair.contains(';')) {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (unescape(key), unescape(value)) else { continue };
        if key == param.as_bytes() {
            out.push(String::from_utf8_lossy(&value).into_owned());
        }
    }
    out
}

/// Go's `QueryUnescape`: `+` is a space, `%XX` a byte; `None` for a `%` without two hex digits.
fn unescape(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{QueryRule, value};

    const ROLLBACK: QueryRule =
        QueryRule { param: "rollback", default: "", judged: &["", "none"], variable: None, why: "previous spec" };
    const NAMESPACE: QueryRule =
        QueryRule { param: "namespace", default: "default", judged: &[], variable: Some("namespace"), why: "" };

    fn code(result: Result<String, super::BodyError>) -> String {
        result.map_or_else(|error| error.code.to_owned(), |value| format!("ok {value}"))
    }

    #[test]
    fn docker_rollback_previous_is_refused_however_it_is_written() {
        for query in ["", "version=7", "rollback=", "rollback=none", "Rollback=previous", "rollback", "x=%zz"] {
            assert!(value(query, &ROLLBACK, false).is_ok(), "{query}");
        }
        for query in [
            "rollback=previous",
            "version=7&rollback=previous",
            "%72ollback=previous",
            "rollback=%70revious",
            "rollback=previous&rollback=none",
            "rollback=none&rollback=previous",
            "rollback=previous;x=1",
            "x=1;rollback=previous",
            "rollback=+previous",
        ] {
            assert!(value(query, &ROLLBACK, false).is_err(), "{query}");
        }
        assert_eq!(code(value("rollback=previous", &ROLLBACK, false)), "query_refused");
        assert_eq!(code(value("x=1;rollback=previous", &ROLLBACK, false)), "count_ambiguous");
    }

    #[test]
    fn nomad_namespace_names_the_unit_or_is_refused() {
        assert_eq!(code(value("", &NAMESPACE, true)), "ok default");
        assert_eq!(code(value("namespace=prod", &NAMESPACE, true)), "ok prod");
        assert_eq!(code(value("namespace=pr%6Fd&region=x", &NAMESPACE, true)), "ok prod");
        assert_eq!(code(value("namespace=prod", &NAMESPACE, false)), "invalid_unit");
        assert_eq!(code(value("namespace=default", &NAMESPACE, false)), "ok default");
        assert_eq!(code(value("namespace=a%2Fb", &NAMESPACE, true)), "invalid_unit");
        assert_eq!(code(value("namespace=a&namespace=b", &NAMESPACE, true)), "count_ambiguous");
    }
}
