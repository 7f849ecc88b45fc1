//! Typed unions of every message per direction, and result decoding by method.
//!
//! A [`JsonRpcRequest`] keeps its params as raw JSON; [`ClientRequest::from_request`] parses
//! them once into the method's own type. Results are not self-describing, so
//! [`ServerResult::decode`] and [`ClientResult::decode`] take the method of the request they
//! answer.

use crate::prelude::*;

use core::fmt;

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::common::{EmptyResult, PaginatedRequestParams, RequestParams};
use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::discover::DiscoverResult;
use crate::elicitation::{ElicitRequestParams, ElicitResult, ElicitationCompleteParams};
use crate::error::ErrorCode;
use crate::ext::tasks::UpdateTaskParams;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, RequestId, to_raw};
use crate::lifecycle::{InitializeRequestParams, InitializeResult};
use crate::logging::{LoggingMessageParams, SetLevelRequestParams};
use crate::meta::Meta;
use crate::methods as m;
use crate::mrtr::{Outcome, OutcomeError};
use crate::notifications::{CancelledParams, NotificationParams, ProgressParams};
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, ResourceUriParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::subscriptions::{SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams};
use crate::tasks::{CreateTaskResult, ListTasksResult, Task, TaskIdParams};
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};

/// Why the params (or result) of a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamsError {
    /// No type in this crate has that method: `-32601`.
    UnknownMethod(String),
    /// The method requires params and none were sent: `-32602`.
    Missing(String),
    /// The params do not have the method's shape: `-32602`.
    Invalid {
        /// The method.
        method: String,
        /// What serde found wrong.
        reason: String,
    },
}

impl ParamsError {
    /// The JSON-RPC code a peer should receive.
    pub fn code(&self) -> ErrorCode {
        match self {
            ParamsError::UnknownMethod(_) => ErrorCode::METHOD_NOT_FOUND,
            _ => ErrorCode::INVALID_PARAMS,
        }
    }
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::UnknownMethod(method) => write!(f, "Method not found: '{method}'"),
            ParamsError::Missing(method) => {
                write!(f, "Invalid params: '{method}' requires a params object")
            }
            ParamsError::Invalid { method, reason } => {
                write!(f, "Invalid params for '{method}': {reason}")
            }
        }
    }
}

impl core::error::Error for ParamsError {}

fn decode_required<P: DeserializeOwned>(
    method: &str,
    raw: Option<&RawValue>,
) -> Result<P, ParamsError> {
    let raw = raw.ok_or_else(|| ParamsError::Missing(method.to_owned()))?;
    serde_json::from_str(raw.get()).map_err(|e| ParamsError::Invalid {
        method: method.to_owned(),
        reason: e.to_string(),
    })
}

fn decode_optional<P: DeserializeOwned>(
    method: &str,
    raw: Option<&RawValue>,
) -> Result<Option<P>, ParamsError> {
    raw.map(|raw| decode_required(method, Some(raw)))
        .transpose()
}

/// Access to the `_meta` of any params type.
pub trait HasMeta {
    /// The `_meta` object, if any.
    fn meta(&self) -> Option<&Meta>;
}

macro_rules! has_meta {
    ($($t:ty),* $(,)?) => {$(
        impl HasMeta for $t {
            fn meta(&self) -> Option<&Meta> { self.meta.as_ref() }
        }
    )*};
}

has_meta!(
    RequestParams,
    PaginatedRequestParams,
    InitializeRequestParams,
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams,
    ResourceUriParams,
    CompleteRequestParams,
    SetLevelRequestParams,
    SubscriptionsListenRequestParams,
    TaskIdParams,
    UpdateTaskParams,
    CreateMessageRequestParams,
    CancelledParams,
    ProgressParams,
    LoggingMessageParams,
    SubscriptionsAcknowledgedParams,
    Task,
);

impl<T: HasMeta> HasMeta for Option<T> {
    fn meta(&self) -> Option<&Meta> {
        self.as_ref().and_then(HasMeta::meta)
    }
}

impl HasMeta for ElicitRequestParams {
    fn meta(&self) -> Option<&Meta> {
        match self {
            ElicitRequestParams::Form(f) => f.meta.as_ref(),
            ElicitRequestParams::Url(u) => u.meta.as_ref(),
        }
    }
}

impl HasMeta for ElicitationCompleteParams {
    fn meta(&self) -> Option<&Meta> {
        None
    }
}

macro_rules! params_ty {
    (req $p:ty) => { $p };
    (opt $p:ty) => { Option<$p> };
}

