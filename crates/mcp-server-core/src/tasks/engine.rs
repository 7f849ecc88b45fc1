//! The task engine: admitting a `tools/call` as a task, serving `tasks/get`, `tasks/update`
//! and `tasks/cancel`, and the link a running body asks its questions through.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_state_seal::Principal;
use mcp_types::capabilities::ClientCapabilities;
use mcp_types::elicitation::ElicitResult;
use mcp_types::ext::tasks::{
    self as wire, CreateTaskResult, DetailedTask, Task, TaskAck, TaskPayload, UpdateTaskParams,
};
use mcp_types::mrtr::{InputRequest, InputRequests};
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::CreateMessageResult;
use mcp_types::tasks::TaskIdParams;
use mcp_types::{ClientResult, ErrorObject, methods};
use serde_json::Value;
use tokio::sync::watch;

use crate::cancel::CancellationToken;
use crate::gating::Requirement;
use crate::peer::PeerError;

use super::config::{RESYNC, TaskConfig, TaskSupport};
use super::replay::Replay;
use super::time::iso8601;
use crate::futures::{BoxFuture, HandlerResult};
use crate::tasks::{StoreError, TaskRecord, TaskStore, Terminal};
use mcp_types::tools::CallToolResult;

/// Builds the body of a re-run from its replay: the service makes the context (as the task's
/// first run had it) and the registry calls the tool. `None` when the tool is not there.
pub(crate) type Rerunner = Arc<
    dyn Fn(
            &Replay,
            TaskCtx,
            CancellationToken,
        ) -> Option<BoxFuture<'static, HandlerResult<CallToolResult>>>
        + Send
        + Sync,
>;

/// The engine: the configuration and this instance's worker id. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TaskEngine {
    pub(super) inner: Arc<EngineInner>,
}

pub(super) struct EngineInner {
    pub(super) config: TaskConfig,
    /// This instance's worker id, written into the leases it holds and named by a "worker
    /// lost" failure: the fleet member's name (`i2~9d72d840`) when the server is one of a
    /// fleet, a random id otherwise. Set once, by the first of `Server::fleet` or the first
    /// task.
    worker: std::sync::OnceLock<String>,
    /// Task bodies running in this process.
    pub(super) running: Arc<std::sync::atomic::AtomicUsize>,
    /// Task bodies of anonymous callers running in this process, by client address group.
    pub(super) anonymous: Arc<Mutex<std::collections::HashMap<String, usize>>>,
    /// The sweep timer, started by the first task request or creation (on the runtime).
    pub(super) sweeper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// How re-run bodies are built (set by the service; see `rerun.rs`).
    pub(super) rerunner: std::sync::OnceLock<Rerunner>,
    /// What seals the replays this engine keeps (the server's state keys), when it has them:
    /// a replay in a shared store is then one that only the fleet could have written
    /// (security review X10).
    pub(super) replay_sealer: std::sync::OnceLock<Arc<mcp_state_seal::SealingBoundary>>,
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        if let Ok(mut sweeper) = self.sweeper.lock()
            && let Some(task) = sweeper.take()
        {
            task.abort();
        }
    }
}

