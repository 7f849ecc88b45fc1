//! The `Client` handle and its request path: send a request, wait for its answer within
//! the timeout (cancelling it on the server otherwise), and retry once with a version the
//! server names.

use mcp_types::version::MODERN_VERSIONS;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::error::ErrorCode;
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::tools::Tool;
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{
    ClientNotification, ErrorObject, JsonObject, JsonRpcMessage, JsonRpcRequest, RequestId,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::ClientError;

use crate::Negotiated;
use crate::client::{
    Failed, Inflight, Inner, ProgressWaiter, Wait, cache_params, progressed, resend_pause,
    timed_out,
};

/// A connected MCP client. Cheap to clone; every clone shares the connection.
///
/// It negotiates the era itself (2026-07-28 when the server speaks it, else a 2025-11-25
/// session) and answers the server's questions through its callbacks, so `call_tool` returns
/// the final result whichever way the server asked:
///
/// ```
/// use mcp_client::{Client, MemoryTransport};
/// use mcp_server_core::registry::{ElicitationResult, McpServer, Resolution, Resolver, ToolDef};
/// use mcp_server_core::types::elicitation::{ElicitResult, ElicitValue};
/// use serde_json::{Value, json};
///
/// #[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     ok: bool,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let confirm = Resolver::new("confirm", |_input| async { Resolution::<Confirm>::elicit("Really delete?") });
/// let delete = ToolDef::new("delete")
///     .resolve::<ElicitationResult<Confirm>>("confirm", confirm)
///     .handler_resolved(|_ctx, _args: Value, mut resolved| async move {
///         Ok::<_, String>(match resolved.take::<ElicitationResult<Confirm>>("confirm")? {
///             ElicitationResult::Accepted(Confirm { ok: true }) => "deleted",
///             _ => "kept",
///         })
///     });
/// let service = McpServer::new("Files").tool(delete).into_service()?;
///
/// let client = Client::builder()
///     .elicitation(|_info, params| async move {
///         assert_eq!(params.message(), "Really delete?");
///         Ok(ElicitResult::accept([("ok".to_owned(), ElicitValue::Bool(true))].into()))
///     })
///     .connect(MemoryTransport::new(&service))
///     .await?;
/// let result = client.call_tool("delete", json!({})).await?;
/// assert_eq!(result.content[0].as_text(), Some("deleted"));
/// assert_eq!(client.negotiated().unwrap().protocol_version, "2026-07-28");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
    /// How this handle's requests use the response cache.
    pub(crate) cache_mode: crate::cache::CacheMode,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("negotiated", &self.negotiated())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// What was negotiated.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.inner.negotiated.lock().ok().and_then(|n| n.clone())
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> Option<String> {
        self.negotiated().map(|n| n.protocol_version)
    }

    /// The era in use.
    pub fn era(&self) -> Option<Era> {
        self.negotiated().map(|n| n.era)
    }

    /// The capabilities this client declares (derived from its callbacks).
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// This client (the same connection) with its requests using the response cache as
    /// `mode` says: [`CacheMode::Refresh`](crate::CacheMode::Refresh) to ask the server
    /// whatever the cache holds, [`CacheMode::Bypass`](crate::CacheMode::Bypass) to neither
    /// read nor fill it.
    pub fn with_cache_mode(&self, mode: crate::cache::CacheMode) -> Client {
        Client {
            inner: self.inner.clone(),
            cache_mode: mode,
        }
    }

    /// Closes the connection.
    pub async fn close(&self) {
        #[cfg(feature = "otel")]
        if self.era() == Some(Era::Legacy)
            && let Some(version) = self.protocol_version()
        {
            crate::trace::otel::record_session(self.inner.opened, &version);
        }
        self.inner.transport.close().await;
    }

    /// Sends one request and waits for its answer.
    ///
    /// The request waits `timeout` (else the client's request timeout) for its answer, each
    /// progress notification starting the wait again, and the client's maximum total time in
    /// all. A request that changes nothing on the server (a list, `resources/read`,
    /// `prompts/get`, a `tools/call` of a tool annotated `readOnlyHint` or `idempotentHint`)
    /// is sent again when the connection failed it; any other fails with
    /// [`ClientError::Interrupted`].
    ///
    /// On 2026-07-28, a server that answers `-32022` (unsupported protocol version) naming a
    /// version this client also speaks gets the request once more, with that version in the
    /// envelope (and the connection switches to it).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, ClientError> {
        let wait = self.wait(timeout, None, None);
        self.request_within(method, params, wait).await
    }

    /// The limits a request waits under: the call's, else the client's.
    pub(crate) fn wait(
        &self,
        timeout: Option<Duration>,
        total: Option<Duration>,
        progress: Option<RequestId>,
    ) -> Wait {
        let idle = timeout.unwrap_or(self.inner.request_timeout);
        Wait {
            idle,
            total: total.unwrap_or(self.inner.max_total_timeout.max(idle)),
            progress,
        }
    }

    /// [`request`](Self::request) under `wait`, answered from the response cache when it
    /// holds a fresh result, which the answer then refreshes.
    pub(crate) async fn request_within(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        wait: Wait,
    ) -> Result<Box<RawValue>, ClientError> {
        let key = cache_params(method, params.as_deref());
        if let Some(key) = &key
            && let Some(hit) = self.cached(method, key)
        {
            return Ok(hit);
        }
        let answer = self.request_sent(method, params, wait).await;
        match (&key, &answer) {
            (Some(key), Ok(answer)) => self.keep(method, key, answer),
            // An invalid cursor makes every page of that list suspect.
            (Some(key), Err(ClientError::Server(e)))
                if e.code == ErrorCode::INVALID_PARAMS && key.starts_with(r#"{"cursor":""#) =>
            {
                self.forget_list(method);
            }
            _ => {}
        }
        answer
    }

    /// Sends the request in its span (see [`crate::trace`]), again when the connection failed
    /// it and it is safe to repeat.
    async fn request_sent(
        &self,
        method: &str,
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))] mut params: Option<Box<RawValue>>,
        wait: Wait,
    ) -> Result<Box<RawValue>, ClientError> {
        let version = self.protocol_version();
        let span = crate::trace::request_span(method, version.as_deref(), params.as_deref());
        #[cfg(feature = "otel")]
        crate::trace::otel::inject(&span, &mut params);
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let answer =
            tracing::Instrument::instrument(self.resent(method, params, wait), span.clone()).await;
        let error = match &answer {
            Ok(raw) => {
                crate::trace::record_answer(&span, Ok(raw.get()));
                None
            }
            Err(ClientError::Server(error)) => {
                crate::trace::record_answer(&span, Err(error));
                // A metric keeps a series per value for the life of the process: a code the
                // server chose outside JSON-RPC's reserved range is one value, `_OTHER`, so a
                // hostile server cannot grow this client's series without bound (security
                // review X6).
                Some(if (-32768..=-32000).contains(&error.code.0) {
                    error.code.0.to_string()
                } else {
                    "_OTHER".to_owned()
                })
            }
            Err(_) => Some("transport".to_owned()),
        };
        #[cfg(feature = "otel")]
        crate::trace::otel::record_operation(method, version.as_deref(), started, error);
        #[cfg(not(feature = "otel"))]
        drop(error);
        answer
    }

    /// [`request_sent`](Self::request_sent)'s work: the request, and its resends.
    async fn resent(
        &self,
        method: &str,
        mut params: Option<Box<RawValue>>,
        wait: Wait,
    ) -> Result<Box<RawValue>, ClientError> {
        let deadline = Instant::now() + wait.total;
        let repeatable = self.repeatable(method, params.as_deref());
        let mut version_retried = false;
        let mut resends = 0u32;
        loop {
            let failure = match self
                .request_once(method, params.clone(), &wait, deadline)
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(Failed::Client(ClientError::Server(error)))
                    if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                        && !version_retried =>
                {
                    version_retried = true;
                    let Some((version, again)) = self.retry_version(&error, params.as_deref())
                    else {
                        return Err(ClientError::Server(error));
                    };
                    if let Ok(mut n) = self.inner.negotiated.lock()
                        && let Some(n) = n.as_mut()
                    {
                        n.protocol_version = version;
                    }
                    params = Some(again);
                    continue;
                }
                Err(Failed::Client(error)) => return Err(error),
                Err(Failed::Local(failure)) => failure,
            };
            let pause = resend_pause(method, failure, repeatable, resends, deadline)?;
            resends += 1;
            tracing::debug!(
                method,
                resends,
                ?pause,
                "sending a request again after the connection failed it"
            );
            tokio::time::sleep(pause).await;
        }
    }

    /// The version and params to retry a request refused with `-32022` with: only on an
    /// established 2026-07-28 connection, for a request that carried the envelope, and when
    /// the server's `supported` list names a version this client speaks.
    pub(crate) fn retry_version(
        &self,
        error: &ErrorObject,
        params: Option<&RawValue>,
    ) -> Option<(String, Box<RawValue>)> {
        if self.era() != Some(Era::Modern) {
            return None;
        }
        let supported = error.unsupported_protocol_version_data()?.supported;
        let version = MODERN_VERSIONS
            .iter()
            .rev()
            .find(|v| supported.iter().any(|s| s == *v))?;
        let mut params: Value = serde_json::from_str(params?.get()).ok()?;
        let envelope = params.get_mut("_meta")?.as_object_mut()?;
        envelope.get(mcp_types::meta::PROTOCOL_VERSION)?;
        envelope.insert(
            mcp_types::meta::PROTOCOL_VERSION.to_owned(),
            Value::from(*version),
        );
        let params = mcp_types::jsonrpc::to_raw(&params).ok()?;
        Some(((*version).to_owned(), params))
    }

    /// Sends the request once and waits for its answer: within `wait.idle` of the request or
    /// its last progress notification, and before `deadline`.
    pub(crate) async fn request_once(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        wait: &Wait,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Failed> {
        let inner = &self.inner;
        // A place on the wire, in turn; the wait counts against the request's limits.
        let queued_until = (Instant::now() + wait.idle).min(deadline);
        let _permit = match tokio::time::timeout_at(queued_until, inner.in_flight.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => {
                return Err(Failed::Client(ClientError::Transport(
                    "the client is closed".into(),
                )));
            }
            Err(_) => {
                return Err(Failed::Client(timed_out(
                    method,
                    wait,
                    queued_until,
                    deadline,
                )));
            }
        };
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, mut rx) = oneshot::channel();
        if let Ok(mut pending) = inner.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let mut inflight = Inflight {
            inner,
            id: Some(id.clone()),
        };
        let progress = wait
            .progress
            .as_ref()
            .map(|token| ProgressWaiter::register(inner, token));
        let request_id = id.clone();
        tracing::Span::current().record("jsonrpc.request.id", tracing::field::display(&id));
        let request = JsonRpcRequest {
            id,
            method: method.to_owned(),
            params,
            extra: JsonObject::new(),
        };
        let expired = |at: Instant| Failed::Client(timed_out(method, wait, at, deadline));
        // Writing is bounded too: a peer that stops reading cannot hold the caller.
        let send_until = (Instant::now() + wait.idle).min(deadline);
        let sent = inner.transport.send(JsonRpcMessage::Request(request));
        match tokio::time::timeout_at(send_until, sent).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(Failed::Client(ClientError::Transport(why))),
            Err(_) => return Err(expired(send_until)),
        }
        let answer = loop {
            let idle_until = (Instant::now() + wait.idle).min(deadline);
            tokio::select! {
                answer = &mut rx => break answer,
                () = progressed(progress.as_ref()) => continue,
                () = tokio::time::sleep_until(idle_until) => return Err(expired(idle_until)),
            }
        };
        inflight.done();
        let Ok(answer) = answer else {
            let reason = inner.closed.lock().ok().and_then(|c| c.clone());
            return Err(Failed::Client(ClientError::Transport(
                reason.unwrap_or_else(|| "the connection closed before the server answered".into()),
            )));
        };
        answer.map_err(|error| match inner.transport.local_failure(&request_id) {
            Some(failure) => Failed::Local(failure),
            None => Failed::Client(ClientError::Server(error)),
        })
    }

    /// Sends a notification.
    pub async fn notify(&self, notification: ClientNotification) -> Result<(), ClientError> {
        let n = notification
            .to_notification()
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        self.inner
            .transport
            .send(JsonRpcMessage::Notification(n))
            .await
            .map_err(ClientError::Transport)
    }

    /// The `_meta` for the next request: the envelope on 2026-07-28, only a progress token on
    /// 2025-11-25.
    pub(crate) fn meta(&self, progress: Option<RequestId>) -> Option<Meta> {
        let negotiated = self.negotiated();
        let mut meta = match negotiated.as_ref().map(|n| n.era) {
            Some(Era::Modern) | None => {
                let version = negotiated.map_or_else(
                    || ProtocolVersion::LATEST_MODERN.as_str().to_owned(),
                    |n| n.protocol_version,
                );
                let mut meta = Meta::request(&version, self.inner.capabilities.clone());
                meta.client_info = Some(self.inner.info.clone());
                meta.log_level = self.inner.log_level;
                meta
            }
            Some(Era::Legacy) => Meta::default(),
        };
        meta.progress_token = progress;
        (!meta.is_empty()).then_some(meta)
    }

    pub(crate) async fn typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<R, ClientError> {
        let raw = mcp_types::jsonrpc::to_raw(params)
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let answer = self.request(method, Some(raw), timeout).await?;
        serde_json::from_str(answer.get())
            .map_err(|e| ClientError::InvalidResponse(format!("'{method}' result: {e}")))
    }
}