macro_rules! decode_params {
    (req $p:ty, $method:expr, $raw:expr) => {
        decode_required::<$p>($method, $raw)
    };
    (opt $p:ty, $method:expr, $raw:expr) => {
        decode_optional::<$p>($method, $raw)
    };
}

macro_rules! next_params {
    (req $p:ty, $map:expr) => {
        $map.next_value::<$p>()?
    };
    (opt $p:ty, $map:expr) => {
        Some($map.next_value::<$p>()?)
    };
}

macro_rules! encode_params {
    (req, $v:expr) => {
        Some(to_raw($v)?)
    };
    (opt, $v:expr) => {
        match $v {
            Some(p) => Some(to_raw(p)?),
            None => None,
        }
    };
}

/// Declares a union of messages keyed by method, with decoding from raw params and encoding
/// back to them.
macro_rules! message_union {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$vdoc:meta])* $variant:ident($mode:ident $params:ty) = $method:path, )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $(#[$vdoc])* $variant(params_ty!($mode $params)), )*
        }

        impl $name {
            /// Parses the params of `method` into the matching variant.
            pub fn from_parts(method: &str, params: Option<&RawValue>) -> Result<Self, ParamsError> {
                match method {
                    $( $method => Ok($name::$variant(decode_params!($mode $params, method, params)?)), )*
                    _ => Err(ParamsError::UnknownMethod(method.to_owned())),
                }
            }

            /// Reads the params of `method` as the next value of `map`, as
            /// [`from_parts`](Self::from_parts) reads them from their text (the same
            /// `Deserialize` for each method); `None` for a method without a variant, its value
            /// left unread. The one-pass decoder ([`crate::frame`]) reads a request's params
            /// this way, straight from the message's bytes.
            #[doc(hidden)]
            pub fn next_params<'de, A: serde::de::MapAccess<'de>>(
                method: &str,
                map: &mut A,
            ) -> Result<Option<Self>, A::Error> {
                Ok(Some(match method {
                    $( $method => $name::$variant(next_params!($mode $params, map)), )*
                    _ => return Ok(None),
                }))
            }

            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => $method, )*
                }
            }

            /// The params as raw JSON (absent when the variant's optional params are `None`).
            pub fn to_params(&self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
                Ok(match self {
                    $( $name::$variant(p) => encode_params!($mode, p), )*
                })
            }

            /// The `_meta` of the params, if any.
            pub fn meta(&self) -> Option<&Meta> {
                match self {
                    $( $name::$variant(p) => HasMeta::meta(p), )*
                }
            }
        }
    };
}

message_union! {
    /// Every request a client sends, in either revision.
    ClientRequest {
        /// `server/discover` (2026-07-28).
        Discover(opt RequestParams) = m::SERVER_DISCOVER,
        /// `initialize` (2025-11-25).
        Initialize(req InitializeRequestParams) = m::INITIALIZE,
        /// `ping` (2025-11-25).
        Ping(opt RequestParams) = m::PING,
        /// `tools/list`.
        ListTools(opt PaginatedRequestParams) = m::TOOLS_LIST,
        /// `tools/call`.
        CallTool(req CallToolRequestParams) = m::TOOLS_CALL,
        /// `prompts/list`.
        ListPrompts(opt PaginatedRequestParams) = m::PROMPTS_LIST,
        /// `prompts/get`.
        GetPrompt(req GetPromptRequestParams) = m::PROMPTS_GET,
        /// `resources/list`.
        ListResources(opt PaginatedRequestParams) = m::RESOURCES_LIST,
        /// `resources/templates/list`.
        ListResourceTemplates(opt PaginatedRequestParams) = m::RESOURCES_TEMPLATES_LIST,
        /// `resources/read`.
        ReadResource(req ReadResourceRequestParams) = m::RESOURCES_READ,
        /// `resources/subscribe` (2025-11-25).
        Subscribe(req ResourceUriParams) = m::RESOURCES_SUBSCRIBE,
        /// `resources/unsubscribe` (2025-11-25).
        Unsubscribe(req ResourceUriParams) = m::RESOURCES_UNSUBSCRIBE,
        /// `completion/complete`.
        Complete(req CompleteRequestParams) = m::COMPLETION_COMPLETE,
        /// `logging/setLevel` (2025-11-25).
        SetLevel(req SetLevelRequestParams) = m::LOGGING_SET_LEVEL,
        /// `subscriptions/listen` (2026-07-28).
        SubscriptionsListen(req SubscriptionsListenRequestParams) = m::SUBSCRIPTIONS_LISTEN,
        /// `tasks/get` (2025-11-25).
        GetTask(req TaskIdParams) = m::TASKS_GET,
        /// `tasks/result` (2025-11-25).
        GetTaskPayload(req TaskIdParams) = m::TASKS_RESULT,
        /// `tasks/cancel` (2025-11-25).
        CancelTask(req TaskIdParams) = m::TASKS_CANCEL,
        /// `tasks/list` (2025-11-25).
        ListTasks(opt PaginatedRequestParams) = m::TASKS_LIST,
        /// `tasks/update` (the 2026-07-28 tasks extension).
        UpdateTask(req UpdateTaskParams) = m::TASKS_UPDATE,
    }
}

