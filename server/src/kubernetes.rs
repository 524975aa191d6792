//! Kubernetes as the source of truth (issues 37 and 38): the service watches the API server with
//! its own ServiceAccount and answers from what it saw.
//!
//! - [`resource`]: the `ScaleUnit` resource (`scale-units.dev/v1alpha1`): a unit's contract,
//!   sources, scale target and mode as a Kubernetes object, the decision in its status.
//! - the watch (`watch.rs`): every ScaleUnit, and the scale target of every unit (Deployments
//!   and StatefulSets by a watch each; any other kind with a `scale` subresource by a watch of
//!   its kind and a read of its `scale`). The target's `spec.replicas` is the unit's count in
//!   every decision, unit read and KEDA answer; a change of it seen by the watch starts the
//!   contract's cooldowns, whoever made it, counted from when it was seen.
//! - the status (`status.rs`): each ScaleUnit's decision, evidence and conditions, written only
//!   when something in it changed and at most [`KubernetesOptions::status_writes_per_minute`]
//!   times a minute; it is also where the cooldown's start outlives the process
//!   (`lastScaleTime`, `knownSince`, the target's generation).
//! - [`events`]: Events on the ScaleUnit and its target when the decision changes, when a change
//!   is refused or would have been, when glass is broken and when a change went unjudged.
//!
//! A review is a question, never a record: the webhook judges it and tells this module what it
//! allowed, so that the watch can say whether a change it sees was judged, and audit a broken
//! glass when the change is seen — not when a review asks.

pub mod crd;
pub mod events;
pub mod resource;
mod status;
mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::audit::AuditLog;
use crate::units::{UnitKey, Units};
use events::{Events, Pending, Reason};
use resource::Mode;

/// How the service uses the API server.
#[derive(Clone, Debug)]
pub struct KubernetesOptions {
    /// A kubeconfig file (`None`: the pod's ServiceAccount in a cluster, else `$KUBECONFIG` or
    /// `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// Status writes per ScaleUnit per minute at most (a burst of as many, then one every
    /// `60 / n` seconds).
    pub status_writes_per_minute: u32,
    /// How often each ScaleUnit's decision is computed for its status.
    pub status_interval: Duration,
    /// Where the watch's audit lines go (a change seen, judged or not; a broken glass).
    pub audit: Option<Arc<AuditLog>>,
}

impl Default for KubernetesOptions {
    fn default() -> Self {
        Self { kubeconfig: None, status_writes_per_minute: 6, status_interval: Duration::from_secs(2), audit: None }
    }
}

/// A scale target: API group, kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetKey {
    /// The API group (`apps`; `""` for the core group).
    pub group: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl std::fmt::Display for TargetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// A change a review allowed, waiting for the watch to see it.
#[derive(Clone, Debug)]
pub struct AllowedChange {
    /// The count before.
    pub from: u64,
    /// The count allowed.
    pub to: u64,
    /// The override group a member of which broke glass for it, and who.
    pub broke_glass: Option<(String, String)>,
    /// The decision the review was judged by.
    pub decision_id: Option<String>,
    /// When it was allowed.
    pub at: std::time::Instant,
}

/// How long an allowed change waits for the watch to see it.
const ALLOWED_KEPT: Duration = Duration::from_secs(120);

/// The service's link to the API server: its client, the watch's state, the event queue.
pub struct Cluster {
    client: Client,
    units: Arc<Units>,
    options: KubernetesOptions,
    events: Events,
    synced: AtomicBool,
    /// Each unit's target (ScaleUnits and contract files alike) → the unit.
    targets: arc_swap::ArcSwap<HashMap<TargetKey, UnitKey>>,
    /// Changes reviews allowed, by unit.
    allowed: Mutex<HashMap<UnitKey, Vec<AllowedChange>>>,
    /// The watch's per-unit state, shared with the status writer.
    tracks: Mutex<watch::Tracks>,
    status_writes: AtomicU64,
    status_failures: AtomicU64,
    unjudged: AtomicU64,
    /// Break glass the watch saw applied, by override group.
    broken_glass: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("synced", &self.synced()).finish_non_exhaustive()
    }
}

