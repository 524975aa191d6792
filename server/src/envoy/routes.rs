//! Routes: which HTTP requests are scale calls, the unit each one scales and where its replica
//! count is in the body. A routes file (YAML or JSON) lists routes in order; the first whose
//! method and path match a request decides it, and a request no route matches is not a scale
//! call.
//!
//! ```yaml
//! routes:
//!   - preset: docker            # POST /v{version}/services/{id}/update, /Mode/Replicated/Replicas
//!     unit: "swarm/{id}"        # optional: the preset's unit template
//!   - preset: nomad             # POST /v1/job/{job}/scale, /Count
//!   - preset: kubernetes        # PUT|PATCH /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale
//!   - methods: [POST]
//!     path: /apps/{app}/scale
//!     unit: "apps/{app}"
//!     replicas: /count
//! ```
//!
//! A path pattern is split at `/`; each segment is a literal, or a literal prefix, one
//! `{variable}` matching a non-empty segment, and a literal suffix. The query string is never
//! matched. `unit` is `namespace/name` with the path's variables substituted; `replicas` is a
//! JSON pointer (RFC 6901) into the request body.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A routes file or route that cannot be used, with the path of the fault in the document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutesError {
    /// Where in the document: `routes[1].path`; empty for the whole document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for RoutesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

impl std::error::Error for RoutesError {}

fn fault(path: impl Into<String>, message: impl Into<String>) -> RoutesError {
    RoutesError { path: path.into(), message: message.into() }
}

/// The largest routes file read.
pub const MAX_ROUTES_BYTES: usize = 1 << 20;

/// A built-in route set, selectable by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Docker Engine's service update: `POST /v{version}/services/{id}/update` (and without the
    /// version prefix), `Mode.Replicated.Replicas`; unit `default/{id}`.
    Docker,
    /// Nomad's job scaling: `POST /v1/job/{job}/scale`, `Count`; unit `default/{job}`.
    Nomad,
    /// The Kubernetes API's scale subresource of a Deployment or StatefulSet: `PUT`/`PATCH
    /// /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale`,
    /// `spec.replicas`; unit `{ns}/{name}`.
    Kubernetes,
}

impl Preset {
    /// The preset's routes: (methods, path pattern, unit template, JSON pointer).
    fn routes(self) -> &'static [(&'static [&'static str], &'static str, &'static str, &'static str)] {
        match self {
            Self::Docker => &[
                (&["POST"], "/v{version}/services/{id}/update", "default/{id}", "/Mode/Replicated/Replicas"),
                (&["POST"], "/services/{id}/update", "default/{id}", "/Mode/Replicated/Replicas"),
            ],
            Self::Nomad => &[(&["POST", "PUT"], "/v1/job/{job}/scale", "default/{job}", "/Count")],
            Self::Kubernetes => &[
                (
                    &["PUT", "PATCH"],
                    "/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
                    "{ns}/{name}",
                    "/spec/replicas",
                ),
                (
                    &["PUT", "PATCH"],
                    "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}/scale",
                    "{ns}/{name}",
                    "/spec/replicas",
                ),
            ],
        }
    }
}

/// One entry of a routes file: a preset (whose unit template may be replaced), or a route of its
/// own with every field.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteEntry {
    preset: Option<Preset>,
    methods: Option<Vec<String>>,
    path: Option<String>,
    unit: Option<String>,
    replicas: Option<String>,
}

/// A routes file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoutesFile {
    routes: Vec<RouteEntry>,
}

/// One segment of a path pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Variable { prefix: String, name: String, suffix: String },
}

/// A compiled route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    methods: Vec<String>,
    pattern: String,
    segments: Vec<Segment>,
    unit: String,
    /// The JSON pointer to the replica count in the body.
    pub replicas: String,
}

/// What a matched route says about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleCall {
    /// The route's path pattern (for messages and the audit line).
    pub pattern: String,
    /// The unit, `namespace/name`, variables substituted.
    pub unit: String,
    /// The JSON pointer to the replica count.
    pub replicas: String,
}

/// Routes, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    routes: Vec<Route>,
}

