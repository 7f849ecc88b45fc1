//! The JSON-RPC 2.0 envelope MCP rides on: one message per line or per HTTP body, no batches.
//!
//! Decoding reads the envelope once and keeps `params` and `result` as raw JSON text, so the
//! method-specific types in [`crate::messages`] parse them exactly once. Every malformed message
//! is rejected with a [`MessageError`] that names the problem and carries the request id when it
//! could be read, ready to become the JSON-RPC error the spec names.

use crate::prelude::*;

use core::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::error::{ErrorCode, ErrorObject};

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

pub use crate::id::RequestId;

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone)]
pub struct JsonRpcRequest {
    /// The request id, echoed by the response.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The params object as raw JSON, parsed by the method's own type.
    pub params: Option<Box<RawValue>>,
    /// Envelope members JSON-RPC does not define, kept as sent.
    pub extra: JsonObject,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone)]
pub struct JsonRpcNotification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The params object as raw JSON.
    pub params: Option<Box<RawValue>>,
    /// Envelope members JSON-RPC does not define, kept as sent.
    pub extra: JsonObject,
}

/// A successful response.
#[derive(Debug, Clone)]
pub struct JsonRpcResponse {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object as raw JSON, parsed by the type of the method it answers.
    pub result: Box<RawValue>,
    /// Envelope members JSON-RPC does not define, kept as sent.
    pub extra: JsonObject,
}

/// The `id` of an error response: the request's id, or none when it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorResponseId {
    /// The id of the request that failed.
    Id(RequestId),
    /// `"id": null`, as JSON-RPC 2.0 peers send when the id was unreadable.
    Null,
    /// No `id` member, as the MCP schema writes an unreadable id.
    Absent,
}

impl ErrorResponseId {
    /// The request id, if there is one.
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            ErrorResponseId::Id(id) => Some(id),
            _ => None,
        }
    }
}

impl From<Option<RequestId>> for ErrorResponseId {
    fn from(id: Option<RequestId>) -> Self {
        id.map_or(ErrorResponseId::Absent, ErrorResponseId::Id)
    }
}

/// An error response.
#[derive(Debug, Clone)]
pub struct JsonRpcError {
    /// The id of the request that failed, when it could be read.
    pub id: ErrorResponseId,
    /// The error.
    pub error: ErrorObject,
    /// Envelope members JSON-RPC does not define, kept as sent.
    pub extra: JsonObject,
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone)]
pub enum JsonRpcMessage {
    /// A request.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
    /// A successful response.
    Response(JsonRpcResponse),
    /// An error response.
    Error(JsonRpcError),
}

/// Which JSON-RPC error a malformed message deserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageErrorKind {
    /// The bytes are not JSON: `-32700`.
    Parse,
    /// JSON, but not a valid JSON-RPC message: `-32600`.
    InvalidRequest,
}

/// Why a message was rejected. The message names the problem; the id is echoed when it could
/// be read.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageError {
    /// Parse error or invalid request.
    pub kind: MessageErrorKind,
    /// The id of the offending request, when it could be read.
    pub id: Option<RequestId>,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl MessageError {
    fn invalid(id: Option<RequestId>, message: impl Into<String>) -> Self {
        MessageError {
            kind: MessageErrorKind::InvalidRequest,
            id,
            message: message.into(),
        }
    }

    /// The JSON-RPC error code for this rejection.
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            MessageErrorKind::Parse => ErrorCode::PARSE_ERROR,
            MessageErrorKind::InvalidRequest => ErrorCode::INVALID_REQUEST,
        }
    }

    /// The error response a peer should receive for this message.
    pub fn to_response(&self) -> JsonRpcError {
        JsonRpcError {
            id: self.id.clone().into(),
            error: ErrorObject::new(self.code(), self.message.clone()),
            extra: JsonObject::new(),
        }
    }
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl core::error::Error for MessageError {}

/// The members of a message as read, before any rule is checked.
#[derive(Default)]
struct Envelope {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Box<RawValue>>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
    extra: JsonObject,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let mut env = Envelope::default();
                while let Some(key) = map.next_key::<alloc::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "jsonrpc" => env.jsonrpc = Some(map.next_value()?),
                        "id" => env.id = Some(map.next_value()?),
                        "method" => env.method = Some(map.next_value()?),
                        "params" => env.params = Some(map.next_value()?),
                        "result" => env.result = Some(map.next_value()?),
                        "error" => env.error = Some(map.next_value()?),
                        _ => {
                            let value: Value = map.next_value()?;
                            env.extra.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(env)
            }
        }
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

