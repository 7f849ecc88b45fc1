//! The Tasks extension (`io.modelcontextprotocol/tasks`) on the client.
//!
//! With [`ClientBuilder::tasks`] on, every 2026-07-28 request declares the extension, so a
//! server may answer a `tools/call` with a task. [`Client::call_tool`] then follows the task
//! to its end on its own: it polls `tasks/get` at the server's `pollIntervalMs`, answers
//! `inputRequests` with the same callbacks as multi-round-trip requests (through
//! `tasks/update`) and returns the final result, the task's JSON-RPC error, or
//! [`ClientError::Cancelled`]. [`Client::call_tool_as_task`] hands back a [`TaskHandle`]
//! instead, for callers who poll, answer and cancel themselves.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::ext::tasks::{
    self as wire, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskAck, TaskPayload,
    UpdateTaskParams,
};
use mcp_types::methods;
use mcp_types::mrtr::{InputResponses, Outcome};
use mcp_types::tasks::TaskIdParams;
use mcp_types::tools::{CallToolRequestParams, CallToolResult};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{CallOptions, Client, ClientBuilder, tool_arguments};
use crate::error::ClientError;

/// The shortest poll interval the client honours, whatever the server suggests.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The longest poll interval the client waits, whatever the server suggests.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The poll interval when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How many input requests one task may ask the client's callbacks to answer.
pub const MAX_TASK_QUESTIONS: usize = 1024;
pub use super::settings::DEFAULT_MAX_TASK_WAIT;

impl ClientBuilder {
    /// Declares the Tasks extension on every 2026-07-28 request (default off): a server may
    /// then answer a `tools/call` with a task, which `call_tool` follows to the end.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.tasks = enabled;
        self
    }

    /// The longest a task is followed to its end (default [`DEFAULT_MAX_TASK_WAIT`], one
    /// hour), or until its TTL when the server names a shorter one: past it the wait fails
    /// with [`ClientError::Timeout`] for `tasks/get`, and the task is cancelled when
    /// `call_tool` started it.
    pub fn max_task_wait(mut self, limit: Duration) -> Self {
        self.max_task_wait = limit;
        self
    }

    /// Sees each new state of a task this client follows (status or `statusMessage`
    /// changed): how a task's progress is shown to a user.
    pub fn on_task_status(
        mut self,
        handler: impl Fn(&DetailedTask) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.task_status = Some(Arc::new(handler));
        self
    }
}

/// What [`Client::call_tool_as_task`] got: the result at once (the server may answer fast
/// work synchronously), or a running task.
#[derive(Debug)]
pub enum TaskCall {
    /// The server answered without a task.
    Ready(CallToolResult),
    /// The server created a task.
    Running(TaskHandle),
}

/// A task on the server: poll it, answer it, cancel it, or wait for its end. Cheap to clone.
#[derive(Clone)]
pub struct TaskHandle {
    client: Client,
    created: Arc<Task>,
    answered: Arc<Mutex<BTreeSet<String>>>,
    timeout: Option<Duration>,
    /// The longest [`wait`](Self::wait) follows the task, instead of the client's.
    max_wait: Option<Duration>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task_id", &self.created.task_id)
            .finish()
    }
}

fn clamp(interval_ms: Option<u64>) -> Duration {
    interval_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL_INTERVAL)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

impl TaskHandle {
    fn new(client: Client, created: CreateTaskResult, timeout: Option<Duration>) -> Self {
        TaskHandle {
            client,
            created: Arc::new(created.task),
            answered: Arc::new(Mutex::new(BTreeSet::new())),
            timeout,
            max_wait: None,
        }
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.created.task_id
    }

    /// The task as the server created it.
    pub fn created(&self) -> &Task {
        &self.created
    }

    fn id_params(&self) -> TaskIdParams {
        TaskIdParams {
            task_id: self.created.task_id.clone(),
            meta: self.client.meta(None),
            extra: Default::default(),
        }
    }

    /// `tasks/get`: the task's status and, by status, its outstanding `inputRequests`, its
    /// result or its error.
    pub async fn status(&self) -> Result<DetailedTask, ClientError> {
        let got: GetTaskResult = self
            .client
            .typed(methods::TASKS_GET, &self.id_params(), self.timeout)
            .await?;
        if got.task.task.task_id != self.created.task_id {
            return Err(ClientError::InvalidResponse(format!(
                "tasks/get for '{}' answered task '{}'",
                self.created.task_id, got.task.task.task_id
            )));
        }
        Ok(got.task)
    }

    /// `tasks/update`: answers some or all of the outstanding input requests, by key.
    pub async fn answer(&self, responses: InputResponses) -> Result<(), ClientError> {
        let mut input_responses = std::collections::BTreeMap::new();
        for (key, response) in responses {
            let value = serde_json::to_value(&response)
                .map_err(|e| ClientError::InvalidRequest(e.to_string()))?;
            input_responses.insert(key, value);
        }
        let params = UpdateTaskParams {
            task_id: self.created.task_id.clone(),
            input_responses,
            meta: self.client.meta(None),
            extra: Default::default(),
        };
        let _: TaskAck = self
            .client
            .typed(wire::TASKS_UPDATE, &params, self.timeout)
            .await?;
        Ok(())
    }

