//! The watch: every ScaleUnit, and the scale target of every unit, folded into the unit
//! registry ([`Units::set_resource`], [`Units::set_observed`]).
//!
//! One task owns the state: every watcher forwards its events into one queue, and the loop
//! applies them in order. Deployments and StatefulSets are watched from the start (the service
//! is ready once they, and the ScaleUnits, are listed); another kind with a `scale` subresource
//! gets a watch of its own when a ScaleUnit first names it, and its count is read from its
//! `scale` subresource each time its object changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource};
use kube::core::{DynamicResourceScope, GroupVersionKind};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt as _};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::resource::{Mode, ScaleUnit, ScaleUnitStatus};
use super::{Cluster, TargetKey, events::Reason, reference};
use crate::audit::AuditRecord;
use crate::sources::{Sources, WorkloadKind};
use crate::units::{Observed, SeenChange, UnitKey};

/// A workload as the watch reads it: its metadata and `spec.replicas`, the rest skipped unread.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct Workload {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<WorkloadSpec>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct WorkloadSpec {
    #[serde(default)]
    replicas: Option<i64>,
}

impl Resource for Workload {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A target object as the watch last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    uid: Option<String>,
    generation: Option<i64>,
    /// `spec.replicas` (`None`: negative or unreadable — no decision stands on it).
    replicas: Option<u64>,
}

/// The ScaleUnit behind a unit.
#[derive(Clone, Debug)]
pub(super) struct ResourceMeta {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: Option<String>,
    pub(super) generation: Option<i64>,
}

/// What the watch and the status writer keep of one unit.
#[derive(Debug, Default)]
pub(super) struct Track {
    /// The ScaleUnit (`None`: a contract file's unit).
    pub(super) resource: Option<ResourceMeta>,
    /// The target's `apiVersion` and key.
    pub(super) target: Option<(String, TargetKey)>,
    /// What the watch knows of the target.
    pub(super) observed: Option<Observed>,
    /// The ScaleUnit's status when the watch first saw it (restored from at the target's first
    /// sight) — then what the status writer last wrote.
    pub(super) status: Option<ScaleUnitStatus>,
    /// Whether `status` came from the resource and was not yet restored from.
    restorable: bool,
    /// The component's refusal of the ScaleUnit's contract (its path and message), or another
    /// reason it is not in force.
    pub(super) refused: Option<(String, String)>,
    /// The status writer's own state.
    pub(super) writer: super::status::WriterState,
}

impl Track {
    pub(super) fn resource_ref(&self) -> Option<ObjectReference> {
        self.resource.as_ref().map(|meta| {
            reference(
                &format!("{}/{}", super::resource::GROUP, super::resource::VERSION),
                "ScaleUnit",
                &meta.namespace,
                &meta.name,
                meta.uid.as_deref(),
            )
        })
    }

    pub(super) fn target_ref(&self) -> Option<ObjectReference> {
        self.target
            .as_ref()
            .map(|(api_version, key)| reference(api_version, &key.kind, &key.namespace, &key.name, None))
    }
}

/// The watch's state.
#[derive(Debug, Default)]
pub(super) struct Tracks {
    pub(super) units: BTreeMap<UnitKey, Track>,
    seen: HashMap<TargetKey, Seen>,
    /// Kinds watched (beside Deployments and StatefulSets), by group and kind.
    watched_kinds: BTreeSet<(String, String)>,
}

