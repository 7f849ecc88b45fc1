//! Driving a call to its end: on 2026-07-28 every `InputRequiredResult` round is traced,
//! answered through the [`Responder`] and retried; on 2025-11-25 the live requests reach the
//! same responder through the client's callbacks; a `tools/call` the server makes a task (the
//! Tasks extension) is polled with `tasks/get`, its `input_required` questions answered through
//! the same responder and sent with `tasks/update`. A question nobody can answer stops the flow
//! with a pending file that `mcp-term resume` finishes from another process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp::Outcome;
use mcp::client::{
    BACKOFF_CAP, BACKOFF_START, CallOptions, Client, ClientError, DEFAULT_POLL_INTERVAL,
    MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, TaskHandle, ToolLeg,
};
use mcp::types::InputRequiredResult;
use mcp::types::ext::tasks::{Task, TaskPayload};
use mcp::types::mrtr::{InputResponse, InputResponses};
use ring::digest;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::prompt::Asking;
use crate::responder::{Question, Reply, Responder, Usage};

/// What is being driven.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method")]
pub enum Call {
    /// `tools/call`.
    #[serde(rename = "tools/call")]
    Tool {
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// `prompts/get`.
    #[serde(rename = "prompts/get")]
    Prompt {
        /// The prompt.
        name: String,
        /// Its arguments.
        arguments: BTreeMap<String, String>,
    },
    /// `resources/read`.
    #[serde(rename = "resources/read")]
    Read {
        /// The resource.
        uri: String,
    },
}

impl Call {
    /// `tools/call delete_folder`.
    pub fn label(&self) -> String {
        match self {
            Call::Tool { name, .. } => format!("tools/call {name}"),
            Call::Prompt { name, .. } => format!("prompts/get {name}"),
            Call::Read { uri } => format!("resources/read {uri}"),
        }
    }

    fn method(&self) -> &'static str {
        match self {
            Call::Tool { .. } => "tools/call",
            Call::Prompt { .. } => "prompts/get",
            Call::Read { .. } => "resources/read",
        }
    }

    /// The tool or prompt name, or the URI.
    fn target(&self) -> &str {
        match self {
            Call::Tool { name, .. } | Call::Prompt { name, .. } => name,
            Call::Read { uri } => uri,
        }
    }
}

/// One round, as `--trace-rounds` and `--format json` show it: never the state's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrace {
    /// 1-based.
    pub round: u32,
    /// `inputRequests` keys (2026-07-28) or the live request's id (2025-11-25).
    pub keys: Vec<String>,
    /// The methods asked.
    pub methods: Vec<String>,
    /// Bytes of `requestState`.
    #[serde(rename = "stateBytes", skip_serializing_if = "Option::is_none")]
    pub state_bytes: Option<usize>,
    /// SHA-256 of `requestState`, hex.
    #[serde(rename = "stateSha256", skip_serializing_if = "Option::is_none")]
    pub state_sha256: Option<String>,
    /// A round with state and no requests (retried after a short wait).
    #[serde(rename = "stateOnly")]
    pub state_only: bool,
    /// The questions of a task in `input_required` (answered with `tasks/update`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task: bool,
}

impl RoundTrace {
    /// The trace of one `InputRequiredResult`.
    pub fn of(round: u32, result: &InputRequiredResult) -> Self {
        let requests = result.input_requests.clone().unwrap_or_default();
        RoundTrace {
            round,
            keys: requests.keys().cloned().collect(),
            methods: requests.values().map(|r| r.method().to_owned()).collect(),
            state_bytes: result.request_state.as_ref().map(String::len),
            state_sha256: result
                .request_state
                .as_ref()
                .map(|s| sha256_hex(s.as_bytes())),
            state_only: requests.is_empty(),
            task: false,
        }
    }

