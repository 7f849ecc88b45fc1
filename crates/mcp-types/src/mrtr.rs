//! Multi-round-trip requests (2026-07-28): `resultType`, `InputRequiredResult` and the
//! `inputRequests`/`inputResponses` unions.
//!
//! `tools/call`, `prompts/get` and `resources/read` may answer `input_required`: the client
//! fulfils every request under its key and retries the same call with `inputResponses` and the
//! `requestState` echoed byte for byte. [`Outcome`] is what such a call decodes into.

use crate::prelude::*;

use alloc::collections::BTreeMap;
use core::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::common::RequestParams;
pub use crate::common::ResultType;
use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::meta::Meta;
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};

/// One request a server needs the client to fulfil, as `{method, params}` with no id.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list` (params optional; usually absent).
    ListRoots(Option<RequestParams>),
    /// A method the schema does not allow here. Kept so a client can reject it by name.
    Unknown {
        /// The method.
        method: String,
        /// The params, as sent.
        params: Option<Value>,
    },
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::Elicit(_) => crate::methods::ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => crate::methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => crate::methods::ROOTS_LIST,
            InputRequest::Unknown { method, .. } => method,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct WireInputRequest<P> {
    method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn wire<P: Serialize, S: Serializer>(
            method: &str,
            params: Option<&P>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            WireInputRequest {
                method: method.to_owned(),
                params,
            }
            .serialize(s)
        }
        match self {
            InputRequest::Elicit(p) => wire(self.method(), Some(p), serializer),
            InputRequest::CreateMessage(p) => wire(self.method(), Some(p), serializer),
            InputRequest::ListRoots(p) => wire(self.method(), p.as_ref(), serializer),
            InputRequest::Unknown { method, params } => wire(method, params.as_ref(), serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = WireInputRequest::<Value>::deserialize(deserializer)?;
        let params = raw.params;
        let need = |what: &str| D::Error::custom(format!("an input request '{what}' needs params"));
        Ok(match raw.method.as_str() {
            crate::methods::ELICITATION_CREATE => InputRequest::Elicit(
                ElicitRequestParams::deserialize(params.ok_or_else(|| need(&raw.method))?)
                    .map_err(D::Error::custom)?,
            ),
            crate::methods::SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage(
                CreateMessageRequestParams::deserialize(params.ok_or_else(|| need(&raw.method))?)
                    .map_err(D::Error::custom)?,
            ),
            crate::methods::ROOTS_LIST => InputRequest::ListRoots(
                params
                    .map(RequestParams::deserialize)
                    .transpose()
                    .map_err(D::Error::custom)?,
            ),
            _ => InputRequest::Unknown {
                method: raw.method,
                params,
            },
        })
    }
}

/// A client's answer to one [`InputRequest`]: a plain result object with no `resultType`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputResponse {
    /// Answers `elicitation/create`.
    Elicit(ElicitResult),
    /// Answers `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answers `roots/list`.
    ListRoots(ListRootsResult),
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::Elicit(r) => r.serialize(serializer),
            InputResponse::CreateMessage(r) => r.serialize(serializer),
            InputResponse::ListRoots(r) => r.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = JsonObject::deserialize(deserializer)?;
        let value = Value::Object(object);
        let Value::Object(o) = &value else {
            unreachable!("built as an object above")
        };
        if o.contains_key("action") {
            ElicitResult::deserialize(value)
                .map(InputResponse::Elicit)
                .map_err(D::Error::custom)
        } else if o.contains_key("roots") {
            ListRootsResult::deserialize(value)
                .map(InputResponse::ListRoots)
                .map_err(D::Error::custom)
        } else if o.contains_key("model") || o.contains_key("role") {
            CreateMessageResult::deserialize(value)
                .map(InputResponse::CreateMessage)
                .map_err(D::Error::custom)
        } else {
            Err(D::Error::custom(
                "an input response must be an ElicitResult (\"action\"), a CreateMessageResult \
                 (\"role\", \"content\", \"model\") or a ListRootsResult (\"roots\")",
            ))
        }
    }
}

/// `inputRequests`: server-chosen keys to the requests of one round.
pub type InputRequests = BTreeMap<String, InputRequest>;
/// `inputResponses`: the same keys to the client's answers.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// `InputRequiredResult`: the server needs input before it can finish.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputRequiredResult {
    /// Always `input_required` when sent by this crate.
    #[serde(rename = "resultType", default = "input_required")]
    pub result_type: ResultType,
    /// The requests of this round (at least one of this and `request_state` is present).
    #[serde(
        rename = "inputRequests",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes byte for byte on the retry.
    #[serde(
        rename = "requestState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn input_required() -> ResultType {
    ResultType::InputRequired
}

impl InputRequiredResult {
    /// A result asking for `requests`, with optional state.
    pub fn new(requests: InputRequests, request_state: Option<String>) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: (!requests.is_empty()).then_some(requests),
            request_state,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A state-only result ("load shedding"): the client retries with the state.
    pub fn state_only(request_state: impl Into<String>) -> Self {
        InputRequiredResult::new(BTreeMap::new(), Some(request_state.into()))
    }

    /// Whether the result is well formed: at least one of `inputRequests` and `requestState`.
    pub fn is_well_formed(&self) -> bool {
        self.input_requests.as_ref().is_some_and(|r| !r.is_empty()) || self.request_state.is_some()
    }
}

/// What `tools/call`, `prompts/get` and `resources/read` return on 2026-07-28: the complete
/// result or a request for input.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// `resultType: complete` (or absent, from a legacy peer).
    Complete(T),
    /// `resultType: input_required`.
    InputRequired(InputRequiredResult),
}

