//! What a client asks: the lists, and the three calls that may take rounds (`tools/call`,
//! `prompts/get`, `resources/read`) with the loop that answers `InputRequiredResult` and
//! retries, in a [`Session`] or on their own.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use mcp_types::common::PaginatedRequestParams;
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::mrtr::{InputRequest, InputResponses, Outcome, OutcomeError, RetryParams};
use mcp_types::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate,
};
use mcp_types::tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool};
use mcp_types::{ErrorObject, JsonObject, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::callbacks::RequestInfo;
use crate::error::ClientError;

use crate::client::{Refusal, dispatch};
use crate::{BACKOFF_CAP, BACKOFF_START, CallOptions, Client};

impl Client {
    /// The raw session: single requests, and the manual multi-round-trip loop.
    pub fn session(&self) -> Session<'_> {
        Session { client: self }
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        let page: ListToolsResult = self.typed(methods::TOOLS_LIST, &params, None).await?;
        self.learn_tools(&page.tools);
        Ok(page)
    }

    /// Every tool, following cursors.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_tools(cursor).await?;
            all.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::PROMPTS_LIST, &params, None).await
    }

    /// Every prompt, following cursors.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_prompts(cursor).await?;
            all.extend(page.prompts);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::RESOURCES_LIST, &params, None).await
    }

    /// Every resource, following cursors.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_resources(cursor).await?;
            all.extend(page.resources);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::RESOURCES_TEMPLATES_LIST, &params, None)
            .await
    }

    /// Every resource template, following cursors.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_resource_templates(cursor).await?;
            all.extend(page.resource_templates);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Calls a tool, answering every round of questions with the callbacks; the intermediate
    /// rounds are invisible.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with options (resuming, progress, timeout).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = tool_arguments(arguments)?;
        let params = CallToolRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.drive(methods::TOOLS_CALL, params, options).await
    }

    /// Gets a prompt, answering every round of questions with the callbacks.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with options (resuming, progress, timeout).
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        options: CallOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            ..Default::default()
        };
        self.drive(methods::PROMPTS_GET, params, options).await
    }

    /// Reads a resource, answering every round of questions with the callbacks.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, CallOptions::default()).await
    }

    /// [`read_resource`](Self::read_resource) with options (resuming, progress, timeout).
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.drive(methods::RESOURCES_READ, params, options).await
    }

    /// Sends one leg of a call and returns the answer undecoded (a result, a round or a task).
    pub(crate) async fn send_leg<P>(
        &self,
        method: &str,
        params: &mut P,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError>
    where
        P: Serialize + HasMetaMut,
    {
        let progress = options.progress.then(|| {
            RequestId::Number(self.inner.next_progress.fetch_add(1, Ordering::Relaxed) + 1)
        });
        params.set_meta(self.meta(progress.clone()));
        let raw = mcp_types::jsonrpc::to_raw(&*params)
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let wait = self.wait(options.timeout, options.max_total_timeout, progress);
        self.request_within(method, Some(raw), wait).await
    }

    /// Sends one leg of a call that may answer `input_required`.
    pub(crate) async fn leg<P, T>(
        &self,
        method: &str,
        params: &mut P,
        options: &CallOptions,
    ) -> Result<Outcome<T>, ClientError>
    where
        P: RetryParams + Serialize + HasMetaMut,
        T: DeserializeOwned,
    {
        let mut answer = self.send_leg(method, params, options).await?;
        // Without the extension declared, a task is an unrecognized resultType (below).
        if self.declares_tasks() && mcp_types::ext::tasks::is_task_result(&answer) {
            answer = self.follow_task(method, &answer, options).await?;
        }
        decode_outcome(method, &answer)
    }
}

/// A leg's answer as a complete result or a round.
pub(crate) fn decode_outcome<T: DeserializeOwned>(
    method: &str,
    answer: &RawValue,
) -> Result<Outcome<T>, ClientError> {
    Outcome::from_raw(answer).map_err(|e| match e {
        OutcomeError::UnrecognizedResultType(t) => ClientError::UnrecognizedResultType(t),
        OutcomeError::Malformed(e) => {
            ClientError::InvalidResponse(format!("'{method}' result: {e}"))
        }
    })
}

impl Client {
    /// The automatic loop: answer every round, retry with a new id, the same params, the
    /// answers under the same keys and the state echoed byte for byte.
    async fn drive<P, T>(
        &self,
        method: &str,
        params: P,
        options: CallOptions,
    ) -> Result<T, ClientError>
    where
        P: RetryParams + Serialize + HasMetaMut,
        T: DeserializeOwned,
    {
        // One span over the rounds, so that each round's request (and the server's spans
        // under it) belongs to one trace even when the caller has no span of its own.
        let span = crate::trace::call_span_of(method);
        if !span.is_disabled()
            && let Ok(raw) = mcp_types::jsonrpc::to_raw(&params)
        {
            crate::trace::name(&span, method, Some(&raw));
        }
        tracing::Instrument::instrument(self.rounds(method, params, options), span).await
    }