/// What the watchers tell the loop.
enum Input {
    ScaleUnit(Box<Event<ScaleUnit>>),
    Target {
        group: String,
        kind: String,
        event: Event<Seeing>,
    },
    /// A watcher failed (it retries with backoff).
    Failed(&'static str, String),
    /// Rescan the contract files' units.
    Tick,
}

/// A target object with its count read.
#[derive(Clone, Debug)]
struct Seeing {
    namespace: String,
    name: String,
    seen: Seen,
}

const FILES_RESCAN: Duration = Duration::from_secs(2);

pub(super) async fn run(cluster: Arc<Cluster>) {
    let (sender, mut receiver) = mpsc::channel::<Input>(1024);
    spawn_scale_units(&cluster, sender.clone());
    for (kind, plural) in [("Deployment", "deployments"), ("StatefulSet", "statefulsets")] {
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", kind), plural);
        spawn_targets(&cluster, resource, false, sender.clone());
    }
    {
        let sender = sender.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(FILES_RESCAN);
            loop {
                interval.tick().await;
                if sender.send(Input::Tick).await.is_err() {
                    return;
                }
            }
        });
    }
    // Listed once: the ScaleUnits, the Deployments, the StatefulSets.
    let mut listed: BTreeSet<&'static str> = BTreeSet::new();
    let mut listing: HashMap<String, BTreeSet<(String, String)>> = HashMap::new();
    while let Some(input) = receiver.recv().await {
        match input {
            Input::ScaleUnit(event) => {
                match *event {
                    Event::Init => {
                        listing.insert("ScaleUnit".to_owned(), BTreeSet::new());
                    }
                    Event::InitApply(unit) => {
                        listing
                            .entry("ScaleUnit".to_owned())
                            .or_default()
                            .insert((unit.namespace().unwrap_or_default(), unit.name_any()));
                        apply_scale_unit(&cluster, unit, &sender).await;
                    }
                    Event::Apply(unit) => apply_scale_unit(&cluster, unit, &sender).await,
                    Event::Delete(unit) => delete_scale_unit(&cluster, &unit),
                    Event::InitDone => {
                        let present = listing.remove("ScaleUnit").unwrap_or_default();
                        let gone: Vec<UnitKey> = {
                            let tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
                            tracks
                                .units
                                .iter()
                                .filter_map(|(key, track)| {
                                    let meta = track.resource.as_ref()?;
                                    (!present.contains(&(meta.namespace.clone(), meta.name.clone())))
                                        .then(|| key.clone())
                                })
                                .collect()
                        };
                        for key in gone {
                            remove_unit(&cluster, &key);
                        }
                        listed.insert("ScaleUnit");
                    }
                }
                resolve(&cluster);
            }
            Input::Target { group, kind, event } => {
                let at_ms = cluster.units.clock_ms();
                let listing_key = format!("{group}/{kind}");
                let mut touched: Vec<TargetKey> = Vec::new();
                {
                    let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
                    let target = |namespace: String, name: String| TargetKey {
                        group: group.clone(),
                        kind: kind.clone(),
                        namespace,
                        name,
                    };
                    match event {
                        Event::Init => {
                            listing.insert(listing_key.clone(), BTreeSet::new());
                        }
                        Event::InitApply(seeing) | Event::Apply(seeing) => {
                            listing
                                .entry(listing_key.clone())
                                .or_default()
                                .insert((seeing.namespace.clone(), seeing.name.clone()));
                            let key = target(seeing.namespace, seeing.name);
                            tracks.seen.insert(key.clone(), seeing.seen);
                            touched.push(key);
                        }
                        Event::Delete(seeing) => {
                            let key = target(seeing.namespace, seeing.name);
                            tracks.seen.remove(&key);
                            touched.push(key);
                        }
                        Event::InitDone => {
                            let present = listing.remove(&listing_key).unwrap_or_default();
                            let gone: Vec<TargetKey> = tracks
                                .seen
                                .keys()
                                .filter(|key| {
                                    key.group == group
                                        && key.kind == kind
                                        && !present.contains(&(key.namespace.clone(), key.name.clone()))
                                })
                                .cloned()
                                .collect();
                            for key in gone {
                                tracks.seen.remove(&key);
                                touched.push(key);
                            }
                            match kind.as_str() {
                                "Deployment" => {
                                    listed.insert("Deployment");
                                }
                                "StatefulSet" => {
                                    listed.insert("StatefulSet");
                                }
                                _ => {}
                            }
                        }
                    }
                }
                observe_targets(&cluster, &touched, at_ms);
            }
            Input::Failed(what, error) => {
                tracing::warn!("the Kubernetes watch of {what} failed (it retries): {error}");
            }
            Input::Tick => resolve(&cluster),
        }
        if !cluster.synced() && listed.len() == 3 {
            resolve(&cluster);
            cluster.synced.store(true, Ordering::SeqCst);
            tracing::info!("the Kubernetes watch is in step with the API server");
        }
    }
}

