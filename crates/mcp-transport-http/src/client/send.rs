//! Sending one message, in stages: a 2026-07-28 cancellation is the request's stream dropped
//! ([`cancel_stateless`]); anything else is a POST with the headers its era needs
//! ([`base_headers`]), run as a task tracked by request id ([`spawn_tracked`]) that sends it,
//! authorizing on 401/403 ([`post`]), starts a new session when the server lost this one
//! ([`session_lost`]), and reads the answer as SSE, resuming a stream that closed early
//! ([`follow_sse`]), or as JSON ([`read_json`]). A request that fails here is answered with an
//! error made up for its caller ([`fail`]).

use std::future::Future;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use mcp_client::{Delivery, LocalFailure};
use mcp_types::methods;
use mcp_types::{
    ErrorCode, ErrorObject, JsonRpcError, JsonRpcMessage, JsonRpcNotification, RequestId,
};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::headers::{deliver, request_headers};
use super::retry_after::retry_after;
use super::session::{LISTENER_OPEN_TIMEOUT, open_listener, recover_session, stream_request};
use super::sse::{DEFAULT_RETRY, MAX_RESUMPTIONS, StreamEnd, read_sse};
use super::state::{InFlightGuard, Link, State};
use crate::headers;
use crate::oauth::{Attempts, Retry};

/// Sends `message` on `link`: see the module's stages.
pub(super) async fn send(link: &Link, message: JsonRpcMessage) -> Result<(), String> {
    // While a lost 2025-11-25 session is being replaced, a message waits for the new one
    // rather than go out with none.
    if link.state.initialize.lock().is_ok_and(|i| i.is_some()) {
        drop(link.state.recovering.lock().await);
    }
    let session = link.state.session_id.lock().ok().and_then(|s| s.clone());
    // A cancellation on 2026-07-28 HTTP is dropping the request's stream.
    if let JsonRpcMessage::Notification(n) = &message
        && session.is_none()
    {
        cancel_stateless(&link.state, n);
        return Ok(());
    }
    let method = match &message {
        JsonRpcMessage::Request(r) => Some((r.id.clone(), r.method.clone())),
        _ => None,
    };
    let base_headers = base_headers(link, &message)?;
    let payload = Bytes::from(message.to_string());
    if matches!(&message, JsonRpcMessage::Request(r) if r.method == methods::INITIALIZE)
        && let Ok(mut initialize) = link.state.initialize.lock()
    {
        *initialize = Some(payload.clone());
    }
    let exchange = Exchange {
        link: link.clone(),
        base_headers,
        payload,
        sent_session: session.clone(),
        id: method.as_ref().map(|(id, _)| id.clone()),
        method: method.map(|(_, m)| m).unwrap_or_default(),
    };
    let untracked = spawn_tracked(&link.state, message_id(&message), exchange.run());
    // Notifications and answers are posted in order: `notifications/initialized`
    // reaches the server before the session's next request.
    if let Some(task) = untracked {
        let _ = task.await;
    }
    if let JsonRpcMessage::Notification(n) = &message
        && n.method == methods::NOTIFICATION_INITIALIZED
        && session.is_some()
    {
        // Wait until the stream is open (or refused), so a server request sent during
        // the session's first call finds it.
        let opened = open_listener(link);
        let _ = tokio::time::timeout(LISTENER_OPEN_TIMEOUT, opened).await;
    }
    Ok(())
}

/// A notification outside a session: `notifications/cancelled` aborts the request it names,
/// which drops that request's stream; nothing is posted.
fn cancel_stateless(state: &State, notification: &JsonRpcNotification) {
    if notification.method == methods::NOTIFICATION_CANCELLED
        && let Some(id) = notification
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p.get("requestId").and_then(RequestId::from_value))
        && let Some(handle) = state.in_flight.lock().ok().and_then(|mut f| f.remove(&id))
    {
        handle.abort();
    }
}