    /// `tasks/cancel`: asks the server to stop the task. Cancellation is cooperative: the
    /// task may still end `completed` or `failed`.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        let _: TaskAck = self
            .client
            .typed(methods::TASKS_CANCEL, &self.id_params(), self.timeout)
            .await?;
        Ok(())
    }

    /// Polls until the task ends, answering its input requests with the client's callbacks
    /// (each key once): the result, the task's JSON-RPC error as [`ClientError::Server`], or
    /// [`ClientError::Cancelled`]. Gives up with [`ClientError::Timeout`] once the task's TTL
    /// or the client's [`max_task_wait`](ClientBuilder::max_task_wait), whichever is shorter,
    /// has passed (review W18: a server may name no TTL and answer `working` forever).
    pub async fn wait(&self) -> Result<CallToolResult, ClientError> {
        let started = tokio::time::Instant::now();
        let limit = self.max_wait.unwrap_or(self.client.inner.max_task_wait);
        let backstop = Some(
            self.created
                .ttl_ms
                .map_or(limit, |ttl| Duration::from_millis(ttl).min(limit)),
        );
        let mut interval = clamp(self.created.poll_interval_ms);
        let mut last: Option<(wire::TaskStatus, Option<String>)> = None;
        loop {
            let task = self.status().await?;
            let seen = (task.task.status, task.task.status_message.clone());
            if last.as_ref() != Some(&seen) {
                if let Some(report) = &self.client.inner.callbacks.task_status {
                    report(&task);
                }
                last = Some(seen);
            }
            interval = task
                .task
                .poll_interval_ms
                .map_or(interval, |ms| clamp(Some(ms)));
            match task.payload {
                TaskPayload::Completed(result) => {
                    return serde_json::from_value(Value::Object(result)).map_err(|e| {
                        ClientError::InvalidResponse(format!("the task's result: {e}"))
                    });
                }
                TaskPayload::Failed(error) => return Err(ClientError::Server(error)),
                TaskPayload::Cancelled => return Err(ClientError::Cancelled),
                TaskPayload::InputRequired(requests) => {
                    let fresh: std::collections::BTreeMap<_, _> = {
                        let answered = self.answered.lock().map_err(|_| {
                            ClientError::InvalidRequest("the task handle is poisoned".into())
                        })?;
                        requests
                            .into_iter()
                            .filter(|(k, _)| !answered.contains(k))
                            .collect()
                    };
                    if !fresh.is_empty() {
                        let total = self.answered.lock().map(|a| a.len()).unwrap_or(0);
                        if total + fresh.len() > MAX_TASK_QUESTIONS {
                            return Err(ClientError::InvalidResponse(format!(
                                "the task asked more than {MAX_TASK_QUESTIONS} questions"
                            )));
                        }
                        let keys: Vec<String> = fresh.keys().cloned().collect();
                        let responses = self.client.fulfil(methods::TOOLS_CALL, fresh).await?;
                        self.answer(responses).await?;
                        if let Ok(mut answered) = self.answered.lock() {
                            answered.extend(keys);
                        }
                        continue;
                    }
                }
                TaskPayload::Working => {}
            }
            if let Some(ttl) = backstop
                && started.elapsed() > ttl
            {
                return Err(ClientError::TaskTimeout {
                    task_id: self.id().to_owned(),
                    after: ttl,
                });
            }
            tokio::time::sleep(interval).await;
        }
    }
}

/// Cancels the task when the call following it is dropped before the task ended.
struct CancelOnDrop(Option<TaskHandle>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(e) = handle.cancel().await {
                    tracing::debug!(error = %e, "cancelling an abandoned task failed");
                }
            });
        }
    }
}

