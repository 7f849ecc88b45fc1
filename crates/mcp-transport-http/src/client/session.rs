//! A 2025-11-25 session seen from the client: its standalone GET stream (opened after
//! `notifications/initialized`, reopened with `Last-Event-ID`), the GET that resumes a
//! stream, and recovery when the server lost the session (404 on its `Mcp-Session-Id`).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderMap};
use hyper::{Method, Request, StatusCode, Uri};

use super::sse::{DEFAULT_RETRY, MAX_RESUMPTIONS, read_sse};
use super::state::{Link, State};
use crate::headers;
use crate::oauth::Auth;

/// How long `notifications/initialized` waits for the standalone GET stream to open.
pub(super) const LISTENER_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the standalone GET stream of a 2025-11-25 session, on which the server sends
/// requests and notifications unrelated to a POST (the spec's "listening for messages from
/// the server"). A server without one answers 405 and nothing more is tried; a stream the
/// server closes is reopened (with `Last-Event-ID`) while the session lives.
///
/// The returned receiver fires once the first GET has its answer's status.
pub(super) fn open_listener(link: &Link) -> tokio::sync::oneshot::Receiver<()> {
    let (opened_tx, opened) = tokio::sync::oneshot::channel();
    let mut opened_tx = Some(opened_tx);
    let Link {
        url,
        client,
        extra_headers,
        auth,
        state,
        tx,
    } = link.clone();
    let task = tokio::spawn(async move {
        let mut last_event_id: Option<String> = None;
        let mut retry = DEFAULT_RETRY;
        let mut reopened = 0;
        loop {
            let Some(session) = state.session_id.lock().ok().and_then(|s| s.clone()) else {
                return;
            };
            let Some(request) = stream_request(
                &url,
                &session,
                &state,
                last_event_id.as_deref(),
                &extra_headers,
                &auth,
            ) else {
                return;
            };
            let response = client.request(request).await;
            if let Some(opened) = opened_tx.take() {
                let _ = opened.send(());
            }
            let response = match response {
                Ok(r) if r.status() == StatusCode::OK => r,
                Ok(r) => {
                    tracing::debug!(status = %r.status(), "the server offers no standalone SSE stream");
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "opening the standalone SSE stream failed");
                    return;
                }
            };
            let end = read_sse(response.into_body(), &state, &tx, "", None).await;
            if end.abandoned.is_some() {
                return;
            }
            last_event_id = end.last_event_id.or(last_event_id);
            retry = end.retry.unwrap_or(retry);
            reopened += 1;
            if reopened > MAX_RESUMPTIONS {
                return;
            }
            tokio::time::sleep(retry).await;
        }
    });
    if let Ok(mut listener) = link.state.listener.lock()
        && let Some(old) = listener.replace(task.abort_handle())
    {
        old.abort();
    }
    opened
}

/// Starts a new 2025-11-25 session in place of `lost`: the `initialize` this transport sent
/// first, again, then `notifications/initialized`. Requests that saw the same 404 wait for
/// one recovery; a session already replaced is not replaced twice.
pub(super) async fn recover_session(
    client: &crate::net::HttpClient,
    url: &Uri,
    state: &State,
    extra_headers: &HeaderMap,
    auth: &Auth,
    lost: &str,
) -> Result<(), String> {
    let _one = state.recovering.lock().await;
    let current = state.session_id.lock().ok().and_then(|s| s.clone());
    if current.as_deref() != Some(lost) {
        return if current.is_some() {
            Ok(())
        } else {
            Err("the previous recovery failed".into())
        };
    }
    if let Ok(mut s) = state.session_id.lock() {
        *s = None;
    }
    let initialize = state
        .initialize
        .lock()
        .ok()
        .and_then(|i| i.clone())
        .ok_or("no initialize was sent on this transport")?;
    let post = |body: Bytes, session: Option<&str>| {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        if let Some(session) = session {
            builder = builder.header(headers::SESSION_ID, session);
            if let Some(version) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
                builder = builder.header(headers::PROTOCOL_VERSION, version);
            }
        }
        for (name, value) in extra_headers {
            builder = builder.header(name, value);
        }
        for (name, value) in auth.headers(auth.token().as_deref(), "POST", &url.to_string()) {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(body))
            .map_err(|e| format!("could not build the request: {e}"))
    };
    let answer = tokio::time::timeout(RECOVERY_TIMEOUT, client.request(post(initialize, None)?))
        .await
        .map_err(|_| format!("initialize got no answer within {RECOVERY_TIMEOUT:?}"))?
        .map_err(|e| format!("initialize failed: {}", crate::net::describe(&e)))?;
    if !answer.status().is_success() {
        return Err(format!("initialize was answered HTTP {}", answer.status()));
    }
    let fresh = answer
        .headers()
        .get(headers::SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or("the new initialize carried no Mcp-Session-Id")?;
    drop(answer);
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let done = tokio::time::timeout(
        RECOVERY_TIMEOUT,
        client.request(post(initialized, Some(&fresh))?),
    )
    .await
    .map_err(|_| format!("notifications/initialized got no answer within {RECOVERY_TIMEOUT:?}"))?
    .map_err(|e| {
        format!(
            "notifications/initialized failed: {}",
            crate::net::describe(&e)
        )
    })?;
    if !done.status().is_success() {
        return Err(format!(
            "notifications/initialized was answered HTTP {}",
            done.status()
        ));
    }
    if let Ok(mut s) = state.session_id.lock() {
        *s = Some(fresh);
    }
    tracing::info!("the server lost the session; a new one was started");
    Ok(())
}

/// How long each request of a session recovery may take.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// A GET for a 2025-11-25 session's SSE stream (the standalone one, or a POST's stream being
/// resumed after `last_event_id`).
pub(super) fn stream_request(
    url: &Uri,
    session: &str,
    state: &State,
    last_event_id: Option<&str>,
    extra_headers: &HeaderMap,
    auth: &Auth,
) -> Option<Request<Full<Bytes>>> {
    let mut builder = Request::builder()
        .method(Method::GET)
        .uri(url.clone())
        .header(header::ACCEPT, "text/event-stream")
        .header(headers::SESSION_ID, session);
    if let Some(version) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
        builder = builder.header(headers::PROTOCOL_VERSION, version);
    }
    if let Some(id) = last_event_id {
        builder = builder.header(headers::LAST_EVENT_ID, id);
    }
    for (name, value) in extra_headers {
        builder = builder.header(name, value);
    }
    for (name, value) in auth.headers(auth.token().as_deref(), "GET", &url.to_string()) {
        builder = builder.header(name, value);
    }
    builder.body(Full::new(Bytes::new())).ok()
}
