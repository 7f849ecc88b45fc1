//! The one path from a server's question to the callback that answers it, in both eras: an
//! entry of a 2026-07-28 `inputRequests` and a 2025-11-25 live request. Which callback, and
//! whether this client declared the capability the question needs, is decided here once.

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::elicitation::ElicitRequestParams;
use mcp_types::mrtr::{InputRequest, InputResponse};
use mcp_types::sampling::CreateMessageRequestParams;
use mcp_types::{ErrorCode, ErrorObject};

use crate::callbacks::{Callbacks, RequestInfo};
use crate::transport::BoxFuture;

/// Why a question gets no callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// This client has no callback for the capability.
    Missing(&'static str),
    /// This client has the callback but did not declare what the question needs (a form or
    /// URL elicitation mode, sampling with tools, roots).
    Undeclared(&'static str),
    /// Not a question a server may ask (a method outside the input requests).
    Unsupported(String),
}

impl Refusal {
    /// The JSON-RPC error a 2025-11-25 server gets for its live request.
    pub(crate) fn to_error(&self) -> ErrorObject {
        match self {
            Refusal::Missing("elicitation") => {
                ErrorObject::new(ErrorCode::INVALID_REQUEST, "Elicitation not supported")
            }
            Refusal::Missing("sampling") => {
                ErrorObject::new(ErrorCode::INVALID_REQUEST, "Sampling not supported")
            }
            Refusal::Missing(_) => {
                ErrorObject::new(ErrorCode::INVALID_REQUEST, "List roots not supported")
            }
            Refusal::Undeclared(capability) => ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("this client did not declare {capability}"),
            ),
            Refusal::Unsupported(method) => ErrorObject::method_not_found(method),
        }
    }
}

/// The callback's answer to `request`, to await; or why there is none.
pub(crate) fn answer(
    callbacks: &Callbacks,
    declared: &ClientCapabilities,
    info: RequestInfo,
    request: InputRequest,
) -> Result<BoxFuture<'static, Result<InputResponse, ErrorObject>>, Refusal> {
    match request {
        InputRequest::Elicit(p) => {
            let cb = callbacks
                .elicit
                .clone()
                .ok_or(Refusal::Missing("elicitation"))?;
            if let Some(capability) = undeclared_elicitation(declared, &p) {
                return Err(Refusal::Undeclared(capability));
            }
            Ok(Box::pin(async move {
                cb(info, p).await.map(InputResponse::Elicit)
            }))
        }
        InputRequest::CreateMessage(p) => {
            let cb = callbacks
                .sample
                .clone()
                .ok_or(Refusal::Missing("sampling"))?;
            if let Some(capability) = undeclared_sampling(declared, &p) {
                return Err(Refusal::Undeclared(capability));
            }
            Ok(Box::pin(async move {
                cb(info, p).await.map(InputResponse::CreateMessage)
            }))
        }
        InputRequest::ListRoots(_) => {
            let cb = callbacks.roots.clone().ok_or(Refusal::Missing("roots"))?;
            if declared.roots.is_none() {
                return Err(Refusal::Undeclared("roots"));
            }
            Ok(Box::pin(async move {
                cb(info).await.map(InputResponse::ListRoots)
            }))
        }
        InputRequest::Unknown { method, .. } => Err(Refusal::Unsupported(method)),
    }
}

/// The elicitation mode a request needs that `declared` lacks, if any.
fn undeclared_elicitation(
    declared: &ClientCapabilities,
    params: &ElicitRequestParams,
) -> Option<&'static str> {
    let elicitation = declared.elicitation.as_ref();
    match params {
        ElicitRequestParams::Form(_) if !elicitation.is_some_and(|e| e.supports_form()) => {
            Some("elicitation (form mode)")
        }
        ElicitRequestParams::Url(_) if !elicitation.is_some_and(|e| e.supports_url()) => {
            Some("elicitation (URL mode)")
        }
        _ => None,
    }
}

/// The sampling capability a request needs that `declared` lacks, if any.
fn undeclared_sampling(
    declared: &ClientCapabilities,
    params: &CreateMessageRequestParams,
) -> Option<&'static str> {
    match &declared.sampling {
        None => Some("sampling"),
        Some(sampling)
            if sampling.tools.is_none() && params.tools.as_ref().is_some_and(|t| !t.is_empty()) =>
        {
            Some("sampling with tools")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info() -> RequestInfo {
        RequestInfo {
            key: "q".into(),
            method: "tools/call".into(),
        }
    }

    fn sampling_with_tools() -> InputRequest {
        InputRequest::CreateMessage(
            serde_json::from_value(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}]
            }))
            .unwrap(),
        )
    }

    /// Both eras take the same decisions: no callback, a capability not declared (sampling
    /// with tools, which a 2025-11-25 server could ask for before), a method that is not a
    /// question; and the live request's error says which.
    #[test]
    fn each_question_gets_its_callback_or_the_reason_it_has_none() {
        let mut callbacks = Callbacks::default();
        let declared: ClientCapabilities = serde_json::from_value(json!({"sampling": {}})).unwrap();
        let refused = answer(&callbacks, &declared, info(), sampling_with_tools()).err();
        assert_eq!(refused, Some(Refusal::Missing("sampling")));
        assert_eq!(
            refused.unwrap().to_error(),
            ErrorObject::new(ErrorCode::INVALID_REQUEST, "Sampling not supported")
        );
        callbacks.set_sample(|_info, _params| async { Err(ErrorObject::internal("unused")) });
        let refused = answer(&callbacks, &declared, info(), sampling_with_tools()).err();
        assert_eq!(refused, Some(Refusal::Undeclared("sampling with tools")));
        assert_eq!(
            refused.unwrap().to_error(),
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "this client did not declare sampling with tools"
            )
        );
        let unknown = InputRequest::Unknown {
            method: "tools/call".into(),
            params: None,
        };
        let refused = answer(&callbacks, &declared, info(), unknown).err();
        assert_eq!(refused, Some(Refusal::Unsupported("tools/call".into())));
        let roots = InputRequest::ListRoots(None);
        assert_eq!(
            answer(&callbacks, &declared, info(), roots).err(),
            Some(Refusal::Missing("roots"))
        );
    }
}
