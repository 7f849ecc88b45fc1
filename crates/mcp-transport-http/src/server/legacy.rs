//! 2025-11-25 sessions: `initialize` opening one bound to its principal, a message of a
//! session (under the session's own in-flight cap), its GET stream, DELETE, and the registry
//! that sweeps idle sessions, keeps each client within its share and closes every session at
//! shutdown. Recording and resuming their SSE streams is `resume.rs`'s.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use mcp_server_core::events::{EventStore, EventStoreError};
use mcp_server_core::fleet::{self, Fleet, FleetItem, SessionRecord};
use mcp_server_core::seal::Principal;
use mcp_server_core::{ResponseStream, Service, Session, TransportContext};
use mcp_types::{ErrorObject, JsonRpcMessage};
use tokio::sync::Semaphore;

use super::body::{McpBody, StreamSlot};
use super::bus::{
    MAX_FORWARDED_ANSWER, SessionMessage, cancellation_of, sealed_record, stored_record,
};
use super::config::Config;
use super::live::{Live, Member};
use super::quota::{Held, client_key};
use super::reply::{accepted, busy, busy_owned, error, json, not_allowed, plain, plain_owned};
use super::request::Incoming;
use super::resume::{
    GET_STREAM, Resumable, Resumptions, get_stream, history_refusal, legacy, parse_event_id,
    resume_post,
};
use super::writes::RecordWrites;
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
    /// Its record's changes on their way to the fleet's store (none outside a fleet).
    writes: Arc<RecordWrites>,
}

impl Member for LegacySession {
    fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    fn last_seen(&self) -> tokio::time::Instant {
        self.stream.last_seen()
    }
}

/// The live legacy sessions of one endpoint, and how they live (from its configuration).
pub(crate) struct Sessions {
    live: Mutex<Live<Arc<LegacySession>>>,
    /// Whether the idle sweeper runs.
    sweeper: AtomicBool,
    idle: Duration,
    max: usize,
    per_client: usize,
    id_prefix: String,
    events: Arc<dyn EventStore>,
    /// The service, which restores a session another instance of the fleet opened.
    service: Service,
    /// The fleet the sessions are shared with (`None`: they live in `live` only).
    fleet: Option<Fleet>,
    /// Whether this endpoint listens to the fleet's bus.
    listening: AtomicBool,
    /// The queue of best-effort bus messages ([`announce`](Self::announce)), published one at
    /// a time by one task; made with the first message.
    announcements: std::sync::OnceLock<tokio::sync::mpsc::Sender<(String, Vec<u8>)>>,
}

/// The most best-effort bus messages waiting to be published. Past it a message is dropped
/// (logged): a client sending cancellations faster than the bus takes them cannot make this
/// instance hold them, nor a task per message (security review X2).
const ANNOUNCE_QUEUE: usize = 1024;

impl Sessions {
    pub(crate) fn new(config: &Config, service: &Service) -> Self {
        Sessions {
            live: Mutex::new(Live::new()),
            sweeper: AtomicBool::new(false),
            idle: config.session_idle,
            max: config.max_sessions,
            per_client: config.sessions_per_client,
            id_prefix: config.session_id_prefix.clone(),
            events: config.events.clone(),
            service: service.clone(),
            fleet: service.fleet().cloned(),
            listening: AtomicBool::new(false),
            announcements: std::sync::OnceLock::new(),
        }
    }

