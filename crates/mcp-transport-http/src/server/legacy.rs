//! 2025-11-25 sessions: `initialize` opening one bound to its principal, a message of a
//! session (under the session's own in-flight cap), its GET stream, DELETE, and the registry
//! that sweeps idle sessions, keeps each client within its share and closes every session at
//! shutdown. Recording and resuming their SSE streams is `resume.rs`'s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use mcp_server_core::events::{EventStore, EventStoreError};
use mcp_server_core::seal::Principal;
use mcp_server_core::{ResponseStream, Service, Session, TransportContext};
use mcp_types::{ErrorObject, JsonRpcMessage};
use tokio::sync::Semaphore;

use super::body::{McpBody, StreamSlot};
use super::config::Config;
use super::quota::{Held, client_key};
use super::reply::{accepted, busy, busy_owned, error, json, not_allowed, plain};
use super::request::Incoming;
use super::resume::{
    GET_STREAM, Resumable, Resumptions, get_stream, history_refusal, legacy, parse_event_id,
    resume_post,
};
use crate::headers;

/// A legacy session on this endpoint, bound to the principal that opened it.
pub(crate) struct LegacySession {
    id: String,
    session: Session,
    principal: Option<Principal>,
    stream: Arc<StreamSlot>,
    /// Numbers the session's POST streams (`p1`, `p2`, …) for their event ids.
    posts: Arc<AtomicU64>,
    /// Which POST streams run, and which streams (or parts of the GET stream) cannot be
    /// resumed.
    resumptions: Arc<Mutex<Resumptions>>,
    /// The session's own in-flight cap (`SessionLimits::max_in_flight`), detached requests
    /// included.
    in_flight: Arc<Semaphore>,
    /// Whose share of the session pool it counts against (see [`client_key`]).
    client: Option<String>,
}

/// The live legacy sessions of one endpoint, and how they live (from its configuration).
pub(crate) struct Sessions {
    live: Mutex<HashMap<String, Arc<LegacySession>>>,
    /// Whether the idle sweeper runs.
    sweeper: AtomicBool,
    idle: Duration,
    max: usize,
    per_client: usize,
    id_prefix: String,
    events: Arc<dyn EventStore>,
}

impl Sessions {
    pub(crate) fn new(config: &Config) -> Self {
        Sessions {
            live: Mutex::new(HashMap::new()),
            sweeper: AtomicBool::new(false),
            idle: config.session_idle,
            max: config.max_sessions,
            per_client: config.sessions_per_client,
            id_prefix: config.session_id_prefix.clone(),
            events: config.events.clone(),
        }
    }

