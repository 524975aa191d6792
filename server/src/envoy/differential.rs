//! The gate's reading of a scale call's body held to the actuators' own decoders: generated bodies
//! (duplicate keys, case and Unicode spellings at every level of the count's path, numbers in
//! every spelling, trailing data, invalid UTF-8, escapes) are read by the gate
//! ([`super::check::requested`], the route's [`super::Decoder`]) and decoded by
//! `tests/envoy-decoders`, a Go program over the real decoders: Go's `encoding/json` into Docker's
//! and Nomad's request types, `sigs.k8s.io/json`, evanphx/json-patch and apimachinery's strategic
//! merge patch as the Kubernetes API server applies a `Scale` PUT or PATCH. Whenever the gate reads
//! a count (and Docker's service name), every actuator must apply exactly that, or refuse the body.
//!
//! The Go program is built with the `go` on PATH into `target/envoy-decoders/` (modules from the
//! Go proxy on the first build); without Go the test fails and says so.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use envoy_types::pb::envoy::service::auth::v3::attribute_context::HttpRequest;
use serde_json::Value;

use super::check::requested;
use super::decoder::GO_UNICODE_FOLDS;
use super::routes::{Routes, ScaleCall};

/// `tests/envoy-decoders`, built once per test process.
fn decoders() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let source = manifest.join("../tests/envoy-decoders");
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| manifest.join("../target"), PathBuf::from);
        let binary = target.join("envoy-decoders/envoy-decoders");
        let output = Command::new("go")
            .args(["build", "-o"])
            .arg(&binary)
            .arg(".")
            .current_dir(&source)
            .output()
            .unwrap_or_else(|error| {
                panic!("`go build` in {} cannot run ({error}): this test needs Go 1.26 on PATH", source.display())
            });
        assert!(
            output.status.success(),
            "`go build` in {} failed (the first build downloads modules from the Go proxy):\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        binary
    })
}

/// Each body through the Go program: one JSON answer per body.
fn decoded(bodies: &[Vec<u8>]) -> Vec<Value> {
    through(&[], bodies)
}

/// Each line through the Go program run with `args`: one JSON answer per line.
fn through(args: &[&str], bodies: &[Vec<u8>]) -> Vec<Value> {
    let mut child = Command::new(decoders())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for body in bodies {
        for byte in body {
            write!(input, "{byte:02x}").unwrap();
        }
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "envoy-decoders: {}", String::from_utf8_lossy(&output.stderr));
    let answers: Vec<Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(answers.len(), bodies.len());
    answers
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The counts as they may be written: only digits 0..=10000 may be read.
const NUMBERS: &[&str] = &[
    "0",
    "3",
    "5",
    "12",
    "10000",
    "10001",
    "5.0",
    "5e0",
    "5E0",
    "0.5e1",
    "50e-1",
    "-0",
    "-5",
    "-0.0",
    "1e400",
    "1e1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "2147483647",
    "2147483648",
    "4294967301",
    "05",
    "+5",
    ".5",
    "5.",
    "0x5",
    "NaN",
    "\"5\"",
    "null",
    "true",
    "[5]",
    "{}",
];

/// What may follow the document.
const TRAILING: &[&str] = &[" ", "\n", "\t\r\n", " {}", "}", "]", "x", " {\"Count\":12}", ",", "\0", " null", "5"];

/// A key's spellings, as JSON key text without the quotes (escapes included); the exact key first.
fn spellings(segment: &str) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![
        segment.into(),
        segment.to_lowercase().into(),
        segment.to_uppercase().into(),
        segment.chars().enumerate().map(|(i, c)| if i == 0 { swap(c) } else { c }).collect::<String>().into(),
        segment
            .chars()
            .map(|c| if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c })
            .collect::<String>()
            .into(),
        format!("{segment} ").into(),
        format!("{segment}\u{200B}").into(),
    ];
    // An escape that reads as the exact key.
    if let Some(first) = segment.chars().next() {
        out.push(format!("\\u{:04x}{}", u32::from(first), &segment[first.len_utf8()..]).into());
    }
    // Every rune some Go release folds onto an ASCII letter (and one none folds: U+0130), raw and
    // escaped, in place of each letter it folds onto.
    for (unicode, ascii) in GO_UNICODE_FOLDS.iter().copied().chain([('\u{130}', 'i')]) {
        for (at, c) in segment.char_indices() {
            if c.eq_ignore_ascii_case(&ascii) {
                let (before, after) = segment.split_at(at);
                let after = &after[1..];
                out.push(format!("{before}{unicode}{after}").into());
                out.push(format!("{before}\\u{:04X}{after}", u32::from(unicode)).into());
            }
        }
    }
    out
}

