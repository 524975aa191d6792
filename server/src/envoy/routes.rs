//! Routes: which HTTP requests are scale calls, the unit each one scales, where its replica count
//! is in the body and how the actuator decodes that body ([`Decoder`]). A routes file (YAML or
//! JSON) lists routes in order; the first whose method and path match a request decides it, and a
//! request no route matches is not a scale call.
//!
//! ```yaml
//! routes:
//!   - preset: docker            # POST /v{version}/services/{id}/update, /Mode/Replicated/Replicas
//!     unit: "swarm/{name}"      # optional: the preset's unit template ({name}: the body's Name)
//!   - preset: nomad             # POST /v1/job/{job}/scale, /Count
//!   - preset: kubernetes        # PUT|PATCH /apis/apps/v1/namespaces/{ns}/deployments/{name}/scale
//!   - methods: [POST]
//!     path: /apps/{app}/scale
//!     unit: "apps/{app}"
//!     replicas: /count
//!     decoder: strict           # optional: go, kubernetes or strict (the default)
//! ```
//!
//! A path pattern is split at `/`; each segment is a literal, or a literal prefix, one
//! `{variable}` matching a non-empty segment, and a literal suffix. The query string is never
//! matched. A request's path is matched as the actuators' routers read it: percent-escapes
//! decoded (`%2F` too), empty and `.` segments dropped, `..` resolved. `unit` is `namespace/name`
//! with the path's variables (and a preset's body variables) substituted; `replicas` is a JSON
//! pointer (RFC 6901) into the request body.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::decoder::BodyError;
pub use super::decoder::Decoder;
use super::query::{self, QueryRule};

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
    /// version prefix), `Mode.Replicated.Replicas`, decoder `go`; unit `default/{name}`, `{name}`
    /// the service's name in the body (`Name`: Swarm refuses an update that renames a service, so
    /// it is the name of the service updated, whether the path gives its name or its ID, as the
    /// Docker CLI does). `?rollback=previous` is refused: Swarm then applies the previous spec.
    Docker,
    /// Nomad's job scaling: `POST /v1/job/{job}/scale`, `Count`, decoder `go`; unit
    /// `{namespace}/{job}`, `{namespace}` the query's (`default` without one). A template without
    /// `{namespace}` judges the default namespace's jobs only.
    Nomad,
    /// The Kubernetes API's scale subresource of a Deployment or StatefulSet: `PUT`/`PATCH
    /// /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale`,
    /// `spec.replicas`, decoder `kubernetes`; unit `{ns}/{name}`.
    Kubernetes,
}

/// One route of a preset.
struct PresetRoute {
    methods: &'static [&'static str],
    path: &'static str,
    unit: &'static str,
    replicas: &'static str,
    /// Variables the unit template may use, read from the body: (name, JSON pointer).
    body: &'static [(&'static str, &'static str)],
    /// Query parameters the actuator reads.
    query: &'static [QueryRule],
}

const DOCKER_BODY: &[(&str, &str)] = &[("name", "/Name")];

/// `POST /services/{id}/update?rollback=previous`: Swarm applies the previous spec, not the body's.
const DOCKER_QUERY: &[QueryRule] = &[QueryRule {
    param: "rollback",
    default: "",
    judged: &["", "none"],
    variable: None,
    why: "Swarm then applies the service's previous spec, and its replica count, instead of the body's: the gate cannot judge it",
}];

/// Nomad scales the job of the query's namespace (`default` without one).
const NOMAD_QUERY: &[QueryRule] =
    &[QueryRule { param: "namespace", default: "default", judged: &[], variable: Some("namespace"), why: "" }];