/// Counts a running task body until dropped.
pub(super) struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Running {
    pub(super) fn start(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Running(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One running task body of an anonymous caller, counted against its address's share until
/// the body ends.
pub(super) struct PeerShare {
    counts: Arc<Mutex<std::collections::HashMap<String, usize>>>,
    group: String,
}

impl PeerShare {
    /// A place in `group`'s share of at most `max` bodies, or `None` when it holds them all.
    pub(super) fn take(
        counts: &Arc<Mutex<std::collections::HashMap<String, usize>>>,
        group: &str,
        max: usize,
    ) -> Option<Self> {
        let mut map = counts.lock().ok()?;
        let held = map.entry(group.to_owned()).or_default();
        if *held >= max {
            return None;
        }
        *held += 1;
        Some(PeerShare {
            counts: counts.clone(),
            group: group.to_owned(),
        })
    }
}

impl Drop for PeerShare {
    fn drop(&mut self) {
        if let Ok(mut map) = self.counts.lock()
            && let Some(held) = map.get_mut(&self.group)
        {
            *held = held.saturating_sub(1);
            if *held == 0 {
                map.remove(&self.group);
            }
        }
    }
}

impl fmt::Debug for TaskEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskEngine")
            .field("config", &self.inner.config)
            .finish()
    }
}

pub(super) fn random_id() -> Result<String, ErrorObject> {
    crate::seal::random_hex_id()
        .map_err(|e| ErrorObject::internal(format!("no random task id: {e}")))
}

/// The key a task's owner is stored under: the authenticated principal (issuer, subject and
/// client id), or `None` without authentication.
pub fn owner_key(principal: Option<&Principal>) -> Option<String> {
    principal.map(|p| {
        serde_json::to_string(&[
            p.issuer.as_deref().unwrap_or(""),
            p.subject.as_deref().unwrap_or(""),
            p.client_id.as_str(),
        ])
        .unwrap_or_default()
    })
}

pub(super) fn store_error(e: StoreError) -> ErrorObject {
    match e {
        StoreError::NotFound => not_found(),
        other => ErrorObject::internal(other.to_string()),
    }
}

fn not_found() -> ErrorObject {
    ErrorObject::invalid_params("Task not found")
}

fn missing_extension(method: &str) -> ErrorObject {
    ErrorObject::missing_required_client_capability(
        format!(
            "{method} needs the {} extension: declare it in this request's clientCapabilities.extensions",
            wire::EXTENSION_ID
        ),
        ClientCapabilities::default().with_extension(wire::EXTENSION_ID),
    )
}

/// Who sent a `tasks/*` request and what it declared: the parts of its context the engine
/// reads.
#[derive(Clone, Copy)]
pub(crate) struct TaskCaller<'a> {
    pub(crate) method: &'a str,
    pub(crate) capabilities: &'a ClientCapabilities,
    pub(crate) principal: Option<&'a Principal>,
}