/// A key's spellings with invalid UTF-8 where its last letter was: a stray byte, a truncated ſ, an
/// overlong `s` (Go reads each as U+FFFD).
fn broken(segment: &str) -> Vec<Vec<u8>> {
    let stem = &segment.as_bytes()[..segment.len() - 1];
    [&[0xFF_u8][..], &[0xC5], &[0xC1, 0xB3]]
        .iter()
        .map(|bad| {
            let mut key = stem.to_vec();
            key.extend_from_slice(bad);
            key
        })
        .collect()
}

fn swap(c: char) -> char {
    if c.is_ascii_uppercase() { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() }
}

fn space(rng: &mut Rng) -> &'static str {
    const SPACES: [&str; 6] = ["", "", "", " ", "\n  ", "\t"];
    SPACES[rng.below(SPACES.len())]
}

/// One actuator's request shape: the count's path and what else its bodies carry.
struct Shape {
    path: &'static [&'static str],
    /// Other members at each level (JSON text).
    noise: &'static [&'static str],
    /// Members of the top level.
    top: &'static [&'static str],
    /// Spellings of the top level's name member, the usual one first (Docker's unit name).
    name: &'static [&'static str],
}

/// The value at `level` of the path: an object holding the next segment, or the count.
/// How far a body strays from the usual (percent chances): calm bodies are mostly read, so that
/// the gate's reading is held to the decoders often; wild ones are mostly refused.
#[derive(Clone, Copy)]
struct Mood {
    variant: usize,
    duplicate: usize,
    odd_number: usize,
    not_object: usize,
    odd_text: usize,
}

const CALM: Mood = Mood { variant: 8, duplicate: 6, odd_number: 15, not_object: 1, odd_text: 0 };
const WILD: Mood = Mood { variant: 30, duplicate: 50, odd_number: 35, not_object: 4, odd_text: 15 };

fn value(shape: &Shape, level: usize, mood: Mood, rng: &mut Rng) -> Vec<u8> {
    let Some(segment) = shape.path.get(level) else {
        return if rng.chance(mood.odd_number) {
            rng.pick(NUMBERS).as_bytes().to_vec()
        } else {
            rng.pick(&["5", "3", "12", "0"]).as_bytes().to_vec()
        };
    };
    if rng.chance(mood.not_object) {
        return rng.pick(&["null", "[]", "\"x\"", "7"]).as_bytes().to_vec();
    }
    let variants = spellings(segment);
    let broken = broken(segment);
    let mut members: Vec<Vec<u8>> = Vec::new();
    let key = |rng: &mut Rng| {
        if !rng.chance(mood.variant) {
            variants[0].clone()
        } else if rng.chance(90) {
            rng.pick(&variants).clone()
        } else {
            rng.pick(&broken).clone()
        }
    };
    let member = |key: Vec<u8>, value: Vec<u8>| {
        let mut out = b"\"".to_vec();
        out.extend(key);
        out.extend(b"\":");
        out.extend(value);
        out
    };
    if !rng.chance(mood.not_object + 2) {
        let key = key(rng);
        members.push(member(key, value(shape, level + 1, mood, rng)));
    }
    // A second spelling (or the same one) of the key, with another value.
    let duplicates = if rng.chance(mood.duplicate) { 1 + rng.below(2) } else { 0 };
    for _ in 0..duplicates {
        let other = key(rng);
        let other_value = match rng.below(5) {
            0 => b"null".to_vec(),
            1 if level + 1 < shape.path.len() => b"{}".to_vec(),
            _ => value(shape, level + 1, mood, rng),
        };
        let at = rng.below(members.len() + 1);
        members.insert(at, member(other, other_value));
    }
    // Other members, each at most once (an exact duplicate anywhere is refused as not JSON).
    let mut others: Vec<&str> = Vec::new();
    for _ in 0..rng.below(3) {
        let noise = *rng.pick(shape.noise);
        if !others.contains(&noise) {
            others.push(noise);
        }
    }
    if level == 0 {
        for top in shape.top {
            if rng.chance(80) && !others.iter().any(|other| other.split(':').next() == top.split(':').next()) {
                others.push(top);
            }
        }
        if let Some((usual, rare)) = shape.name.split_first() {
            others.push(if rng.chance(100 - mood.variant / 2) { *usual } else { *rng.pick(rare) });
        }
    }
    for other in others {
        let at = rng.below(members.len() + 1);
        members.insert(at, other.as_bytes().to_vec());
    }
    let mut out = b"{".to_vec();
    for (i, item) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(space(rng).as_bytes());
        out.extend(item);
    }
    out.extend(space(rng).as_bytes());
    out.push(b'}');
    out
}