    /// The one line `--trace-rounds` prints: the keys and methods are the server's text, so
    /// the whole line is sanitized.
    pub fn line(&self) -> String {
        let state = match (&self.state_bytes, &self.state_sha256) {
            (Some(n), Some(h)) => format!("state {n} bytes sha256 {h}"),
            _ => "no state".into(),
        };
        let state = if self.task {
            "task input_required".to_owned()
        } else {
            state
        };
        crate::text::sanitize_line(&format!(
            "round {}: keys [{}] methods [{}] {state}{}",
            self.round,
            self.keys.join(", "),
            self.methods.join(", "),
            if self.state_only { " (state only)" } else { "" }
        ))
    }
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest::digest(&digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A stopped 2026-07-28 flow: everything `resume` needs, printed as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// `"mcp-term/pending"`.
    pub kind: String,
    /// The protocol version of the flow.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    /// How to reach the server again (no secrets: no headers, no tokens, no env values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Value>,
    /// The call.
    pub call: Call,
    /// The round that is waiting (1-based).
    pub round: u32,
    /// Why it stopped.
    pub reason: String,
    /// The keys nobody answered.
    pub unanswered: Vec<String>,
    /// Answers already given in this round, sent again on resume.
    #[serde(default)]
    pub answered: InputResponses,
    /// The server's `InputRequiredResult`, as received (its `requestState` verbatim); for a
    /// task, its outstanding `inputRequests` (a task has no state to echo).
    #[serde(rename = "inputRequired")]
    pub input_required: InputRequiredResult,
    /// The task waiting for these answers, as last seen: `resume` answers it with
    /// `tasks/update` instead of retrying the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
}

/// The task being followed, for Ctrl-C to cancel (one call per process).
static RUNNING: std::sync::Mutex<Option<TaskHandle>> = std::sync::Mutex::new(None);

fn set_running(task: Option<TaskHandle>) {
    if let Ok(mut running) = RUNNING.lock() {
        *running = task;
    }
}

/// The task this process is following right now, if any: what an interrupted run cancels.
pub fn running_task() -> Option<TaskHandle> {
    RUNNING.lock().ok().and_then(|r| r.clone())
}

/// What one leg of a 2026-07-28 call returned.
enum Leg {
    /// The result, as JSON.
    Done(Value),
    /// A round to answer.
    Round(InputRequiredResult),
    /// A task to follow.
    Task(TaskHandle),
}

/// How a call ended.
#[derive(Debug)]
pub enum Finished {
    /// The result, as JSON.
    Done(Value),
    /// Nobody could answer.
    Pending(Box<Pending>),
    /// A 2025-11-25 live question nobody could answer (no resume on a legacy session).
    PendingLegacy(Value),
    /// A question was refused, which ends a 2026-07-28 call (exit 11).
    Refused(String),
    /// The rounds went past `--max-rounds` (exit 12).
    MaxRounds(u32),
    /// The client failed.
    Client(ClientError),
    /// The person's own mistake (exit 2).
    Usage(String),
}

/// Settings of the loop.
pub struct Driver {
    /// The connected client.
    pub client: Client,
    /// Answers questions.
    pub responder: Arc<Responder>,
    /// `--max-rounds`.
    pub max_rounds: u32,
    /// `--trace-rounds`.
    pub trace: bool,
    /// The server's name for the prompt header.
    pub server: String,
    /// Where the flow can be reached again, for the pending file.
    pub target: Option<Value>,
    /// Every round seen, for `--format json`.
    pub rounds: std::sync::Mutex<Vec<RoundTrace>>,
    /// `--format ndjson`: print each round as it happens.
    pub ndjson: bool,
    /// A per-request timeout.
    pub timeout: Option<Duration>,
    /// `--task-wait`: how long a task is followed before it is cancelled (review W18).
    pub task_wait: Duration,
    /// Live requests seen in the current legacy call.
    pub live_rounds: std::sync::atomic::AtomicU32,
    /// What the current call is, for the prompt header of live requests.
    pub during: std::sync::Mutex<String>,
    /// Where a live request nobody can answer stops the legacy call.
    pub stuck: tokio::sync::mpsc::UnboundedSender<Finished>,
}

impl Driver {
    /// Traces a round (`--trace-rounds`, ndjson, the JSON output's `rounds`).
    pub fn record(&self, trace: RoundTrace) {
        if self.trace {
            eprintln!("{}", trace.line());
        }
        if self.ndjson {
            println!(
                "{}",
                crate::text::json_line(&json!({"event": "round", "round": trace}))
            );
        }
        if let Ok(mut r) = self.rounds.lock() {
            r.push(trace);
        }
    }