/// The headers of the POST carrying `message`: its media types, the MCP headers of its era,
/// and the transport's own.
fn base_headers(
    link: &Link,
    message: &JsonRpcMessage,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut base_headers: Vec<(HeaderName, HeaderValue)> = vec![
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        ),
    ];
    for (name, value) in request_headers(&link.state, message) {
        let value = HeaderValue::from_str(&value).map_err(|e| format!("header {name}: {e}"))?;
        base_headers.push((name, value));
    }
    for (name, value) in &link.extra_headers {
        base_headers.push((name.clone(), value.clone()));
    }
    Ok(base_headers)
}

/// Runs `task`; a request's task (`id`) is tracked in flight, so that a cancellation or
/// `close` can abort it, and anything else is handed back to be awaited in order.
fn spawn_tracked(
    state: &State,
    id: Option<RequestId>,
    task: impl Future<Output = ()> + Send + 'static,
) -> Option<JoinHandle<()>> {
    // The map stays locked until the new task's handle is in it, so a task that ends at
    // once still finds (and removes) its own entry.
    let mut in_flight = state.in_flight.lock().ok();
    let task = tokio::spawn(task);
    match id {
        Some(id) => {
            if let Some(f) = in_flight.as_mut() {
                f.insert(id, task.abort_handle());
            }
            None
        }
        None => Some(task),
    }
}

/// One POST and its answer, as its task runs it.
struct Exchange {
    link: Link,
    base_headers: Vec<(HeaderName, HeaderValue)>,
    payload: Bytes,
    /// The session the message was sent in, if any.
    sent_session: Option<String>,
    /// The request's id; `None` for a notification or an answer.
    id: Option<RequestId>,
    /// The request's method; empty for a notification or an answer.
    method: String,
}