fn body(shape: &Shape, rng: &mut Rng) -> Vec<u8> {
    let mood = if rng.chance(50) { CALM } else { WILD };
    let mut body = Vec::new();
    if rng.chance(mood.odd_text / 5) {
        body.extend("\u{FEFF}".as_bytes());
    }
    body.extend(space(rng).as_bytes());
    body.extend(value(shape, 0, mood, rng));
    if rng.chance(mood.odd_text) {
        body.extend(rng.pick(TRAILING).as_bytes());
    }
    if rng.chance(mood.odd_text / 5) {
        // Past serde_json's depth of 128 (Go reads 10 000 deep).
        let at = body.iter().rposition(|&b| b == b'}').unwrap_or(body.len());
        let deep = format!(",\"deep\":{}{}", "[".repeat(130), "]".repeat(130));
        body.splice(at..at, deep.bytes());
    }
    body
}

const DOCKER: Shape = Shape {
    path: &["Mode", "Replicated", "Replicas"],
    noise: &[
        "\"Global\":{}",
        "\"Labels\":{\"a\":\"b\",\"A\":\"c\"}",
        "\"x\":1",
        "\"Networks\":[]",
        "\"UpdateConfig\":{\"Parallelism\":1}",
    ],
    top: &["\"TaskTemplate\":{\"ContainerSpec\":{\"Image\":\"nginx\"}}", "\"Labels\":{}"],
    name: &[
        "\"Name\":\"web\"",
        "\"name\":\"web\"",
        "\"Name\":\"web\",\"name\":\"db\"",
        "\"NAME\":\"db\",\"Name\":\"web\"",
        "\"Name\":null",
        "\"Name\":5",
        "\"N\\u0061me\":\"web\"",
        "\"Name\":\"w/eb\"",
    ],
};

const NOMAD: Shape = Shape {
    path: &["Count"],
    noise: &[
        "\"Target\":{\"Group\":\"api\"}",
        "\"Message\":\"scale\"",
        "\"Meta\":{\"a\":1}",
        "\"PolicyOverride\":false",
    ],
    top: &["\"Error\":false"],
    name: &[],
};

const KUBERNETES: Shape = Shape {
    path: &["spec", "replicas"],
    noise: &[
        "\"$patch\":\"delete\"",
        "\"$patch\":\"replace\"",
        "\"$retainKeys\":[\"replicas\"]",
        "\"x\":1",
        "\"status\":{\"replicas\":9}",
    ],
    top: &[
        "\"apiVersion\":\"autoscaling/v1\"",
        "\"kind\":\"Scale\"",
        "\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\"}",
    ],
    name: &[],
};

const CUSTOM: Shape = Shape {
    path: &["Workers", "Instances"],
    noise: &["\"x\":1", "\"$patch\":\"delete\"", "\"Label\":\"a\""],
    top: &["\"Name\":\"pool\""],
    name: &[],
};