impl TaskEngine {
    pub(crate) fn new(config: TaskConfig) -> Self {
        TaskEngine {
            inner: Arc::new(EngineInner {
                config,
                worker: std::sync::OnceLock::new(),
                running: Arc::default(),
                anonymous: Arc::default(),
                sweeper: Mutex::new(None),
                rerunner: std::sync::OnceLock::new(),
                replay_sealer: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Names this instance's worker after its fleet member (before any task runs).
    pub(crate) fn name_worker(&self, member: &str) {
        let _ = self.inner.worker.set(member.to_owned());
    }

    /// This instance's worker id.
    pub(super) fn worker(&self) -> &str {
        self.inner
            .worker
            .get_or_init(|| random_id().unwrap_or_else(|_| "worker".into()))
    }

    pub(super) fn store(&self) -> &dyn TaskStore {
        &*self.inner.config.store
    }

    /// How many task bodies run in this process now.
    pub(crate) fn running(&self) -> usize {
        self.inner.running.load(Ordering::Relaxed)
    }

    pub(super) fn config(&self) -> &TaskConfig {
        &self.inner.config
    }

    /// Sweeps expired tasks and lapsed leases (cheap for the in-memory store: an index by
    /// time).
    async fn sweep(&self) {
        let now = self.store().now_ms();
        // First the tasks that can run again (before the sweep below could fail them).
        self.rerun_lapsed(now).await;
        if let Err(e) = self.store().expire(now).await {
            tracing::warn!(error = %e, "sweeping expired tasks failed");
        }
    }

    /// Starts this instance's sweep timer unless it runs (it needs the runtime, which the
    /// first task request or creation is on). The timer holds the engine weakly: it stops when
    /// the server is dropped.
    pub(super) fn ensure_sweeper(&self) {
        let Ok(mut sweeper) = self.inner.sweeper.lock() else {
            return;
        };
        if sweeper.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let engine = Arc::downgrade(&self.inner);
        let every = self.inner.config.sweep_interval;
        *sweeper = Some(runtime.spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = engine.upgrade() else {
                    return;
                };
                TaskEngine { inner }.sweep().await;
            }
        }));
    }

    /// The task `id` if `owner` owns it; anything else is "not found".
    async fn owned(&self, id: &str, owner: &Option<String>) -> Result<TaskRecord, ErrorObject> {
        match self.store().get(id).await.map_err(store_error)? {
            Some(record) if &record.owner == owner => Ok(record),
            Some(_) => {
                tracing::debug!("a tasks/* call for a task of another principal");
                Err(not_found())
            }
            None => Err(not_found()),
        }
    }

    /// Decides, for a `tools/call` on 2026-07-28, whether the call may become a task, owned by
    /// `owner` (the caller as the server identifies it), from client address `peer`.
    pub(crate) fn admit(
        engine: Option<&TaskEngine>,
        support: TaskSupport,
        tool: &str,
        caps: &ClientCapabilities,
        owner: Option<&Principal>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Option<Arc<Launch>>, ErrorObject> {
        let declared = caps.supports_extension(wire::EXTENSION_ID);
        match (support, engine) {
            (TaskSupport::Forbidden, _) | (_, None) => Ok(None),
            (TaskSupport::Required, Some(_)) if !declared => {
                Err(missing_extension(&format!("tool '{tool}'")))
            }
            (_, Some(_)) if !declared => Ok(None),
            (_, Some(engine)) => {
                let owner = owner_key(owner);
                // An anonymous caller's tasks count against its address's share (security
                // review X1): the store's per-owner share counts owners only.
                let peer_group = match (&owner, peer) {
                    (None, Some(peer)) => Some(crate::client_group(peer)),
                    _ => None,
                };
                Ok(Some(Arc::new(Launch {
                    engine: engine.clone(),
                    owner,
                    peer_group,
                    created: Mutex::new(None),
                })))
            }
        }
    }

    /// `tasks/get`: the caller's task as it stands, with its payload. The caller is checked
    /// at once, so the future keeps neither the request's context nor its `_meta`: only the
    /// task id and the owner (a poll is the request a client sends most often).
    pub(crate) fn get(
        &self,
        caller: TaskCaller<'_>,
        params: TaskIdParams,
    ) -> impl Future<Output = Result<super::poll::Poll, ErrorObject>> + Send + use<> {
        let owner = self.caller(caller);
        let id = params.task_id;
        let engine = self.clone();
        async move {
            let record = engine.owned(&id, &owner?).await?;
            Ok(super::poll::Poll::of(record))
        }
    }

    /// `tasks/update`: answers to the questions the task has outstanding; an answer to a key
    /// it never asked (or already had answered) is ignored, an answer that does not fit its
    /// question is `-32602`.
    pub(crate) async fn update(
        &self,
        caller: TaskCaller<'_>,
        params: UpdateTaskParams,
    ) -> Result<TaskAck, ErrorObject> {
        let owner = self.caller(caller)?;
        let record = self.owned(&params.task_id, &owner).await?;
        let mut answers = BTreeMap::new();
        for (key, value) in params.input_responses {
            let Some(request) = record.outstanding.get(&key) else {
                continue;
            };
            if let Err(why) = answer_of(request, value.clone()) {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses['{key}'] is not a valid answer to its {}: {why}",
                    request.method()
                )));
            }
            // Sealed for this task and question (security review X10).
            let Some(sealed) = self.seal_answer(&params.task_id, &key, value) else {
                return Err(ErrorObject::internal("the answer could not be kept"));
            };
            answers.insert(key, sealed);
        }
        if !answers.is_empty() {
            self.store()
                .resolve_inputs(&params.task_id, answers)
                .await
                .map_err(store_error)?;
        }
        Ok(TaskAck::default())
    }

    /// `tasks/cancel`: asks the caller's task to stop (a finished task stays as it ended).
    pub(crate) async fn cancel(
        &self,
        caller: TaskCaller<'_>,
        params: TaskIdParams,
    ) -> Result<TaskAck, ErrorObject> {
        let owner = self.caller(caller)?;
        let record = self.owned(&params.task_id, &owner).await?;
        if record.terminal.is_none() {
            self.store()
                .request_cancel(&params.task_id)
                .await
                .map_err(store_error)?;
        }
        Ok(TaskAck::default())
    }

    /// The owner key of the caller of a `tasks/*` request, once the request declared the
    /// extension (`-32021` otherwise).
    fn caller(&self, caller: TaskCaller<'_>) -> Result<Option<String>, ErrorObject> {
        if !caller.capabilities.supports_extension(wire::EXTENSION_ID) {
            return Err(missing_extension(caller.method));
        }
        self.ensure_sweeper();
        Ok(owner_key(caller.principal))
    }
}