/// Why a result could not be read as an [`Outcome`].
#[derive(Debug)]
pub enum OutcomeError {
    /// A `resultType` this crate does not know; the response is invalid (the spec's MUST).
    UnrecognizedResultType(String),
    /// The result does not have the shape its `resultType` says.
    Malformed(serde_json::Error),
}

impl fmt::Display for OutcomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutcomeError::UnrecognizedResultType(t) => {
                write!(f, "the result has an unrecognized resultType '{t}'")
            }
            OutcomeError::Malformed(e) => write!(f, "the result is malformed: {e}"),
        }
    }
}

impl core::error::Error for OutcomeError {}

#[derive(Deserialize)]
struct ResultTypeProbe {
    #[serde(rename = "resultType", default)]
    result_type: Option<ResultType>,
}

impl<T: for<'de> Deserialize<'de>> Outcome<T> {
    /// Reads a result from its raw JSON text, switching on `resultType` (absent means
    /// `complete`).
    pub fn from_raw(raw: &RawValue) -> Result<Self, OutcomeError> {
        Self::from_str(raw.get())
    }

    /// Reads a result from JSON text, switching on `resultType` (absent means `complete`).
    #[allow(clippy::should_implement_trait)] // the error type is ours, not `FromStr`'s shape
    pub fn from_str(text: &str) -> Result<Self, OutcomeError> {
        let probe: ResultTypeProbe = serde_json::from_str(text).map_err(OutcomeError::Malformed)?;
        match probe.result_type {
            None | Some(ResultType::Complete) => serde_json::from_str(text)
                .map(Outcome::Complete)
                .map_err(OutcomeError::Malformed),
            Some(ResultType::InputRequired) => serde_json::from_str(text)
                .map(Outcome::InputRequired)
                .map_err(OutcomeError::Malformed),
            Some(ResultType::Other(t)) => Err(OutcomeError::UnrecognizedResultType(t)),
        }
    }
}

impl<T: Serialize> Serialize for Outcome<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Complete(r) => r.serialize(serializer),
            Outcome::InputRequired(r) => r.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallToolResult;
    use serde_json::json;

    #[test]
    fn outcome_switches_on_result_type() {
        let o = Outcome::<CallToolResult>::from_str(r#"{"content":[]}"#).unwrap();
        assert!(matches!(o, Outcome::Complete(_)));
        let o = Outcome::<CallToolResult>::from_str(
            r#"{"resultType":"input_required","requestState":"s"}"#,
        )
        .unwrap();
        let Outcome::InputRequired(r) = o else {
            panic!("expected input_required")
        };
        assert_eq!(r.request_state.as_deref(), Some("s"));
        let e = Outcome::<CallToolResult>::from_str(r#"{"resultType":"task","taskId":"t"}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the result has an unrecognized resultType 'task'"
        );
    }

    #[test]
    fn roots_list_input_request_has_no_params_and_unknown_methods_are_kept() {
        let r: InputRequest = serde_json::from_value(json!({"method":"roots/list"})).unwrap();
        assert_eq!(r, InputRequest::ListRoots(None));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"method":"roots/list"})
        );
        let r: InputRequest =
            serde_json::from_value(json!({"method":"tools/call","params":{"a":1}})).unwrap();
        assert_eq!(r.method(), "tools/call");
    }

    #[test]
    fn input_response_shapes_are_told_apart() {
        let r: InputResponse = serde_json::from_value(json!({"action":"decline"})).unwrap();
        assert!(matches!(r, InputResponse::Elicit(_)));
        let r: InputResponse = serde_json::from_value(json!({"roots":[]})).unwrap();
        assert!(matches!(r, InputResponse::ListRoots(_)));
        let r: InputResponse = serde_json::from_value(
            json!({"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}),
        )
        .unwrap();
        assert!(matches!(r, InputResponse::CreateMessage(_)));
        let e = serde_json::from_value::<InputResponse>(json!({"x":1})).unwrap_err();
        assert!(
            e.to_string().starts_with("an input response must be"),
            "{e}"
        );
        assert!(serde_json::from_value::<InputResponse>(json!(12345)).is_err());
    }
}

/// Access to the multi-round-trip fields of the three params types that carry them
/// (`tools/call`, `prompts/get`, `resources/read`).
pub trait RetryParams {
    /// `inputResponses`.
    fn input_responses(&self) -> Option<&InputResponses>;
    /// `requestState` as sent (any JSON type).
    fn request_state_value(&self) -> Option<&Value>;
    /// Sets `requestState` (a string) or removes it.
    fn set_request_state(&mut self, state: Option<String>);
    /// Sets `inputResponses` or removes it.
    fn set_input_responses(&mut self, responses: Option<InputResponses>);

    /// `requestState`, if it is a string.
    fn request_state(&self) -> Option<&str> {
        self.request_state_value().and_then(Value::as_str)
    }
}

macro_rules! retry_params {
    ($($t:ty),*) => {$(
        impl RetryParams for $t {
            fn input_responses(&self) -> Option<&InputResponses> { self.input_responses.as_ref() }
            fn request_state_value(&self) -> Option<&Value> { self.request_state.as_ref() }
            fn set_request_state(&mut self, state: Option<String>) { self.request_state = state.map(Value::String); }
            fn set_input_responses(&mut self, responses: Option<InputResponses>) { self.input_responses = responses; }
        }
    )*};
}

retry_params!(
    crate::tools::CallToolRequestParams,
    crate::prompts::GetPromptRequestParams,
    crate::resources::ReadResourceRequestParams
);