impl Routes {
    /// The three presets with their default units (what `serve` uses without a routes file).
    pub fn presets() -> Self {
        let mut routes = Vec::new();
        for preset in [Preset::Docker, Preset::Nomad, Preset::Kubernetes] {
            for (methods, path, unit, pointer) in preset.routes() {
                // INVARIANT: the presets' patterns and templates are valid (tested below).
                if let Ok(route) =
                    Route::new(methods.iter().map(|m| (*m).to_owned()).collect(), path, unit, pointer, "")
                {
                    routes.push(route);
                }
            }
        }
        Self { routes }
    }

    /// Parses a routes file's text (`yaml`: YAML 1.2, else JSON).
    ///
    /// # Errors
    /// [`RoutesError`] at the path of the first fault: text that is not the document (an unknown
    /// field, a wrong type), a route without its fields, a bad pattern, template or pointer.
    pub fn parse(text: &str, yaml: bool) -> Result<Self, RoutesError> {
        if text.len() > MAX_ROUTES_BYTES {
            return Err(fault("", format!("larger than {MAX_ROUTES_BYTES} bytes")));
        }
        let value: serde_json::Value = if yaml {
            let options = serde_saphyr::options! {
                strict_booleans: true,
                duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            };
            serde_saphyr::from_str_with_options(text, options)
                .map_err(|error| fault("", format!("not valid YAML: {error}")))?
        } else {
            crate::strict::check(text.as_bytes()).map_err(|error| fault("", format!("not valid JSON: {error}")))?;
            serde_json::from_str(text).map_err(|error| fault("", format!("not valid JSON: {error}")))?
        };
        let file: RoutesFile = serde_path_to_error::deserialize(value).map_err(|error| {
            let path = error.path().to_string();
            fault(if path == "." { String::new() } else { path }, error.into_inner().to_string())
        })?;
        let mut routes = Vec::new();
        for (index, entry) in file.routes.into_iter().enumerate() {
            let at = format!("routes[{index}]");
            match entry.preset {
                Some(preset) => {
                    for field in [("methods", entry.methods.is_some()), ("path", entry.path.is_some())] {
                        if field.1 {
                            return Err(fault(format!("{at}.{}", field.0), "a preset has its own; give `unit` only"));
                        }
                    }
                    if entry.replicas.is_some() {
                        return Err(fault(format!("{at}.replicas"), "a preset has its own; give `unit` only"));
                    }
                    for (methods, path, unit, pointer) in preset.routes() {
                        let unit = entry.unit.as_deref().unwrap_or(unit);
                        let methods = methods.iter().map(|m| (*m).to_owned()).collect();
                        routes.push(Route::new(methods, path, unit, pointer, &at)?);
                    }
                }
                None => {
                    let need = |value: Option<String>, field: &str| {
                        value.ok_or_else(|| fault(format!("{at}.{field}"), "missing (or give `preset`)"))
                    };
                    let methods = entry.methods.ok_or_else(|| fault(format!("{at}.methods"), "missing"))?;
                    let path = need(entry.path, "path")?;
                    let unit = need(entry.unit, "unit")?;
                    let replicas = need(entry.replicas, "replicas")?;
                    routes.push(Route::new(methods, &path, &unit, &replicas, &at)?);
                }
            }
        }
        if routes.is_empty() {
            return Err(fault("routes", "no route: every request would pass unchecked"));
        }
        Ok(Self { routes })
    }

    /// The scale call `method` on `path` is, if any route matches (the query string ignored).
    pub fn matching(&self, method: &str, path: &str) -> Option<ScaleCall> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        self.routes.iter().find_map(|route| route.matching(method, path))
    }

    /// How many routes there are.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

