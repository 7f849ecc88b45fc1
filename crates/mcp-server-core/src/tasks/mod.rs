//! The Tasks extension (`io.modelcontextprotocol/tasks`) on the server: a `tools/call` whose
//! request declared the extension, to a tool that supports tasks, answers a
//! `CreateTaskResult` at once while its body runs in the background, outliving the request
//! that started it. The client polls `tasks/get`, answers questions with `tasks/update` and
//! stops the task with `tasks/cancel`.
//!
//! A task asks its user through the same machinery as any call: `ctx.elicit()`,
//! `ctx.create_message()`, `ctx.list_roots()` (and `ctx.send_request`) inside a task post an
//! input request to the task (status `input_required`, `inputRequests` in `tasks/get`) and
//! return the answer `tasks/update` delivers. Resolvers (`#[resolve]`) run before the task is
//! created, as multi-round-trip rounds on `tools/call` itself. `ctx.progress()` inside a task
//! sets its `statusMessage`. Cancellation reaches the body through `ctx.cancellation()`.
//!
//! Status rules: a body that returns a result (also one with `isError: true`) ends
//! `completed`; one that returns a JSON-RPC error ends `failed` (a panic, too, as `-32603`);
//! a body whose task was cancelled ends `cancelled` (it gets [`TaskConfig::cancel_grace`] to
//! wind down, then it is dropped). Tasks are bound to the principal that created them: for
//! anyone else a task does not exist (`-32602`, like an unknown id). They expire `ttlMs` after
//! creation. They are never offered on 2025-11-25 sessions, where a task-supporting tool simply
//! runs inline.

mod store;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_state_seal::Principal;
use mcp_types::capabilities::ClientCapabilities;
use mcp_types::elicitation::ElicitResult;
use mcp_types::ext::tasks::{
    self as wire, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskAck, TaskPayload,
};
use mcp_types::mrtr::{InputRequest, InputRequests};
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::CreateMessageResult;
use mcp_types::tools::CallToolResult;
use mcp_types::{ClientRequest, ClientResult, ErrorObject, methods};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::watch;

pub use store::{
    DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_OWNER, InMemoryTaskStore, Lease, StoreError,
    StoreFuture, TaskRecord, TaskStore, Terminal, system_now_ms,
};

use crate::cancel::CancellationToken;
use crate::context::RequestContext;
use crate::gating::{ClientSupport, Requirement};
use crate::peer::PeerError;
use crate::server::{BoxFuture, HandlerResult};
use crate::service::CatchUnwind;

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

/// How often a worker whose store has a change feed looks at its task (and for an answer)
/// anyway: the feed wakes it on every change, and this covers a wake-up that was lost (a
/// remote store's subscriber reconnecting, say).
const RESYNC: Duration = Duration::from_secs(10);