message_union! {
    /// Every request a server sends to a client (2025-11-25 sessions only; on 2026-07-28 the
    /// first four travel inside `inputRequests` instead).
    ServerRequest {
        /// `elicitation/create`.
        Elicit(req ElicitRequestParams) = m::ELICITATION_CREATE,
        /// `sampling/createMessage`.
        CreateMessage(req CreateMessageRequestParams) = m::SAMPLING_CREATE_MESSAGE,
        /// `roots/list`.
        ListRoots(opt RequestParams) = m::ROOTS_LIST,
        /// `ping`.
        Ping(opt RequestParams) = m::PING,
        /// `tasks/get`.
        GetTask(req TaskIdParams) = m::TASKS_GET,
        /// `tasks/result`.
        GetTaskPayload(req TaskIdParams) = m::TASKS_RESULT,
        /// `tasks/cancel`.
        CancelTask(req TaskIdParams) = m::TASKS_CANCEL,
        /// `tasks/list`.
        ListTasks(opt PaginatedRequestParams) = m::TASKS_LIST,
    }
}

message_union! {
    /// Every notification a client sends, in either revision.
    ClientNotification {
        /// `notifications/cancelled`.
        Cancelled(req CancelledParams) = m::NOTIFICATION_CANCELLED,
        /// `notifications/initialized` (2025-11-25).
        Initialized(opt NotificationParams) = m::NOTIFICATION_INITIALIZED,
        /// `notifications/progress` (2025-11-25).
        Progress(req ProgressParams) = m::NOTIFICATION_PROGRESS,
        /// `notifications/roots/list_changed` (2025-11-25).
        RootsListChanged(opt NotificationParams) = m::NOTIFICATION_ROOTS_LIST_CHANGED,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus(req Task) = m::NOTIFICATION_TASKS_STATUS,
    }
}

message_union! {
    /// Every notification a server sends, in either revision.
    ServerNotification {
        /// `notifications/cancelled`.
        Cancelled(req CancelledParams) = m::NOTIFICATION_CANCELLED,
        /// `notifications/progress`.
        Progress(req ProgressParams) = m::NOTIFICATION_PROGRESS,
        /// `notifications/message`.
        LoggingMessage(req LoggingMessageParams) = m::NOTIFICATION_MESSAGE,
        /// `notifications/resources/updated`.
        ResourceUpdated(req ResourceUriParams) = m::NOTIFICATION_RESOURCES_UPDATED,
        /// `notifications/resources/list_changed`.
        ResourceListChanged(opt NotificationParams) = m::NOTIFICATION_RESOURCES_LIST_CHANGED,
        /// `notifications/tools/list_changed`.
        ToolListChanged(opt NotificationParams) = m::NOTIFICATION_TOOLS_LIST_CHANGED,
        /// `notifications/prompts/list_changed`.
        PromptListChanged(opt NotificationParams) = m::NOTIFICATION_PROMPTS_LIST_CHANGED,
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged(req SubscriptionsAcknowledgedParams) = m::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete(req ElicitationCompleteParams) = m::NOTIFICATION_ELICITATION_COMPLETE,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus(req Task) = m::NOTIFICATION_TASKS_STATUS,
    }
}

impl ClientRequest {
    /// Parses a decoded request's params.
    pub fn from_request(request: &JsonRpcRequest) -> Result<Self, ParamsError> {
        Self::from_parts(&request.method, request.params.as_deref())
    }

    /// Builds the JSON-RPC request with the given id.
    pub fn to_request(
        &self,
        id: impl Into<RequestId>,
    ) -> Result<JsonRpcRequest, serde_json::Error> {
        Ok(JsonRpcRequest {
            id: id.into(),
            method: self.method().to_owned(),
            params: self.to_params()?,
            extra: Default::default(),
        })
    }
}