pub(super) fn base(record: &TaskRecord) -> Task {
    Task {
        task_id: record.id.clone(),
        status: record.status(),
        status_message: record.status_message.clone(),
        created_at: iso8601(record.created_at_ms),
        last_updated_at: iso8601(record.last_updated_at_ms),
        ttl_ms: record.ttl_ms,
        poll_interval_ms: record.poll_interval_ms,
    }
}

/// The `tasks/get` view of a record.
pub fn detailed(record: &TaskRecord) -> DetailedTask {
    let payload = match &record.terminal {
        Some(Terminal::Completed(r)) => TaskPayload::Completed(r.clone()),
        Some(Terminal::Failed(e)) => TaskPayload::Failed(e.clone()),
        Some(Terminal::Cancelled) => TaskPayload::Cancelled,
        None if !record.outstanding.is_empty() => {
            TaskPayload::InputRequired(record.outstanding.clone())
        }
        None => TaskPayload::Working,
    };
    DetailedTask::new(base(record), payload)
}

/// Reads an answer as the result of the kind of request it answers.
fn answer_of(request: &InputRequest, value: Value) -> Result<ClientResult, String> {
    let e = |e: serde_json::Error| e.to_string();
    Ok(match request {
        InputRequest::Elicit(_) => {
            ClientResult::Elicit(serde_json::from_value::<ElicitResult>(value).map_err(e)?)
        }
        InputRequest::CreateMessage(_) => ClientResult::CreateMessage(
            serde_json::from_value::<CreateMessageResult>(value).map_err(e)?,
        ),
        InputRequest::ListRoots(_) => {
            ClientResult::ListRoots(serde_json::from_value::<ListRootsResult>(value).map_err(e)?)
        }
        InputRequest::Unknown { method, .. } => {
            return Err(format!("no answer is known for '{method}'"));
        }
    })
}

/// What a `tools/call` allowed to become a task carries: the engine, the owner, and the
/// task once it was created.
pub(crate) struct Launch {
    pub(super) engine: TaskEngine,
    pub(super) owner: Option<String>,
    /// The client address group of an anonymous caller (no owner), when the transport knows it.
    pub(super) peer_group: Option<String>,
    pub(super) created: Mutex<Option<CreateTaskResult>>,
}

impl fmt::Debug for Launch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch").finish_non_exhaustive()
    }
}

impl Launch {
    /// The task this call created, if it created one.
    pub(crate) fn take_created(&self) -> Option<CreateTaskResult> {
        self.created.lock().ok().and_then(|mut c| c.take())
    }
}

/// A body's link to the task it runs in: where its questions go.
pub(crate) struct TaskLink {
    pub(super) engine: TaskEngine,
    pub(super) id: String,
    pub(super) asked: AtomicU64,
    /// The replay of a task that can run again: answers are recorded in it as they come, and
    /// a re-run's questions are answered from it.
    pub(super) kept: Option<super::replay::Kept>,
}

impl fmt::Debug for TaskLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskLink").field("id", &self.id).finish()
    }
}