    /// [`drive`](Self::drive)'s rounds.
    async fn rounds<P, T>(
        &self,
        method: &str,
        mut params: P,
        options: CallOptions,
    ) -> Result<T, ClientError>
    where
        P: RetryParams + Serialize + HasMetaMut,
        T: DeserializeOwned,
    {
        params.set_input_responses(options.input_responses.clone());
        params.set_request_state(options.request_state.clone());
        let mut backoff = BACKOFF_START;
        let mut retries = 0u32;
        loop {
            let round = match self.leg::<P, T>(method, &mut params, &options).await? {
                Outcome::Complete(result) => {
                    tracing::Span::current().record("mcp.rounds", retries + 1);
                    return Ok(result);
                }
                Outcome::InputRequired(round) => round,
            };
            if retries >= self.inner.max_rounds {
                return Err(ClientError::RoundsExceeded {
                    max_rounds: self.inner.max_rounds,
                });
            }
            retries += 1;
            let requests = round.input_requests.unwrap_or_default();
            if requests.is_empty() {
                // Only state ("load shedding"): wait, doubling up to the cap.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_CAP);
                params.set_input_responses(None);
            } else {
                backoff = BACKOFF_START;
                params.set_input_responses(Some(self.fulfil(method, requests).await?));
            }
            params.set_request_state(round.request_state);
        }
    }

    /// Answers every request of a round concurrently; the first failure stops the others.
    pub async fn fulfil(
        &self,
        method: &str,
        requests: BTreeMap<String, InputRequest>,
    ) -> Result<InputResponses, ClientError> {
        let callbacks = &self.inner.callbacks;
        let declared = &self.inner.capabilities;
        if requests.len() > self.inner.max_input_requests {
            return Err(ClientError::TooManyInputRequests {
                count: requests.len(),
                max: self.inner.max_input_requests,
            });
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (key, request) in requests {
            let info = RequestInfo {
                key: key.clone(),
                method: method.to_owned(),
            };
            let future =
                dispatch::answer(callbacks, declared, info, request).map_err(|refusal| {
                    match refusal {
                        Refusal::Missing(capability) => ClientError::MissingCallback {
                            capability,
                            key: key.clone(),
                        },
                        Refusal::Undeclared(capability) => ClientError::UndeclaredCapability {
                            capability,
                            key: key.clone(),
                        },
                        Refusal::Unsupported(method) => ClientError::UnsupportedInputRequest {
                            method,
                            key: key.clone(),
                        },
                    }
                })?;
            tasks.spawn(async move { (key, future.await) });
        }
        let mut responses = InputResponses::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((key, Ok(response))) => {
                    responses.insert(key, response);
                }
                Ok((_, Err(e))) => {
                    tasks.abort_all();
                    return Err(ClientError::Callback(e));
                }
                Err(e) => {
                    tasks.abort_all();
                    return Err(ClientError::Callback(ErrorObject::internal(format!(
                        "a callback panicked or was cancelled: {e}"
                    ))));
                }
            }
        }
        Ok(responses)
    }
}

/// Tool arguments: a JSON object, or `null` for none.
pub(crate) fn tool_arguments(arguments: Value) -> Result<Option<JsonObject>, ClientError> {
    match arguments {
        Value::Object(o) => Ok(Some(o)),
        Value::Null => Ok(None),
        other => Err(ClientError::InvalidRequest(format!(
            "tool arguments must be a JSON object or null, not {other}"
        ))),
    }
}

/// Setting `_meta` on the params of the three retrying methods.
pub trait HasMetaMut {
    /// Replaces `_meta`.
    fn set_meta(&mut self, meta: Option<Meta>);
}

macro_rules! has_meta_mut {
    ($($t:ty),*) => {$(
        impl HasMetaMut for $t {
            fn set_meta(&mut self, meta: Option<Meta>) {
                self.meta = meta;
            }
        }
    )*};
}

has_meta_mut!(
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams
);

/// The raw session: one leg at a time, for applications that drive the multi-round-trip loop
/// themselves (inspect, log, refuse, apply their own backoff, persist `requestState` so another
/// process resumes).
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    pub(crate) client: &'a Client,
}

/// What one leg of a call returned.
pub type CallOutcome = Outcome<CallToolResult>;

impl Session<'_> {
    /// One `tools/call` leg: the complete result or the server's `InputRequiredResult`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallOutcome, ClientError> {
        let arguments = tool_arguments(arguments)?;
        let mut params = CallToolRequestParams {
            name: name.to_owned(),
            arguments,
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::TOOLS_CALL, &mut params, &options)
            .await
    }

    /// One `prompts/get` leg.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        options: CallOptions,
    ) -> Result<Outcome<GetPromptResult>, ClientError> {
        let mut params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::PROMPTS_GET, &mut params, &options)
            .await
    }

    /// One `resources/read` leg.
    pub async fn read_resource(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<Outcome<ReadResourceResult>, ClientError> {
        let mut params = ReadResourceRequestParams {
            uri: uri.to_owned(),
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::RESOURCES_READ, &mut params, &options)
            .await
    }
}