impl Preset {
    /// The preset's routes.
    fn routes(self) -> &'static [PresetRoute] {
        match self {
            Self::Docker => &[
                PresetRoute {
                    methods: &["POST"],
                    path: "/v{version}/services/{id}/update",
                    unit: "default/{name}",
                    replicas: "/Mode/Replicated/Replicas",
                    body: DOCKER_BODY,
                    query: DOCKER_QUERY,
                },
                PresetRoute {
                    methods: &["POST"],
                    path: "/services/{id}/update",
                    unit: "default/{name}",
                    replicas: "/Mode/Replicated/Replicas",
                    body: DOCKER_BODY,
                    query: DOCKER_QUERY,
                },
            ],
            Self::Nomad => &[PresetRoute {
                methods: &["POST", "PUT"],
                path: "/v1/job/{job}/scale",
                unit: "{namespace}/{job}",
                replicas: "/Count",
                body: &[],
                query: NOMAD_QUERY,
            }],
            Self::Kubernetes => &[
                PresetRoute {
                    methods: &["PUT", "PATCH"],
                    path: "/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
                    unit: "{ns}/{name}",
                    replicas: "/spec/replicas",
                    body: &[],
                    query: &[],
                },
                PresetRoute {
                    methods: &["PUT", "PATCH"],
                    path: "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}/scale",
                    unit: "{ns}/{name}",
                    replicas: "/spec/replicas",
                    body: &[],
                    query: &[],
                },
            ],
        }
    }

    /// How the preset's actuator decodes its bodies.
    pub fn decoder(self) -> Decoder {
        match self {
            Self::Docker | Self::Nomad => Decoder::Go,
            Self::Kubernetes => Decoder::Kubernetes,
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
    decoder: Option<Decoder>,
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

/// What a route is made of, before it is checked and compiled.
#[derive(Clone, Copy)]
struct RouteSpec<'a> {
    path: &'a str,
    unit: &'a str,
    pointer: &'a str,
    decoder: Decoder,
    body: &'a [(&'a str, &'a str)],
    query: &'a [QueryRule],
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
    /// How the actuator decodes the body.
    pub decoder: Decoder,
    /// The body's variables the unit template uses: (name, JSON pointer).
    body: Vec<(String, String)>,
    /// The query parameters the actuator reads, each with whether the template uses its variable.
    query: Vec<(QueryRule, bool)>,
}

/// What a matched route says about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleCall {
    /// The route's path pattern (for messages and the audit line).
    pub pattern: String,
    /// The unit, `namespace/name`, the path's variables substituted: until [`Self::resolve`]
    /// reads the body's, a body variable stays `{name}`.
    pub unit: String,
    /// The JSON pointer to the replica count.
    pub replicas: String,
    /// How the actuator decodes the body.
    pub decoder: Decoder,
    /// The body's variables still to substitute in `unit`: (name, JSON pointer).
    pub body: Vec<(String, String)>,
    /// Why the call cannot be judged whatever its body (its query), if so.
    pub refusal: Option<BodyError>,
}

impl ScaleCall {
    /// The unit with the body's variables read by the route's decoder (the unit as is without any).
    ///
    /// # Errors
    /// [`BodyError`] `invalid_unit` (or `body_not_json`): a variable missing, not a string,
    /// ambiguous, empty, or with a `/`, `{` or `}` in it.
    pub fn resolve(&self, body: &[u8]) -> Result<String, BodyError> {
        if self.body.is_empty() {
            return Ok(self.unit.clone());
        }
        let mut values = BTreeMap::new();
        for (name, pointer) in &self.body {
            let value = self.decoder.text(body, pointer)?;
            if value.is_empty() || value.contains(['/', '{', '}']) {
                return Err(BodyError {
                    code: "invalid_unit",
                    message: format!(
                        "the unit's {name} at {pointer} is {value:?}: a name, non-empty, without / or braces"
                    ),
                });
            }
            values.insert(name.as_str(), value);
        }
        Ok(render(&self.unit, |name| values.get(name).map(String::as_str)))
    }
}