/// The task engine's settings: where tasks live, and the limits.
#[derive(Clone)]
pub struct TaskConfig {
    store: Arc<dyn TaskStore>,
    ttl: Option<Duration>,
    poll_interval: Duration,
    cancel_grace: Duration,
    lease: Duration,
    max_questions: u64,
    sweep_interval: Duration,
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
    /// [`DEFAULT_SWEEP_INTERVAL`].
    pub fn new() -> Self {
        TaskConfig {
            store: Arc::new(InMemoryTaskStore::new()),
            ttl: Some(DEFAULT_TASK_TTL),
            poll_interval: DEFAULT_POLL_INTERVAL,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            lease: DEFAULT_LEASE,
            max_questions: DEFAULT_MAX_QUESTIONS,
            sweep_interval: DEFAULT_SWEEP_INTERVAL,
        }
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

/// The engine: the configuration and this instance's worker id. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TaskEngine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    config: TaskConfig,
    worker: String,
    /// Task bodies running in this process.
    running: Arc<std::sync::atomic::AtomicUsize>,
    /// The sweep timer, started by the first task request or creation (on the runtime).
    sweeper: Mutex<Option<tokio::task::JoinHandle<()>>>,
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
struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Running {
    fn start(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Running(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for TaskEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskEngine")
            .field("config", &self.inner.config)
            .finish()
    }
}

fn random_id() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    crate::seal::random_bytes(&mut bytes)
        .map_err(|e| ErrorObject::internal(format!("no random task id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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

/// `YYYY-MM-DDThh:mm:ss.mmmZ` for milliseconds since the Unix epoch.
///
/// Every `tasks/get` renders two of these; the digits are written by hand because `format!`
/// made them 40 % of the engine's own cost of a poll (callgrind, issue #21).
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..10_000).contains(&year) {
        // Past year 9999 (ms near u64::MAX): as many year digits as it takes.
        return format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            ms % 1000
        );
    }
    let mut out = [0u8; 24];
    let fields: [(u64, usize, u8); 7] = [
        (year as u64, 4, b'-'),
        (month as u64, 2, b'-'),
        (day as u64, 2, b'T'),
        (rem / 3600, 2, b':'),
        (rem % 3600 / 60, 2, b':'),
        (rem % 60, 2, b'.'),
        (ms % 1000, 3, b'Z'),
    ];
    let mut at = 0;
    for (mut value, width, after) in fields {
        for i in (0..width).rev() {
            out[at + i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        out[at + width] = after;
        at += width + 1;
    }
    // Only ASCII digits and separators were written.
    out.iter().map(|&b| char::from(b)).collect()
}

fn store_error(e: StoreError) -> ErrorObject {
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

impl TaskEngine {
    pub(crate) fn new(config: TaskConfig) -> Self {
        let worker = random_id().unwrap_or_else(|_| "worker".into());
        TaskEngine {
            inner: Arc::new(EngineInner {
                config,
                worker,
                running: Arc::default(),
                sweeper: Mutex::new(None),
            }),
        }
    }

    fn store(&self) -> &dyn TaskStore {
        &*self.inner.config.store
    }

    /// How many task bodies run in this process now.
    pub(crate) fn running(&self) -> usize {
        self.inner.running.load(Ordering::Relaxed)
    }

    fn config(&self) -> &TaskConfig {
        &self.inner.config
    }

    /// Sweeps expired tasks and lapsed leases (cheap for the in-memory store: an index by
    /// time).
    async fn sweep(&self) {
        let now = self.store().now_ms();
        if let Err(e) = self.store().expire(now).await {
            tracing::warn!(error = %e, "sweeping expired tasks failed");
        }
    }

    /// Starts this instance's sweep timer unless it runs (it needs the runtime, which the
    /// first task request or creation is on). The timer holds the engine weakly: it stops when
    /// the server is dropped.
    fn ensure_sweeper(&self) {
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
    /// `owner` (the caller as the server identifies it).
    pub(crate) fn admit(
        engine: Option<&TaskEngine>,
        support: TaskSupport,
        tool: &str,
        ctx: &RequestContext,
        owner: Option<&Principal>,
    ) -> Result<Option<Arc<Launch>>, ErrorObject> {
        let declared = ctx
            .client_capabilities()
            .supports_extension(wire::EXTENSION_ID);
        match (support, engine) {
            (TaskSupport::Forbidden, _) | (_, None) => Ok(None),
            (TaskSupport::Required, Some(_)) if !declared => {
                Err(missing_extension(&format!("tool '{tool}'")))
            }
            (_, Some(_)) if !declared => Ok(None),
            (_, Some(engine)) => Ok(Some(Arc::new(Launch {
                engine: engine.clone(),
                owner: owner_key(owner),
                created: Mutex::new(None),
            }))),
        }
    }

    /// Serves `tasks/get`, `tasks/update`, `tasks/cancel` (and answers `-32601` to the removed
    /// `tasks/result` and `tasks/list`), on 2026-07-28.
    pub(crate) async fn serve(
        engine: Option<&TaskEngine>,
        typed: ClientRequest,
        caps: &ClientCapabilities,
        principal: Option<&Principal>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let method = typed.method();
        let Some(engine) = engine.filter(|_| {
            matches!(
                method,
                methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
            )
        }) else {
            return Err(ErrorObject::method_not_found(method));
        };
        if !caps.supports_extension(wire::EXTENSION_ID) {
            return Err(missing_extension(method));
        }
        engine.ensure_sweeper();
        let owner = owner_key(principal);
        let ack = || to_raw(&TaskAck::default());
        match typed {
            ClientRequest::GetTask(p) => {
                let record = engine.owned(&p.task_id, &owner).await?;
                to_raw(&GetTaskResult {
                    task: detailed(&record),
                    meta: None,
                })
            }
            ClientRequest::UpdateTask(p) => {
                let record = engine.owned(&p.task_id, &owner).await?;
                let mut answers = BTreeMap::new();
                for (key, value) in p.input_responses {
                    let Some(request) = record.outstanding.get(&key) else {
                        continue;
                    };
                    if let Err(why) = answer_of(request, value.clone()) {
                        return Err(ErrorObject::invalid_params(format!(
                            "inputResponses['{key}'] is not a valid answer to its {}: {why}",
                            request.method()
                        )));
                    }
                    answers.insert(key, value);
                }
                if !answers.is_empty() {
                    engine
                        .store()
                        .resolve_inputs(&p.task_id, answers)
                        .await
                        .map_err(store_error)?;
                }
                ack()
            }
            ClientRequest::CancelTask(p) => {
                let record = engine.owned(&p.task_id, &owner).await?;
                if record.terminal.is_none() {
                    engine
                        .store()
                        .request_cancel(&p.task_id)
                        .await
                        .map_err(store_error)?;
                }
                ack()
            }
            other => Err(ErrorObject::method_not_found(other.method())),
        }
    }
}

/// Whether `method` is one of the extension's (`tasks/get`, `tasks/update`, `tasks/cancel`)
/// or one it removed (`tasks/result`, `tasks/list`): served by [`TaskEngine::serve`] on
/// 2026-07-28, before any other method check.
pub(crate) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        methods::TASKS_GET
            | methods::TASKS_UPDATE
            | methods::TASKS_CANCEL
            | methods::TASKS_RESULT
            | methods::TASKS_LIST
    )
}

/// Whether a server with (`enabled`) or without tasks serves `method` as a task method.
pub(crate) fn serves(enabled: bool, method: &str) -> bool {
    enabled
        && matches!(
            method,
            methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
        )
}

fn to_raw<T: serde::Serialize>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    mcp_types::jsonrpc::to_raw(value)
        .map_err(|e| ErrorObject::internal(format!("the result could not be serialized: {e}")))
}

fn base(record: &TaskRecord) -> Task {
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
    engine: TaskEngine,
    owner: Option<String>,
    created: Mutex<Option<CreateTaskResult>>,
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
    engine: TaskEngine,
    id: String,
    asked: AtomicU64,
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
    May(Arc<Launch>),
    /// The body of a running task.
    In(Arc<TaskLink>),
}

impl TaskLink {
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
        let key = format!("q{n}");
        let store = self.engine.store();
        let mut feed = store.watch(&self.id);
        store
            .add_input_requests(
                &self.id,
                InputRequests::from([(key.clone(), request.clone())]),
            )
            .await
            .map_err(|e| PeerError::Refused(e.to_string()))?;
        let poll = self.engine.config().poll_interval;
        loop {
            // With a change feed the answer wakes us (review W10); without one, poll.
            let look_again = match feed {
                Some(_) => RESYNC.max(poll),
                None => poll,
            };
            match store.take_answer(&self.id, &key).await {
                Ok(Some(value)) => {
                    return answer_of(&request, value).map_err(|reason| PeerError::InvalidResult {
                        method: static_method(method),
                        reason,
                    });
                }
                Ok(None) => {}
                Err(_) => return Err(PeerError::Disconnected),
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
async fn changed(feed: &mut Option<watch::Receiver<u64>>) -> bool {
    match feed {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

impl RequestContext {
    /// Runs `body` as a task when this `tools/call` may become one (a 2026-07-28 request that
    /// declared the extension, to a tool registered with task support on a server with tasks):
    /// the task is created in the store, the body starts in the background with the task's
    /// own context, and the call answers the `CreateTaskResult` (return this function's value
    /// from the handler). Otherwise the body runs inline, with this context, and its result is
    /// the call's: one body serves every era and mode.
    pub async fn run_as_task<F, Fut>(
        self,
        body: F,
    ) -> HandlerResult<mcp_types::mrtr::Outcome<CallToolResult>>
    where
        F: FnOnce(RequestContext) -> Fut + Send + 'static,
        Fut: Future<Output = HandlerResult<CallToolResult>> + Send + 'static,
    {
        let TaskCtx::May(launch) = self.task.clone() else {
            return body(self).await.map(mcp_types::mrtr::Outcome::Complete);
        };
        let engine = launch.engine.clone();
        let config = engine.config();
        let store = engine.store();
        engine.ensure_sweeper();
        let now = store.now_ms();
        let lease_until = now.saturating_add(config.lease.as_millis() as u64);
        let id = random_id()?;
        let record = TaskRecord {
            id: id.clone(),
            owner: launch.owner.clone(),
            client_support: ClientSupport::of(self.client_capabilities()),
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: config.ttl.map(|t| t.as_millis() as u64),
            poll_interval_ms: Some(config.poll_interval.as_millis().max(1) as u64),
            outstanding: InputRequests::new(),
            answers: BTreeMap::new(),
            used_keys: Default::default(),
            cancel_requested: false,
            terminal: None,
            lease: Some(Lease {
                worker: engine.inner.worker.clone(),
                until_ms: lease_until,
            }),
        };
        let created = CreateTaskResult::new(base(&record));
        store.create(record).await.map_err(|e| match e {
            StoreError::Full { .. } | StoreError::OwnerFull { .. } => {
                ErrorObject::internal(e.to_string())
            }
            other => store_error(other),
        })?;
        let token = CancellationToken::new();
        let mut ctx = self;
        ctx.task = TaskCtx::In(Arc::new(TaskLink {
            engine: engine.clone(),
            id: id.clone(),
            asked: AtomicU64::new(0),
        }));
        ctx.cancellation = token.clone();
        ctx.peer = None;
        ctx.progress_token = None;
        ctx.log_level = None;
        ctx.request_state = None;
        ctx.input_responses = None;
        ctx.sink = crate::sink::Sink::detached();
        ctx.keep_for_task();
        let work: BoxFuture<HandlerResult<CallToolResult>> = Box::pin(body(ctx));
        let running = Running::start(&engine.inner.running);
        tokio::spawn(async move {
            run(engine, id, token, work, lease_until).await;
            drop(running);
        });
        if let Ok(mut slot) = launch.created.lock() {
            *slot = Some(created);
        }
        // A stand-in: the service answers the CreateTaskResult instead.
        Ok(mcp_types::mrtr::Outcome::Complete(CallToolResult::default()))
    }

    /// The id of the task this body runs in, if it runs in one.
    pub fn task_id(&self) -> Option<&str> {
        match &self.task {
            TaskCtx::In(link) => Some(link.id()),
            _ => None,
        }
    }

    /// Whether this `tools/call` would become a task with [`run_as_task`](Self::run_as_task).
    pub fn may_run_as_task(&self) -> bool {
        matches!(self.task, TaskCtx::May(_))
    }
}

/// Runs a task's body to its end: renews the lease, watches the store for a cancel (trips the
/// body's token, then gives it the grace period) and for removal (TTL: the body is dropped),
/// and writes the terminal state. `lease_until` is when the lease the task was created with
/// lapses.
async fn run(
    engine: TaskEngine,
    id: String,
    token: CancellationToken,
    body: BoxFuture<HandlerResult<CallToolResult>>,
    mut lease_until: u64,
) {
    let config = engine.config().clone();
    let store = engine.store();
    let worker = engine.inner.worker.clone();
    let mut feed = store.watch(&id);
    let deadline = config
        .ttl
        .map(|ttl| tokio::time::Instant::now() + ttl)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 30));
    let mut body = std::pin::pin!(CatchUnwind(body));
    let renew_every = (config.lease / 3).min(Duration::from_secs(1));
    let mut tick = tokio::time::interval(renew_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // With a change feed, the task is read when the feed wakes, and every RESYNC in case a
    // wake-up was lost; without one, at every renewal.
    let resync_every = (RESYNC.as_millis() / renew_every.as_millis().max(1)).max(1) as u64;
    let mut renewals: u64 = 0;
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let ended: Option<Terminal> = loop {
        let check = tokio::select! {
            out = &mut body => break Some(match out {
                None => {
                    tracing::error!("a task body panicked; the task ends failed");
                    Terminal::Failed(ErrorObject::internal("Internal error"))
                }
                Some(Ok(result)) => match serde_json::to_value(&result) {
                    Ok(Value::Object(o)) => Terminal::Completed(o),
                    _ => Terminal::Failed(ErrorObject::internal("the result could not be serialized")),
                },
                Some(Err(error)) => Terminal::Failed(error),
            }),
            open = changed(&mut feed) => {
                if !open { feed = None; }
                true
            }
            _ = tick.tick() => {
                let until = store.now_ms().saturating_add(config.lease.as_millis() as u64);
                match store.claim(&id, &worker, until).await {
                    Ok(true) => lease_until = until,
                    Ok(false) => {
                        tracing::warn!("a task's lease was taken by another worker; its body stops here");
                        break None;
                    }
                    Err(StoreError::NotFound) => break None,
                    Err(e) => tracing::debug!(error = %e, "a task's lease was not renewed"),
                }
                renewals += 1;
                feed.is_none() || renewals.is_multiple_of(resync_every)
            }
            () = tokio::time::sleep_until(deadline) => break None,
            () = async { match grace.as_mut() { Some(g) => g.await, None => std::future::pending().await } } => {
                break Some(Terminal::Cancelled);
            }
        };
        if check {
            match store.get(&id).await {
                Ok(None) => break None,
                Ok(Some(r)) if r.terminal.is_some() => break None,
                Ok(Some(r)) if r.cancel_requested && !token.is_cancelled() => {
                    token.cancel();
                    grace = Some(Box::pin(tokio::time::sleep(config.cancel_grace)));
                }
                _ => {}
            }
        }
    };
    let Some(mut terminal) = ended else {
        // Gone (expired, removed, taken over): the body is told, gets the grace period to
        // wind down, and whatever it returns is dropped.
        token.cancel();
        let _ = tokio::time::timeout(config.cancel_grace, &mut body).await;
        return;
    };
    if token.is_cancelled() {
        terminal = Terminal::Cancelled;
    }
    if let Terminal::Failed(e) = &terminal {
        let _ = store.set_status_message(&id, Some(e.message.clone())).await;
    }
    store_end(store, &id, terminal, lease_until).await;
}

/// The first pause before writing a task's end again, doubled after each failure.
const END_RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest pause between two attempts to write a task's end.
const END_RETRY_MAX: Duration = Duration::from_secs(1);

/// Writes a task's end, again after a failure (with backoff) until the worker's lease lapses:
/// one transient store error must not lose a result (review W17). Past the lease nothing is
/// gained by retrying, since the sweep then ends the task `failed` ("worker lost").
async fn store_end(store: &dyn TaskStore, id: &str, terminal: Terminal, lease_until: u64) {
    let mut pause = END_RETRY_FIRST;
    loop {
        let error = match store.finish(id, terminal.clone()).await {
            Ok(_) | Err(StoreError::NotFound) => return,
            Err(e) => e,
        };
        let now = store.now_ms();
        if now.saturating_add(pause.as_millis() as u64) >= lease_until {
            tracing::error!(error = %error, "a task's end could not be stored before its lease lapsed; the task will read as failed");
            return;
        }
        tracing::warn!(error = %error, retry_in = ?pause, "a task's end could not be stored; trying again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(END_RETRY_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    /// The formatter `iso8601` replaced, as the reference.
    fn by_format(ms: u64) -> String {
        let secs = ms / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            ms % 1000
        )
    }

    #[test]
    fn iso8601_writes_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
        assert_eq!(iso8601(253_402_300_799_998), "9999-12-31T23:59:59.998Z");
        // Year 10000 and beyond take more digits, as before.
        assert_eq!(iso8601(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    #[test]
    fn iso8601_writes_what_the_formatter_wrote() {
        let mut ms = 0u64;
        while ms < 260_000_000_000_000 {
            assert_eq!(iso8601(ms), by_format(ms), "{ms}");
            ms = ms * 3 / 2 + 7_919_311;
        }
        for day in (0..3_652_425u64).step_by(97) {
            let ms = day * 86_400_000 + day * 7_777_777 % 86_400_000;
            assert_eq!(iso8601(ms), by_format(ms), "{ms}");
        }
        assert_eq!(iso8601(u64::MAX), by_format(u64::MAX));
    }
}