impl Route {
    fn new(methods: Vec<String>, path: &str, unit: &str, pointer: &str, at: &str) -> Result<Self, RoutesError> {
        let here = |field: &str| if at.is_empty() { field.to_owned() } else { format!("{at}.{field}") };
        if methods.is_empty() {
            return Err(fault(here("methods"), "at least one method"));
        }
        let mut upper = Vec::new();
        for (i, method) in methods.iter().enumerate() {
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(fault(format!("{}[{i}]", here("methods")), "an HTTP method, letters only"));
            }
            upper.push(method.to_ascii_uppercase());
        }
        let Some(rest) = path.strip_prefix('/') else {
            return Err(fault(here("path"), "must start with /"));
        };
        let mut segments = Vec::new();
        let mut names = Vec::new();
        for segment in rest.split('/') {
            let parsed = parse_segment(segment).map_err(|message| fault(here("path"), message))?;
            if let Segment::Variable { name, .. } = &parsed {
                if names.contains(name) {
                    return Err(fault(here("path"), format!("{{{name}}} appears twice")));
                }
                names.push(name.clone());
            }
            segments.push(parsed);
        }
        check_template(unit, &names).map_err(|message| fault(here("unit"), message))?;
        if !pointer.starts_with('/') {
            return Err(fault(here("replicas"), "a JSON pointer, starting with /"));
        }
        Ok(Self {
            methods: upper,
            pattern: path.to_owned(),
            segments,
            unit: unit.to_owned(),
            replicas: pointer.to_owned(),
        })
    }

    fn matching(&self, method: &str, path: &str) -> Option<ScaleCall> {
        if !self.methods.iter().any(|m| m.eq_ignore_ascii_case(method)) {
            return None;
        }
        let rest = path.strip_prefix('/')?;
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut values: BTreeMap<&str, &str> = BTreeMap::new();
        for (segment, part) in self.segments.iter().zip(&parts) {
            match segment {
                Segment::Literal(literal) => {
                    if literal != part {
                        return None;
                    }
                }
                Segment::Variable { prefix, name, suffix } => {
                    let value = part.strip_prefix(prefix.as_str())?.strip_suffix(suffix.as_str())?;
                    if value.is_empty() {
                        return None;
                    }
                    values.insert(name.as_str(), value);
                }
            }
        }
        let mut unit = self.unit.clone();
        for (name, value) in values {
            unit = unit.replace(&format!("{{{name}}}"), value);
        }
        Some(ScaleCall { pattern: self.pattern.clone(), unit, replicas: self.replicas.clone() })
    }
}

fn parse_segment(segment: &str) -> Result<Segment, String> {
    match (segment.find('{'), segment.find('}')) {
        (None, None) => Ok(Segment::Literal(segment.to_owned())),
        (Some(open), Some(close)) if open < close => {
            let (prefix, rest) = segment.split_at(open);
            let name = rest.get(1..close - open).unwrap_or_default();
            let suffix = rest.get(close - open + 1..).unwrap_or_default();
            if suffix.contains(['{', '}']) {
                return Err(format!("segment {segment:?}: one {{variable}} per segment"));
            }
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(format!("segment {segment:?}: a variable is {{letters, digits, _}}"));
            }
            Ok(Segment::Variable { prefix: prefix.to_owned(), name: name.to_owned(), suffix: suffix.to_owned() })
        }
        _ => Err(format!("segment {segment:?}: unbalanced braces")),
    }
}