/// Where a request context stands with tasks.
#[derive(Debug, Clone, Default)]
pub(crate) enum TaskCtx {
    /// Not a task, and cannot become one.
    #[default]
    None,
    /// A `tools/call` that may start a task.
    Launchable(Arc<Launch>),
    /// The body of a running task.
    Running(Arc<TaskLink>),
}

impl TaskLink {
    pub(super) fn new(engine: TaskEngine, id: String, replay: Option<Replay>) -> Self {
        TaskLink {
            engine,
            id,
            asked: AtomicU64::new(0),
            kept: replay.map(|replay| super::replay::Kept {
                replay: Mutex::new(replay),
            }),
        }
    }

    pub(super) fn rerun(engine: TaskEngine, id: String, replay: Replay) -> Self {
        Self::new(engine, id, Some(replay))
    }

    /// Which run of its task this body is (1 for the first).
    fn run(&self) -> u32 {
        self.kept
            .as_ref()
            .and_then(|k| k.replay.lock().ok().map(|r| r.runs))
            .unwrap_or(1)
    }

    /// What an earlier run of this task asked under `key` (the question's digest) and the
    /// answer it received, as the replay kept them.
    fn earlier(&self, key: &str) -> (Option<String>, Option<Value>) {
        let Some(Ok(replay)) = self.kept.as_ref().map(|k| k.replay.lock()) else {
            return (None, None);
        };
        (
            replay.asked.get(key).cloned(),
            replay.answered.get(key).cloned(),
        )
    }

    /// Records that `key` asks the question `digest`, before it is posted: a re-run then
    /// knows what a question the lost run left standing was.
    async fn keep_question(&self, key: &str, digest: &str) {
        self.keep(|replay| {
            replay.asked.insert(key.to_owned(), digest.to_owned());
        })
        .await;
    }

    /// Records the answer to `key` in the replay, so that a re-run is not asked again.
    async fn keep_answer(&self, key: &str, value: &Value) {
        self.keep(|replay| {
            replay.answered.insert(key.to_owned(), value.clone());
        })
        .await;
    }

