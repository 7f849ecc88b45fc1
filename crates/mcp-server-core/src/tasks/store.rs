//! Where tasks live: the [`TaskStore`] trait and its in-memory default.
//!
//! The store holds everything another process needs to answer `tasks/get` (status, message,
//! timestamps, outstanding input requests, the final result or error, the owner), so a store
//! shared by several server instances serves a task from any of them. Workers (the bodies
//! running in the background) talk to it too: they post input requests, take the answers
//! `tasks/update` delivered, hold a lease while they run and write the terminal state.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::gating::ClientSupport;
use mcp_types::ext::tasks::TaskStatus;
use mcp_types::mrtr::InputRequests;
use mcp_types::{ErrorObject, JsonObject};
use serde_json::Value;
use tokio::sync::watch;

pub use mcp_types::BoxFuture;

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// `completed`, with the `CallToolResult` as a JSON object (also when `isError`).
    Completed(JsonObject),
    /// `failed`, with the JSON-RPC error.
    Failed(ErrorObject),
    /// `cancelled`.
    Cancelled,
}

impl Terminal {
    /// The status it ends in.
    pub fn status(&self) -> TaskStatus {
        match self {
            Terminal::Completed(_) => TaskStatus::Completed,
            Terminal::Failed(_) => TaskStatus::Failed,
            Terminal::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// Who runs a task, and until when (milliseconds since the Unix epoch). A worker renews its
/// lease while the body runs; a task whose lease lapsed ends `failed` ("worker lost").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The worker's id (one per engine instance).
    pub worker: String,
    /// When the lease lapses.
    pub until_ms: u64,
}

impl Lease {
    /// The failure of a task whose worker stopped renewing this lease, naming the worker
    /// (in a fleet, the member that died: `i2~9d72d840`), so that an operator, or a check
    /// that attributes failures to their cause, can tell which process was lost.
    pub fn lost(&self) -> String {
        format!("The worker running this task ({}) was lost", self.worker)
    }
}

/// One task as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The task id (at least 128 random bits).
    pub id: String,
    /// The principal that created it (see [`owner_key`](super::owner_key)); `None` without
    /// authentication. Every `tasks/*` call is checked against it.
    pub owner: Option<String>,
    /// What the creating request's `clientCapabilities` declared (five flags, not the
    /// capabilities themselves): the task asks only for that.
    pub client_support: ClientSupport,
    /// Free text about the status.
    pub status_message: Option<String>,
    /// Creation time, ms since the Unix epoch.
    pub created_at_ms: u64,
    /// Time of the last change, ms since the Unix epoch.
    pub last_updated_at_ms: u64,
    /// Retention from creation; `None` is unlimited.
    pub ttl_ms: Option<u64>,
    /// The suggested poll interval.
    pub poll_interval_ms: Option<u64>,
    /// Input requests waiting for an answer, by key.
    pub outstanding: InputRequests,
    /// Answers `tasks/update` delivered that the worker has not taken yet.
    pub answers: BTreeMap<String, Value>,
    /// Every key ever issued (keys are unique for the task's lifetime).
    pub used_keys: BTreeSet<String>,
    /// Whether `tasks/cancel` was received.
    pub cancel_requested: bool,
    /// The end, once there is one (first writer wins).
    pub terminal: Option<Terminal>,
    /// The worker running the body.
    pub lease: Option<Lease>,
}

impl TaskRecord {
    /// The status: the terminal one, else `input_required` while a request is outstanding,
    /// else `working`.
    pub fn status(&self) -> TaskStatus {
        match &self.terminal {
            Some(t) => t.status(),
            None if !self.outstanding.is_empty() => TaskStatus::InputRequired,
            None => TaskStatus::Working,
        }
    }