fn is_json_object(raw: &RawValue) -> bool {
    raw.get().trim_start().starts_with('{')
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl JsonRpcMessage {
    /// Decodes one message from JSON text.
    #[allow(clippy::should_implement_trait)] // the error type is ours, not `FromStr`'s shape
    pub fn from_str(text: &str) -> Result<Self, MessageError> {
        Self::from_slice(text.as_bytes())
    }

    /// Decodes one message from JSON bytes (one stdio line or one HTTP body).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MessageError> {
        let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
        match first {
            None => {
                return Err(MessageError {
                    kind: MessageErrorKind::Parse,
                    id: None,
                    message: "Parse error: the message is empty".into(),
                });
            }
            Some(b'{') => {}
            Some(b'[') => {
                // Still tell "not JSON" apart from "a batch".
                if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                    return Err(parse_error(&e));
                }
                return Err(MessageError::invalid(
                    None,
                    "JSON-RPC batches are not supported: send exactly one message object",
                ));
            }
            Some(_) => {
                return match serde_json::from_slice::<Value>(bytes) {
                    Err(e) => Err(parse_error(&e)),
                    Ok(v) => Err(MessageError::invalid(
                        None,
                        format!(
                            "a JSON-RPC message must be a JSON object, not {}",
                            json_kind(&v)
                        ),
                    )),
                };
            }
        }
        let envelope: Envelope = serde_json::from_slice(bytes).map_err(|e| parse_error(&e))?;
        Self::from_envelope(envelope)
    }

    /// Decodes one message from an already parsed JSON value.
    pub fn from_value(value: &Value) -> Result<Self, MessageError> {
        // Raw params need text; a value round-trips through the encoder exactly.
        let text = serde_json::to_string(value).map_err(|e| parse_error(&e))?;
        Self::from_str(&text)
    }

    fn from_envelope(env: Envelope) -> Result<Self, MessageError> {
        let id_value = env.id;
        let id = id_value.as_ref().and_then(RequestId::from_value);
        check_version_and_id(env.jsonrpc.as_ref(), id_value.as_ref(), id.as_ref())?;
        if let Some(method) = env.method {
            let Value::String(method) = method else {
                return Err(MessageError::invalid(id, "\"method\" must be a string"));
            };
            if env.result.is_some() || env.error.is_some() {
                return Err(MessageError::invalid(
                    id,
                    "a message cannot carry both \"method\" and \"result\" or \"error\"",
                ));
            }
            if let Some(params) = &env.params
                && !is_json_object(params)
            {
                return Err(MessageError::invalid(
                    id,
                    format!("\"params\" of '{method}' must be a JSON object"),
                ));
            }
            return match (id_value, id) {
                (None, _) => Ok(JsonRpcMessage::Notification(JsonRpcNotification {
                    method,
                    params: env.params,
                    extra: env.extra,
                })),
                (Some(_), Some(id)) => Ok(JsonRpcMessage::Request(JsonRpcRequest {
                    id,
                    method,
                    params: env.params,
                    extra: env.extra,
                })),
                (Some(_), None) => Err(MessageError::invalid(
                    None,
                    format!(
                        "the id of a '{method}' request must be a string or an integer, never null"
                    ),
                )),
            };
        }
        if env.params.is_some() {
            return Err(MessageError::invalid(
                id,
                "\"params\" is only allowed on requests and notifications",
            ));
        }
        match (env.result, env.error) {
            (Some(_), Some(_)) => Err(MessageError::invalid(
                id,
                "a response must carry exactly one of \"result\" and \"error\", not both",
            )),
            (Some(result), None) => {
                let Some(id) = id else {
                    return Err(MessageError::invalid(
                        None,
                        "a result response must carry the string or integer id of its request",
                    ));
                };
                if !is_json_object(&result) {
                    return Err(MessageError::invalid(
                        Some(id),
                        "\"result\" must be a JSON object",
                    ));
                }
                Ok(JsonRpcMessage::Response(JsonRpcResponse {
                    id,
                    result,
                    extra: env.extra,
                }))
            }
            (None, Some(error)) => {
                let error = ErrorObject::deserialize(error).map_err(|e| {
                    MessageError::invalid(
                        id.clone(),
                        format!("\"error\" must be an object with an integer \"code\" and a string \"message\": {e}"),
                    )
                })?;
                let id = match (id_value, id) {
                    (None, _) => ErrorResponseId::Absent,
                    (Some(_), Some(id)) => ErrorResponseId::Id(id),
                    (Some(_), None) => ErrorResponseId::Null,
                };
                Ok(JsonRpcMessage::Error(JsonRpcError {
                    id,
                    error,
                    extra: env.extra,
                }))
            }
            (None, None) => Err(MessageError::invalid(
                id,
                "not a JSON-RPC message: it has no \"method\", \"result\" or \"error\"",
            )),
        }
    }

    /// Encodes the message as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The id this message carries, if any.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            JsonRpcMessage::Request(r) => Some(&r.id),
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.request_id(),
            JsonRpcMessage::Notification(_) => None,
        }
    }
}