    /// Starts listening to the fleet's bus, once (nothing to do without a fleet): the
    /// changes other instances raise, the answers to the questions this instance asked, and
    /// the cancellations, record changes and ends of sessions.
    pub(crate) fn join_fleet(self: &Arc<Self>) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        if self
            .listening
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        self.service.join_fleet();
        let answers_channel = fleet::answers_channel(fleet.member());
        let mut answers = fleet.bus().listen(&answers_channel);
        let mut sessions = fleet.bus().listen(fleet::SESSIONS);
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let (channel, payload) = tokio::select! {
                    Some(payload) = answers.recv() => (answers_channel.as_str(), payload),
                    Some(payload) = sessions.recv() => (fleet::SESSIONS, payload),
                    else => return,
                };
                let Some(this) = weak.upgrade() else {
                    return;
                };
                this.heard(channel, &payload).await;
            }
        });
    }

    /// A message of the bus about a session this instance may hold, heard on `channel`. One
    /// not sealed with the fleet's keys is refused (logged by [`Fleet::open`]).
    async fn heard(&self, channel: &str, payload: &[u8]) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        if payload == fleet::PING {
            return;
        }
        let Ok(plain) = fleet.open(FleetItem::BusMessage(channel), payload).await else {
            return;
        };
        let message: SessionMessage = match serde_json::from_slice(&plain) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(error = %e, "an unreadable session message on the bus ignored");
                return;
            }
        };
        if message.from == fleet.member() && message.message.is_none() {
            // Record changes and ends were applied here before they were published.
            return;
        }
        let local = self
            .live
            .lock()
            .ok()
            .and_then(|live| live.get(&message.session).cloned());
        let Some(local) = local else {
            return;
        };
        if message.closed {
            if let Ok(mut live) = self.live.lock() {
                live.remove(&message.session);
            }
            local.session.close();
            return;
        }
        if let Some(record) = &message.record {
            // From an instance of an earlier version, which sent the whole record.
            local.session.restore(record);
        }
        if message.changed {
            let (fleet, id, idle) = (fleet.clone(), message.session, self.idle);
            tokio::spawn(async move {
                match stored_record(&fleet, &id, idle).await {
                    Ok(Some(record)) => match record {
                        Ok(record) if !record.ended => local.session.restore(&record),
                        Ok(_) => {}
                        Err(e) => {
                            tracing::debug!(error = %e, "a changed session record is unreadable")
                        }
                    },
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "a changed session record could not be read")
                    }
                }
            });
            return;
        }
        if let Some(raw) = &message.message {
            match JsonRpcMessage::from_slice(raw.get().as_bytes()) {
                // What instances forward: a client's answer to a question this one asked, a
                // cancellation. A request on the bus is no client's: whoever can publish there
                // is not thereby the session's owner (security review X10).
                Ok(forwarded @ (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))) => {
                    let _ = local.session.handle(forwarded);
                }
                Ok(JsonRpcMessage::Notification(n))
                    if n.method == mcp_types::methods::NOTIFICATION_CANCELLED =>
                {
                    let _ = local.session.handle(JsonRpcMessage::Notification(n));
                }
                Ok(_) => tracing::warn!(
                    "a request or notification forwarded on the bus was ignored: instances forward only answers and cancellations"
                ),
                Err(e) => tracing::debug!(error = %e, "an unreadable forwarded message ignored"),
            }
        }
    }

    /// Publishes `message` on `channel`, best effort (a cancellation, a record change, an
    /// end: what the bus loses while it is away, the store or a retry makes good).
    fn announce(&self, channel: String, message: SessionMessage) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        let Some(payload) = message.sealed(fleet, &channel) else {
            return;
        };
        let queue = self.announcements.get_or_init(|| {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<(String, Vec<u8>)>(ANNOUNCE_QUEUE);
            let bus = fleet.bus().clone();
            tokio::spawn(async move {
                while let Some((channel, payload)) = rx.recv().await {
                    if let Err(e) = bus.publish(&channel, &payload).await {
                        tracing::warn!(error = %e, "a session message did not reach the other instances");
                    }
                }
            });
            tx
        });
        if queue.try_send((channel, payload)).is_err() {
            tracing::warn!(
                max = ANNOUNCE_QUEUE,
                "the fleet's bus is behind: a session message was dropped"
            );
        }
    }

    /// Makes a [`LegacySession`] of a connection that completed (or restored) its
    /// `initialize`. In a fleet, its record changes are stored and announced, its unsolicited
    /// notifications go out only while this instance holds its GET stream (its POST streams
    /// carry this member's name, see `resume.rs`).
    fn adopt(
        &self,
        id: String,
        session: Session,
        unsolicited: tokio::sync::mpsc::Receiver<JsonRpcMessage>,
        principal: Option<Principal>,
        client: Option<String>,
    ) -> Arc<LegacySession> {
        let stream = Arc::new(StreamSlot::new(unsolicited));
        let writes = Arc::new(RecordWrites::default());
        if let Some(fleet) = &self.fleet {
            let slot = Arc::downgrade(&stream);
            session.deliver_unsolicited_when(move || slot.upgrade().is_some_and(|s| s.is_open()));
            let me = fleet.clone();
            let (sid, idle) = (id.clone(), self.idle);
            let writes = writes.clone();
            session.on_record_change(move |record| {
                let (sid, me) = (sid.clone(), me.clone());
                writes.push(record, move |record| async move {
                    let mut message = SessionMessage::new(&me, &sid);
                    let stored = match sealed_record(&me, &sid, &record) {
                        Ok(sealed) => me.sessions().put(&sid, &sealed, idle).await,
                        Err(e) => Err(e),
                    };
                    if let Err(e) = stored {
                        tracing::warn!(error = %e, "a session's change was not stored");
                        return;
                    }
                    drop(record);
                    message.changed = true;
                    let Some(payload) = message.sealed(&me, fleet::SESSIONS) else {
                        return;
                    };
                    if let Err(e) = me.bus().publish(fleet::SESSIONS, &payload).await {
                        tracing::warn!(error = %e, "a session's change was not announced");
                    }
                });
            });
        }
        Arc::new(LegacySession {
            id,
            principal,
            stream,
            posts: Arc::default(),
            resumptions: Arc::default(),
            in_flight: Arc::new(Semaphore::new(session.limits().max_in_flight.max(1))),
            session,
            client,
            writes,
        })
    }

    /// Session `id` for a request of `principal`: the live one, or in a fleet the one the
    /// shared store holds (restored here if another instance opened it, refreshed if this
    /// one holds a copy, dropped here if the fleet ended it). While the store cannot answer,
    /// a session held here keeps serving; one that is not is refused with a `503` naming the
    /// store.
    async fn find(
        &self,
        id: &str,
        principal: Option<&Principal>,
    ) -> Result<Arc<LegacySession>, Response<McpBody>> {
        let not_found = || plain(StatusCode::NOT_FOUND, "Session not found");
        let Some(fleet) = &self.fleet else {
            return self.session(id, principal).ok_or_else(not_found);
        };
        let local = self.live.lock().ok().and_then(|live| live.get(id).cloned());
        let record = match stored_record(fleet, id, self.idle).await {
            Ok(Some(record)) => match record {
                Ok(record) if !record.ended => record,
                Ok(_) => {
                    // Deleted (a tombstone): gone here too.
                    let gone = self.live.lock().ok().and_then(|mut live| live.remove(id));
                    if let Some(gone) = gone {
                        gone.session.close();
                    }
                    return Err(not_found());
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a session record could not be read");
                    return Err(not_found());
                }
            },
            Ok(None) => {
                let gone = self.live.lock().ok().and_then(|mut live| live.remove(id));
                if let Some(gone) = gone {
                    gone.session.close();
                }
                return Err(not_found());
            }
            Err(e) => {
                return match local {
                    Some(local) if local.principal.as_ref() == principal => {
                        tracing::warn!(error = %e, "the session store is away: serving the copy held here");
                        local.stream.touch();
                        Ok(local)
                    }
                    _ => Err(busy_owned(format!(
                        "The session store cannot answer ({e}); retry shortly"
                    ))),
                };
            }
        };
        let owner = record.principal();
        if owner.as_ref() != principal {
            tracing::debug!("a session id was presented by another principal");
            return Err(not_found());
        }
        if let Some(local) = local {
            local.session.restore(&record);
            local.stream.touch();
            return Ok(local);
        }
        if self.live_sessions() >= self.max {
            self.sweep();
            if self.live_sessions() >= self.max {
                return Err(busy("Too many sessions; try again later"));
            }
        }
        // A restored session counts against the share of the client that opened it (security
        // review X3): its principal, else the address its record keeps.
        let kept = TransportContext {
            principal: owner.clone(),
            network_transport: Some("tcp"),
            peer: record.peer,
            ..TransportContext::default()
        };
        let (session, unsolicited) = self.service.restore(&record, kept);
        let client = client_key(owner.as_ref(), record.peer);
        let restored = self.adopt(id.to_owned(), session, unsolicited, owner, client);
        let Ok(mut live) = self.live.lock() else {
            return Err(not_found());
        };
        // Two requests may have restored it at once: the first one kept wins.
        let kept = live.get_or_insert(id, restored).clone();
        drop(live);
        tracing::debug!("a session of the fleet restored on this instance");
        Ok(kept)
    }

    /// Ends fleet session `id` for `principal` in the store, leaving a tombstone: `true` when
    /// it ended now, `false` when it had ended before (a repeated DELETE); a `404` for a
    /// session that is not there (or not this principal's), a `503` naming the store when it
    /// cannot answer.
    async fn end_in_store(
        &self,
        fleet: &Fleet,
        id: &str,
        principal: Option<&Principal>,
    ) -> Result<bool, Response<McpBody>> {
        let not_found = || plain(StatusCode::NOT_FOUND, "Session not found");
        let unavailable = |e: fleet::FleetError| {
            busy_owned(format!(
                "The session store cannot answer ({e}); the session was not deleted; retry shortly"
            ))
        };
        let record = match stored_record(fleet, id, self.idle).await {
            Ok(Some(record)) => record.map_err(|_| not_found())?,
            Ok(None) => return Err(not_found()),
            Err(e) => return Err(unavailable(e)),
        };
        if record.principal().as_ref() != principal {
            return Err(not_found());
        }
        if record.ended {
            return Ok(false);
        }
        let tombstone = SessionRecord {
            ended: true,
            ..record
        };
        let sealed = sealed_record(fleet, id, &tombstone).map_err(unavailable)?;
        fleet
            .sessions()
            .end(id, &sealed, TOMBSTONE)
            .await
            .map_err(unavailable)?;
        Ok(true)
    }

    /// A client's answer to a question another instance of the fleet asked (`asker`, from
    /// the request id), handed to it over the bus.
    async fn forward_answer(
        &self,
        fleet: &Fleet,
        asker: &str,
        session: &str,
        message: &JsonRpcMessage,
    ) -> Response<McpBody> {
        let mut forwarded = SessionMessage::new(fleet, session);
        forwarded.message = serde_json::value::to_raw_value(message).ok();
        // An answer crosses the bus to one instance only, but it waits in that instance's
        // queue of the bus: bounded, so that answers to any member a client names cannot fill
        // it with the body limit's megabytes each (security review X2).
        let size = forwarded.message.as_ref().map_or(0, |m| m.get().len());
        if size > MAX_FORWARDED_ANSWER {
            return plain_owned(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "An answer to a question another instance of the fleet asked is at most {} KiB; this one is {} KiB",
                    MAX_FORWARDED_ANSWER / 1024,
                    size.div_ceil(1024)
                ),
            );
        }
        let channel = fleet::answers_channel(asker);
        // Nobody listening may be a live asker reconnecting to the bus (Redis restarted): it
        // is looked for a moment before it is called gone.
        let Some(payload) = forwarded.sealed(fleet, &channel) else {
            return busy_owned(format!(
                "The answer could not be handed to the server instance that asked ({asker}); \
                 retry shortly"
            ));
        };
        match fleet::publish_heard(&**fleet.bus(), &channel, &payload).await {
            Ok(0) => plain_owned(
                StatusCode::GONE,
                format!(
                    "The server process that asked this question ({asker}) is gone, and the \
                     call it was serving with it; retry that call"
                ),
            ),
            Ok(_) => accepted(),
            Err(e) => busy_owned(format!(
                "The answer could not be handed to the server instance that asked ({asker}): \
                 {e}; retry shortly"
            )),
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
        let request_id = request.id.clone();
        // The session keeps who opened it, never the handshake's headers (review W5: up to
        // hyper's ~400 KB of them, for the session's whole life); each later request brings
        // its own.
        let kept = TransportContext {
            principal: incoming.transport.principal.clone(),
            network_transport: Some("tcp"),
            peer: incoming.peer,
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
        if let Some(fleet) = &self.fleet {
            self.join_fleet();
            let Some(record) = session.record() else {
                return error(
                    Some(request_id),
                    ErrorObject::internal("the session has no record after initialize"),
                );
            };
            let stored = match sealed_record(fleet, &id, &record) {
                Ok(sealed) => fleet.sessions().put(&id, &sealed, self.idle).await,
                Err(e) => Err(e),
            };
            if let Err(e) = stored {
                session.close();
                return busy_owned(format!(
                    "The session store cannot answer ({e}); no session was opened; retry shortly"
                ));
            }
        }
        let session = self.adopt(id.clone(), session, unsolicited, principal, client);
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
        let session = match self.find(id, incoming.transport.principal.as_ref()).await {
            Ok(session) => session,
            Err(refused) => return refused,
        };
        if let Some(fleet) = &self.fleet {
            let answered = match &message {
                JsonRpcMessage::Response(r) => Some(&r.id),
                JsonRpcMessage::Error(e) => e.id.request_id(),
                _ => None,
            };
            if let Some(asker) = answered.and_then(Fleet::asker)
                && asker != fleet.member()
            {
                return self.forward_answer(fleet, asker, id, &message).await;
            }
            if let JsonRpcMessage::Notification(n) = &message
                && n.method == mcp_types::methods::NOTIFICATION_CANCELLED
            {
                // The request may run on any instance: every one that holds it stops. Only
                // which request goes on the bus, not what the client sent with it (a 4 MiB
                // reason was a 4 MiB message to every instance: security review X2).
                if let Some(cancelled) = cancellation_of(n) {
                    let mut cancel = SessionMessage::new(fleet, id);
                    cancel.message = Some(cancelled);
                    self.announce(fleet::SESSIONS.to_owned(), cancel);
                }
            }
        }
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
            owner: self.fleet.as_ref().map(|f| Arc::from(f.member())),
        });
        let response = legacy(
            &session.session,
            message,
            incoming.transport,
            resumable,
            held,
        )
        .await;
        // What this message changed is in the store before the client hears back, so its
        // next request reads it on whichever instance serves it.
        session.writes.settled().await;
        response
    }

    /// Ends session `id` for good after this instance evicted it: its history, and in a
    /// fleet its record (every instance's copy goes on its next request or the bus message).
    fn forget(&self, id: &str) {
        self.forget_history(id);
        if let Some(fleet) = &self.fleet {
            let store = fleet.sessions().clone();
            let owned = id.to_owned();
            tokio::spawn(async move {
                if let Err(e) = store.remove(&owned).await {
                    tracing::warn!(error = %e, "an evicted session's record could not be removed");
                }
            });
            let mut closed = SessionMessage::new(fleet, id);
            closed.closed = true;
            self.announce(fleet::SESSIONS.to_owned(), closed);
        }
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
        sessions.retain(|s| {
            let fresh = s.stream.is_open() || now.duration_since(s.stream.last_seen()) < self.idle;
            if !fresh && self.fleet.is_some() {
                // A copy of a fleet session: the store keeps the session (and its expiry).
                s.session.close();
            } else if !fresh {
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
            if sessions.held_by(client) < self.per_client {
                return;
            }
            let oldest = sessions.least_recent(client).map(str::to_owned);
            oldest.and_then(|id| sessions.remove(&id))
        };
        if let Some(session) = evicted {
            tracing::debug!(
                "a client at its session share: its least recently used session closes"
            );
            session.session.close();
            self.forget(&session.id);
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
            Ok(mut sessions) => sessions.drain(),
            Err(_) => return,
        };
        for session in drained {
            session.session.close();
            // A fleet's sessions outlive this instance: another one serves them next.
            if self.fleet.is_none() {
                self.forget_history(&session.id);
            }
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
        let session = match self.find(id, principal).await {
            Ok(session) => session,
            Err(refused) => return refused,
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
                    self.fleet.clone().map(|fleet| (fleet, self.idle)),
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

    pub(crate) async fn delete(
        &self,
        session_id: Option<&str>,
        principal: Option<&Principal>,
    ) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        if let Some(fleet) = &self.fleet {
            match self.end_in_store(fleet, id, principal).await {
                Ok(true) => {}
                // Deleted before (a DELETE re-sent): done already.
                Ok(false) => return plain(StatusCode::OK, ""),
                Err(refused) => return refused,
            }
            let mut closed = SessionMessage::new(fleet, id);
            closed.closed = true;
            self.announce(fleet::SESSIONS.to_owned(), closed);
            // Whatever this instance held of it goes now.
            if let Some(session) = self.live.lock().ok().and_then(|mut s| s.remove(id)) {
                session.session.close();
            }
            self.forget_history(id);
            return plain(StatusCode::OK, "");
        }
        if let Err(refused) = self.find(id, principal).await {
            return refused;
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

/// How long a deleted fleet session's tombstone answers a repeated DELETE.
const TOMBSTONE: Duration = Duration::from_secs(60);

/// A fresh session id; empty without randomness, since no session id is then safe to mint.
fn new_session_id() -> String {
    mcp_state_seal::random_hex_id().unwrap_or_default()
}