fn spawn_scale_units(cluster: &Arc<Cluster>, sender: mpsc::Sender<Input>) {
    let api: Api<ScaleUnit> = Api::all(cluster.client.clone());
    tokio::spawn(async move {
        let mut stream = watcher(api, watcher::Config::default()).default_backoff().boxed();
        while let Some(event) = stream.next().await {
            let input = match event {
                Ok(event) => Input::ScaleUnit(Box::new(event)),
                Err(error) => Input::Failed("ScaleUnits", error.to_string()),
            };
            if sender.send(input).await.is_err() {
                return;
            }
        }
    });
}

/// `kube::runtime::watcher`, named for the two kinds of objects it watches here.
fn watcher<K>(api: Api<K>, config: watcher::Config) -> impl futures_util::Stream<Item = watcher::Result<Event<K>>>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher::watcher(api, config)
}

/// Watches every object of `resource`'s kind; with `scale`, reads each one's count from its
/// `scale` subresource (any kind), else from its `spec.replicas` (Deployments, StatefulSets).
fn spawn_targets(cluster: &Arc<Cluster>, resource: ApiResource, scale: bool, sender: mpsc::Sender<Input>) {
    let client = cluster.client.clone();
    tokio::spawn(async move {
        let api: Api<Workload> = Api::all_with(client.clone(), &resource);
        let (group, kind) = (resource.group.clone(), resource.kind.clone());
        let what: &'static str = match kind.as_str() {
            "Deployment" => "Deployments",
            "StatefulSet" => "StatefulSets",
            _ => "scale targets",
        };
        let mut stream = watcher(api, watcher::Config::default()).default_backoff().boxed();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    if sender.send(Input::Failed(what, error.to_string())).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            let read = |workload: Workload| {
                let client = client.clone();
                let resource = resource.clone();
                async move {
                    let namespace = workload.metadata.namespace.clone().unwrap_or_default();
                    let name = workload.metadata.name.clone().unwrap_or_default();
                    let replicas = if scale {
                        let api: Api<Workload> = Api::namespaced_with(client, &namespace, &resource);
                        match api.get_scale(&name).await {
                            Ok(scale) => {
                                scale.spec.and_then(|spec| spec.replicas).and_then(|count| u64::try_from(count).ok())
                            }
                            Err(error) => {
                                tracing::warn!(target = %format!("{}/{namespace}/{name}", resource.kind), "its scale cannot be read: {error}");
                                None
                            }
                        }
                    } else {
                        // The API server defaults an absent spec.replicas to 1.
                        u64::try_from(workload.spec.and_then(|spec| spec.replicas).unwrap_or(1)).ok()
                    };
                    let seen = Seen { uid: workload.metadata.uid, generation: workload.metadata.generation, replicas };
                    Seeing { namespace, name, seen }
                }
            };
            let event = match event {
                Event::Init => Event::Init,
                Event::InitDone => Event::InitDone,
                Event::InitApply(workload) => Event::InitApply(read(workload).await),
                Event::Apply(workload) => Event::Apply(read(workload).await),
                Event::Delete(workload) => Event::Delete(read(workload).await),
            };
            if sender.send(Input::Target { group: group.clone(), kind: kind.clone(), event }).await.is_err() {
                return;
            }
        }
    });
}