    /// Gives the task's lease to `worker` until `until_ms` when it is free at `now_ms` (no
    /// lease, the worker's own, or a lapsed one) and the task has not ended; says whether it
    /// did. Every store's `claim` is this transition.
    pub fn claim_lease(&mut self, worker: &str, until_ms: u64, now_ms: u64) -> bool {
        if self.terminal.is_some() {
            return false;
        }
        let free = match &self.lease {
            None => true,
            Some(l) => l.worker == worker || l.until_ms <= now_ms,
        };
        if free {
            self.lease = Some(Lease {
                worker: worker.to_owned(),
                until_ms,
            });
        }
        free
    }

    /// When the task expires (ms since the epoch), if it has a TTL.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms
            .map(|ttl| self.created_at_ms.saturating_add(ttl))
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The store holds as many tasks as it may.
    Full {
        /// The limit.
        limit: usize,
    },
    /// The creating client (owner) holds as many unfinished tasks as it may.
    OwnerFull {
        /// The limit.
        limit: usize,
    },
    /// No such task (never created, expired or removed).
    NotFound,
    /// An input-request key was already used by this task.
    KeyReused(String),
    /// The task already ended.
    Finished,
    /// The backend failed (a remote store's connection, say).
    Backend(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Full { limit } => write!(
                f,
                "the server is running as many tasks as it may ({limit}); try again later"
            ),
            StoreError::OwnerFull { limit } => write!(
                f,
                "this client already runs {limit} tasks; wait for one to finish, or cancel one"
            ),
            StoreError::NotFound => f.write_str("Task not found"),
            StoreError::KeyReused(k) => write!(f, "input-request key '{k}' was already used"),
            StoreError::Finished => f.write_str("the task already ended"),
            StoreError::Backend(why) => write!(f, "the task store failed: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A place tasks live, shared by every request (and, for a remote store, every instance).
///
/// Every method must be atomic with respect to the others on the same task, and its effect
/// visible to the very next `get` from any instance: `create` returns only once a `get` would
/// find the task, and `resolve_inputs` removes the answered keys before it returns.
pub trait TaskStore: Send + Sync + 'static {
    /// The store's clock: milliseconds since the Unix epoch. Timestamps and expiry use it, so
    /// instances sharing a store share a clock.
    fn now_ms(&self) -> u64 {
        system_now_ms()
    }

    /// Adds a new task. [`StoreError::Full`] when at capacity.
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The task, unless it does not exist or has expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Sets (or clears) the status message.
    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Adds outstanding input requests; a key used before is [`StoreError::KeyReused`].
    fn add_input_requests<'a>(
        &'a self,
        id: &'a str,
        requests: InputRequests,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Moves the answers whose keys are outstanding from outstanding to delivered, and returns
    /// their keys; answers to any other key are ignored.
    fn resolve_inputs<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// Takes a delivered answer (the worker's side of `resolve_inputs`).
    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>>;

    /// Records a `tasks/cancel`. Idempotent; a finished task is left as it is.
    fn request_cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Ends the task. First writer wins: returns `false` when it had already ended.
    fn finish<'a>(
        &'a self,
        id: &'a str,
        terminal: Terminal,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Takes or renews the lease of the task for `worker` until `until_ms`. Returns `false`
    /// when the task ended or another worker holds a lease that has not lapsed, and
    /// [`StoreError::NotFound`] when the task is gone. A worker calls it about once a second
    /// for as long as its body runs, so a remote store should make it a small write of the
    /// lease alone, not a rewrite of the record.
    fn claim<'a>(
        &'a self,
        id: &'a str,
        worker: &'a str,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Removes every task past its TTL and fails every unfinished task whose lease lapsed;
    /// returns the ids removed. Each engine calls it on its own timer
    /// ([`TaskConfig::sweep_interval`](super::TaskConfig::sweep_interval)), never on a
    /// request; a store shared by a fleet may skip a call while another instance sweeps, and
    /// may leave part of a large backlog to the next call.
    fn expire(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;

    /// Keeps `replay` (opaque bytes: what running task `id` again from the start needs) for as
    /// long as the task lives, replacing any kept before; `true` when kept. A task with a
    /// replay is not failed by [`expire`](Self::expire) when its lease lapses: an engine
    /// finds it with [`lapsed`](Self::lapsed), takes its lease and runs it again. The default
    /// keeps nothing (such tasks fail "worker lost" as any other).
    fn set_replay<'a>(
        &'a self,
        id: &'a str,
        replay: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = (id, replay);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// The replay [`set_replay`](Self::set_replay) kept for task `id`, if any.
    fn replay<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The unfinished tasks that have a replay and whose lease lapsed by `now_ms` (at most a
    /// bounded batch per call).
    fn lapsed(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let _ = now_ms;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// A feed that changes whenever the task does (a revision counter), so a worker wakes on
    /// an answer or a cancel; `None` when the store has no such feed (the worker then polls).
    /// The feed closes when the task is removed.
    fn watch(&self, id: &str) -> Option<watch::Receiver<u64>>;
}

/// The system clock in milliseconds since the Unix epoch.
pub fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The most lapsed tasks one [`TaskStore::lapsed`] call of the in-memory store returns.
const LAPSED_BATCH: usize = 100;

/// How many tasks an [`InMemoryTaskStore`] holds unless configured.
pub const DEFAULT_MAX_TASKS: usize = 10_000;

/// How many tasks one owner (an authenticated principal) holds in an [`InMemoryTaskStore`] by
/// default: at its share its oldest finished task makes room; with every one unfinished,
/// its next creation is refused, and nobody else's tasks are touched (review W9).
pub const DEFAULT_MAX_TASKS_PER_OWNER: usize = 1_000;

type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

struct Entry {
    record: TaskRecord,
    feed: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Entry>,
    /// (expires at, id), for sweeping without a scan.
    expiry: BTreeSet<(u64, String)>,
    /// (lease lapses at, id) of every unfinished task holding a lease, for finding lapsed
    /// leases without a scan (the engine sweeps on a timer, every second by default).
    leases: BTreeSet<(u64, String)>,
    /// How many tasks each owner holds (tasks without an owner are not counted).
    owners: HashMap<String, usize>,
    /// What runs a task again, by task id (see [`TaskStore::set_replay`]).
    replays: HashMap<String, Vec<u8>>,
}

/// When the lease of an unfinished task lapses; `None` for a finished task or one without a
/// lease (neither can lapse).
fn lease_until(record: &TaskRecord) -> Option<u64> {
    match (&record.terminal, &record.lease) {
        (None, Some(lease)) => Some(lease.until_ms),
        _ => None,
    }
}

impl State {
    /// Removes a task and its index entries.
    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.tasks.remove(id)?;
        self.replays.remove(id);
        if let Some(owner) = &entry.record.owner
            && let Some(count) = self.owners.get_mut(owner)
        {
            *count -= 1;
            if *count == 0 {
                self.owners.remove(owner);
            }
        }
        if let Some(at) = entry.record.expires_at_ms() {
            self.expiry.remove(&(at, id.to_owned()));
        }
        if let Some(until) = lease_until(&entry.record) {
            self.leases.remove(&(until, id.to_owned()));
        }
        Some(entry)
    }

    /// The finished task of `owner` (of anyone with `None`) that changed last the longest
    /// time ago.
    fn oldest_finished(&self, owner: Option<&str>) -> Option<String> {
        self.tasks
            .values()
            .filter(|e| e.record.terminal.is_some())
            .filter(|e| owner.is_none_or(|o| e.record.owner.as_deref() == Some(o)))
            .min_by_key(|e| e.record.last_updated_at_ms)
            .map(|e| e.record.id.clone())
    }
}

/// The default store: one process, a mutex over a map, a change feed per task, expiry indexed
/// by time, and a cap on the number of tasks (finished tasks are evicted oldest first when it
/// is reached; when every task is still running, creation is refused).
pub struct InMemoryTaskStore {
    state: Mutex<State>,
    max_tasks: usize,
    max_per_owner: usize,
    clock: Clock,
}

impl fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.state.lock().map(|s| s.tasks.len()).unwrap_or(0);
        f.debug_struct("InMemoryTaskStore")
            .field("tasks", &len)
            .field("max_tasks", &self.max_tasks)
            .finish()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryTaskStore {
    /// A store holding at most [`DEFAULT_MAX_TASKS`] tasks, on the system clock.
    pub fn new() -> Self {
        InMemoryTaskStore {
            state: Mutex::new(State::default()),
            max_tasks: DEFAULT_MAX_TASKS,
            max_per_owner: DEFAULT_MAX_TASKS_PER_OWNER,
            clock: Arc::new(system_now_ms),
        }
    }

    /// Sets how many tasks the store holds (at least 1).
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    /// Sets how many tasks one owner holds (at least 1; default
    /// [`DEFAULT_MAX_TASKS_PER_OWNER`]). Tasks without an owner (a server without
    /// authentication) are bounded by [`max_tasks`](Self::max_tasks) only.
    pub fn max_tasks_per_owner(mut self, max: usize) -> Self {
        self.max_per_owner = max.max(1);
        self
    }

    /// Replaces the clock (milliseconds since the Unix epoch), e.g. with a manual one in tests.
    pub fn clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How many tasks it holds (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.state.lock().map(|s| s.tasks.len()).unwrap_or(0)
    }

    /// Whether it holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut TaskRecord, u64) -> Result<(T, bool), StoreError>,
    ) -> Result<T, StoreError> {
        let now = (self.clock)();
        let mut state = self
            .state
            .lock()
            .map_err(|_| StoreError::Backend("poisoned".into()))?;
        let entry = state.tasks.get_mut(id).ok_or(StoreError::NotFound)?;
        if entry.record.expires_at_ms().is_some_and(|at| at <= now) {
            return Err(StoreError::NotFound);
        }
        let lease_before = lease_until(&entry.record);
        let result = f(&mut entry.record, now);
        let lease_after = lease_until(&entry.record);
        if result.as_ref().is_ok_and(|(_, changed)| *changed) {
            entry.record.last_updated_at_ms = now;
            entry.feed.send_modify(|r| *r += 1);
        }
        if lease_before != lease_after {
            if let Some(until) = lease_before {
                state.leases.remove(&(until, id.to_owned()));
            }
            if let Some(until) = lease_after {
                state.leases.insert((until, id.to_owned()));
            }
        }
        result.map(|(out, _)| out)
    }

    fn sweep(state: &mut State, now: u64) -> Vec<String> {
        let mut removed = Vec::new();
        while let Some((at, id)) = state.expiry.first().cloned() {
            if at > now {
                break;
            }
            if state.remove(&id).is_some() {
                removed.push(id);
            } else {
                state.expiry.remove(&(at, id));
            }
        }
        // Every entry of the lease index is the current lease of an unfinished task; a task
        // that can run again keeps its lapsed lease until an engine takes it (`lapsed`).
        let rerunnable: Vec<(u64, String)> = state
            .leases
            .iter()
            .take_while(|(until, _)| *until <= now)
            .filter(|(_, id)| state.replays.contains_key(id))
            .cloned()
            .collect();
        for key in &rerunnable {
            state.leases.remove(key);
        }
        while let Some((until, id)) = state.leases.first().cloned() {
            if until > now {
                break;
            }
            state.leases.pop_first();
            let Some(entry) = state.tasks.get_mut(&id) else {
                continue;
            };
            let r = &mut entry.record;
            let why = r.lease.take().map_or_else(
                || "The worker running this task was lost".to_owned(),
                |lease| lease.lost(),
            );
            r.terminal = Some(Terminal::Failed(ErrorObject::internal(why.clone())));
            r.status_message = Some(why);
            r.outstanding.clear();
            r.last_updated_at_ms = now;
            entry.feed.send_modify(|v| *v += 1);
        }
        state.leases.extend(rerunnable);
        removed
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl TaskStore for InMemoryTaskStore {
    fn now_ms(&self) -> u64 {
        (self.clock)()
    }

    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        let now = (self.clock)();
        let result = (|| {
            let mut state = self
                .state
                .lock()
                .map_err(|_| StoreError::Backend("poisoned".into()))?;
            let owner = record.owner.clone();
            let held = |state: &State| {
                owner
                    .as_ref()
                    .and_then(|o| state.owners.get(o).copied())
                    .unwrap_or(0)
            };
            if state.tasks.len() >= self.max_tasks || held(&state) >= self.max_per_owner {
                Self::sweep(&mut state, now);
            }
            if let Some(owner) = &owner
                && held(&state) >= self.max_per_owner
            {
                // At its share, an owner makes room from its own finished tasks only.
                match state.oldest_finished(Some(owner)) {
                    Some(id) => {
                        state.remove(&id);
                    }
                    None => {
                        return Err(StoreError::OwnerFull {
                            limit: self.max_per_owner,
                        });
                    }
                }
            }
            if state.tasks.len() >= self.max_tasks {
                // Evict the finished task that changed last the longest time ago: the
                // creator's own first, then anyone's.
                let oldest = owner
                    .as_deref()
                    .and_then(|o| state.oldest_finished(Some(o)))
                    .or_else(|| state.oldest_finished(None));
                match oldest {
                    Some(id) => {
                        state.remove(&id);
                    }
                    None => {
                        return Err(StoreError::Full {
                            limit: self.max_tasks,
                        });
                    }
                }
            }
            if state.tasks.contains_key(&record.id) {
                // A new record under a live id replaces it, index entries included.
                state.remove(&record.id);
            }
            if let Some(at) = record.expires_at_ms() {
                state.expiry.insert((at, record.id.clone()));
            }
            if let Some(until) = lease_until(&record) {
                state.leases.insert((until, record.id.clone()));
            }
            if let Some(owner) = &record.owner {
                *state.owners.entry(owner.clone()).or_insert(0) += 1;
            }
            let (feed, _) = watch::channel(0);
            state
                .tasks
                .insert(record.id.clone(), Entry { record, feed });
            Ok(())
        })();
        ready(result)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        ready(match self.with(id, |r, _| Ok((r.clone(), false))) {
            Ok(r) => Ok(Some(r)),
            Err(StoreError::NotFound) => Ok(None),
            Err(e) => Err(e),
        })
    }

    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        ready(self.with(id, |r, _| {
            if r.terminal.is_some() {
                return Err(StoreError::Finished);
            }
            let changed = r.status_message != message;
            r.status_message = message;
            Ok(((), changed))
        }))
    }

    fn add_input_requests<'a>(
        &'a self,
        id: &'a str,
        requests: InputRequests,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        ready(self.with(id, |r, _| {
            if r.terminal.is_some() {
                return Err(StoreError::Finished);
            }
            if let Some(k) = requests.keys().find(|k| r.used_keys.contains(*k)) {
                return Err(StoreError::KeyReused(k.clone()));
            }
            r.used_keys.extend(requests.keys().cloned());
            r.outstanding.extend(requests);
            Ok(((), true))
        }))
    }

    fn resolve_inputs<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        ready(self.with(id, |r, _| {
            let mut delivered = Vec::new();
            for (key, value) in responses {
                if r.outstanding.remove(&key).is_some() {
                    r.answers.insert(key.clone(), value);
                    delivered.push(key);
                }
            }
            let changed = !delivered.is_empty();
            Ok((delivered, changed))
        }))
    }

    fn take_answer<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        ready(self.with(id, |r, _| Ok((r.answers.remove(key), false))))
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        ready(self.with(id, |r, _| {
            let changed = r.terminal.is_none() && !r.cancel_requested;
            if changed {
                r.cancel_requested = true;
            }
            Ok(((), changed))
        }))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        terminal: Terminal,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let ended = self.with(id, |r, _| {
            if r.terminal.is_some() {
                return Ok((false, false));
            }
            r.terminal = Some(terminal);
            r.outstanding.clear();
            r.answers.clear();
            r.lease = None;
            Ok((true, true))
        });
        // A finished task never runs again: its replay goes (security review X1).
        if matches!(ended, Ok(true))
            && let Ok(mut state) = self.state.lock()
        {
            state.replays.remove(id);
        }
        ready(ended)
    }

