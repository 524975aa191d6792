//! Events (`events.k8s.io/v1`) on a ScaleUnit and on its scale target, as Kubernetes' own
//! recorder makes them: a short note a person can act on; the same event again (the same object,
//! reason and note) within six minutes folds into the first one's `series` (its count and last
//! time), as client-go's recorder folds repeats; and a spam filter per object and reason
//! (client-go's: a burst of 25, then one every five minutes). kube's own `Recorder` is not used:
//! it folds every event of one object and reason into one series whatever its note, so a second
//! refusal of another change would show the first one's numbers.
//!
//! Nothing here may stall a decision: an event is queued ([`Events::send`] never waits) and a
//! task publishes it; a full queue drops it and counts the drop.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use tokio::sync::mpsc;

/// Events waiting to be published at most; past it one is dropped and counted.
pub const QUEUE: usize = 1024;
/// Events one object may get for one reason at once (client-go's `EventSourceObjectSpamFilter`).
const BURST: u32 = 25;
/// Then one more every this long.
const REFILL: Duration = Duration::from_secs(300);
/// How long one publication may take before it is given up (and counted as failed).
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a published event takes the repeats of the same event into its series.
const SERIES_WINDOW: Duration = Duration::from_secs(360);

/// The reasons of the events the service publishes: a closed list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The unit's decision changed (action, desired count or reasons).
    DecisionChanged,
    /// A replica change was denied (`Enforce`).
    ScaleRefused,
    /// A replica change the decision does not allow was let through (`Monitor`, `Warn`).
    ScaleWouldBeRefused,
    /// A member of an override group broke glass, and the watch saw the change it let through.
    BreakGlass,
    /// The watch saw a replica change no review of this service allowed (the webhook was
    /// bypassed, removed, or down under `failurePolicy: Ignore`).
    ScaleNotJudged,
    /// The ScaleUnit's contract was refused by the component (the condition names the path).
    ContractRefused,
}

impl Reason {
    /// The reason as Kubernetes shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DecisionChanged => "DecisionChanged",
            Self::ScaleRefused => "ScaleRefused",
            Self::ScaleWouldBeRefused => "ScaleWouldBeRefused",
            Self::BreakGlass => "BreakGlass",
            Self::ScaleNotJudged => "ScaleNotJudged",
            Self::ContractRefused => "ContractRefused",
        }
    }

    fn warning(self) -> bool {
        !matches!(self, Self::DecisionChanged)
    }

    fn action(self) -> &'static str {
        match self {
            Self::DecisionChanged | Self::ContractRefused => "Decide",
            Self::ScaleRefused | Self::ScaleWouldBeRefused => "Admit",
            Self::BreakGlass | Self::ScaleNotJudged => "Watch",
        }
    }
}

/// One event to publish.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The object it is about.
    pub regarding: ObjectReference,
    /// A second object it concerns (the ScaleUnit of an event on its target).
    pub related: Option<ObjectReference>,
    /// Why.
    pub reason: Reason,
    /// What happened, in a sentence (at most 1 kB).
    pub note: String,
}

/// The event queue and its counters.
#[derive(Debug)]
pub struct Events {
    queue: mpsc::Sender<Pending>,
    dropped: AtomicU64,
    counters: Arc<Counters>,
}

/// What became of the events.
#[derive(Debug, Default)]
pub struct Counters {
    /// Published (a new event or a repeat in its series).
    pub published: AtomicU64,
    /// Held back by the spam filter.
    pub filtered: AtomicU64,
    /// The API server refused or did not answer in time.
    pub failed: AtomicU64,
}

impl Events {
    /// A queue whose events `client` publishes as `reporter` (the service's name, its pod's name
    /// as the instance), from a task of the current runtime.
    pub fn start(client: Client, reporter: Reporter) -> Self {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        tokio::spawn(publish(client, reporter, receiver, Arc::clone(&counters)));
        Self { queue, dropped: AtomicU64::new(0), counters }
    }