/// A ScaleUnit added or changed: its contract into the registry, its target resolved.
async fn apply_scale_unit(cluster: &Arc<Cluster>, unit: ScaleUnit, sender: &mpsc::Sender<Input>) {
    let namespace = unit.namespace().unwrap_or_default();
    let name = unit.name_any();
    let key = match UnitKey::new(&namespace, &name) {
        Ok(key) => key,
        Err(error) => {
            tracing::warn!(scale_unit = %format!("{namespace}/{name}"), "not a unit name: {error}");
            return;
        }
    };
    let meta = ResourceMeta {
        namespace: namespace.clone(),
        name: name.clone(),
        uid: unit.metadata.uid.clone(),
        generation: unit.metadata.generation,
    };
    let spec = &unit.spec;
    let reference = &spec.scale_target_ref;
    let group = reference.group().to_owned();
    let target =
        TargetKey { group: group.clone(), kind: reference.kind.clone(), namespace, name: reference.name.clone() };
    // Another kind than the two always watched: a watch of its own, once.
    if !matches!((group.as_str(), reference.kind.as_str()), ("apps", "Deployment" | "StatefulSet")) {
        ensure_watched(cluster, &group, reference, sender).await;
    }
    let sources = match &spec.sources {
        None => Ok(None),
        Some(value) => Sources::parse(&value.to_string(), false)
            .map_err(|error| (format!("spec.sources.{}", error.path).trim_end_matches('.').to_owned(), error.message))
            .and_then(|sources| no_service_files(&sources).map(|()| Some(sources))),
    };
    let contract = spec.contract.to_string();
    let result = match sources {
        Err(refused) => Err(refused),
        Ok(sources) => cluster
            .units
            .set_resource(key.clone(), &contract, sources, spec.mode)
            .await
            .map(|_| ())
            .map_err(|error| refusal(&error)),
    };
    let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
    let track = tracks.units.entry(key.clone()).or_default();
    let retargeted = track.target.as_ref().is_some_and(|(_, held)| held != &target);
    if track.resource.is_none() {
        // First sight: its status is what a previous watch knew.
        track.status = unit.status.clone();
        track.restorable = unit.status.is_some();
    }
    if retargeted {
        // Another target: nothing is known of it yet.
        track.observed = None;
        track.restorable = false;
        cluster.units.forget_observed(&key);
    }
    track.resource = Some(meta);
    track.target = Some((reference.api_version.clone(), target));
    match result {
        Ok(()) => track.refused = None,
        Err((path, message)) => {
            let first = track.refused.as_ref() != Some(&(path.clone(), message.clone()));
            tracing::warn!(unit = %key, "the ScaleUnit's contract is refused at {path}: {message}");
            track.refused = Some((path.clone(), message.clone()));
            drop(tracks);
            if first {
                cluster.publish(&key, Reason::ContractRefused, &format!("{path}: {message}"));
            }
        }
    }
}