fn check_template(unit: &str, names: &[String]) -> Result<(), String> {
    let mut rest = unit;
    while let Some(open) = rest.find('{') {
        let after = rest.get(open + 1..).unwrap_or_default();
        let Some(close) = after.find('}') else { return Err("unbalanced braces".to_owned()) };
        let name = after.get(..close).unwrap_or_default();
        if !names.iter().any(|n| n == name) {
            return Err(format!("{{{name}}} is not a variable of the path"));
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
    if rest.contains('}') {
        return Err("unbalanced braces".to_owned());
    }
    match unit.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => Ok(()),
        _ => Err("namespace/name".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Routes, ScaleCall};

    fn call(unit: &str, pattern: &str, replicas: &str) -> Option<ScaleCall> {
        Some(ScaleCall { pattern: pattern.to_owned(), unit: unit.to_owned(), replicas: replicas.to_owned() })
    }

    #[test]
    fn the_docker_preset_matches_a_service_update_with_and_without_the_version() {
        let routes = Routes::presets();
        assert_eq!(
            routes.matching("POST", "/v1.45/services/web/update?version=12"),
            call("default/web", "/v{version}/services/{id}/update", "/Mode/Replicated/Replicas")
        );
        assert_eq!(
            routes.matching("POST", "/services/web/update"),
            call("default/web", "/services/{id}/update", "/Mode/Replicated/Replicas")
        );
        assert_eq!(routes.matching("GET", "/v1.45/services/web/update"), None);
        assert_eq!(routes.matching("POST", "/v1.45/services/web"), None);
        assert_eq!(routes.matching("POST", "/v1.45/services//update"), None);
    }

    #[test]
    fn the_nomad_and_kubernetes_presets_match_their_scale_calls() {
        let routes = Routes::presets();
        assert_eq!(routes.matching("POST", "/v1/job/api/scale"), call("default/api", "/v1/job/{job}/scale", "/Count"));
        let kube = "/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale";
        for method in ["PUT", "PATCH", "patch"] {
            assert_eq!(
                routes.matching(method, "/apis/apps/v1/namespaces/shop/deployments/web/scale"),
                call("shop/web", kube, "/spec/replicas")
            );
        }
        assert_eq!(routes.matching("GET", "/apis/apps/v1/namespaces/shop/deployments/web/scale"), None);
        assert_eq!(routes.matching("PUT", "/apis/apps/v1/namespaces/shop/deployments/web"), None);
    }

    #[test]
    fn a_file_selects_presets_replaces_their_unit_and_adds_its_own_routes() {
        let text = "routes:\n  - preset: docker\n    unit: \"swarm/{id}\"\n  - methods: [post]\n    path: /apps/{app}/scale\n    unit: \"apps/{app}\"\n    replicas: /count\n";
        let routes = Routes::parse(text, true).unwrap();
        assert_eq!(routes.len(), 3);
        assert_eq!(routes.matching("POST", "/v1.41/services/db/update").map(|c| c.unit), Some("swarm/db".to_owned()));
        assert_eq!(routes.matching("POST", "/apps/web/scale"), call("apps/web", "/apps/{app}/scale", "/count"));
        // Not selected: Nomad's calls are not scale calls here.
        assert_eq!(routes.matching("POST", "/v1/job/api/scale"), None);
    }

    #[test]
    fn faults_are_reported_at_their_path() {
        let cases = [
            ("routes:\n  - preset: docker\n    colour: red\n", "routes[0].colour", "unknown field"),
            ("routes:\n  - preset: swarm\n", "routes[0].preset", "unknown variant"),
            (
                "routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/{y}\"\n    replicas: /n\n",
                "routes[0].unit",
                "not a variable",
            ),
            (
                "routes:\n  - methods: [POST]\n    path: a/{x}\n    unit: \"ns/{x}\"\n    replicas: /n\n",
                "routes[0].path",
                "start with /",
            ),
            ("routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/{x}\"\n", "routes[0].replicas", "missing"),
            (
                "routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/{x}\"\n    replicas: n\n",
                "routes[0].replicas",
                "JSON pointer",
            ),
            ("routes:\n  - preset: nomad\n    path: /x\n", "routes[0].path", "preset has its own"),
            ("routes: []\n", "routes", "no route"),
            (
                "routes:\n  - methods: [\"PO ST\"]\n    path: /a\n    unit: ns/a\n    replicas: /n\n",
                "routes[0].methods[0]",
                "letters",
            ),
        ];
        for (text, path, words) in cases {
            let error = Routes::parse(text, true).unwrap_err();
            assert_eq!(error.path, path, "{text}: {error}");
            assert!(error.message.contains(words), "{text}: {error}");
        }
        let error = Routes::parse(r#"{"routes": [{"preset": "docker", "preset": "nomad"}]}"#, false).unwrap_err();
        assert!(error.message.contains("not valid JSON"), "{error}");
        let error = Routes::parse(r#"{"routes": [{"preset": 3}]}"#, false).unwrap_err();
        assert_eq!(error.path, "routes[0].preset");
    }
}