impl Client {
    /// Whether this client declares the Tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.inner
            .capabilities
            .supports_extension(wire::EXTENSION_ID)
    }

    /// A `CreateTaskResult` answered `method`: follows the task to its end (only a
    /// `tools/call` from a client that declared the extension may become one) and returns the
    /// final result as raw JSON.
    pub(super) async fn follow_task(
        &self,
        method: &str,
        answer: &RawValue,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let handle = self.task_handle(method, answer, options)?;
        let mut guard = CancelOnDrop((!options.leave_task_running).then(|| handle.clone()));
        let ended = handle.wait().await;
        // A wait that gave up leaves the task to be cancelled: nobody follows it any more.
        if !matches!(
            ended,
            Err(ClientError::Timeout { .. } | ClientError::TaskTimeout { .. })
        ) {
            guard.0 = None;
        }
        let result = ended?;
        mcp_types::jsonrpc::to_raw(&result).map_err(|e| ClientError::InvalidResponse(e.to_string()))
    }

    fn task_handle(
        &self,
        method: &str,
        answer: &RawValue,
        options: &CallOptions,
    ) -> Result<TaskHandle, ClientError> {
        if method != methods::TOOLS_CALL {
            return Err(ClientError::InvalidResponse(format!(
                "the server answered '{method}' with a task; only tools/call may become one"
            )));
        }
        if !self.declares_tasks() {
            return Err(ClientError::InvalidResponse(
                "the server answered with a task, but this client did not declare the tasks extension"
                    .into(),
            ));
        }
        let created: CreateTaskResult = serde_json::from_str(answer.get())
            .map_err(|e| ClientError::InvalidResponse(format!("the CreateTaskResult: {e}")))?;
        let mut handle = TaskHandle::new(self.clone(), created, options.timeout);
        handle.max_wait = options.max_task_wait;
        Ok(handle)
    }

    /// Calls a tool and, when the server makes it a task, hands back the [`TaskHandle`]
    /// instead of following it. Multi-round-trip questions asked on the `tools/call` itself
    /// (before the task exists) are answered with the callbacks as in
    /// [`call_tool`](Self::call_tool). Needs [`ClientBuilder::tasks`].
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<TaskCall, ClientError> {
        if !self.declares_tasks() {
            return Err(ClientError::InvalidRequest(
                "call_tool_as_task needs a client built with .tasks(true)".into(),
            ));
        }
        let options = CallOptions::default();
        let mut params = CallToolRequestParams {
            name: name.to_owned(),
            arguments: tool_arguments(arguments)?,
            ..Default::default()
        };
        let mut rounds = 0u32;
        loop {
            params.meta = self.meta(None);
            let raw = mcp_types::jsonrpc::to_raw(&params)
                .map_err(|e| ClientError::InvalidRequest(e.to_string()))?;
            let answer = self
                .request(methods::TOOLS_CALL, Some(raw), options.timeout)
                .await?;
            if wire::is_task_result(&answer) {
                let handle = self.task_handle(methods::TOOLS_CALL, &answer, &options)?;
                return Ok(TaskCall::Running(handle));
            }
            let round = match Outcome::<CallToolResult>::from_raw(&answer) {
                Ok(Outcome::Complete(result)) => return Ok(TaskCall::Ready(result)),
                Ok(Outcome::InputRequired(round)) => round,
                Err(e) => {
                    return Err(ClientError::InvalidResponse(format!(
                        "'tools/call' result: {e}"
                    )));
                }
            };
            rounds += 1;
            if rounds > self.inner.max_rounds {
                return Err(ClientError::RoundsExceeded {
                    max_rounds: self.inner.max_rounds,
                });
            }
            let requests = round.input_requests.unwrap_or_default();
            params.input_responses = if requests.is_empty() {
                None
            } else {
                Some(self.fulfil(methods::TOOLS_CALL, requests).await?)
            };
            params.request_state = round.request_state.map(Value::from);
        }
    }
}

/// What one [`Session::call_tool_leg`](crate::Session::call_tool_leg) returned: the result, a
/// multi-round-trip round, or a task the caller now drives itself.
#[derive(Debug)]
pub enum ToolLeg {
    /// The complete result.
    Complete(CallToolResult),
    /// The server's `InputRequiredResult`: answer it and send the next leg.
    InputRequired(mcp_types::InputRequiredResult),
    /// The server created a task (only when the client declares the extension).
    Task(TaskHandle),
}

impl super::Session<'_> {
    /// One `tools/call` leg that hands a task back instead of following it: for applications
    /// that answer a task's `inputRequests` themselves, or stop and let another process carry
    /// on with [`Client::attach_task`].
    pub async fn call_tool_leg(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<ToolLeg, ClientError> {
        let client = self.client;
        let mut params = CallToolRequestParams {
            name: name.to_owned(),
            arguments: tool_arguments(arguments)?,
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        let answer = client
            .send_leg(methods::TOOLS_CALL, &mut params, &options)
            .await?;
        if client.declares_tasks() && wire::is_task_result(&answer) {
            let handle = client.task_handle(methods::TOOLS_CALL, &answer, &options)?;
            return Ok(ToolLeg::Task(handle));
        }
        Ok(match super::decode_outcome(methods::TOOLS_CALL, &answer)? {
            Outcome::Complete(result) => ToolLeg::Complete(result),
            Outcome::InputRequired(round) => ToolLeg::InputRequired(round),
        })
    }
}

impl Client {
    /// A handle on a task that already exists, from the task as last seen (its id is what
    /// matters; the poll interval and TTL are taken from it): how a new process carries on
    /// with a task an earlier one created. Needs [`ClientBuilder::tasks`].
    pub fn attach_task(
        &self,
        task: Task,
        timeout: Option<Duration>,
    ) -> Result<TaskHandle, ClientError> {
        if !self.declares_tasks() {
            return Err(ClientError::InvalidRequest(
                "attach_task needs a client built with .tasks(true)".into(),
            ));
        }
        Ok(TaskHandle::new(
            self.clone(),
            CreateTaskResult::new(task),
            timeout,
        ))
    }
}