impl Exchange {
    async fn run(self) {
        let Exchange {
            link,
            base_headers,
            payload,
            sent_session,
            id,
            method,
        } = self;
        let _guard = InFlightGuard {
            state: link.state.clone(),
            id: id.clone(),
        };
        let response = match post(&link, &base_headers, &payload).await {
            Ok(response) => response,
            Err(failure) => return fail(&link, id.as_ref(), failure).await,
        };
        let status = response.status();
        // The server no longer knows the session (it expired, or its instance
        // restarted): start a new one, as the spec asks, and report this request
        // not processed; the client decides whether to send it again.
        if status == StatusCode::NOT_FOUND
            && method != methods::INITIALIZE
            && let Some(lost) = sent_session.as_deref()
        {
            return fail(&link, id.as_ref(), session_lost(&link, lost).await).await;
        }
        let retry_after = retry_after(response.headers());
        if method == methods::INITIALIZE
            && let Some(session) = response
                .headers()
                .get(headers::SESSION_ID)
                .and_then(|v| v.to_str().ok())
            && let Ok(mut s) = link.state.session_id.lock()
        {
            *s = Some(session.to_owned());
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = response.into_body();
        let read = if content_type.starts_with("text/event-stream") {
            follow_sse(&link, body, &method, id.as_ref()).await
        } else {
            let sent = (method.as_str(), id.as_ref(), sent_session.as_deref());
            read_json(&link, body, (status, retry_after), sent).await
        };
        if let Err(failure) = read {
            fail(&link, id.as_ref(), failure).await;
        }
    }
}

/// Answers the request `id` with an error made up here (and remembers why, for
/// `local_failure`), or logs a refused message that has no id.
async fn fail(link: &Link, id: Option<&RequestId>, failure: LocalFailure) {
    let why = failure.why.clone();
    if let Some(id) = id {
        link.state.record_failure(id, failure);
        let error = ErrorObject::new(ErrorCode(-32000), why);
        let _ = link
            .tx
            .send(JsonRpcMessage::Error(JsonRpcError::new(
                Some(id.clone()),
                error,
            )))
            .await;
    } else {
        tracing::warn!(%why, "a message the client sent was refused");
    }
}

/// POSTs `payload` with `base_headers` and the current token, again after an authorization
/// the server asked for (401, 403 `insufficient_scope`, a DPoP nonce): the response to handle,
/// or why there is none (a connection that could not be opened: not processed; one that broke
/// once the request was on its way: it may have run).
async fn post(
    link: &Link,
    base_headers: &[(HeaderName, HeaderValue)],
    payload: &Bytes,
) -> Result<Response<Incoming>, LocalFailure> {
    let Link {
        url,
        client,
        auth,
        state,
        ..
    } = link;
    let mut attempts = Attempts::default();
    // Where this POST goes: the endpoint, or where it redirected to (`307`/`308`, same origin).
    let mut url = url.clone();
    let mut redirects = 0;
    loop {
        let mut request = Request::builder().method(Method::POST).uri(url.clone());
        for (name, value) in base_headers {
            request = request.header(name, value);
        }
        let mut request = request
            .body(Full::new(payload.clone()))
            .map_err(|e| LocalFailure::fatal(format!("could not build the request: {e}")))?;
        let token = auth.token();
        for (name, value) in auth.headers(token.as_deref(), "POST", &url.to_string()) {
            request.headers_mut().insert(name, value);
        }
        let response = match client.request(request).await {
            Ok(response) => response,
            Err(e) => {
                let why = format!("HTTP request failed: {}", crate::net::describe(&e));
                if let Ok(mut err) = state.error.lock() {
                    *err = Some(why.clone());
                }
                let delivery = match (e.is_connect(), refused_for_now(&e)) {
                    // Nothing listens, yet: a server restarting. Sending again may reach it.
                    (true, true) => Delivery::NotProcessed,
                    // A certificate refused, a name that does not resolve: it would again.
                    (true, false) => Delivery::Final,
                    (false, _) => Delivery::Unknown,
                };
                return Err(LocalFailure {
                    why,
                    delivery,
                    retry_after: None,
                });
            }
        };
        if matches!(
            response.status(),
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        ) {
            match same_origin_redirect(&url, &response) {
                Ok(next) if redirects < MAX_REDIRECTS => {
                    redirects += 1;
                    url = next;
                    continue;
                }
                Ok(_) => {
                    return Err(LocalFailure::fatal(format!(
                        "HTTP {}: more than {MAX_REDIRECTS} redirects",
                        response.status()
                    )));
                }
                Err(why) => {
                    return Err(LocalFailure::fatal(format!(
                        "HTTP {}: {why}",
                        response.status()
                    )));
                }
            }
        }
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let dpop_nonce = response
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match auth
            .refused(
                &url.to_string(),
                response.status(),
                challenge.as_deref(),
                dpop_nonce.as_deref(),
                token.as_deref(),
                &mut attempts,
            )
            .await
        {
            Retry::Again => continue,
            Retry::Fail(why) => return Err(LocalFailure::fatal(why)),
            Retry::Deliver => return Ok(response),
        }
    }
}

/// How many `307`/`308` redirects one POST follows.
const MAX_REDIRECTS: u32 = 5;

/// Where a `307`/`308` answer to a POST to `from` sends it again, when that is on the same
/// origin (scheme, host and port): a redirect keeps the method and the body, and the request
/// carries the session and the credentials, which go to no other origin. Python SDK 1.x servers
/// redirect `/mcp/` to `/mcp`.
fn same_origin_redirect(from: &Uri, response: &Response<Incoming>) -> Result<Uri, String> {
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or("a redirect without a Location")?;
    let target: Uri = if location.starts_with('/') && !location.starts_with("//") {
        let mut parts = from.clone().into_parts();
        parts.path_and_query = Some(
            location
                .parse()
                .map_err(|_| format!("a redirect to an unreadable Location {location:?}"))?,
        );
        Uri::from_parts(parts)
            .map_err(|_| format!("a redirect to an unreadable Location {location:?}"))?
    } else {
        location
            .parse()
            .map_err(|_| format!("a redirect to an unreadable Location {location:?}"))?
    };
    if target.scheme() != from.scheme() || target.authority() != from.authority() {
        return Err(format!(
            "a redirect to another origin ({location}), not followed: the request carries this \
             server's session and credentials; connect to that URL instead"
        ));
    }
    Ok(target)
}

/// Whether a connection failed in a way that may pass (refused, reset, timed out: a server
/// restarting or overloaded), rather than one that will not (a TLS certificate refused, an
/// unknown host).
fn refused_for_now(error: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind;
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::TimedOut
                    | ErrorKind::NotConnected
            );
        }
        cause = e.source();
    }
    false
}