    async fn leg(&self, call: &Call, options: CallOptions) -> Result<Leg, ClientError> {
        fn json<T: Serialize>(o: Outcome<T>) -> Leg {
            match o {
                Outcome::Complete(r) => Leg::Done(serde_json::to_value(r).unwrap_or(Value::Null)),
                Outcome::InputRequired(i) => Leg::Round(i),
            }
        }
        let session = self.client.session();
        Ok(match call {
            Call::Tool { name, arguments } => {
                match session
                    .call_tool_leg(name, arguments.clone(), options)
                    .await?
                {
                    ToolLeg::Complete(r) => {
                        Leg::Done(serde_json::to_value(r).unwrap_or(Value::Null))
                    }
                    ToolLeg::InputRequired(i) => Leg::Round(i),
                    ToolLeg::Task(handle) => Leg::Task(handle),
                }
            }
            Call::Prompt { name, arguments } => {
                json(session.get_prompt(name, arguments.clone(), options).await?)
            }
            Call::Read { uri } => json(session.read_resource(uri, options).await?),
        })
    }

    /// Runs a 2026-07-28 call from its first leg (or from a resumed round) to the end, its
    /// rounds in one span (one trace, with `--otel`).
    pub async fn modern(
        &self,
        call: &Call,
        responses: Option<InputResponses>,
        state: Option<String>,
        round: u32,
    ) -> Finished {
        let span = mcp::client::call_span(call.method(), Some(call.target()));
        tracing::Instrument::instrument(self.rounds(call, responses, state, round), span).await
    }

    async fn rounds(
        &self,
        call: &Call,
        mut responses: Option<InputResponses>,
        mut state: Option<String>,
        mut round: u32,
    ) -> Finished {
        let mut backoff = BACKOFF_START;
        loop {
            let options = CallOptions {
                input_responses: responses.take(),
                request_state: state.take(),
                progress: true,
                timeout: self.timeout,
                ..CallOptions::default()
            };
            let result = match self.leg(call, options).await {
                Ok(Leg::Done(v)) => return Finished::Done(v),
                Ok(Leg::Round(r)) => r,
                Ok(Leg::Task(handle)) => {
                    return self.task(call, handle, round, InputResponses::new()).await;
                }
                Err(e) => return Finished::Client(e),
            };
            round += 1;
            self.record(RoundTrace::of(round, &result));
            if round > self.max_rounds {
                return Finished::MaxRounds(self.max_rounds);
            }
            let requests = result.input_requests.clone().unwrap_or_default();
            if requests.is_empty() {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_CAP);
                state = result.request_state.clone();
                continue;
            }
            backoff = BACKOFF_START;
            match self
                .answer_round(call, round, &result, InputResponses::new())
                .await
            {
                Ok(answers) => {
                    responses = Some(answers);
                    state = result.request_state.clone();
                }
                Err(finished) => return finished,
            }
        }
    }

    /// Answers every request of a round not already in `answered`.
    pub async fn answer_round(
        &self,
        call: &Call,
        round: u32,
        result: &InputRequiredResult,
        answered: InputResponses,
    ) -> Result<InputResponses, Finished> {
        self.answer_questions(call, call.label(), round, result, answered)
            .await
    }