/// A ScaleUnit's sources name no file of the service's own: whoever may create a ScaleUnit in a
/// namespace must not make the service read its files (its ServiceAccount's token as a "bearer
/// token" sent to a server of their choosing, a key as a CA). A token or a CA for a Prometheus
/// server belongs in a sources file of the contracts folder, which the operator controls.
fn no_service_files(sources: &Sources) -> Result<(), (String, String)> {
    for (name, server) in &sources.prometheus {
        for (field, named) in [("bearer_token_file", &server.bearer_token_file), ("ca_file", &server.ca_file)] {
            if named.is_some() {
                return Err((
                    format!("spec.sources.prometheus.{name}.{field}"),
                    "a ScaleUnit may not name a file of the service (give this server in a sources file of the contracts folder)"
                        .to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// The path and message of a refusal, for the `Ready` condition.
fn refusal(error: &crate::units::UnitError) -> (String, String) {
    match error {
        crate::units::UnitError::Evaluation(error) => {
            let path = error.path();
            // The core names a request's paths from `contract.`, a bare contract's from its root.
            let rest = if path == "contract" { "" } else { path.strip_prefix("contract.").unwrap_or(path) };
            let path = if rest.is_empty() { "spec.contract".to_owned() } else { format!("spec.contract.{rest}") };
            (path, format!("{}: {}", error.code().as_str(), error.message()))
        }
        other => ("spec.contract".to_owned(), other.to_string()),
    }
}

async fn ensure_watched(
    cluster: &Arc<Cluster>,
    group: &str,
    reference: &super::resource::ScaleTargetRef,
    sender: &mpsc::Sender<Input>,
) {
    let kind = (group.to_owned(), reference.kind.clone());
    {
        let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        if !tracks.watched_kinds.insert(kind) {
            return;
        }
    }
    let version = reference.api_version.rsplit_once('/').map_or(reference.api_version.as_str(), |(_, version)| version);
    let gvk = GroupVersionKind::gvk(group, version, &reference.kind);
    match kube::discovery::pinned_kind(&cluster.client, &gvk).await {
        Ok((resource, _)) => spawn_targets(cluster, resource, true, sender.clone()),
        Err(error) => {
            tracing::warn!(kind = %reference.kind, "the scale target's kind cannot be found on the API server: {error}");
            let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
            tracks.watched_kinds.remove(&(group.to_owned(), reference.kind.clone()));
        }
    }
}

fn delete_scale_unit(cluster: &Arc<Cluster>, unit: &ScaleUnit) {
    if let Ok(key) = UnitKey::new(unit.namespace().unwrap_or_default(), unit.name_any()) {
        remove_unit(cluster, &key);
    }
}

/// A ScaleUnit went: its unit stops gating its target.
fn remove_unit(cluster: &Arc<Cluster>, key: &UnitKey) {
    cluster.units.remove_resource(key);
    let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
    tracks.units.remove(key);
    drop(tracks);
    tracing::info!(unit = %key, "ScaleUnit removed: its target is no longer gated");
}

/// The targets of every unit (ScaleUnits and contract files), the index the webhook reads, and
/// each unit's observation from what was seen.
fn resolve(cluster: &Arc<Cluster>) {
    let at_ms = cluster.units.clock_ms();
    let keys = cluster.units.keys();
    let mut index: HashMap<TargetKey, UnitKey> = HashMap::new();
    let mut touched = Vec::new();
    {
        let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        // Units of contract files: a Deployment or StatefulSet of the unit's name (the kind its
        // sources declare, else whichever exists; both: ambiguous, no count).
        let files: Vec<UnitKey> = keys
            .iter()
            .filter(|key| tracks.units.get(*key).is_none_or(|track| track.resource.is_none()))
            .cloned()
            .collect();
        let present: BTreeSet<UnitKey> = files.iter().cloned().collect();
        tracks.units.retain(|key, track| track.resource.is_some() || present.contains(key));
        for key in files {
            let declared = cluster.units.sources(&key).and_then(|sources| sources.workload);
            let candidate = |kind: &str| TargetKey {
                group: "apps".to_owned(),
                kind: kind.to_owned(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            };
            let kinds: Vec<&str> = match declared {
                Some(WorkloadKind::Deployment) => vec!["Deployment"],
                Some(WorkloadKind::StatefulSet) => vec!["StatefulSet"],
                None => vec!["Deployment", "StatefulSet"],
            };
            for kind in &kinds {
                index.insert(candidate(kind), key.clone());
            }
            let existing: Vec<TargetKey> =
                kinds.iter().map(|kind| candidate(kind)).filter(|target| tracks.seen.contains_key(target)).collect();
            let target = match existing.as_slice() {
                [one] => Some(one.clone()),
                [] => kinds.first().map(|kind| candidate(kind)),
                _ => {
                    tracing::warn!(unit = %key, "a Deployment and a StatefulSet share the unit's name and its sources declare no workload: no count");
                    None
                }
            };
            let track = tracks.units.entry(key.clone()).or_default();
            let target = target.map(|target| ("apps/v1".to_owned(), target));
            if track.target != target {
                track.observed = None;
                cluster.units.forget_observed(&key);
            }
            track.target = target;
            touched.push(key);
        }
        for (key, track) in &tracks.units {
            if let (Some(_), Some((_, target))) = (&track.resource, &track.target) {
                // A ScaleUnit names its target: it wins over a file's unit of the same name.
                index.insert(target.clone(), key.clone());
                touched.push(key.clone());
            }
        }
    }
    cluster.targets.store(Arc::new(index));
    observe_units(cluster, &touched, at_ms);
}

/// The units whose target is one of `targets`, observed again.
fn observe_targets(cluster: &Arc<Cluster>, targets: &[TargetKey], at_ms: i64) {
    let units: Vec<UnitKey> = {
        let tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        tracks
            .units
            .iter()
            .filter(|(_, track)| track.target.as_ref().is_some_and(|(_, target)| targets.contains(target)))
            .map(|(key, _)| key.clone())
            .collect()
    };
    observe_units(cluster, &units, at_ms);
}

/// What a unit's observation became.
enum Outcome {
    Unchanged,
    Changed(SeenChange),
}

fn observe_units(cluster: &Arc<Cluster>, keys: &[UnitKey], at_ms: i64) {
    let mut changes = Vec::new();
    {
        let mut tracks = cluster.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        let Tracks { units, seen, .. } = &mut *tracks;
        for key in keys {
            let Some(track) = units.get_mut(key) else { continue };
            let seen = track.target.as_ref().and_then(|(_, target)| seen.get(target));
            let (observed, outcome) = observe(track, seen, at_ms);
            if track.observed.as_ref() != Some(&observed) {
                cluster.units.set_observed(key, observed.clone());
                track.observed = Some(observed);
            }
            if let Outcome::Changed(change) = outcome {
                changes.push((key.clone(), change, track.target.as_ref().map(|(_, target)| target.clone())));
            }
        }
    }
    for (key, change, target) in changes {
        seen_change(cluster, &key, change, target);
    }
}

/// The unit's observation given what the watch sees of its target now.
fn observe(track: &mut Track, seen: Option<&Seen>, at_ms: i64) -> (Observed, Outcome) {
    let held = track.observed.clone();
    let Some(seen) = seen else {
        // No target (not created yet, deleted, or unreadable): no count, what was known stays.
        let observed = match held {
            Some(held) => Observed { count: None, ..held },
            None => Observed { count: None, generation: None, known_since_ms: at_ms, last_change: None },
        };
        return (observed, Outcome::Unchanged);
    };
    match held {
        Some(held) if held.count.is_some() || held.generation.is_some() => {
            let observed = Observed { count: seen.replicas, generation: seen.generation, ..held.clone() };
            match (held.count, seen.replicas) {
                (Some(from), Some(to)) if from != to => {
                    let change = SeenChange { at_ms, from, to };
                    (Observed { last_change: Some(change), ..observed }, Outcome::Changed(change))
                }
                _ => (observed, Outcome::Unchanged),
            }
        }
        // The target seen for the first time by this unit (or again after it went): what a
        // previous watch wrote in the ScaleUnit's status vouches for the time before, as long as
        // it is the same object; a spec that changed since (its generation moved) may have moved
        // the count while nobody watched: a change, seen now.
        _ => {
            let restored = if track.restorable { track.status.as_ref() } else { None };
            track.restorable = false;
            let same_object = restored.is_some_and(|status| {
                status.target.as_ref().is_some_and(|target| target.uid.is_some() && target.uid == seen.uid)
            });
            let Some(status) = restored.filter(|_| same_object) else {
                let observed = Observed {
                    count: seen.replicas,
                    generation: seen.generation,
                    known_since_ms: at_ms,
                    last_change: None,
                };
                return (observed, Outcome::Unchanged);
            };
            let time_ms = |time: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
                time.as_ref().map(|time| time.0.as_millisecond())
            };
            let known_since_ms = time_ms(&status.known_since).unwrap_or(at_ms).min(at_ms);
            let recorded = status.current_replicas;
            let last_change = time_ms(&status.last_scale_time).map(|at| {
                let count = recorded.unwrap_or_default();
                SeenChange { at_ms: at, from: count, to: count }
            });
            let generation_moved = status.target.as_ref().and_then(|target| target.generation) != seen.generation;
            let observed = Observed { count: seen.replicas, generation: seen.generation, known_since_ms, last_change };
            if generation_moved {
                let to = seen.replicas.unwrap_or_default();
                let change = SeenChange { at_ms, from: recorded.unwrap_or(to), to };
                return (Observed { last_change: Some(change), ..observed }, Outcome::Changed(change));
            }
            (observed, Outcome::Unchanged)
        }
    }
}

/// A change the watch saw: the audit line (judged or not, a broken glass), and an Event when no
/// review of this service allowed it.
fn seen_change(cluster: &Arc<Cluster>, key: &UnitKey, change: SeenChange, target: Option<TargetKey>) {
    let allowed = cluster.take_allowed(key, change.from, change.to);
    let mut record = AuditRecord::new("watch");
    record.unit = Some(key.to_string());
    record.current = Some(change.to);
    record.detail = serde_json::json!({
        "target": target.as_ref().map(ToString::to_string),
        "from": change.from,
        "to": change.to,
        "seen_at": crate::units::format_time_ms(change.at_ms),
        "judged": allowed.is_some(),
        "decision_id": allowed.as_ref().and_then(|allowed| allowed.decision_id.clone()),
    });
    let note = format!("spec.replicas {} -> {}", change.from, change.to);
    match &allowed {
        Some(AllowedChangeRef { broke_glass: Some((group, user)), .. }) => {
            *cluster.broken_glass.lock().unwrap_or_else(PoisonError::into_inner).entry(group.clone()).or_default() += 1;
            if let Some(detail) = record.detail.as_object_mut() {
                detail.insert("break_glass".to_owned(), serde_json::json!({"group": group, "user": user}));
            }
            cluster.publish(key, Reason::BreakGlass, &format!("{note}: {user} broke glass as a member of {group}"));
        }
        Some(_) => {}
        None => {
            cluster.unjudged.fetch_add(1, Ordering::Relaxed);
            cluster.publish(
                key,
                Reason::ScaleNotJudged,
                &format!(
                    "{note} seen with no review of this service allowing it (the webhook bypassed, unregistered, down with failurePolicy Ignore, or another replica's): the cooldown counts from now"
                ),
            );
        }
    }
    tracing::info!(unit = %key, judged = allowed.is_some(), "the watch saw {note}");
    if let Some(audit) = &cluster.options.audit {
        let audit = Arc::clone(audit);
        // Never waits on the audit log: the watch goes on.
        tokio::spawn(async move {
            let _ = audit.record(&record).await;
        });
    }
}

use super::AllowedChange as AllowedChangeRef;

impl Mode {
    /// The mode in force for a unit: its own, or `Warn` for an `Enforce` unit under the
    /// service's dry run.
    pub fn under_dry_run(self, dry_run: bool) -> Self {
        if dry_run && self == Self::Enforce { Self::Warn } else { self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_units_sources_name_no_file_of_the_service() {
        let plain = Sources::parse(r#"{"prometheus": {"main": {"url": "http://prometheus:9090"}}}"#, false).unwrap();
        assert!(no_service_files(&plain).is_ok());
        for field in ["bearer_token_file", "ca_file"] {
            let text = format!(
                r#"{{"prometheus": {{"main": {{"url": "http://prometheus:9090", "{field}": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}}}}"#
            );
            let sources = Sources::parse(&text, false).unwrap();
            let (path, message) = no_service_files(&sources).unwrap_err();
            assert_eq!(path, format!("spec.sources.prometheus.main.{field}"));
            assert!(message.contains("may not name a file"), "{message}");
        }
    }
}
