//! The evaluation limit shared by every face of the service (issue 19): `/v1/evaluate`, the unit
//! routes, the admission webhook, the KEDA scaler and the collectors all run the component on
//! tokio's blocking pool through one [`Workers`], at most [`Workers::size`] calls at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Semaphore;

/// At most `size` component calls at a time, with the highest number seen running at once.
#[derive(Debug)]
pub struct Workers {
    permits: Semaphore,
    size: usize,
    busy: AtomicUsize,
    busy_max: AtomicUsize,
    calls: AtomicU64,
}

/// The blocking call could not run or did not finish (the limit closed, the task panicked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkersError(pub String);

impl std::fmt::Display for WorkersError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for WorkersError {}

impl Workers {
    /// A limit of `size` calls at a time (at least 1).
    pub fn new(size: usize) -> Arc<Self> {
        let size = size.max(1);
        Arc::new(Self {
            permits: Semaphore::new(size),
            size,
            busy: AtomicUsize::new(0),
            busy_max: AtomicUsize::new(0),
            calls: AtomicU64::new(0),
        })
    }

    /// The limit: one per CPU.
    pub fn per_cpu() -> Arc<Self> {
        Self::new(std::thread::available_parallelism().map_or(2, std::num::NonZero::get))
    }

    /// Calls at most running at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The highest number of calls seen running at once since the start.
    pub fn busy_max(&self) -> usize {
        self.busy_max.load(Ordering::Relaxed)
    }

    /// Calls run since the start.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Runs `f` on the blocking pool once a permit is free.
    ///
    /// # Errors
    /// [`WorkersError`] when the limit is closed or the task failed.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, WorkersError> {
        let _permit =
            self.permits.acquire().await.map_err(|_| WorkersError("the evaluation workers are closed".to_owned()))?;
        self.calls.fetch_add(1, Ordering::Relaxed);
        let busy = self.busy.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        self.busy_max.fetch_max(busy, Ordering::Relaxed);
        let outcome = tokio::task::spawn_blocking(f).await;
        self.busy.fetch_sub(1, Ordering::Relaxed);
        outcome.map_err(|error| WorkersError(format!("the evaluation task failed: {error}")))
    }
}