/// Why a request sent in session `lost`, which the server no longer knows, failed, once a
/// new session was started in its place (or could not be): the server did not process it.
async fn session_lost(link: &Link, lost: &str) -> LocalFailure {
    let recovered = recover_session(
        &link.client,
        &link.url,
        &link.state,
        &link.extra_headers,
        &link.auth,
        lost,
    )
    .await;
    match recovered {
        Ok(()) => LocalFailure {
            why: "the server lost this client's session (404 Session not found) before \
                  processing this request; a new session was started"
                .to_owned(),
            delivery: Delivery::NotProcessed,
            retry_after: None,
        },
        Err(e) => LocalFailure::fatal(format!(
            "the server lost this client's session (404 Session not found) \
             and a new session could not be started: {e}"
        )),
    }
}

/// Reads an SSE answer, delivering its messages. A 2025-11-25 server may close the stream
/// before answering (SSE polling, or a proxy that dropped it): it is resumed with GET and
/// `Last-Event-ID` after the delay it asked for, up to [`MAX_RESUMPTIONS`] times. Fails when
/// the stream was abandoned, or ended unanswered and could not be resumed (the request may
/// have run).
async fn follow_sse(
    link: &Link,
    body: Incoming,
    method: &str,
    id: Option<&RequestId>,
) -> Result<(), LocalFailure> {
    let Link {
        url,
        client,
        extra_headers,
        auth,
        state,
        tx,
    } = link;
    let mut end = read_sse(body, state, tx, method, id).await;
    let mut resumptions = 0;
    while let (false, None, Some(last_event_id)) =
        (end.answered, &end.abandoned, end.last_event_id.clone())
    {
        let session = state.session_id.lock().ok().and_then(|s| s.clone());
        let Some(session) = session.filter(|_| id.is_some()) else {
            break;
        };
        if resumptions == MAX_RESUMPTIONS {
            break;
        }
        resumptions += 1;
        tokio::time::sleep(end.retry.unwrap_or(DEFAULT_RETRY)).await;
        let Some(request) = stream_request(
            url,
            &session,
            state,
            Some(&last_event_id),
            extra_headers,
            auth,
        ) else {
            break;
        };
        let resumed = match client.request(request).await {
            Ok(r) if r.status() == StatusCode::OK => r,
            Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                // The server lost the session while the request ran: the next requests
                // need a new one; whether this one ran, nobody can tell.
                let recovered =
                    recover_session(client, url, state, extra_headers, auth, &session).await;
                let why = match recovered {
                    Ok(()) => "the server lost this client's session while the request ran \
                               (404 on resuming its stream); a new session was started"
                        .to_owned(),
                    Err(e) => format!(
                        "the server lost this client's session while the request ran \
                         (404 on resuming its stream), and a new session could not be started: {e}"
                    ),
                };
                return Err(LocalFailure {
                    why,
                    delivery: Delivery::Unknown,
                    retry_after: None,
                });
            }
            Ok(r) => {
                tracing::warn!(status = %r.status(), "the server refused to resume an SSE stream");
                break;
            }
            Err(e) => {
                tracing::warn!(error = %e, "resuming an SSE stream failed");
                break;
            }
        };
        let next = read_sse(resumed.into_body(), state, tx, method, id).await;
        end = StreamEnd {
            answered: next.answered,
            last_event_id: next.last_event_id.or(Some(last_event_id)),
            retry: next.retry.or(end.retry),
            abandoned: next.abandoned,
        };
    }
    match (end.answered, end.abandoned) {
        (true, _) => Ok(()),
        (false, Some(why)) => Err(LocalFailure::fatal(why)),
        (false, None) if id.is_none() => Ok(()),
        (false, None) => Err(LocalFailure {
            why: "the answer's event stream ended before the answer".to_owned(),
            delivery: Delivery::Unknown,
            retry_after: None,
        }),
    }
}