    /// Queues an event; never waits (a full queue drops it, counted).
    pub fn send(&self, event: Pending) {
        if self.queue.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// What became of the others.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// A token bucket per object and reason.
struct SpamFilter {
    buckets: HashMap<(String, Reason), (f64, Instant)>,
}

impl SpamFilter {
    fn allow(&mut self, regarding: &ObjectReference, reason: Reason, now: Instant) -> bool {
        let object = object_key(regarding);
        // Buckets full again are forgotten: the map holds only objects that spoke lately.
        if self.buckets.len() > 4096 {
            self.buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() / REFILL.as_secs_f64() < f64::from(BURST)
            });
        }
        let (tokens, at) = self.buckets.entry((object, reason)).or_insert((f64::from(BURST), now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() / REFILL.as_secs_f64()).min(f64::from(BURST));
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// A published event: its name and namespace, and its series so far.
struct Published {
    name: String,
    namespace: String,
    count: i32,
    at: Instant,
}

async fn publish(client: Client, reporter: Reporter, mut receiver: mpsc::Receiver<Pending>, counters: Arc<Counters>) {
    let mut filter = SpamFilter { buckets: HashMap::new() };
    let mut published: HashMap<(String, Reason, String), Published> = HashMap::new();
    while let Some(pending) = receiver.recv().await {
        let now = Instant::now();
        if !filter.allow(&pending.regarding, pending.reason, now) {
            counters.filtered.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        published.retain(|_, held| now.duration_since(held.at) < SERIES_WINDOW);
        let note = truncate(pending.note, 1000);
        let key = (object_key(&pending.regarding), pending.reason, note.clone());
        let namespace = pending.regarding.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let time = MicroTime(jiff::Timestamp::now());
        let outcome = match published.get_mut(&key) {
            Some(held) => {
                held.count = held.count.saturating_add(1);
                let patch = serde_json::json!({
                    "series": EventSeries { count: held.count, last_observed_time: time },
                });
                let api: Api<Event> = Api::namespaced(client.clone(), &held.namespace);
                let name = held.name.clone();
                tokio::time::timeout(PUBLISH_TIMEOUT, async move {
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
                })
                .await
            }
            None => {
                let nanos = jiff::Timestamp::now().as_nanosecond();
                let name = format!("{}.{nanos:x}", pending.regarding.name.as_deref().unwrap_or("scale-units"));
                let event = Event {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    event_time: Some(time),
                    type_: Some(if pending.reason.warning() { "Warning" } else { "Normal" }.to_owned()),
                    reason: Some(pending.reason.as_str().to_owned()),
                    action: Some(pending.reason.action().to_owned()),
                    note: Some(note),
                    regarding: Some(pending.regarding.clone()),
                    related: pending.related.clone(),
                    reporting_controller: Some(reporter.controller.clone()),
                    reporting_instance: Some(reporter.instance.clone().unwrap_or_else(|| reporter.controller.clone())),
                    ..Event::default()
                };
                let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
                let result = tokio::time::timeout(PUBLISH_TIMEOUT, async move {
                    api.create(&PostParams::default(), &event).await.map(|_| ())
                })
                .await;
                if matches!(result, Ok(Ok(()))) {
                    published.insert(key, Published { name, namespace, count: 1, at: now });
                }
                result
            }
        };
        match outcome {
            Ok(Ok(())) => {
                counters.published.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(error)) => {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(reason = pending.reason.as_str(), "an event was not published: {error}");
            }
            Err(_) => {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    reason = pending.reason.as_str(),
                    "an event was not published within {PUBLISH_TIMEOUT:?}"
                );
            }
        }
    }
}

/// An object's identity, for the event cache and the spam filter.
fn object_key(regarding: &ObjectReference) -> String {
    format!(
        "{}/{}/{}/{}",
        regarding.kind.as_deref().unwrap_or_default(),
        regarding.namespace.as_deref().unwrap_or_default(),
        regarding.name.as_deref().unwrap_or_default(),
        regarding.uid.as_deref().unwrap_or_default()
    )
}

/// `text` cut to at most `limit` bytes, on a character boundary.
pub(crate) fn truncate(mut text: String, limit: usize) -> String {
    if text.len() > limit {
        let mut end = limit.saturating_sub(3);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference { kind: Some("ScaleUnit".into()), name: Some(name.into()), ..ObjectReference::default() }
    }

    #[test]
    fn the_spam_filter_lets_a_burst_through_then_one_per_refill() {
        let mut filter = SpamFilter { buckets: HashMap::new() };
        let start = Instant::now();
        let shop = reference("shop");
        let allowed = (0..40).filter(|_| filter.allow(&shop, Reason::DecisionChanged, start)).count();
        assert_eq!(allowed, 25);
        // Another reason and another object have buckets of their own.
        assert!(filter.allow(&shop, Reason::ScaleRefused, start));
        assert!(filter.allow(&reference("other"), Reason::DecisionChanged, start));
        assert!(!filter.allow(&shop, Reason::DecisionChanged, start + REFILL / 2));
        assert!(filter.allow(&shop, Reason::DecisionChanged, start + REFILL + REFILL / 2));
        assert!(!filter.allow(&shop, Reason::DecisionChanged, start + REFILL + REFILL / 2));
    }

    #[test]
    fn a_note_is_cut_on_a_character_boundary() {
        let note = truncate("é".repeat(600), 1000);
        assert!(note.len() <= 1000);
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".to_owned(), 1000), "short");
    }
}
