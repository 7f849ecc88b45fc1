//! What the pipeline reads of an incoming request: the MCP headers (each at most once), what
//! `Accept` takes, `Content-Type`, the body under the size cap, the deadline and the minimum
//! rate, and the JSON-RPC message in it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderMap};
use hyper::{Response, StatusCode};
use mcp_server_core::TransportContext;
use mcp_types::frame::ClientFrame;
use mcp_types::jsonrpc::{ErrorResponseId, MessageErrorKind};
use mcp_types::{ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage};

use super::body::McpBody;
use super::config::BODY_RATE_GRACE;
use super::quota::Permit;
use super::reply::{json, plain};

/// The MCP header names as parsed [`HeaderName`]s: a lookup by `&str` parses and validates the
/// name on every call.
pub(crate) mod names {
    use hyper::header::HeaderName;

    use crate::headers;

    pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static(headers::SESSION_ID);
    pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(headers::LAST_EVENT_ID);
    pub(crate) const PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(headers::PROTOCOL_VERSION);
    pub(crate) const METHOD: HeaderName = HeaderName::from_static(headers::METHOD);
    pub(crate) const NAME: HeaderName = HeaderName::from_static(headers::NAME);
}

pub(crate) fn header_str<K>(headers: &HeaderMap, name: K) -> Result<Option<&str>, String>
where
    K: header::AsHeaderName + std::fmt::Display + Copy,
{
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("{name} header appears more than once"));
    }
    first
        .to_str()
        .map(|v| Some(v.trim()))
        .map_err(|_| format!("{name} header is not valid text"))
}

/// What a request's `Accept` headers take: JSON, SSE (`*/*` takes both), read in one pass.
#[derive(Clone, Copy, Default)]
pub(crate) struct Accepted {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

pub(crate) fn accepted_media(headers: &HeaderMap) -> Accepted {
    let mut accepted = Accepted::default();
    let ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for range in ranges {
        match range.split(';').next().unwrap_or("").trim() {
            "*/*" => {
                return Accepted {
                    json: true,
                    sse: true,
                };
            }
            "application/json" => accepted.json = true,
            "text/event-stream" => accepted.sse = true,
            _ => {}
        }
    }
    accepted
}

/// What the route stage knows about a POST besides its message.
pub(crate) struct Incoming {
    pub(crate) headers: Arc<HeaderMap>,
    pub(crate) transport: TransportContext,
    pub(crate) sse: bool,
    /// The request's place under the server's caps.
    pub(crate) permit: Arc<Permit>,
    /// The peer address, when this server accepted the connection (see [`client_key`](super::quota::client_key)).
    pub(crate) peer: Option<std::net::IpAddr>,
}

/// `Content-Type` and `Accept` of a POST.
pub(crate) fn check_post_headers(
    headers: &HeaderMap,
    accepted: Accepted,
) -> Result<(), Response<McpBody>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.trim_start().starts_with("application/json") {
        return Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        ));
    }
    if !accepted.json && !accepted.sse {
        return Err(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// The body as one JSON-RPC message, or the error the spec names (400). With `one_pass`, an
/// ordinary request comes with its params already typed (read in the same pass); a request
/// for a legacy session is served by the session, which reads its params itself.
pub(crate) fn parse_message(
    bytes: &[u8],
    one_pass: bool,
) -> Result<ClientFrame, Response<McpBody>> {
    let frame = if one_pass {
        ClientFrame::from_slice(bytes)
    } else {
        JsonRpcMessage::from_slice(bytes).map(|message| ClientFrame {
            message,
            typed: None,
        })
    };
    frame.map_err(|e| {
        let error_message = match e.kind {
            MessageErrorKind::Parse => "Parse error".to_owned(),
            MessageErrorKind::InvalidRequest => e.message.clone(),
        };
        let response = JsonRpcError {
            id: e
                .id
                .clone()
                .map_or(ErrorResponseId::Null, ErrorResponseId::Id),
            error: ErrorObject::new(e.code(), error_message),
            extra: JsonObject::new(),
        };
        json(StatusCode::BAD_REQUEST, &JsonRpcMessage::Error(response))
    })
}

/// The body, within the size cap (413) and the read deadline (408): a client that sends
/// it slowly holds a connection and a buffer only that long.
pub(crate) async fn read_body<B>(
    body: B,
    max_body: usize,
    min_body_rate: u64,
    body_timeout: Duration,
) -> Result<Bytes, Response<McpBody>>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let read = read_at_rate(Limited::new(body, max_body), min_body_rate);
    match tokio::time::timeout(body_timeout, read).await {
        Err(_) | Ok(Err(BodyRead::TooSlow)) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time",
        )),
        Ok(Ok(collected)) => Ok(collected),
        Ok(Err(BodyRead::Failed(e))) => Err(body_failure(e)),
    }
}

/// Why a body could not be read.
enum BodyRead {
    /// It fell behind the minimum rate.
    TooSlow,
    /// The body itself failed (too large, a broken connection).
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// Collects `body`, failing once it falls behind `rate` bytes a second on average after
/// [`BODY_RATE_GRACE`] (review W25): by then it must have sent `rate` bytes for every second
/// past the grace. `0` reads at any rate.
async fn read_at_rate<B>(body: B, rate: u64) -> Result<Bytes, BodyRead>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let started = tokio::time::Instant::now();
    let mut body = std::pin::pin!(body);
    let mut collected = bytes::BytesMut::new();
    loop {
        let frame = if rate == 0 {
            body.frame().await
        } else {
            // The next bytes must come before the received ones stop covering the time spent.
            let covered = Duration::from_secs_f64(collected.len() as f64 / rate as f64);
            let due = started + BODY_RATE_GRACE + covered;
            match tokio::time::timeout_at(due, body.frame()).await {
                Ok(frame) => frame,
                Err(_) => return Err(BodyRead::TooSlow),
            }
        };
        match frame {
            None => return Ok(collected.freeze()),
            Some(Err(e)) => return Err(BodyRead::Failed(e.into())),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    collected.extend_from_slice(&data);
                }
            }
        }
    }
}

/// The answer to a body that failed to arrive.
fn body_failure(e: Box<dyn std::error::Error + Send + Sync>) -> Response<McpBody> {
    if e.downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
    {
        plain(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
    } else {
        tracing::debug!(error = %e, "reading the request body failed");
        plain(StatusCode::BAD_REQUEST, "Could not read the request body")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn accept_is_read_in_one_pass() {
        let read = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            }
            let a = accepted_media(&headers);
            (a.json, a.sse)
        };
        assert_eq!(read(&[]), (false, false));
        assert_eq!(read(&["application/json, text/event-stream"]), (true, true));
        assert_eq!(read(&["text/event-stream;q=0.5"]), (false, true));
        assert_eq!(
            read(&["text/html", " application/json ;q=1"]),
            (true, false)
        );
        assert_eq!(read(&["*/*"]), (true, true));
        assert_eq!(read(&["application/*"]), (false, false));
    }
}