    /// Opens a session with a successful `initialize` (a refused one leaves nothing behind).
    pub(crate) async fn initialize(
        self: &Arc<Self>,
        service: &Service,
        request: mcp_types::JsonRpcRequest,
        incoming: Incoming,
    ) -> Response<McpBody> {
        if self.live_sessions() >= self.max {
            self.sweep();
            if self.live_sessions() >= self.max {
                return busy("Too many sessions; try again later");
            }
        }
        let client = client_key(incoming.transport.principal.as_ref(), incoming.peer);
        if let Some(client) = &client {
            self.make_room_for(client);
        }
        let id = new_session_id();
        let id = if id.is_empty() {
            id
        } else {
            format!("{}{id}", self.id_prefix)
        };
        if id.is_empty() {
            return error(
                Some(request.id),
                ErrorObject::internal("no randomness to mint a session id"),
            );
        }
        let principal = incoming.transport.principal.clone();
        // The session keeps who opened it, never the handshake's headers (review W5: up to
        // hyper's ~400 KB of them, for the session's whole life); each later request brings
        // its own.
        let kept = TransportContext {
            principal: incoming.transport.principal.clone(),
            network_transport: Some("tcp"),
            ..TransportContext::default()
        };
        let (session, unsolicited) = service.connect(kept);
        let answer = session
            .handle_with(
                JsonRpcMessage::Request(request),
                incoming.transport,
                incoming.sse,
            )
            .map(ResponseStream::collect);
        let answer = match answer {
            Some(answer) => answer.await.into_iter().next(),
            None => None,
        };
        // Only a successful handshake opens a session; a refused one leaves nothing behind.
        let Some(answer @ JsonRpcMessage::Response(_)) = answer else {
            return match answer {
                Some(message) => json(StatusCode::OK, &message),
                None => accepted(),
            };
        };
        let session = Arc::new(LegacySession {
            id: id.clone(),
            principal,
            stream: Arc::new(StreamSlot::new(unsolicited)),
            posts: Arc::default(),
            resumptions: Arc::default(),
            in_flight: Arc::new(Semaphore::new(session.limits().max_in_flight.max(1))),
            session,
            client,
        });
        if let Ok(mut sessions) = self.live.lock() {
            sessions.insert(id.clone(), session);
        }
        self.start_sweeper();
        let mut response = json(StatusCode::OK, &answer);
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(headers::SESSION_ID, value);
        }
        response
    }

    /// A message of legacy session `id`, sent by the principal that opened it.
    pub(crate) async fn in_session(
        &self,
        id: &str,
        message: JsonRpcMessage,
        incoming: Incoming,
    ) -> Response<McpBody> {
        let Some(session) = self.session(id, incoming.transport.principal.as_ref()) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        // Only requests run handlers: notifications and the client's answers to the server's
        // own questions always get through, or a session at its cap could never finish.
        let session_permit = match &message {
            JsonRpcMessage::Request(_) => match session.in_flight.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    return busy_owned(format!(
                        "Too many requests in flight on this session (at most {}); retry shortly",
                        session.session.limits().max_in_flight
                    ));
                }
            },
            _ => None,
        };
        let held = Held {
            _server: incoming.permit.clone(),
            _session: session_permit,
        };
        let resumable = incoming.sse.then(|| Resumable {
            events: self.events.clone(),
            session: session.id.clone(),
            posts: session.posts.clone(),
            streams: session.resumptions.clone(),
        });
        legacy(
            &session.session,
            message,
            incoming.transport,
            resumable,
            held,
        )
        .await
    }

    /// Forgets the SSE history of a session that closed.
    fn forget_history(&self, session: &str) {
        let events = self.events.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            if let Err(e) = events.expire(&session).await {
                tracing::warn!(error = %e, "could not expire a closed session's SSE history");
            }
        });
    }

    fn live_sessions(&self) -> usize {
        self.live.lock().map(|s| s.len()).unwrap_or(usize::MAX)
    }

    /// Closes sessions idle past the timeout (a session with its GET stream open is in use).
    fn sweep(&self) {
        let now = tokio::time::Instant::now();
        let Ok(mut sessions) = self.live.lock() else {
            return;
        };
        sessions.retain(|_, s| {
            let fresh = s.stream.is_open() || now.duration_since(s.stream.last_seen()) < self.idle;
            if !fresh {
                s.session.close();
                let events = self.events.clone();
                let id = s.id.clone();
                tokio::spawn(async move {
                    let _ = events.expire(&id).await;
                });
            }
            fresh
        });
    }

    /// Closes `client`'s least recently used session when it holds its whole share (review
    /// W6): one client cannot take the session pool, and only its own sessions make room.
    fn make_room_for(&self, client: &str) {
        let evicted = {
            let Ok(mut sessions) = self.live.lock() else {
                return;
            };
            let mut held = 0;
            let mut oldest: Option<(&String, tokio::time::Instant)> = None;
            for (id, s) in sessions.iter() {
                if s.client.as_deref() != Some(client) {
                    continue;
                }
                held += 1;
                let seen = s.stream.last_seen();
                if oldest.is_none_or(|(_, at)| seen < at) {
                    oldest = Some((id, seen));
                }
            }
            match oldest {
                Some((id, _)) if held >= self.per_client => {
                    let id = id.clone();
                    sessions.remove(&id)
                }
                _ => None,
            }
        };
        if let Some(session) = evicted {
            tracing::debug!(
                "a client at its session share: its least recently used session closes"
            );
            session.session.close();
            self.forget_history(&session.id);
        }
    }

    /// Sweeps on a timer for as long as the endpoint lives, so idle sessions go even when no
    /// request names a session.
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeper.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(self);
        let period = (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                inner.sweep();
            }
        });
    }

    /// Closes every legacy session (graceful shutdown): their GET streams end.
    pub(crate) fn close_all(&self) {
        let drained: Vec<_> = match self.live.lock() {
            Ok(mut sessions) => sessions.drain().map(|(_, s)| s).collect(),
            Err(_) => return,
        };
        for session in drained {
            session.session.close();
            self.forget_history(&session.id);
        }
    }

    /// The live session `id`, touched, when `principal` is the one that opened it (anyone
    /// else is told it does not exist).
    fn session(&self, id: &str, principal: Option<&Principal>) -> Option<Arc<LegacySession>> {
        let now = tokio::time::Instant::now();
        let session = self.live.lock().ok()?.get(id).cloned()?;
        if session.principal.as_ref() != principal {
            tracing::debug!("a session id was presented by another principal");
            return None;
        }
        if !session.stream.is_open() && now.duration_since(session.stream.last_seen()) >= self.idle
        {
            return None;
        }
        session.stream.touch();
        Some(session)
    }

    /// A GET of session `id`: its stream of unsolicited messages, or with `Last-Event-ID` a
    /// resumption of that stream or of one of its POST streams. `draining` ends the stream
    /// when the server drains.
    pub(crate) async fn get(
        &self,
        session_id: Option<&str>,
        principal: Option<&Principal>,
        last_event_id: Option<&str>,
        draining: tokio::sync::watch::Receiver<bool>,
    ) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        let Some(session) = self.session(id, principal) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        let resume = match last_event_id.map(parse_event_id) {
            None => None,
            Some(Some(resume)) => Some(resume),
            Some(None) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "Last-Event-ID is not an event id this server sent",
                );
            }
        };
        let mut after_get = 0;
        let mut replayed = Vec::new();
        match resume {
            Some((stream, after)) if stream != GET_STREAM => {
                return resume_post(
                    &self.events,
                    &session.id,
                    &session.resumptions,
                    stream,
                    after,
                    draining,
                )
                .await;
            }
            Some((_, after)) => {
                let misses = match session.resumptions.lock() {
                    Ok(streams) => streams.get_gap.misses(after),
                    Err(_) => true,
                };
                if misses {
                    return history_refusal(&EventStoreError::Gone);
                }
                match self
                    .events
                    .read_after(&session.id, GET_STREAM, after, Duration::ZERO)
                    .await
                {
                    Ok(replay) => replayed = replay.events,
                    Err(e) => return history_refusal(&e),
                }
                after_get = after;
            }
            None => {}
        }
        let mut draining = draining;
        let session_closed = session.session.closed();
        let closed = async move {
            tokio::select! {
                () = session_closed => {}
                _ = draining.wait_for(|draining| *draining) => {}
            }
        };
        let Some(stream) = session.stream.open(closed) else {
            return plain(
                StatusCode::CONFLICT,
                "A stream is already open for this session",
            );
        };
        get_stream(
            stream,
            replayed,
            after_get,
            self.events.clone(),
            session.id.clone(),
            session.resumptions.clone(),
        )
    }

    pub(crate) fn delete(
        &self,
        session_id: Option<&str>,
        principal: Option<&Principal>,
    ) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        if self.session(id, principal).is_none() {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        }
        let removed = self.live.lock().ok().and_then(|mut s| s.remove(id));
        match removed {
            Some(session) => {
                session.session.close();
                self.forget_history(&session.id);
                plain(StatusCode::OK, "")
            }
            None => plain(StatusCode::NOT_FOUND, "Session not found"),
        }
    }
}

/// A fresh session id; empty without randomness, since no session id is then safe to mint.
fn new_session_id() -> String {
    mcp_state_seal::random_hex_id().unwrap_or_default()
}