/// What one actuator did with one body: the count applied, or `None` when it refused the body.
fn applied(answer: &Value) -> Option<Option<i64>> {
    if answer.get("error").is_some_and(|error| !error.is_null()) {
        return None;
    }
    Some(answer["count"].as_i64())
}

fn request(body: &[u8], content_type: &str) -> HttpRequest {
    HttpRequest {
        method: "POST".to_owned(),
        headers: HashMap::from([("content-type".to_owned(), content_type.to_owned())]),
        raw_body: body.to_vec(),
        ..HttpRequest::default()
    }
}

/// One gated route and the decoders of its actuator(s).
struct Target {
    name: &'static str,
    call: ScaleCall,
    shape: Shape,
    content_type: &'static str,
    /// The answers (by their path in the Go program's line) that must agree with the gate.
    answers: &'static [&'static [&'static str]],
    /// Bodies the gate must read, with the count.
    plain: &'static [(&'static str, u64)],
}

fn targets() -> Vec<Target> {
    let presets = Routes::presets();
    let custom = |decoder: &str| {
        let text = format!(
            "routes:\n  - methods: [POST]\n    path: /pools/{{pool}}\n    unit: \"pools/{{pool}}\"\n    replicas: /Workers/Instances\n    decoder: {decoder}\n"
        );
        Routes::parse(&text, true).unwrap().matching("POST", "/pools/gpu").unwrap()
    };
    let kubernetes: &[&[&str]] = &[
        &["kubernetes", "put", "ignore"],
        &["kubernetes", "put", "warn"],
        &["kubernetes", "put", "strict"],
        &["kubernetes", "merge", "ignore"],
        &["kubernetes", "merge", "warn"],
        &["kubernetes", "merge", "strict"],
        &["kubernetes", "strategic", "ignore"],
        &["kubernetes", "strategic", "warn"],
        &["kubernetes", "strategic", "strict"],
    ];
    vec![
        Target {
            name: "docker",
            call: presets.matching("POST", "/v1.45/services/9xp1ihyk7tkqsffc1dzl04ndf/update").unwrap(),
            shape: DOCKER,
            content_type: "application/json",
            answers: &[&["docker"]],
            plain: &[
                (r#"{"Name":"web","Mode":{"Replicated":{"Replicas":5}}}"#, 5),
                (r#"{"Name":"web","TaskTemplate":{},"Mode":{"Replicated":{"Replicas":0}},"Labels":{"a":"b"}}"#, 0),
                (r#"{"name":"web","mode":{"replicated":{"replicas":7}}}"#, 7),
            ],
        },
        Target {
            name: "nomad",
            call: presets.matching("POST", "/v1/job/api/scale").unwrap(),
            shape: NOMAD,
            content_type: "application/json",
            answers: &[&["nomad"]],
            plain: &[(r#"{"Count":4,"Target":{"Group":"api"},"Message":"scale"}"#, 4), (r#"{"count":2}"#, 2)],
        },
        Target {
            name: "kubernetes",
            call: presets.matching("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web/scale").unwrap(),
            shape: KUBERNETES,
            content_type: "application/merge-patch+json",
            answers: kubernetes,
            plain: &[
                (r#"{"spec":{"replicas":5}}"#, 5),
                (
                    r#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}"#,
                    2,
                ),
                (r#"{"spec":{"replicas":5,"Replicas":12}}"#, 5),
            ],
        },
        Target {
            name: "custom, decoder go",
            call: custom("go"),
            shape: CUSTOM,
            content_type: "application/json",
            answers: &[&["go"]],
            plain: &[(r#"{"Workers":{"Instances":6}}"#, 6), (r#"{"workers":{"INSTANCES":6}}"#, 6)],
        },
        Target {
            name: "custom, decoder strict",
            call: custom("strict"),
            shape: CUSTOM,
            content_type: "application/json",
            answers: &[&["go"], &["exact"]],
            plain: &[(r#"{"Name":"pool","Workers":{"Instances":6}}"#, 6)],
        },
    ]
}

fn show(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(400).collect()
}

#[test]
fn the_gate_reads_the_count_the_actuators_apply_or_refuses() {
    let mut rng = Rng(0x5CA1_E0F1_7E5E_ED01);
    let targets = targets();
    let mut bodies: Vec<(usize, Vec<u8>)> = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        for (plain, _) in target.plain {
            bodies.push((index, plain.as_bytes().to_vec()));
        }
        // Every spelling of every segment of the path, alone and beside the exact key.
        for level in 0..target.shape.path.len() {
            for spelling in spellings(target.shape.path[level]).into_iter().chain(broken(target.shape.path[level])) {
                for beside in [false, true] {
                    let mut body = Vec::new();
                    let mut close = Vec::new();
                    if target.name == "docker" {
                        body.extend(b"{\"Name\":\"web\",");
                    } else {
                        body.push(b'{');
                    }
                    for (at, segment) in target.shape.path.iter().enumerate() {
                        if at > 0 {
                            body.push(b'{');
                        }
                        let last = at + 1 == target.shape.path.len();
                        if at == level {
                            if beside {
                                body.extend(format!("\"{segment}\":").bytes());
                                body.extend(if last { b"5".to_vec() } else { nested(&target.shape.path[at + 1..], 5) });
                                body.push(b',');
                            }
                            body.push(b'"');
                            body.extend(&spelling);
                            body.extend(b"\":");
                        } else {
                            body.extend(format!("\"{segment}\":").bytes());
                        }
                        if last {
                            body.extend(b"12");
                        }
                        close.push(b'}');
                    }
                    body.extend(close);
                    bodies.push((index, body));
                }
            }
        }
        for _ in 0..1500 {
            bodies.push((index, body(&target.shape, &mut rng)));
        }
    }
    let answers = decoded(&bodies.iter().map(|(_, body)| body.clone()).collect::<Vec<_>>());

    let mut faults = Vec::new();
    let mut read = vec![0usize; targets.len()];
    let mut refused: Vec<HashMap<&'static str, usize>> = vec![HashMap::new(); targets.len()];
    for ((index, body), answer) in bodies.iter().zip(&answers) {
        let target = &targets[*index];
        let gate = requested(&request(body, target.content_type), &target.call);
        let (unit, count) = match gate {
            Ok(read) => read,
            Err(refusal) => {
                if std::env::var_os("ENVOY_DIFF_DEBUG").is_some() && refusal.code == "body_not_json" {
                    println!("{}: {} {}", target.name, refusal.message, show(body));
                }
                *refused[*index].entry(refusal.code).or_default() += 1;
                continue;
            }
        };
        read[*index] += 1;
        for path in target.answers {
            let actuator = path.iter().fold(answer, |value, key| &value[*key]);
            let agrees = match applied(actuator) {
                None => true,
                Some(applied) => applied == i64::try_from(count).ok(),
            };
            let named = path != &["docker"]
                || applied(actuator).is_none()
                || actuator["name"].as_str().map(|name| format!("default/{name}")).as_deref() == Some(unit.as_str());
            if !agrees || !named {
                faults.push(format!(
                    "{}: the gate read {unit} {count}, {} applies {actuator}\n  body: {}",
                    target.name,
                    path.join("."),
                    show(body)
                ));
            }
        }
    }
    for (index, target) in targets.iter().enumerate() {
        for (plain, count) in target.plain {
            match requested(&request(plain.as_bytes(), target.content_type), &target.call) {
                Ok((_, read)) if read == *count => {}
                other => faults.push(format!("{}: {plain} must be read as {count}: {other:?}", target.name)),
            }
        }
        println!("{}: {} read, refused {:?}", target.name, read[index], refused[index]);
        assert!(
            read[index] >= 150,
            "{}: the gate read only {} bodies: the generator tests little",
            target.name,
            read[index]
        );
    }
    assert!(
        faults.is_empty(),
        "{} fault(s):\n{}",
        faults.len(),
        faults.iter().take(25).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// `{"b":{"c":N}}` for the rest of a path `["b","c"]`.
fn nested(rest: &[&str], count: u64) -> Vec<u8> {
    let mut out = String::new();
    for segment in rest {
        write!(out, "{{\"{segment}\":").unwrap();
    }
    write!(out, "{count}").unwrap();
    out.push_str(&"}".repeat(rest.len()));
    out.into_bytes()
}

#[test]
fn the_gate_reads_the_query_as_docker_and_nomad_do_or_refuses() {
    const KEYS: &[&str] = &[
        "rollback",
        "Rollback",
        "%72ollback",
        "rollback%00",
        "roll+back",
        "namespace",
        "%6eamespace",
        "name%73pace",
        "NAMESPACE",
        "version",
        "x",
        "",
    ];
    const VALUES: &[&str] = &[
        "previous",
        "none",
        "",
        "%70revious",
        "+previous",
        "previous%",
        "prod",
        "pr%6fd",
        "a%2Fb",
        "%zz",
        "default",
        "%E2%80%8Bprod",
        "a+b",
        "%ff",
    ];
    let mut rng = Rng(0x0DD5_EED5_0F0E_12A1);
    let mut queries: Vec<String> = Vec::new();
    for _ in 0..3000 {
        let mut query = String::new();
        for i in 0..1 + rng.below(3) {
            if i > 0 {
                const SEPARATORS: [&str; 4] = ["&", "&", ";", "&&"];
                query.push_str(SEPARATORS[rng.below(SEPARATORS.len())]);
            }
            let (key, value) = (rng.pick(KEYS), rng.pick(VALUES));
            match rng.below(6) {
                0 => query.push_str(key),
                1 => write!(query, "{key}=={value}").unwrap(),
                _ => write!(query, "{key}={value}").unwrap(),
            }
        }
        queries.push(query);
    }
    let answers = through(&["query"], &queries.iter().map(|q| q.as_bytes().to_vec()).collect::<Vec<_>>());
    let presets = Routes::presets();
    let (mut judged, mut faults) = ([0usize; 2], Vec::new());
    for (query, answer) in queries.iter().zip(&answers) {
        if answer.get("error").is_some() {
            continue;
        }
        let docker = presets.matching("POST", &format!("/v1.45/services/web/update?{query}")).unwrap();
        if docker.refusal.is_none() {
            judged[0] += 1;
            if !matches!(answer["rollback"].as_str(), Some("" | "none")) {
                faults.push(format!("docker: judged ?{query}, Go reads rollback={}", answer["rollback"]));
            }
        }
        let nomad = presets.matching("POST", &format!("/v1/job/api/scale?{query}")).unwrap();
        if nomad.refusal.is_none() {
            judged[1] += 1;
            let namespace = answer["namespace"].as_str().filter(|n| !n.is_empty()).unwrap_or("default");
            if nomad.unit != format!("{namespace}/api") {
                faults.push(format!("nomad: ?{query} read as unit {}, Go reads namespace {namespace:?}", nomad.unit));
            }
        }
    }
    println!("queries judged: docker {}, nomad {} of {}", judged[0], judged[1], queries.len());
    assert!(judged.iter().all(|&n| n >= 300), "the generator judges too few queries: {judged:?}");
    assert!(
        faults.is_empty(),
        "{} fault(s):\n{}",
        faults.len(),
        faults.iter().take(25).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_gate_knows_every_rune_go_folds_onto_an_ascii_letter() {
    let output = Command::new(decoders()).arg("folds").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let (code, letter) = line.split_once(' ').unwrap();
        let rune = char::from_u32(u32::from_str_radix(code.trim_start_matches("U+"), 16).unwrap()).unwrap();
        let letter = letter.chars().next().unwrap();
        assert!(
            GO_UNICODE_FOLDS.contains(&(rune, letter)),
            "this Go's encoding/json matches {code} to `{letter}`: add it to GO_UNICODE_FOLDS (decoder.rs)"
        );
        seen += 1;
    }
    assert!(seen >= 2, "Go folds at least ſ and K onto ASCII letters: {text:?}");
}