fn parse_error(e: &serde_json::Error) -> MessageError {
    MessageError {
        kind: MessageErrorKind::Parse,
        id: None,
        message: format!("Parse error: {e}"),
    }
}

fn write_extra<M: SerializeMap>(map: &mut M, extra: &JsonObject) -> Result<(), M::Error> {
    for (k, v) in extra {
        map.serialize_entry(k, v)?;
    }
    Ok(())
}

/// Compact JSON text (no trailing newline): `message.to_string()` is the wire form.
impl fmt::Display for JsonRpcMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for JsonRpcMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonRpcMessage::Request(r) => r.serialize(serializer),
            JsonRpcMessage::Notification(n) => n.serialize(serializer),
            JsonRpcMessage::Response(r) => r.serialize(serializer),
            JsonRpcMessage::Error(e) => e.serialize(serializer),
        }
    }
}

impl Serialize for JsonRpcRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        write_extra(&mut map, &self.extra)?;
        map.end()
    }
}

impl Serialize for JsonRpcNotification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        write_extra(&mut map, &self.extra)?;
        map.end()
    }
}

impl Serialize for JsonRpcResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("result", &self.result)?;
        write_extra(&mut map, &self.extra)?;
        map.end()
    }
}

impl Serialize for JsonRpcError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match &self.id {
            ErrorResponseId::Id(id) => map.serialize_entry("id", id)?,
            ErrorResponseId::Null => map.serialize_entry("id", &())?,
            ErrorResponseId::Absent => {}
        }
        map.serialize_entry("error", &self.error)?;
        write_extra(&mut map, &self.extra)?;
        map.end()
    }
}

/// Serializes `value` as raw JSON text, for `params` and `result`.
///
/// Fails only when a user type refuses to serialize (e.g. a map with non-string keys).
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

impl JsonRpcRequest {
    /// Builds a request from a method and any serializable params object.
    pub fn new(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: &impl Serialize,
    ) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcRequest {
            id: id.into(),
            method: method.into(),
            params: Some(to_raw(params)?),
            extra: JsonObject::new(),
        })
    }
}

impl JsonRpcNotification {
    /// Builds a notification from a method and any serializable params object.
    pub fn new(
        method: impl Into<String>,
        params: &impl Serialize,
    ) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcNotification {
            method: method.into(),
            params: Some(to_raw(params)?),
            extra: JsonObject::new(),
        })
    }
}

impl JsonRpcResponse {
    /// Builds a result response.
    pub fn new(id: RequestId, result: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(JsonRpcResponse {
            id,
            result: to_raw(result)?,
            extra: JsonObject::new(),
        })
    }
}

impl JsonRpcError {
    /// Builds an error response for the request `id` (or for an unreadable id with `None`).
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcError {
            id: id.into(),
            error,
            extra: JsonObject::new(),
        }
    }
}

/// The first checks of any message: `"jsonrpc": "2.0"`, and an id that is a string, an integer
/// or null (`id` is `id_value` read as a request id).
fn check_version_and_id(
    jsonrpc: Option<&Value>,
    id_value: Option<&Value>,
    id: Option<&RequestId>,
) -> Result<(), MessageError> {
    match jsonrpc {
        Some(Value::String(v)) if v == JSONRPC_VERSION => {}
        Some(other) => {
            return Err(MessageError::invalid(
                id.cloned(),
                format!("\"jsonrpc\" must be \"2.0\", found {other}"),
            ));
        }
        None => {
            return Err(MessageError::invalid(
                id.cloned(),
                "the \"jsonrpc\": \"2.0\" member is missing",
            ));
        }
    }
    if let Some(v) = id_value
        && !v.is_null()
        && id.is_none()
    {
        return Err(MessageError::invalid(
            None,
            format!(
                "\"id\" must be a string or an integer, found {}",
                json_kind(v)
            ),
        ));
    }
    Ok(())
}