/// How many tools' annotations the client remembers (a server's `tools/list` is not trusted
/// to be small); a tool beyond it counts as not safe to repeat.
pub(crate) const MAX_KNOWN_TOOLS: usize = 10_000;

/// The `name` of a `tools/call`'s params (the arguments are skipped, not kept).
#[derive(Deserialize)]
struct NamedParams {
    name: Option<String>,
}

impl Client {
    /// Whether `method` with `params` may be sent twice without changing more on the server.
    pub(crate) fn repeatable(&self, method: &str, params: Option<&RawValue>) -> bool {
        if methods::is_repeatable(method) {
            return true;
        }
        if method != methods::TOOLS_CALL {
            return false;
        }
        let Some(name) = params
            .and_then(|p| serde_json::from_str::<NamedParams>(p.get()).ok())
            .and_then(|p| p.name)
        else {
            return false;
        };
        self.inner
            .repeatable_tools
            .lock()
            .ok()
            .and_then(|tools| tools.get(&name).copied())
            .unwrap_or(false)
    }

    /// Remembers which of `tools` are safe to call twice.
    pub(crate) fn learn_tools(&self, tools: &[Tool]) {
        let Ok(mut known) = self.inner.repeatable_tools.lock() else {
            return;
        };
        for tool in tools {
            let hints = tool.annotations.as_ref();
            let repeatable = hints
                .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true));
            if known.len() < MAX_KNOWN_TOOLS || known.contains_key(&tool.name) {
                known.insert(tool.name.clone(), repeatable);
            }
        }
    }
}