impl ServerRequest {
    /// Parses a decoded request's params.
    pub fn from_request(request: &JsonRpcRequest) -> Result<Self, ParamsError> {
        Self::from_parts(&request.method, request.params.as_deref())
    }

    /// Builds the JSON-RPC request with the given id.
    pub fn to_request(
        &self,
        id: impl Into<RequestId>,
    ) -> Result<JsonRpcRequest, serde_json::Error> {
        Ok(JsonRpcRequest {
            id: id.into(),
            method: self.method().to_owned(),
            params: self.to_params()?,
            extra: Default::default(),
        })
    }
}

impl ClientNotification {
    /// Parses a decoded notification's params.
    pub fn from_notification(notification: &JsonRpcNotification) -> Result<Self, ParamsError> {
        Self::from_parts(&notification.method, notification.params.as_deref())
    }

    /// Builds the JSON-RPC notification.
    pub fn to_notification(&self) -> Result<JsonRpcNotification, serde_json::Error> {
        Ok(JsonRpcNotification {
            method: self.method().to_owned(),
            params: self.to_params()?,
            extra: Default::default(),
        })
    }
}

impl ServerNotification {
    /// Parses a decoded notification's params.
    pub fn from_notification(notification: &JsonRpcNotification) -> Result<Self, ParamsError> {
        Self::from_parts(&notification.method, notification.params.as_deref())
    }

    /// Builds the JSON-RPC notification.
    pub fn to_notification(&self) -> Result<JsonRpcNotification, serde_json::Error> {
        Ok(JsonRpcNotification {
            method: self.method().to_owned(),
            params: self.to_params()?,
            extra: Default::default(),
        })
    }
}

/// A result a server returns, typed by the method it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerResult {
    /// `server/discover`.
    Discover(DiscoverResult),
    /// `initialize`.
    Initialize(InitializeResult),
    /// `ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`,
    /// `subscriptions/listen` (its final result), `tasks/result`.
    Empty(EmptyResult),
    /// `tools/list`.
    ListTools(ListToolsResult),
    /// `tools/call`.
    CallTool(Outcome<CallToolResult>),
    /// `tools/call` with task augmentation (2025-11-25).
    CreateTask(CreateTaskResult),
    /// `prompts/list`.
    ListPrompts(ListPromptsResult),
    /// `prompts/get`.
    GetPrompt(Outcome<GetPromptResult>),
    /// `resources/list`.
    ListResources(ListResourcesResult),
    /// `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplatesResult),
    /// `resources/read`.
    ReadResource(Outcome<ReadResourceResult>),
    /// `completion/complete`.
    Complete(CompleteResult),
    /// `tasks/get`, `tasks/cancel`.
    Task(Task),
    /// `tasks/list`.
    ListTasks(ListTasksResult),
}

/// Why a result could not be read.
#[derive(Debug)]
pub enum ResultError {
    /// The method is not one whose result this crate knows.
    UnknownMethod(String),
    /// An unrecognized `resultType`, or a result that does not have its method's shape.
    Invalid {
        /// The method the result answers.
        method: String,
        /// What is wrong.
        error: OutcomeError,
    },
}

impl fmt::Display for ResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultError::UnknownMethod(method) => {
                write!(f, "no result type is known for '{method}'")
            }
            ResultError::Invalid { method, error } => {
                write!(f, "invalid result for '{method}': {error}")
            }
        }
    }
}

impl core::error::Error for ResultError {}

fn plain<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, ResultError> {
    serde_json::from_str(raw.get()).map_err(|e| ResultError::Invalid {
        method: method.to_owned(),
        error: OutcomeError::Malformed(e),
    })
}

fn outcome<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<Outcome<T>, ResultError> {
    Outcome::from_raw(raw).map_err(|error| ResultError::Invalid {
        method: method.to_owned(),
        error,
    })
}

