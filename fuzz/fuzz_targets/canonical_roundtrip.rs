//! The canonical JSON writer (`Canon`, SPEC §8) against serde_json: write, parse, compare. The
//! text must parse back to the same value and equal, byte for byte, Python's
//! `json.dumps(v, ensure_ascii=True, sort_keys=True, separators=(",", ":"))`, which this target
//! computes independently: serde_json's compact writer over a key-sorted map, then every
//! character outside printable ASCII escaped as `\uXXXX` UTF-16 units.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use scale_units_core::Canon;
use serde_json::{Map, Value};

/// Object keys are static in `Canon`; these cover ASCII order, escapes, non-ASCII and astral
/// characters, and prefixes of one another.
const KEYS: &[&str] = &[
    "",
    "a",
    "b",
    "A",
    "Z",
    "aa",
    "ab",
    "a b",
    "_",
    "~",
    "\u{7f}",
    "\u{0}",
    "\n",
    "\t",
    "\"",
    "\\",
    "/",
    "é",
    "\u{e9}x",
    "\u{ffff}",
    "\u{10000}",
    "😀",
    "\u{2028}",
    "kind",
    "ref",
    "digest",
    "state",
    "contract_id",
];

/// A JSON value as `Canon` holds it. Integers are the `i64`/`u64` the identity objects hold
/// (serde_json reads nothing wider as an integer).
#[derive(Debug)]
enum Tree {
    Null,
    Bool(bool),
    Signed(i64),
    Unsigned(u64),
    Str(String),
    List(Vec<Tree>),
    Map(Vec<(u8, Tree)>),
}

/// Nesting the writer needs no more of; deeper trees only grow the sanitizer's store of
/// allocation stacks (every depth is a new stack) until the run hits its memory limit.
const MAX_DEPTH: usize = 12;

fn tree(u: &mut Unstructured<'_>, depth: usize) -> arbitrary::Result<Tree> {
    let last = if depth >= MAX_DEPTH { 4 } else { 6 };
    Ok(match u.int_in_range(0..=last)? {
        0 => Tree::Null,
        1 => Tree::Bool(u.arbitrary()?),
        2 => Tree::Signed(u.arbitrary()?),
        3 => Tree::Unsigned(u.arbitrary()?),
        4 => Tree::Str(u.arbitrary()?),
        5 => {
            let mut items = Vec::new();
            while !u.is_empty() && u.arbitrary::<bool>()? {
                items.push(tree(u, depth + 1)?);
            }
            Tree::List(items)
        }
        _ => {
            let mut entries = Vec::new();
            while !u.is_empty() && u.arbitrary::<bool>()? {
                entries.push((u.arbitrary()?, tree(u, depth + 1)?));
            }
            Tree::Map(entries)
        }
    })
}

/// The fuzzer's input as one tree.
#[derive(Debug)]
struct Root(Tree);

impl<'a> Arbitrary<'a> for Root {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        tree(u, 0).map(Self)
    }
}

/// The `Canon` of `tree` and the serde_json value it must read back as.
fn convert(tree: &Tree) -> (Canon<'_>, Value) {
    match tree {
        Tree::Null => (Canon::Null, Value::Null),
        Tree::Bool(b) => (Canon::Bool(*b), Value::Bool(*b)),
        Tree::Signed(n) => (Canon::Int(i128::from(*n)), Value::from(*n)),
        Tree::Unsigned(n) => (Canon::Int(i128::from(*n)), Value::from(*n)),
        Tree::Str(text) => (Canon::Str(text), Value::String(text.clone())),
        Tree::List(items) => {
            let (canon, values) = items.iter().map(|item| convert(item)).unzip();
            (Canon::List(canon), Value::Array(values))
        }
        Tree::Map(entries) => {
            let mut canon = Vec::new();
            let mut map = Map::new();
            for (key, value) in entries {
                let key = KEYS[usize::from(*key) % KEYS.len()];
                if map.contains_key(key) {
                    continue; // a Python dict has each key once
                }
                let (c, v) = convert(value);
                canon.push((key, c));
                map.insert(key.to_owned(), v);
            }
            (Canon::Map(canon), Value::Object(map))
        }
    }
}

/// Python's `ensure_ascii` applied to serde_json's compact, key-sorted output.
fn python_dumps(value: &Value) -> String {
    let text = serde_json::to_string(value).expect("a Value serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (' '..='~').contains(&c) || c == '\n' {
            // serde_json already escaped control characters inside strings; a raw newline
            // cannot appear in its compact output.
            out.push(c);
        } else {
            let mut units = [0_u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fuzz_target!(|root: Root| {
    let (canon, value) = convert(&root.0);
    let text = canon.to_text();
    assert!(text.is_ascii(), "ensure_ascii: {text}");
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(parsed, value, "round trip: {text}");
    assert_eq!(text, python_dumps(&value), "Python's json.dumps");
});