/// `template` with each `{variable}` that `value` knows replaced, in one pass (a value is never
/// read again as a template); an unknown one stays as written.
fn render<'a>(template: &str, value: impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        let Some(close) = after.find('}') else { break };
        let name = after.get(1..close).unwrap_or_default();
        match value(name) {
            Some(text) => out.push_str(text),
            None => out.push_str(after.get(..=close).unwrap_or_default()),
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// A request's path as the actuators' routers read it: percent-escapes decoded (Go's `URL.Path`,
/// `%2F` included), empty and `.` segments dropped, `..` resolved. Escapes that do not decode to
/// UTF-8 leave the path as sent (the actuator refuses it).
fn normalized(path: &str) -> String {
    let decoded = percent_decoded(path).unwrap_or_else(|| path.to_owned());
    let mut segments: Vec<&str> = Vec::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            segment => segments.push(segment),
        }
    }
    let mut out = String::with_capacity(decoded.len());
    for segment in segments {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

fn percent_decoded(path: &str) -> Option<String> {
    if !path.contains('%') {
        return Some(path.to_owned());
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let text = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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
            for route in preset.routes() {
                // INVARIANT: the presets' patterns and templates are valid (tested below).
                if let Ok(route) = Route::of_preset(preset, route, None, "") {
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
                    for field in [("replicas", entry.replicas.is_some()), ("decoder", entry.decoder.is_some())] {
                        if field.1 {
                            return Err(fault(format!("{at}.{}", field.0), "a preset has its own; give `unit` only"));
                        }
                    }
                    for route in preset.routes() {
                        routes.push(Route::of_preset(preset, route, entry.unit.as_deref(), &at)?);
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
                    // Fail closed: an actuator whose decoder is not named is read by the strictest.
                    let decoder = entry.decoder.unwrap_or(Decoder::Strict);
                    let spec =
                        RouteSpec { path: &path, unit: &unit, pointer: &replicas, decoder, body: &[], query: &[] };
                    routes.push(Route::new(methods, &spec, &at)?);
                }
            }
        }
        if routes.is_empty() {
            return Err(fault("routes", "no route: every request would pass unchecked"));
        }
        Ok(Self { routes })
    }

    /// The scale call `method` on `path` is, if any route matches (the query string ignored, the
    /// path read as the actuators read it).
    pub fn matching(&self, method: &str, path: &str) -> Option<ScaleCall> {
        let query = path.split_once('?').map_or("", |(_, query)| query);
        let path = normalized(path.split(['?', '#']).next().unwrap_or_default());
        self.routes.iter().find_map(|route| route.matching(method, &path, query))
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
    fn of_preset(preset: Preset, route: &PresetRoute, unit: Option<&str>, at: &str) -> Result<Self, RoutesError> {
        let methods = route.methods.iter().map(|m| (*m).to_owned()).collect();
        let unit = unit.unwrap_or(route.unit);
        let spec = RouteSpec {
            path: route.path,
            unit,
            pointer: route.replicas,
            decoder: preset.decoder(),
            body: route.body,
            query: route.query,
        };
        Self::new(methods, &spec, at)
    }

    fn new(methods: Vec<String>, spec: &RouteSpec<'_>, at: &str) -> Result<Self, RoutesError> {
        let RouteSpec { path, unit, pointer, decoder, body, query } = *spec;
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
        let mut known = names.clone();
        known.extend(body.iter().map(|(name, _)| (*name).to_owned()).filter(|name| !names.contains(name)));
        known.extend(
            query.iter().filter_map(|rule| rule.variable).map(str::to_owned).filter(|name| !names.contains(name)),
        );
        let used = check_template(unit, &known).map_err(|message| fault(here("unit"), message))?;
        if !pointer.starts_with('/') {
            return Err(fault(here("replicas"), "a JSON pointer, starting with /"));
        }
        decoder.check_pointer(pointer).map_err(|message| fault(here("replicas"), message))?;
        // A body variable the template uses, unless the path has one of that name.
        let body = body
            .iter()
            .filter(|(name, _)| used.iter().any(|used| used == name) && !names.iter().any(|path| path == name))
            .map(|(name, pointer)| ((*name).to_owned(), (*pointer).to_owned()))
            .collect();
        Ok(Self {
            methods: upper,
            pattern: path.to_owned(),
            segments,
            unit: unit.to_owned(),
            replicas: pointer.to_owned(),
            decoder,
            body,
            query: query
                .iter()
                .map(|rule| (*rule, rule.variable.is_some_and(|name| used.iter().any(|used| used == name))))
                .collect(),
        })
    }

    fn matching(&self, method: &str, path: &str, query: &str) -> Option<ScaleCall> {
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
        let mut refusal = None;
        let mut from_query = Vec::new();
        for (rule, in_template) in &self.query {
            match query::value(query, rule, *in_template) {
                Ok(value) => {
                    if let (Some(name), true) = (rule.variable, *in_template) {
                        from_query.push((name, value));
                    }
                }
                Err(error) => {
                    refusal.get_or_insert(error);
                }
            }
        }
        for (name, value) in &from_query {
            values.entry(name).or_insert(value.as_str());
        }
        let unit = render(&self.unit, |name| values.get(name).copied());
        Some(ScaleCall {
            pattern: self.pattern.clone(),
            unit,
            replicas: self.replicas.clone(),
            decoder: self.decoder,
            body: self.body.clone(),
            refusal,
        })
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

/// Checks a unit template against the variables it may use; the variables it uses.
fn check_template(unit: &str, names: &[String]) -> Result<Vec<String>, String> {
    let mut used = Vec::new();
    let mut rest = unit;
    while let Some(open) = rest.find('{') {
        if rest.get(..open).is_some_and(|before| before.contains('}')) {
            return Err("unbalanced braces".to_owned());
        }
        let after = rest.get(open + 1..).unwrap_or_default();
        let Some(close) = after.find('}') else { return Err("unbalanced braces".to_owned()) };
        let name = after.get(..close).unwrap_or_default();
        if name.contains('{') {
            return Err("unbalanced braces".to_owned());
        }
        if !names.iter().any(|n| n == name) {
            return Err(format!("{{{name}}} is not a variable of the path"));
        }
        used.push(name.to_owned());
        rest = after.get(close + 1..).unwrap_or_default();
    }
    if rest.contains('}') {
        return Err("unbalanced braces".to_owned());
    }
    match unit.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => Ok(used),
        _ => Err("namespace/name".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Decoder, Routes, ScaleCall, normalized};

    fn call(unit: &str, pattern: &str, replicas: &str, decoder: Decoder) -> Option<ScaleCall> {
        Some(ScaleCall {
            pattern: pattern.to_owned(),
            unit: unit.to_owned(),
            replicas: replicas.to_owned(),
            decoder,
            body: Vec::new(),
            refusal: None,
        })
    }

    fn docker(pattern: &str) -> Option<ScaleCall> {
        let mut call = call("default/{name}", pattern, "/Mode/Replicated/Replicas", Decoder::Go);
        if let Some(call) = &mut call {
            call.body = vec![("name".to_owned(), "/Name".to_owned())];
        }
        call
    }

    #[test]
    fn the_docker_preset_matches_a_service_update_and_names_the_unit_from_the_body() {
        let routes = Routes::presets();
        assert_eq!(
            routes.matching("POST", "/v1.45/services/web/update?version=12"),
            docker("/v{version}/services/{id}/update")
        );
        assert_eq!(routes.matching("POST", "/services/web/update"), docker("/services/{id}/update"));
        assert_eq!(routes.matching("GET", "/v1.45/services/web/update"), None);
        assert_eq!(routes.matching("POST", "/v1.45/services/web"), None);
        assert_eq!(routes.matching("POST", "/v1.45/services//update"), None);
        // The Docker CLI updates a service by its ID: the unit is the name in the body.
        let by_id = routes.matching("POST", "/v1.45/services/9xp1ihyk7tkqsffc1dzl04ndf/update").unwrap();
        assert_eq!(
            by_id.resolve(br#"{"Name":"web","Mode":{"Replicated":{"Replicas":3}}}"#),
            Ok("default/web".to_owned())
        );
        for (body, code) in [
            (r#"{"Mode":{}}"#, "invalid_unit"),
            (r#"{"Name":"web","name":"db"}"#, "invalid_unit"),
            (r#"{"Name":"a/b"}"#, "invalid_unit"),
            (r#"{"Name":"{id}"}"#, "invalid_unit"),
            (r#"{"Name":""}"#, "invalid_unit"),
            (r#"{"Name":"web""#, "body_not_json"),
        ] {
            assert_eq!(by_id.resolve(body.as_bytes()).map_err(|e| e.code), Err(code), "{body}");
        }
    }

    #[test]
    fn paths_are_matched_as_the_actuators_read_them() {
        let routes = Routes::presets();
        for path in [
            "/v1/job/api/%73cale",
            "/v1//job/api/scale",
            "/v1/job/api/scale/",
            "/v1/./job/x/../api/scale",
            "/v1/job%2Fapi/scale",
            "/v1/job/%61pi/scale?x=%2F",
        ] {
            assert_eq!(routes.matching("POST", path).map(|c| c.unit), Some("default/api".to_owned()), "{path}");
        }
        assert_eq!(normalized("/a/%zz/b"), "/a/%zz/b", "an escape that does not decode is left as sent");
        assert_eq!(normalized("/a/%ff"), "/a/%ff", "nor one that is not UTF-8");
        assert_eq!(normalized("/../.."), "/");
        // A path variable is substituted once: its value is not read as a template.
        let routes = Routes::parse(
            "routes:\n  - methods: [POST]\n    path: /a/{x}/{y}\n    unit: \"ns/{x}-{y}\"\n    replicas: /n\n",
            true,
        )
        .unwrap();
        assert_eq!(routes.matching("POST", "/a/%7By%7D/z").map(|c| c.unit), Some("ns/{y}-z".to_owned()));
    }

    #[test]
    fn the_query_says_which_nomad_job_and_refuses_a_docker_rollback() {
        let routes = Routes::presets();
        let prod = routes.matching("POST", "/v1/job/api/scale?namespace=prod&region=eu").unwrap();
        assert_eq!((prod.unit.as_str(), prod.refusal.is_none()), ("prod/api", true));
        let rollback = routes.matching("POST", "/v1.45/services/web/update?version=3&rollback=previous").unwrap();
        assert_eq!(rollback.refusal.map(|r| r.code), Some("query_refused"));
        let fine = routes.matching("POST", "/v1.45/services/web/update?version=3&rollback=none").unwrap();
        assert!(fine.refusal.is_none());
        // A template without {namespace} judges the default namespace only.
        let text = "routes:\n  - preset: nomad\n    unit: \"nomad/{job}\"\n";
        let routes = Routes::parse(text, true).unwrap();
        assert!(routes.matching("POST", "/v1/job/api/scale?namespace=default").unwrap().refusal.is_none());
        let other = routes.matching("POST", "/v1/job/api/scale?namespace=prod").unwrap();
        assert_eq!(other.refusal.map(|r| r.code), Some("invalid_unit"));
    }

    #[test]
    fn the_nomad_and_kubernetes_presets_match_their_scale_calls() {
        let routes = Routes::presets();
        assert_eq!(
            routes.matching("POST", "/v1/job/api/scale"),
            call("default/api", "/v1/job/{job}/scale", "/Count", Decoder::Go)
        );
        let kube = "/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale";
        for method in ["PUT", "PATCH", "patch"] {
            assert_eq!(
                routes.matching(method, "/apis/apps/v1/namespaces/shop/deployments/web/scale"),
                call("shop/web", kube, "/spec/replicas", Decoder::Kubernetes)
            );
        }
        assert_eq!(routes.matching("GET", "/apis/apps/v1/namespaces/shop/deployments/web/scale"), None);
        assert_eq!(routes.matching("PUT", "/apis/apps/v1/namespaces/shop/deployments/web"), None);
    }

    #[test]
    fn a_file_selects_presets_replaces_their_unit_and_adds_its_own_routes() {
        let text = "routes:\n  - preset: docker\n    unit: \"swarm/{id}\"\n  - methods: [post]\n    path: /apps/{app}/scale\n    unit: \"apps/{app}\"\n    replicas: /count\n  - methods: [post]\n    path: /pools/{pool}\n    unit: \"pools/{pool}\"\n    replicas: /Size\n    decoder: go\n";
        let routes = Routes::parse(text, true).unwrap();
        assert_eq!(routes.len(), 4);
        let db = routes.matching("POST", "/v1.41/services/db/update").unwrap();
        assert_eq!(
            (db.unit.as_str(), db.body.len()),
            ("swarm/db", 0),
            "{{id}} is the path's: nothing read from the body"
        );
        assert_eq!(
            routes.matching("POST", "/apps/web/scale"),
            call("apps/web", "/apps/{app}/scale", "/count", Decoder::Strict),
            "a route of one's own is read strictly unless it says otherwise"
        );
        assert_eq!(routes.matching("POST", "/pools/gpu").map(|c| c.decoder), Some(Decoder::Go));
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
            ("routes:\n  - preset: nomad\n    decoder: strict\n", "routes[0].decoder", "preset has its own"),
            ("routes:\n  - preset: docker\n    unit: \"swarm/{job}\"\n", "routes[0].unit", "not a variable"),
            (
                "routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/{x}\"\n    replicas: /n\n    decoder: yaml\n",
                "routes[0].decoder",
                "unknown variant",
            ),
            (
                "routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/{x}\"\n    replicas: /gr\u{f6}\u{df}e\n    decoder: go\n",
                "routes[0].replicas",
                "ASCII",
            ),
            ("routes: []\n", "routes", "no route"),
            (
                "routes:\n  - methods: [\"PO ST\"]\n    path: /a\n    unit: ns/a\n    replicas: /n\n",
                "routes[0].methods[0]",
                "letters",
            ),
            (
                "routes:\n  - methods: [POST]\n    path: /a/{x}\n    unit: \"ns/}{x}\"\n    replicas: /n\n",
                "routes[0].unit",
                "unbalanced",
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