impl ServerResult {
    /// Reads the result of a request for `method`.
    pub fn decode(method: &str, raw: &RawValue) -> Result<Self, ResultError> {
        Ok(match method {
            m::SERVER_DISCOVER => ServerResult::Discover(plain(method, raw)?),
            m::INITIALIZE => ServerResult::Initialize(plain(method, raw)?),
            m::PING
            | m::LOGGING_SET_LEVEL
            | m::RESOURCES_SUBSCRIBE
            | m::RESOURCES_UNSUBSCRIBE
            | m::SUBSCRIPTIONS_LISTEN
            | m::TASKS_RESULT => ServerResult::Empty(plain(method, raw)?),
            m::TOOLS_LIST => ServerResult::ListTools(plain(method, raw)?),
            m::TOOLS_CALL => {
                #[derive(serde::Deserialize)]
                struct Probe {
                    task: Option<serde::de::IgnoredAny>,
                    content: Option<serde::de::IgnoredAny>,
                    #[serde(rename = "resultType")]
                    result_type: Option<serde::de::IgnoredAny>,
                }
                let probe: Probe = plain(method, raw)?;
                if probe.task.is_some() && probe.content.is_none() && probe.result_type.is_none() {
                    ServerResult::CreateTask(plain(method, raw)?)
                } else {
                    ServerResult::CallTool(outcome(method, raw)?)
                }
            }
            m::PROMPTS_LIST => ServerResult::ListPrompts(plain(method, raw)?),
            m::PROMPTS_GET => ServerResult::GetPrompt(outcome(method, raw)?),
            m::RESOURCES_LIST => ServerResult::ListResources(plain(method, raw)?),
            m::RESOURCES_TEMPLATES_LIST => ServerResult::ListResourceTemplates(plain(method, raw)?),
            m::RESOURCES_READ => ServerResult::ReadResource(outcome(method, raw)?),
            m::COMPLETION_COMPLETE => ServerResult::Complete(plain(method, raw)?),
            m::TASKS_GET | m::TASKS_CANCEL => ServerResult::Task(plain(method, raw)?),
            m::TASKS_LIST => ServerResult::ListTasks(plain(method, raw)?),
            other => return Err(ResultError::UnknownMethod(other.to_owned())),
        })
    }
}

impl Serialize for ServerResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ServerResult::Discover(r) => r.serialize(s),
            ServerResult::Initialize(r) => r.serialize(s),
            ServerResult::Empty(r) => r.serialize(s),
            ServerResult::ListTools(r) => r.serialize(s),
            ServerResult::CallTool(r) => r.serialize(s),
            ServerResult::CreateTask(r) => r.serialize(s),
            ServerResult::ListPrompts(r) => r.serialize(s),
            ServerResult::GetPrompt(r) => r.serialize(s),
            ServerResult::ListResources(r) => r.serialize(s),
            ServerResult::ListResourceTemplates(r) => r.serialize(s),
            ServerResult::ReadResource(r) => r.serialize(s),
            ServerResult::Complete(r) => r.serialize(s),
            ServerResult::Task(r) => r.serialize(s),
            ServerResult::ListTasks(r) => r.serialize(s),
        }
    }
}

/// A result a client returns to a server-to-client request (2025-11-25 sessions), typed by the
/// method it answers. The first three are also the `inputResponses` values of 2026-07-28.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientResult {
    /// `elicitation/create`.
    Elicit(ElicitResult),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// `roots/list`.
    ListRoots(ListRootsResult),
    /// `ping`, `tasks/result`.
    Empty(EmptyResult),
    /// `tasks/get`, `tasks/cancel`.
    Task(Task),
    /// `tasks/list`.
    ListTasks(ListTasksResult),
}

impl ClientResult {
    /// Reads the result of a server-to-client request for `method`.
    pub fn decode(method: &str, raw: &RawValue) -> Result<Self, ResultError> {
        Ok(match method {
            m::ELICITATION_CREATE => ClientResult::Elicit(plain(method, raw)?),
            m::SAMPLING_CREATE_MESSAGE => ClientResult::CreateMessage(plain(method, raw)?),
            m::ROOTS_LIST => ClientResult::ListRoots(plain(method, raw)?),
            m::PING | m::TASKS_RESULT => ClientResult::Empty(plain(method, raw)?),
            m::TASKS_GET | m::TASKS_CANCEL => ClientResult::Task(plain(method, raw)?),
            m::TASKS_LIST => ClientResult::ListTasks(plain(method, raw)?),
            other => return Err(ResultError::UnknownMethod(other.to_owned())),
        })
    }
}

impl Serialize for ClientResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ClientResult::Elicit(r) => r.serialize(s),
            ClientResult::CreateMessage(r) => r.serialize(s),
            ClientResult::ListRoots(r) => r.serialize(s),
            ClientResult::Empty(r) => r.serialize(s),
            ClientResult::Task(r) => r.serialize(s),
            ClientResult::ListTasks(r) => r.serialize(s),
        }
    }
}