    /// Answers every request of `result` not already in `answered`; `during` is what the form
    /// header says the question is part of.
    async fn answer_questions(
        &self,
        call: &Call,
        during: String,
        round: u32,
        result: &InputRequiredResult,
        mut answered: InputResponses,
    ) -> Result<InputResponses, Finished> {
        let mut unanswered = Vec::new();
        let mut reasons = Vec::new();
        let era = self.client.protocol_version().unwrap_or_default();
        // A pinned client skipped discovery; the round's `_meta` may still name the server.
        let server = serde_json::to_value(&result.meta)
            .ok()
            .and_then(|m| {
                m.get("io.modelcontextprotocol/serverInfo")?
                    .get("name")?
                    .as_str()
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| self.server.clone());
        for (key, request) in result.input_requests.clone().unwrap_or_default() {
            if answered.contains_key(&key) {
                continue;
            }
            let asking = Asking {
                server: server.clone(),
                era: era.clone(),
                during: during.clone(),
                round,
                max_rounds: self.max_rounds,
                key: key.clone(),
            };
            match self.responder.answer(Question { asking, request }).await {
                Ok(Reply::Answer(a)) => {
                    answered.insert(key, a);
                }
                Ok(Reply::Pending(why)) => {
                    unanswered.push(key.clone());
                    reasons.push(format!("{key}: {why}"));
                }
                Ok(Reply::Refused(e)) => {
                    return Err(Finished::Refused(format!("{key}: {}", e.message)));
                }
                Err(Usage(why)) => return Err(Finished::Usage(why)),
            }
        }
        if unanswered.is_empty() {
            return Ok(answered);
        }
        Err(Finished::Pending(Box::new(Pending {
            kind: "mcp-term/pending".into(),
            protocol_version: era,
            target: self.target.clone(),
            call: call.clone(),
            round,
            reason: reasons.join("; "),
            unanswered,
            answered,
            input_required: result.clone(),
            task: None,
        })))
    }

    /// Follows a task to its end: polls `tasks/get` at the server's interval (clamped to the
    /// client's limits), answers each new batch of `inputRequests` through the responder (one
    /// round each, counted against `--max-rounds`) and sends them with `tasks/update`. A
    /// question nobody answers stops with a pending file naming the task, which stays on the
    /// server for `resume`; a refusal, a usage mistake or too many rounds cancel the task.
    /// `carry` holds answers an earlier process already gave (`resume`).
    pub async fn task(
        &self,
        call: &Call,
        handle: TaskHandle,
        round: u32,
        carry: InputResponses,
    ) -> Finished {
        set_running(Some(handle.clone()));
        let finished = self.follow(call, handle, round, carry).await;
        set_running(None);
        finished
    }

    async fn follow(
        &self,
        call: &Call,
        handle: TaskHandle,
        mut round: u32,
        mut carry: InputResponses,
    ) -> Finished {
        let started = tokio::time::Instant::now();
        // A server may name no TTL and answer `working` forever (review W18): `--task-wait`
        // bounds the wait, as `max_task_wait` does `call_tool`'s, and the task is cancelled.
        let wait = self.task_wait;
        let ttl = handle
            .created()
            .ttl_ms
            .map_or(wait, |ms| Duration::from_millis(ms).min(wait));
        let clamp = |ms: Option<u64>| {
            ms.map(Duration::from_millis)
                .unwrap_or(DEFAULT_POLL_INTERVAL)
                .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
        };
        let mut interval = clamp(handle.created().poll_interval_ms);
        let mut answered_keys = std::collections::BTreeSet::new();
        let mut last_seen = None;
        let during = format!("{} (a task)", call.label());
        let stop = |f: Finished| {
            let handle = handle.clone();
            async move {
                let _ = handle.cancel().await;
                f
            }
        };
        loop {
            let detailed = match handle.status().await {
                Ok(t) => t,
                Err(e) => return Finished::Client(e),
            };
            let seen = (detailed.task.status, detailed.task.status_message.clone());
            if last_seen.as_ref() != Some(&seen) {
                let message = seen
                    .1
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                eprintln!(
                    "{}",
                    crate::text::sanitize_line(&format!("task {}{message}", seen.0.as_str()))
                );
                last_seen = Some(seen);
            }
            if let Some(ms) = detailed.task.poll_interval_ms {
                interval = clamp(Some(ms));
            }
            match detailed.payload {
                TaskPayload::Completed(result) => return Finished::Done(Value::Object(result)),
                TaskPayload::Failed(error) => return Finished::Client(ClientError::Server(error)),
                TaskPayload::Cancelled => return Finished::Client(ClientError::Cancelled),
                TaskPayload::Working => {}
                TaskPayload::InputRequired(requests) => {
                    let fresh: BTreeMap<_, _> = requests
                        .into_iter()
                        .filter(|(k, _)| !answered_keys.contains(k))
                        .collect();
                    if !fresh.is_empty() {
                        round += 1;
                        let keys: Vec<String> = fresh.keys().cloned().collect();
                        self.record(RoundTrace {
                            round,
                            keys: keys.clone(),
                            methods: fresh.values().map(|r| r.method().to_owned()).collect(),
                            state_bytes: None,
                            state_sha256: None,
                            state_only: false,
                            task: true,
                        });
                        if round > self.max_rounds {
                            return stop(Finished::MaxRounds(self.max_rounds)).await;
                        }
                        let questions = InputRequiredResult::new(fresh, None);
                        let given = std::mem::take(&mut carry);
                        match self
                            .answer_questions(call, during.clone(), round, &questions, given)
                            .await
                        {
                            Ok(responses) => {
                                if let Err(e) = handle.answer(responses).await {
                                    return Finished::Client(e);
                                }
                                answered_keys.extend(keys);
                                continue;
                            }
                            Err(Finished::Pending(mut p)) => {
                                p.task = Some(detailed.task);
                                return Finished::Pending(p);
                            }
                            Err(f) => return stop(f).await,
                        }
                    }
                }
            }
            if started.elapsed() > ttl {
                return stop(Finished::Client(ClientError::TaskTimeout {
                    task_id: handle.id().to_owned(),
                    after: ttl,
                }))
                .await;
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// Runs a 2025-11-25 call: the client's callbacks answer live requests; a question nobody
    /// can answer arrives on `stuck` and ends the call.
    pub async fn legacy(
        &self,
        call: &Call,
        stuck: &mut tokio::sync::mpsc::UnboundedReceiver<Finished>,
    ) -> Finished {
        let options = CallOptions {
            progress: true,
            timeout: self.timeout,
            ..CallOptions::default()
        };
        let client = &self.client;
        if let Ok(mut d) = self.during.lock() {
            *d = call.label();
        }
        self.live_rounds
            .store(0, std::sync::atomic::Ordering::SeqCst);
        let run = async {
            let r = match call {
                Call::Tool { name, arguments } => client
                    .call_tool_with(name, arguments.clone(), options)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null)),
                Call::Prompt { name, arguments } => client
                    .get_prompt_with(name, arguments.clone(), options)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null)),
                Call::Read { uri } => client
                    .read_resource_with(uri, options)
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or(Value::Null)),
            };
            match r {
                Ok(v) => Finished::Done(v),
                Err(e) => Finished::Client(e),
            }
        };
        tokio::select! {
            biased;
            Some(f) = stuck.recv() => f,
            f = run => match stuck.try_recv() {
                Ok(stopped) => stopped,
                Err(_) => f,
            },
        }
    }

    /// The callback side of a legacy live request: trace, count, answer or stop the call.
    pub async fn live(
        self: &Arc<Self>,
        key: String,
        request: mcp::types::mrtr::InputRequest,
    ) -> Result<InputResponse, mcp::types::ErrorObject> {
        let round = self
            .live_rounds
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let during = self.during.lock().map(|d| d.clone()).unwrap_or_default();
        let stuck = &self.stuck;
        self.record(RoundTrace {
            round,
            keys: vec![key.clone()],
            methods: vec![request.method().to_owned()],
            state_bytes: None,
            state_sha256: None,
            state_only: false,
            task: false,
        });
        let stop = |f: Finished| {
            let _ = stuck.send(f);
        };
        if round > self.max_rounds {
            stop(Finished::MaxRounds(self.max_rounds));
            return std::future::pending().await;
        }
        let asking = Asking {
            server: self.server.clone(),
            era: self
                .client
                .protocol_version()
                .unwrap_or_else(|| "2025-11-25".into()),
            during,
            round,
            max_rounds: self.max_rounds,
            key: key.clone(),
        };
        let pending_json = json!({"kind": "mcp-term/pending-live", "protocolVersion": asking.era,
            "round": round, "id": key, "request": request,
            "note": "a 2025-11-25 session cannot be resumed from another process; answer with --answers or on a terminal"});
        match self.responder.answer(Question { asking, request }).await {
            Ok(Reply::Answer(a)) => Ok(a),
            Ok(Reply::Refused(e)) => Err(e),
            Ok(Reply::Pending(why)) => {
                let mut p = pending_json;
                p["reason"] = Value::String(why);
                stop(Finished::PendingLegacy(p));
                std::future::pending().await
            }
            Err(Usage(why)) => {
                stop(Finished::Usage(why));
                std::future::pending().await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp::client::{CallOptions, ToolLeg};
    use mcp::types::mrtr::InputRequest;

    #[test]
    fn a_trace_shows_size_and_hash_never_the_state() {
        let request: InputRequest =
            serde_json::from_value(json!({"method": "roots/list"})).unwrap();
        let result = InputRequiredResult::new(
            BTreeMap::from([("r".to_owned(), request)]),
            Some("secret-state".into()),
        );
        let trace = RoundTrace::of(2, &result);
        let line = trace.line();
        assert_eq!(
            line,
            format!(
                "round 2: keys [r] methods [roots/list] state 12 bytes sha256 {}",
                sha256_hex(b"secret-state")
            )
        );
        assert!(!line.contains("secret-state"));
        assert!(
            !serde_json::to_string(&trace)
                .unwrap()
                .contains("secret-state")
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let only = RoundTrace::of(1, &InputRequiredResult::state_only("s"));
        assert!(only.line().ends_with("(state only)"));
    }

    #[test]
    fn a_pending_file_round_trips_with_the_state_verbatim() {
        let request: InputRequest =
            serde_json::from_value(json!({"method": "roots/list"})).unwrap();
        let state = "AAAA.bbbb/cc==\u{e9}";
        let pending = Pending {
            kind: "mcp-term/pending".into(),
            protocol_version: "2026-07-28".into(),
            target: Some(json!({"stdio": ["files"]})),
            call: Call::Tool {
                name: "t".into(),
                arguments: json!({"a": 1}),
            },
            round: 1,
            reason: "r".into(),
            unanswered: vec!["r".into()],
            answered: InputResponses::new(),
            input_required: InputRequiredResult::new(
                BTreeMap::from([("r".to_owned(), request)]),
                Some(state.into()),
            ),
            task: None,
        };
        let text = serde_json::to_string(&pending).unwrap();
        assert!(text.contains(r#""method":"tools/call""#), "{text}");
        assert!(
            text.contains(r#""requestState":"AAAA.bbbb/cc==é""#),
            "{text}"
        );
        let back: Pending = serde_json::from_str(&text).unwrap();
        assert_eq!(back, pending);
    }

    fn driver(client: Client, answers: &[&str]) -> Driver {
        let cli = answers
            .iter()
            .map(|a| crate::answers::CliAnswer::parse(a).unwrap())
            .collect();
        let responder = Responder::new(
            crate::answers::Sources { cli, file: None },
            crate::responder::Policy::Fail,
            false,
        );
        Driver {
            client,
            responder: Arc::new(responder),
            max_rounds: 10,
            trace: false,
            server: "builds".into(),
            target: None,
            rounds: std::sync::Mutex::new(Vec::new()),
            ndjson: false,
            timeout: None,
            task_wait: mcp::client::DEFAULT_MAX_TASK_WAIT,
            live_rounds: Default::default(),
            during: Default::default(),
            stuck: tokio::sync::mpsc::unbounded_channel().0,
        }
    }

    /// `run_build` on the Builds server in this process, as a task the test holds too.
    async fn build_task() -> (Client, TaskHandle, Call) {
        use mcp::ClientBuilderExt;
        let service = mcp_examples::builds::server().into_service().unwrap();
        // The callback declares the form capability; the driver answers, never the callback.
        let client = Client::builder()
            .tasks(true)
            .elicitation(|_info, _params| async {
                Err(mcp::types::ErrorObject::internal(
                    "not asked through the callback",
                ))
            })
            .elicitation_modes(true, false)
            .in_memory(&service)
            .await
            .unwrap();
        let arguments = json!({"project": "orders"});
        let leg = client
            .session()
            .call_tool_leg("run_build", arguments.clone(), CallOptions::default())
            .await
            .unwrap();
        let ToolLeg::Task(handle) = leg else {
            panic!("run_build is a task: {leg:?}")
        };
        let call = Call::Tool {
            name: "run_build".into(),
            arguments,
        };
        (client, handle, call)
    }

    /// The task's status once it ended (the loop is a guard against a hang, not a timing check).
    async fn ended(handle: &TaskHandle) -> mcp::types::ext::tasks::TaskStatus {
        for _ in 0..1000 {
            let status = handle.status().await.unwrap().task.status;
            if status.is_terminal() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the task never ended");
    }

    #[tokio::test]
    async fn a_wrong_answer_to_a_task_cancels_it_and_an_unanswered_one_leaves_it_waiting() {
        let (client, handle, call) = build_task().await;
        let d = driver(client, &["deploy=perhaps"]);
        match d
            .task(&call, handle.clone(), 0, InputResponses::new())
            .await
        {
            Finished::Usage(why) => assert_eq!(why, "--answer deploy: answer yes or no"),
            other => panic!("expected a usage error, got {other:?}"),
        }
        assert_eq!(
            ended(&handle).await,
            mcp::types::ext::tasks::TaskStatus::Cancelled
        );
        assert!(d.rounds.lock().unwrap()[0].task, "traced as a task round");

        let (client, handle, call) = build_task().await;
        let d = driver(client, &[]);
        let Finished::Pending(p) = d
            .task(&call, handle.clone(), 0, InputResponses::new())
            .await
        else {
            panic!("nobody answers: pending");
        };
        assert_eq!(
            p.task.as_ref().map(|t| t.task_id.as_str()),
            Some(handle.id())
        );
        assert_eq!(p.input_required.request_state, None);
        assert_eq!(
            handle.status().await.unwrap().task.status,
            mcp::types::ext::tasks::TaskStatus::InputRequired,
            "the task waits for resume"
        );
    }
}