/// Why the API server cannot be used.
#[derive(Debug)]
pub struct KubernetesError(pub String);

impl std::fmt::Display for KubernetesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KubernetesError {}

impl Cluster {
    /// A client of the API server as `options` say (nothing is sent yet).
    ///
    /// # Errors
    /// [`KubernetesError`] when no configuration is found or the kubeconfig cannot be read.
    pub async fn connect(units: Arc<Units>, options: KubernetesOptions) -> Result<Arc<Self>, KubernetesError> {
        let config = match &options.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path)
                    .map_err(|error| KubernetesError(format!("cannot read the kubeconfig {}: {error}", path.display())))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(|error| KubernetesError(format!("the kubeconfig {}: {error}", path.display())))?
            }
            None => kube::Config::infer().await.map_err(|error| {
                KubernetesError(format!(
                    "no Kubernetes configuration (not in a pod with a ServiceAccount, no $KUBECONFIG or ~/.kube/config): {error}"
                ))
            })?,
        };
        let client = Client::try_from(config)
            .map_err(|error| KubernetesError(format!("cannot make a Kubernetes client: {error}")))?;
        let instance = std::env::var("POD_NAME").ok().or_else(|| std::env::var("HOSTNAME").ok());
        let reporter = kube::runtime::events::Reporter { controller: "scale-units".to_owned(), instance };
        let events = Events::start(client.clone(), reporter);
        Ok(Arc::new(Self {
            client,
            units,
            options,
            events,
            synced: AtomicBool::new(false),
            targets: arc_swap::ArcSwap::from_pointee(HashMap::new()),
            allowed: Mutex::new(HashMap::new()),
            tracks: Mutex::new(watch::Tracks::default()),
            status_writes: AtomicU64::new(0),
            status_failures: AtomicU64::new(0),
            unjudged: AtomicU64::new(0),
            broken_glass: Mutex::new(std::collections::BTreeMap::new()),
        }))
    }

    /// Starts the watch and the status writer on the current runtime.
    pub fn start(self: &Arc<Self>) {
        tokio::spawn(watch::run(Arc::clone(self)));
        tokio::spawn(status::run(Arc::clone(self)));
    }

    /// Whether the watch has listed every ScaleUnit, Deployment and StatefulSet once and is in
    /// step with the API server (the service is not ready before).
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }

    /// The unit whose target is `kind` `namespace/name` (`Deployment`, `StatefulSet`), when a
    /// ScaleUnit or a contract file names it.
    pub fn unit_for(&self, group: &str, kind: &str, namespace: &str, name: &str) -> Option<UnitKey> {
        let key = TargetKey {
            group: group.to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        self.targets.load().get(&key).cloned()
    }

    /// A review allowed `key`'s change: the watch will look for it.
    pub fn allowed(&self, key: &UnitKey, change: AllowedChange) {
        let mut allowed = self.allowed.lock().unwrap_or_else(PoisonError::into_inner);
        allowed.retain(|_, changes| {
            changes.retain(|change| change.at.elapsed() < ALLOWED_KEPT);
            !changes.is_empty()
        });
        let changes = allowed.entry(key.clone()).or_default();
        if changes.len() >= 16 {
            changes.remove(0);
        }
        changes.push(change);
    }

    /// The allowed change `from -> to` of `key`, taken (the watch saw it).
    fn take_allowed(&self, key: &UnitKey, from: u64, to: u64) -> Option<AllowedChange> {
        let mut allowed = self.allowed.lock().unwrap_or_else(PoisonError::into_inner);
        let changes = allowed.get_mut(key)?;
        let index = changes
            .iter()
            .rposition(|change| change.from == from && change.to == to && change.at.elapsed() < ALLOWED_KEPT)?;
        Some(changes.remove(index))
    }

    /// A review of `key`'s target was refused (`Enforce`) or let through although the decision
    /// does not allow it (`Monitor`, `Warn`): an Event on the ScaleUnit and on the target.
    pub fn judged_against(&self, key: &UnitKey, mode: Mode, note: &str) {
        let reason = if mode == Mode::Enforce { Reason::ScaleRefused } else { Reason::ScaleWouldBeRefused };
        let note = match mode {
            Mode::Enforce => note.to_owned(),
            Mode::Warn | Mode::Monitor => format!("{} mode, allowed: {note}", mode.as_str()),
        };
        self.publish(key, reason, &note);
    }

    /// Queues an event on the unit's ScaleUnit (if it has one) and on its target.
    fn publish(&self, key: &UnitKey, reason: Reason, note: &str) {
        let (resource, target) = {
            let tracks = self.tracks.lock().unwrap_or_else(PoisonError::into_inner);
            match tracks.units.get(key) {
                Some(track) => (track.resource_ref(), track.target_ref()),
                None => (None, None),
            }
        };
        if let Some(regarding) = &resource {
            self.events.send(Pending {
                regarding: regarding.clone(),
                related: target.clone(),
                reason,
                note: note.to_owned(),
            });
        }
        if let Some(regarding) = target {
            self.events.send(Pending { regarding, related: resource, reason, note: note.to_owned() });
        }
    }

    /// The event queue.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Status writes done, and failed.
    pub fn status_writes(&self) -> (u64, u64) {
        (self.status_writes.load(Ordering::Relaxed), self.status_failures.load(Ordering::Relaxed))
    }

    /// Replica changes the watch saw that no review of this service allowed.
    pub fn unjudged(&self) -> u64 {
        self.unjudged.load(Ordering::Relaxed)
    }

    /// The watch's, the status writer's and the events' counters, in the Prometheus text format.
    pub fn render_metrics(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let counters = self.events.counters();
        let (writes, failures) = self.status_writes();
        let _ = write!(
            out,
            "# HELP scale_units_kubernetes_watch_synced Whether the watch has listed ScaleUnits, Deployments and StatefulSets and is in step (1) or not yet (0).\n\
             # TYPE scale_units_kubernetes_watch_synced gauge\nscale_units_kubernetes_watch_synced {}\n\
             # HELP scale_units_kubernetes_status_writes_total ScaleUnit status writes, by outcome.\n\
             # TYPE scale_units_kubernetes_status_writes_total counter\n\
             scale_units_kubernetes_status_writes_total{{outcome=\"written\"}} {writes}\n\
             scale_units_kubernetes_status_writes_total{{outcome=\"failed\"}} {failures}\n\
             # HELP scale_units_kubernetes_events_total Events on ScaleUnits and their targets, by outcome (dropped: the queue was full; filtered: the spam filter).\n\
             # TYPE scale_units_kubernetes_events_total counter\n\
             scale_units_kubernetes_events_total{{outcome=\"published\"}} {}\n\
             scale_units_kubernetes_events_total{{outcome=\"filtered\"}} {}\n\
             scale_units_kubernetes_events_total{{outcome=\"failed\"}} {}\n\
             scale_units_kubernetes_events_total{{outcome=\"dropped\"}} {}\n\
             # HELP scale_units_kubernetes_unjudged_changes_total Replica changes the watch saw that no review of this service allowed.\n\
             # TYPE scale_units_kubernetes_unjudged_changes_total counter\nscale_units_kubernetes_unjudged_changes_total {}\n\
             # HELP scale_units_kubernetes_break_glass_total Overrides the watch saw applied (the change a break-glass answer let through), by group: what to alert on, where scale_units_admission_overrides_total counts answers, which anyone reaching the port can ask for.\n\
             # TYPE scale_units_kubernetes_break_glass_total counter\n",
            u8::from(self.synced()),
            counters.published.load(Ordering::Relaxed),
            counters.filtered.load(Ordering::Relaxed),
            counters.failed.load(Ordering::Relaxed),
            self.events.dropped(),
            self.unjudged(),
        );
        for (group, count) in self.broken_glass.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let escaped = group.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(out, "scale_units_kubernetes_break_glass_total{{group=\"{escaped}\"}} {count}");
        }
        out
    }

    /// The unit registry the watch feeds.
    pub fn units(&self) -> &Arc<Units> {
        &self.units
    }
}

/// An object reference for events.
fn reference(api_version: &str, kind: &str, namespace: &str, name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.to_owned()),
        kind: Some(kind.to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    }
}