/// What an answer with `status` that carries no MCP answer says of its request: a success or
/// a gateway's error may hide a request that ran; `429` and `503` refuse it before it runs;
/// anything else would fail again.
fn delivery(status: StatusCode) -> Delivery {
    match status.as_u16() {
        200..=299 | 502 | 504 => Delivery::Unknown,
        429 | 503 => Delivery::NotProcessed,
        _ => Delivery::Final,
    }
}

/// Reads a JSON answer (within the message size limit) and delivers it; an empty or `202`
/// answer delivers nothing, and fails only when its status is not a success. An error status
/// whose body does not answer request `id` (a gateway's page, a JSON-RPC error without the
/// id) fails the request, saying whether it may have run and how long the server asked to
/// wait (`Retry-After`).
async fn read_json(
    link: &Link,
    body: Incoming,
    (status, retry_after): (StatusCode, Option<std::time::Duration>),
    (method, id, sent_session): (&str, Option<&RequestId>, Option<&str>),
) -> Result<(), LocalFailure> {
    let limit = link.state.limits.max_message;
    let refused = |why: String| LocalFailure {
        why,
        delivery: delivery(status),
        retry_after,
    };
    let bytes = match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(LocalFailure::fatal(format!(
                "the server's answer is larger than the {limit}-byte limit \
                 (HttpTransport::max_message_size)"
            )));
        }
        Err(e) => {
            return Err(LocalFailure {
                why: format!("reading the response failed: {e}"),
                delivery: Delivery::Unknown,
                retry_after: None,
            });
        }
    };
    if status == StatusCode::ACCEPTED || bytes.is_empty() {
        if status.is_success() {
            return Ok(());
        }
        return Err(refused(format!("HTTP {status}")));
    }
    let snippet = || {
        String::from_utf8_lossy(&bytes)
            .chars()
            .take(200)
            .collect::<String>()
    };
    // (Match guards bind nothing here: `if let` guards are newer than the declared minimum
    // Rust, 1.88.)
    match (JsonRpcMessage::from_slice(&bytes), id, sent_session) {
        (Ok(message), _, _) if status.is_success() || id.is_none() || message.id() == id => {
            deliver(&link.state, &link.tx, method, message).await;
            Ok(())
        }
        // The session is gone, said the way servers built on the TypeScript SDK v1's README
        // say it (400, "Bad Request: No valid session ID provided", id null) rather than with
        // the 404 the spec asks for: start a new one, as for a 404.
        (Ok(JsonRpcMessage::Error(e)), _, Some(lost))
            if status == StatusCode::BAD_REQUEST
                && method != methods::INITIALIZE
                && e.id.request_id() != id
                && e.error.message.to_ascii_lowercase().contains("session") =>
        {
            Err(session_lost(link, lost).await)
        }
        // A POST carries one request, so a JSON-RPC error refusing the POST with a client
        // error status is the server's answer to that request, whatever id it names: a
        // 2025-11-25 server that could not read the request's id as its own (TypeScript SDK
        // v1: `null`; Python SDK 1.x: `"server-error"`, "Missing session ID"). It reaches the
        // caller as the server's error, which is how a `server/discover` probe learns that
        // the server is of the legacy era. Refusals of the credentials (`401`, `403`, `407`)
        // and refusals for now (`408`, `429`) stay the transport's.
        (Ok(JsonRpcMessage::Error(e)), Some(id), _)
            if status.is_client_error()
                && !matches!(status.as_u16(), 401 | 403 | 407 | 408 | 429) =>
        {
            let answer = JsonRpcError::new(Some(id.clone()), e.error);
            deliver(&link.state, &link.tx, method, JsonRpcMessage::Error(answer)).await;
            Ok(())
        }
        (Ok(JsonRpcMessage::Error(e)), _, _) => {
            Err(refused(format!("HTTP {status}: {}", e.error.message)))
        }
        _ => Err(refused(format!("HTTP {status}: {}", snippet()))),
    }
}

/// The id a request's task is tracked under.
fn message_id(message: &JsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}
