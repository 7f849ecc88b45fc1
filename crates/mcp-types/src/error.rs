//! JSON-RPC error codes with the meaning MCP gives them, and the error object itself.
//!
//! 2026-07-28 reserves `-32020..-32099` for the spec; the legacy codes `-32002` (resource not
//! found) and `-32042` (URL elicitation required) are kept so old peers can still be read.

use crate::prelude::*;

use core::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::capabilities::ClientCapabilities;
use crate::elicitation::ElicitRequestUrlParams;

/// A JSON-RPC error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// `-32700`: the bytes are not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// `-32600`: valid JSON, but not a valid JSON-RPC request.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// `-32601`: unknown method, a method removed in this revision, or a method whose server
    /// capability is not advertised (HTTP 404 on 2026-07-28).
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// `-32602`: invalid params: a missing `_meta` field, an unknown tool or prompt, a bad
    /// cursor, a resource not found (2026-07-28), an invalid or expired `requestState`.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// `-32603`: internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// `-32020`: an HTTP header disagrees with the body, or a required header is missing.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// `-32021`: the request needs a client capability this request did not declare;
    /// `data.requiredCapabilities` is a capabilities object.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// `-32022`: the protocol version is not served; `data` has `supported` and `requested`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// `-32002`: resource not found, 2025-11-25 and earlier only. Never emitted on 2026-07-28.
    pub const LEGACY_RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// `-32042`: URL elicitation required, 2025-11-25 only. Never emitted on 2026-07-28.
    pub const LEGACY_URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

    /// The spec's name for this code, if it has one.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ErrorCode::PARSE_ERROR => "Parse error",
            ErrorCode::INVALID_REQUEST => "Invalid Request",
            ErrorCode::METHOD_NOT_FOUND => "Method not found",
            ErrorCode::INVALID_PARAMS => "Invalid params",
            ErrorCode::INTERNAL_ERROR => "Internal error",
            ErrorCode::HEADER_MISMATCH => "Header mismatch",
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => "Missing required client capability",
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
            ErrorCode::LEGACY_RESOURCE_NOT_FOUND => "Resource not found",
            ErrorCode::LEGACY_URL_ELICITATION_REQUIRED => "URL elicitation required",
            _ => return None,
        })
    }

    /// Whether 2026-07-28 forbids emitting this code: the legacy `-32000..-32019` range, and
    /// any code in the spec's reserved `-32020..-32099` range it does not define.
    pub fn is_reserved_unassigned(self) -> bool {
        let in_reserved = (-32099..=-32020).contains(&self.0);
        let defined = matches!(
            self,
            ErrorCode::HEADER_MISMATCH
                | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        );
        (in_reserved && !defined) || (-32019..=-32000).contains(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description a person can act on.
    pub message: String,
    /// Additional information, shaped by the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Members the spec does not define, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.0, self.message)
    }
}

impl core::error::Error for ErrorObject {}

/// `data` of `-32022 UnsupportedProtocolVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// The versions the server serves.
    pub supported: Vec<String>,
    /// The version the request asked for.
    pub requested: String,
    /// Members the spec does not define, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data` of `-32021 MissingRequiredClientCapability`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needed, as a capabilities object (never an array).
    #[serde(rename = "requiredCapabilities")]
    pub required_capabilities: ClientCapabilities,
    /// Members the spec does not define, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data` of the legacy `-32042 URLElicitationRequired` error (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredData {
    /// The URL elicitations the client must complete first.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Members the spec does not define, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
            extra: JsonObject::new(),
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32601 Method not found` with the method name as `data`.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")
            .with_data(Value::from(method))
    }

    /// `-32602` with the given message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603` with the given message.
    pub fn internal(message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32020` with a message naming the header.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// `-32022 Unsupported protocol version` with `data: {supported, requested}`.
    pub fn unsupported_protocol_version(supported: &[&str], requested: &str) -> Self {
        let data = UnsupportedProtocolVersionData {
            supported: supported.iter().map(|s| (*s).to_owned()).collect(),
            requested: requested.to_owned(),
            extra: JsonObject::new(),
        };
        ErrorObject::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::to_value(data).unwrap_or(Value::Null))
    }

    /// `-32021` with `data.requiredCapabilities` set to `required`.
    pub fn missing_required_client_capability(
        message: impl Into<String>,
        required: ClientCapabilities,
    ) -> Self {
        let data = MissingRequiredClientCapabilityData {
            required_capabilities: required,
            extra: JsonObject::new(),
        };
        ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
            .with_data(serde_json::to_value(data).unwrap_or(Value::Null))
    }

    /// Reads `data` as `-32022` data, if this is that error and the data has that shape.
    pub fn unsupported_protocol_version_data(&self) -> Option<UnsupportedProtocolVersionData> {
        if self.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
            return None;
        }
        self.data
            .as_ref()
            .and_then(|d| UnsupportedProtocolVersionData::deserialize(d).ok())
    }

    /// Reads `data` as `-32021` data, if this is that error and the data has that shape.
    pub fn missing_required_client_capability_data(
        &self,
    ) -> Option<MissingRequiredClientCapabilityData> {
        if self.code != ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
            return None;
        }
        self.data
            .as_ref()
            .and_then(|d| MissingRequiredClientCapabilityData::deserialize(d).ok())
    }
}