    /// Changes the replay with `change` and stores it, when this task can run again.
    async fn keep(&self, change: impl FnOnce(&mut super::Replay)) {
        let Some(kept) = &self.kept else {
            return;
        };
        let encoded = match kept.replay.lock() {
            Ok(mut replay) => {
                let mut changed = replay.clone();
                change(&mut changed);
                // Bounded (security review X1): past the cap the change is not kept, and a
                // re-run asks again what it would have said.
                let Some(encoded) = self.engine.seal_replay(&self.id, &changed) else {
                    tracing::debug!(
                        max = super::replay::MAX_REPLAY_BYTES,
                        "a question or its answer would take the task's replay past its cap; not kept"
                    );
                    return;
                };
                *replay = changed;
                encoded
            }
            Err(_) => return,
        };
        if let Err(e) = self.engine.store().set_replay(&self.id, encoded).await {
            tracing::warn!(error = %e, "a question or its answer was not kept for a re-run");
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Posts `request` as an input request of the task and waits for its answer.
    pub(crate) async fn ask(
        &self,
        request: InputRequest,
        caps: &ClientCapabilities,
        cancel: &CancellationToken,
    ) -> Result<ClientResult, PeerError> {
        if let Some(requirement) = Requirement::of_input_request(&request)
            && !requirement.is_met(caps)
        {
            return Err(PeerError::MissingCapability(requirement));
        }
        let max = self.engine.config().max_questions;
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        if n > max {
            return Err(PeerError::Refused(format!(
                "this task asked more than {max} questions"
            )));
        }
        let method = request.method();
        let mut key = format!("q{n}");
        let question = crate::question::digest(&request, None);
        // A re-run asks again what an earlier run was answered: the kept answer serves when it
        // answered this same question. A different question under the same number is asked
        // anew under a key of this run, so that consent given for one question is never
        // applied to another (security review X8).
        let (asked_before, answered_before) = self.earlier(&key);
        let same_question = asked_before.as_deref() == Some(question.as_str());
        if same_question && let Some(value) = answered_before {
            return answer_of(&request, value).map_err(|reason| PeerError::InvalidResult {
                method: static_method(method),
                reason,
            });
        }
        if !same_question {
            if asked_before.is_some() || answered_before.is_some() {
                key = format!("{key}-run{}", self.run());
            }
            self.keep_question(&key, &question).await;
        }
        let store = self.engine.store();
        let mut feed = store.watch(&self.id);
        match store
            .add_input_requests(
                &self.id,
                InputRequests::from([(key.clone(), request.clone())]),
            )
            .await
        {
            Ok(()) => {}
            // A re-run's question the lost run had asked: it stands (outstanding, or answered
            // and not yet taken), or its answer was taken by the lost run before it was kept,
            // and then it is asked again under a key of this run.
            Err(StoreError::KeyReused(_)) if self.kept.is_some() => {
                let stands = same_question
                    && store.get(&self.id).await.ok().flatten().is_some_and(|r| {
                        r.outstanding.contains_key(&key) || r.answers.contains_key(&key)
                    });
                if !stands {
                    key = format!("{key}-run{}", self.run());
                    store
                        .add_input_requests(
                            &self.id,
                            InputRequests::from([(key.clone(), request.clone())]),
                        )
                        .await
                        .map_err(|e| PeerError::Refused(e.to_string()))?;
                }
            }
            Err(e) => return Err(PeerError::Refused(e.to_string())),
        }
        let poll = self.engine.config().poll_interval;
        // Since when the store has failed to say whether the answer came, if it is failing.
        let mut failing_since: Option<tokio::time::Instant> = None;
        loop {
            // With a change feed the answer wakes us (review W10); without one, poll.
            let mut look_again = match feed {
                Some(_) => RESYNC.max(poll),
                None => poll,
            };
            match store.take_answer(&self.id, &key).await {
                Ok(Some(stored)) => {
                    let value = self
                        .engine
                        .open_answer(&self.id, &key, stored)
                        .await
                        .map_err(PeerError::Refused)?;
                    self.keep_answer(&key, &value).await;
                    return answer_of(&request, value).map_err(|reason| PeerError::InvalidResult {
                        method: static_method(method),
                        reason,
                    });
                }
                Ok(None) => failing_since = None,
                // The task is gone (expired, or removed): nobody is left to answer.
                Err(StoreError::NotFound | StoreError::Finished) => {
                    return Err(PeerError::Disconnected);
                }
                // The store failing for a moment (Redis restarting, issue #48) is waited out,
                // for as long as a lease; past that the question fails naming the store.
                // Before, any failure here ended the body "the session ended before the
                // client answered".
                Err(e) => {
                    let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() >= self.engine.config().lease {
                        return Err(PeerError::Refused(e.to_string()));
                    }
                    tracing::debug!(error = %e, "a task's answer could not be read; trying again");
                    look_again = poll;
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(PeerError::Cancelled),
                open = changed(&mut feed) => if !open { feed = None; },
                () = tokio::time::sleep(look_again) => {},
            }
        }
    }

    /// Sets the task's status message (what `ctx.progress()` does inside a task).
    pub(crate) async fn set_status_message(&self, message: String) {
        if let Err(e) = self
            .engine
            .store()
            .set_status_message(&self.id, Some(message))
            .await
        {
            tracing::debug!(error = %e, "a task's status message was not set");
        }
    }
}

fn static_method(method: &str) -> &'static str {
    match method {
        methods::ELICITATION_CREATE => methods::ELICITATION_CREATE,
        methods::SAMPLING_CREATE_MESSAGE => methods::SAMPLING_CREATE_MESSAGE,
        methods::ROOTS_LIST => methods::ROOTS_LIST,
        _ => "an input request",
    }
}

/// Waits for the next change of a feed; `false` once it closed. A missing feed never changes.
pub(super) async fn changed(feed: &mut Option<watch::Receiver<u64>>) -> bool {
    match feed {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}