    fn claim<'a>(
        &'a self,
        id: &'a str,
        worker: &'a str,
        until_ms: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        ready(self.with(id, |r, now| {
            Ok((r.claim_lease(worker, until_ms, now), false))
        }))
    }

    fn expire(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        ready(
            self.state
                .lock()
                .map_err(|_| StoreError::Backend("poisoned".into()))
                .map(|mut s| Self::sweep(&mut s, now_ms)),
        )
    }

    fn set_replay<'a>(
        &'a self,
        id: &'a str,
        replay: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let result = match self.state.lock() {
            Ok(mut state) => match state.tasks.get(id) {
                Some(entry) if entry.record.terminal.is_none() => {
                    state.replays.insert(id.to_owned(), replay);
                    Ok(true)
                }
                Some(_) => Err(StoreError::Finished),
                None => Err(StoreError::NotFound),
            },
            Err(_) => Err(StoreError::Backend(
                "the task store's lock is poisoned".into(),
            )),
        };
        ready(result)
    }

    fn replay<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let result = self
            .state
            .lock()
            .map(|state| state.replays.get(id).cloned())
            .map_err(|_| StoreError::Backend("the task store's lock is poisoned".into()));
        ready(result)
    }

    fn lapsed(&self, now_ms: u64) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let result = self
            .state
            .lock()
            .map(|state| {
                state
                    .leases
                    .iter()
                    .take_while(|(until, _)| *until <= now_ms)
                    .filter(|(_, id)| state.replays.contains_key(id))
                    .take(LAPSED_BATCH)
                    .map(|(_, id)| id.clone())
                    .collect()
            })
            .map_err(|_| StoreError::Backend("the task store's lock is poisoned".into()));
        ready(result)
    }

    fn watch(&self, id: &str) -> Option<watch::Receiver<u64>> {
        let state = self.state.lock().ok()?;
        state.tasks.get(id).map(|e| e.feed.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn record(id: &str, now: u64, ttl: Option<u64>) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            owner: None,
            client_support: ClientSupport::default(),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: ttl,
            poll_interval_ms: Some(500),
            outstanding: InputRequests::new(),
            answers: BTreeMap::new(),
            used_keys: BTreeSet::new(),
            cancel_requested: false,
            terminal: None,
            lease: None,
        }
    }

    fn manual() -> (Arc<AtomicU64>, InMemoryTaskStore) {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let clock = now.clone();
        let store = InMemoryTaskStore::new().clock(move || clock.load(Ordering::SeqCst));
        (now, store)
    }

    fn owned(id: &str, owner: &str) -> TaskRecord {
        TaskRecord {
            owner: Some(owner.to_owned()),
            ..record(id, 1_000_000, None)
        }
    }

    /// Review W9: one owner gets its share of the store, makes room from its own finished
    /// tasks only, and cannot push out another owner's finished, unread result (before, a full
    /// store evicted the oldest finished task of anyone).
    #[tokio::test]
    async fn an_owner_makes_room_from_its_own_tasks_and_never_from_anothers() {
        let (_, store) = manual();
        let store = store.max_tasks(5).max_tasks_per_owner(2);
        let done = || Terminal::Completed(Default::default());
        store.create(owned("victim-1", "victim")).await.unwrap();
        store.finish("victim-1", done()).await.unwrap();
        store.create(owned("a-1", "attacker")).await.unwrap();
        store.create(owned("a-2", "attacker")).await.unwrap();
        // Both running: the third is refused, nobody else's task touched.
        assert_eq!(
            store.create(owned("a-3", "attacker")).await,
            Err(StoreError::OwnerFull { limit: 2 })
        );
        assert_eq!(
            StoreError::OwnerFull { limit: 2 }.to_string(),
            "this client already runs 2 tasks; wait for one to finish, or cancel one"
        );
        // Finishing quickly and creating again only ever evicts its own.
        store.finish("a-1", done()).await.unwrap();
        store.finish("a-2", done()).await.unwrap();
        for i in 3..20 {
            let id = format!("a-{i}");
            store
                .create(owned(&id, "attacker"))
                .await
                .unwrap_or_else(|e| {
                    panic!("{id}: {e}");
                });
            store.finish(&id, done()).await.unwrap();
        }
        assert!(store.get("victim-1").await.unwrap().is_some());
        assert!(store.len() <= 3, "{}", store.len());
        // The store's own cap: full, a creator's own finished task goes first (then anyone's
        // oldest finished one, which may be the victim's: the store holds what it may).
        for i in 0..2 {
            let id = format!("b-{i}");
            store.create(owned(&id, "bob")).await.unwrap();
            store.finish(&id, done()).await.unwrap();
        }
        store.create(owned("c-0", "carol")).await.unwrap();
        store.create(owned("c-1", "carol")).await.unwrap();
        assert_eq!(store.len(), 5);
        store.finish("c-0", done()).await.unwrap();
        store.create(owned("c-2", "carol")).await.unwrap();
        assert!(
            store.get("c-0").await.unwrap().is_none(),
            "carol's own went first"
        );
        assert_eq!(store.len(), 5);
    }

    #[tokio::test]
    async fn a_task_expires_at_its_ttl_and_its_feed_closes() {
        let (now, store) = manual();
        store
            .create(record("a", 1_000_000, Some(1_000)))
            .await
            .unwrap();
        store.create(record("b", 1_000_000, None)).await.unwrap();
        let mut feed = store.watch("a").unwrap();
        now.store(1_000_999, Ordering::SeqCst);
        assert!(store.get("a").await.unwrap().is_some());
        now.store(1_001_000, Ordering::SeqCst);
        assert!(store.get("a").await.unwrap().is_none(), "hidden at the TTL");
        assert_eq!(store.expire(1_001_000).await.unwrap(), vec!["a".to_owned()]);
        assert!(feed.changed().await.is_err(), "the feed closed");
        assert!(store.get("b").await.unwrap().is_some(), "no TTL, no expiry");
        assert_eq!(store.len(), 1);
    }

    #[tokio::test]
    async fn keys_are_unique_for_the_lifetime_and_answers_move_atomically() {
        let (_, store) = manual();
        store.create(record("a", 1_000_000, None)).await.unwrap();
        let q = |k: &str| {
            InputRequests::from([(k.to_owned(), mcp_types::mrtr::InputRequest::ListRoots(None))])
        };
        store.add_input_requests("a", q("k1")).await.unwrap();
        store.add_input_requests("a", q("k2")).await.unwrap();
        assert_eq!(
            store.get("a").await.unwrap().unwrap().status(),
            TaskStatus::InputRequired
        );
        let delivered = store
            .resolve_inputs(
                "a",
                BTreeMap::from([
                    ("k1".to_owned(), Value::from(1)),
                    ("nope".to_owned(), Value::from(2)),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(delivered, vec!["k1".to_owned()]);
        let r = store.get("a").await.unwrap().unwrap();
        assert_eq!(r.outstanding.keys().collect::<Vec<_>>(), ["k2"]);
        assert_eq!(
            store.take_answer("a", "k1").await.unwrap(),
            Some(Value::from(1))
        );
        assert_eq!(store.take_answer("a", "k1").await.unwrap(), None);
        assert_eq!(
            store.add_input_requests("a", q("k1")).await,
            Err(StoreError::KeyReused("k1".into()))
        );
    }

    #[tokio::test]
    async fn the_first_end_wins_and_a_lapsed_lease_fails_the_task() {
        let (_, store) = manual();
        store.create(record("a", 1_000_000, None)).await.unwrap();
        assert!(store.finish("a", Terminal::Cancelled).await.unwrap());
        assert!(
            !store
                .finish("a", Terminal::Completed(JsonObject::new()))
                .await
                .unwrap()
        );
        assert_eq!(
            store.get("a").await.unwrap().unwrap().status(),
            TaskStatus::Cancelled
        );

        store.create(record("b", 1_000_000, None)).await.unwrap();
        assert!(store.claim("b", "w1", 1_000_100).await.unwrap());
        assert!(
            !store.claim("b", "w2", 1_000_200).await.unwrap(),
            "held by w1"
        );
        store.expire(1_000_100).await.unwrap();
        let b = store.get("b").await.unwrap().unwrap();
        assert_eq!(b.status(), TaskStatus::Failed);
    }

    #[tokio::test]
    async fn only_a_current_lease_of_an_unfinished_task_lapses() {
        let (_, store) = manual();
        let lease_index = |store: &InMemoryTaskStore| store.state.lock().unwrap().leases.clone();
        for id in ["renewed", "finished", "lapsing", "free"] {
            store.create(record(id, 1_000_000, None)).await.unwrap();
        }
        assert!(store.claim("renewed", "w1", 1_000_100).await.unwrap());
        assert!(store.claim("renewed", "w1", 1_000_300).await.unwrap());
        assert!(store.claim("finished", "w1", 1_000_100).await.unwrap());
        assert!(store.claim("lapsing", "w1", 1_000_200).await.unwrap());
        assert!(store.finish("finished", Terminal::Cancelled).await.unwrap());
        assert_eq!(
            lease_index(&store),
            BTreeSet::from([
                (1_000_200, "lapsing".to_owned()),
                (1_000_300, "renewed".to_owned()),
            ]),
            "one entry per unfinished leased task, at its current lease"
        );
        store.expire(1_000_250).await.unwrap();
        let status = async |id: &str| store.get(id).await.unwrap().unwrap().status();
        assert_eq!(
            status("renewed").await,
            TaskStatus::Working,
            "renewed past 1_000_100"
        );
        assert_eq!(
            status("finished").await,
            TaskStatus::Cancelled,
            "its end stands"
        );
        assert_eq!(status("lapsing").await, TaskStatus::Failed);
        assert_eq!(
            status("free").await,
            TaskStatus::Working,
            "no lease, nothing lapses"
        );
        assert_eq!(
            lease_index(&store),
            BTreeSet::from([(1_000_300, "renewed".to_owned())])
        );
        store.expire(1_000_300).await.unwrap();
        assert_eq!(status("renewed").await, TaskStatus::Failed);
        assert!(lease_index(&store).is_empty());
    }

    #[tokio::test]
    async fn a_full_store_evicts_finished_tasks_then_refuses() {
        let (_, store) = manual();
        let store = store.max_tasks(2);
        store.create(record("a", 1_000_000, None)).await.unwrap();
        store.create(record("b", 1_000_000, None)).await.unwrap();
        assert_eq!(
            store.create(record("c", 1_000_000, None)).await,
            Err(StoreError::Full { limit: 2 })
        );
        store.finish("a", Terminal::Cancelled).await.unwrap();
        store.create(record("c", 1_000_000, None)).await.unwrap();
        assert!(store.get("a").await.unwrap().is_none(), "evicted");
    }
}
