//! What a server sets about its tasks: which tools run as tasks, and the engine's settings
//! (store, lifetime, polling, lease, limits).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::store::{InMemoryTaskStore, TaskStore};

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the request declares the extension; inline otherwise.
    Optional,
    /// Only as a task: a 2026-07-28 request that does not declare the extension gets `-32021`
    /// before the body runs. (A 2025-11-25 session, which has no tasks, runs it inline.)
    Required,
}

/// How long a task is kept unless configured: 30 minutes from creation.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(30 * 60);
/// The poll interval suggested to clients unless configured.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How long a cancelled body may take to return unless configured.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(2);
/// How long a worker's lease lasts unless configured (it is renewed at a third of this).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// How many questions one task may ask over its lifetime unless configured.
pub const DEFAULT_MAX_QUESTIONS: u64 = 64;
/// How often an instance sweeps expired tasks and lapsed leases unless configured.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(1);
/// How many tasks anonymous callers from one address may run at once on an instance unless
/// configured (as many as the store lets one owner hold).
pub const DEFAULT_MAX_ANONYMOUS_TASKS_PER_ADDRESS: usize = 1_000;

/// How often a worker whose store has a change feed looks at its task (and for an answer)
/// anyway: the feed wakes it on every change, and this covers a wake-up that was lost (a
/// remote store's subscriber reconnecting, say).
pub(super) const RESYNC: Duration = Duration::from_secs(10);

/// The task engine's settings: where tasks live, and the limits.
#[derive(Clone)]
pub struct TaskConfig {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) ttl: Option<Duration>,
    pub(super) poll_interval: Duration,
    pub(super) cancel_grace: Duration,
    pub(super) lease: Duration,
    pub(super) max_questions: u64,
    pub(super) sweep_interval: Duration,
    pub(super) max_anonymous_per_address: usize,
}

impl fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskConfig")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("cancel_grace", &self.cancel_grace)
            .field("lease", &self.lease)
            .field("max_questions", &self.max_questions)
            .field("sweep_interval", &self.sweep_interval)
            .field("max_anonymous_per_address", &self.max_anonymous_per_address)
            .finish_non_exhaustive()
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskConfig {
    /// The defaults: an [`InMemoryTaskStore`], [`DEFAULT_TASK_TTL`], [`DEFAULT_POLL_INTERVAL`],
    /// [`DEFAULT_CANCEL_GRACE`], [`DEFAULT_LEASE`], [`DEFAULT_MAX_QUESTIONS`],
    /// [`DEFAULT_SWEEP_INTERVAL`], [`DEFAULT_MAX_ANONYMOUS_TASKS_PER_ADDRESS`].
    pub fn new() -> Self {
        TaskConfig {
            store: Arc::new(InMemoryTaskStore::new()),
            ttl: Some(DEFAULT_TASK_TTL),
            poll_interval: DEFAULT_POLL_INTERVAL,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            lease: DEFAULT_LEASE,
            max_questions: DEFAULT_MAX_QUESTIONS,
            sweep_interval: DEFAULT_SWEEP_INTERVAL,
            max_anonymous_per_address: DEFAULT_MAX_ANONYMOUS_TASKS_PER_ADDRESS,
        }
    }

    /// How many tasks anonymous callers from one client address (an IPv6 /64) may run at once
    /// on this instance; one more is refused "-32603 this address already runs N tasks; wait
    /// for one to finish, or cancel one". The store's per-owner share counts callers with a
    /// principal; this is the anonymous callers' (security review X1). Behind a proxy, name
    /// it (`McpHttpService::trusted_proxies`) so that the address is the client's.
    pub fn max_anonymous_tasks_per_address(mut self, max: usize) -> Self {
        self.max_anonymous_per_address = max.max(1);
        self
    }

    /// Where tasks live (share one store between instances to serve a task from any of them).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// The same, for a store already shared.
    pub fn shared_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = store;
        self
    }

    /// How long a task is kept from its creation (`ttlMs`); `None` keeps it until the store
    /// evicts it. A task past its TTL is gone: its body is stopped and `tasks/get` answers
    /// `-32602`.
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// The `pollIntervalMs` suggested to clients (at least 1 ms).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How long a cancelled body may take to return before it is dropped.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// How long a worker's lease on its task lasts (renewed at a third of it); a task whose
    /// worker stops renewing ends `failed`.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(3));
        self
    }

    /// How many questions one task may ask over its lifetime; one more fails the asking call
    /// with "this task asked more than N questions".
    pub fn max_questions(mut self, max: u64) -> Self {
        self.max_questions = max;
        self
    }

    /// How often this instance sweeps the store (at least 10 ms): tasks past their TTL are
    /// removed and tasks whose worker stopped renewing its lease end `failed`. The sweep runs
    /// on this timer only, never on a request, so its cost does not grow with the requests
    /// (review W10); a shared store may skip a sweep another instance just ran.
    pub fn sweep_interval(mut self, every: Duration) -> Self {
        self.sweep_interval = every.max(Duration::from_millis(10));
        self
    }
}
