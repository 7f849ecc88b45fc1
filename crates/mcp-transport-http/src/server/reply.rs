//! The responses every room answers with: plain text, one JSON-RPC message, an SSE stream,
//! and the statuses of refusals (405, 202, 503 with `Retry-After`), with the status a
//! JSON-RPC error takes on the 2026-07-28 path.

use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use mcp_types::{ErrorCode, ErrorObject, JsonRpcError, JsonRpcMessage, RequestId};

use super::body::McpBody;

pub(crate) fn plain(status: StatusCode, text: &'static str) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn json(status: StatusCode, message: &JsonRpcMessage) -> Response<McpBody> {
    // Straight into one buffer (`to_string` would go through `Display` and copy twice).
    let mut bytes = Vec::with_capacity(512);
    if let Err(e) = serde_json::to_writer(&mut bytes, message) {
        tracing::error!(error = %e, "a response could not be serialized");
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    }
    let mut response = Response::new(McpBody::full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The status for a JSON-RPC error on the 2026-07-28 path.
pub(crate) fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::INVALID_PARAMS
        | ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

pub(crate) fn error(id: Option<RequestId>, error: ErrorObject) -> Response<McpBody> {
    let status = status_for(error.code);
    json(status, &JsonRpcMessage::Error(JsonRpcError::new(id, error)))
}

/// 503 with `Retry-After`, the refusal of every capacity limit.
pub(crate) fn busy(text: &'static str) -> Response<McpBody> {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

pub(crate) fn busy_owned(text: String) -> Response<McpBody> {
    let mut response = plain_owned(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

pub(crate) fn plain_owned(status: StatusCode, text: String) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(text));
    *response.status_mut() = status;
    response
}

pub(crate) fn not_allowed() -> Response<McpBody> {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

pub(crate) fn accepted() -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

pub(crate) fn sse_response(body: McpBody) -> Response<McpBody> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::BodyExt;

    #[test]
    fn a_json_response_is_the_message_serialized() {
        let message = JsonRpcMessage::Error(JsonRpcError::new(
            Some(RequestId::Number(3)),
            ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad \"quote\""),
        ));
        let response = json(StatusCode::BAD_REQUEST, &message);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            HeaderValue::from_static("application/json")
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = runtime
            .block_on(response.into_body().collect())
            .unwrap()
            .to_bytes();
        assert_eq!(body, Bytes::from(message.to_string()));
    }
}
