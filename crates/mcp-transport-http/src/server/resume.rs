//! The SSE history of 2025-11-25 sessions and resumption from it: a legacy POST's answer
//! recorded event by event (a priming event, then each message with its id), the session's
//! GET stream recorded the same way, event ids (`p3.5`, `g.2`), and a GET with
//! `Last-Event-ID` replaying what a client missed, then the rest. Where the store failed, the
//! history knows it misses an event and a resumption across the hole is refused (`410`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::{Response, StatusCode};
use mcp_server_core::events::{EventStore, EventStoreError};
use mcp_server_core::fleet::{self, Fleet};
use mcp_server_core::{ResponseStream, Session, TransportContext};
use mcp_types::JsonRpcMessage;

use super::body::{FrameSource, KEEP_ALIVE, McpBody, SessionStream, event_with_id};
use super::config::SSE_RETRY;
use super::quota::Held;
use super::reply::{accepted, busy, busy_owned, json, plain, plain_owned, sse_response};

/// The most encoded SSE frames waiting for a slow client on one resumable stream; the task
/// writing them waits beyond (the handler's own stream then applies backpressure).
const FRAME_QUEUE: usize = 32;

/// How many POST streams of one session are remembered as broken (their history misses an
/// event); past it the oldest is forgotten.
const BROKEN_KEPT: usize = 1024;
/// How long the end of a POST stream is written again when the event store fails it.
const FINISH_RETRY_FOR: Duration = Duration::from_secs(10);
/// How long a POST stream's message is appended again when the event store fails it, before
/// the stream is given up as broken: a store that restarts or stalls for a moment (a Redis
/// restart, issue #48) delays the stream's events instead of losing one.
const APPEND_RETRY_FOR: Duration = Duration::from_secs(3);

/// The session's GET stream in event ids (`g.7`); POST streams are `p{n}`.
pub(crate) const GET_STREAM: &str = "g";

/// What a resumption of a legacy session's streams must know that the event store may not
/// (review W22): whether a POST stream's request still runs, and where a stream's history
/// misses an event because the store failed.
#[derive(Default)]
pub(crate) struct Resumptions {
    /// Streams whose request runs; the sender's drop (the request's end) wakes resumptions.
    pub(crate) running: HashMap<String, tokio::sync::watch::Receiver<()>>,
    /// Streams whose history misses an event, oldest first: they cannot be resumed.
    broken: std::collections::VecDeque<String>,
    /// Where the session's GET stream history misses a message the store failed to take.
    pub(crate) get_gap: GetGap,
}

/// The holes in a session's GET stream history (review W22). The GET stream never ends, so
/// one lost message cannot fail it as a POST stream is failed; a resumption that would replay
/// across the hole is refused instead, and one from after it is served.
#[derive(Default)]
pub(crate) struct GetGap {
    /// A message was lost after the last event stored: every resumption would miss it.
    open: bool,
    /// Resuming after an event numbered below this misses a lost message.
    below: u64,
}

impl GetGap {
    /// The store failed to take a message.
    pub(crate) fn lost(&mut self) {
        self.open = true;
    }

    /// The store took a message as event `n`: a hole left open ends before it.
    pub(crate) fn stored(&mut self, n: u64) {
        if self.open {
            self.open = false;
            self.below = self.below.max(n);
        }
    }

    /// Whether resuming after event `after` would replay across a hole.
    pub(crate) fn misses(&self, after: u64) -> bool {
        self.open || after < self.below
    }
}

impl Resumptions {
    pub(crate) fn mark_broken(&mut self, stream: &str) {
        if self.broken.iter().any(|s| s == stream) {
            return;
        }
        if self.broken.len() >= BROKEN_KEPT {
            self.broken.pop_front();
        }
        self.broken.push_back(stream.to_owned());
    }

    pub(crate) fn is_broken(&self, stream: &str) -> bool {
        self.broken.iter().any(|s| s == stream)
    }
}

/// Where a legacy POST's SSE answer is recorded, so that a client can resume it.
pub(crate) struct Resumable {
    pub(crate) events: Arc<dyn EventStore>,
    pub(crate) session: String,
    /// The session's count of POST streams, which names this one when it opens.
    pub(crate) posts: Arc<AtomicU64>,
    /// The session's running and broken POST streams.
    pub(crate) streams: Arc<Mutex<Resumptions>>,
    /// In a fleet, this member's name ([`mcp_server_core::fleet::Fleet::member`]): it ends
    /// the stream's name (`p3-i1~3f9a01c2`), so names never collide in the shared history and
    /// a resumption elsewhere knows whom to ask whether the request still runs.
    pub(crate) owner: Option<Arc<str>>,
}

/// A message of a legacy session: requests answer like modern ones (server-to-client requests
/// ride the SSE stream), everything else is accepted. A client that takes no SSE has no
/// back-channel, so its handlers cannot ask it anything. An SSE answer is resumable: its
/// events are recorded under `resumable`, and a client that disconnects does not cancel the
/// request (2025-11-25: a disconnect is not a cancellation); it resumes with `Last-Event-ID`.
pub(crate) async fn legacy(
    session: &Session,
    message: JsonRpcMessage,
    transport: TransportContext,
    resumable: Option<Resumable>,
    held: Held,
) -> Response<McpBody> {
    let sse = resumable.is_some();
    match session.handle_with(message, transport, sse) {
        None => accepted(),
        Some(mut stream) => {
            let Some(first) = stream.next().await else {
                return accepted();
            };
            match (&first, resumable) {
                (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), _) => {
                    json(StatusCode::OK, &first)
                }
                (_, Some(resumable)) => sse_response(record(resumable, first, stream, held)),
                (_, None) => {
                    // A JSON-only client cannot receive mid-call requests; send the final answer.
                    while let Some(next) = stream.next().await {
                        if matches!(next, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) {
                            return json(StatusCode::OK, &next);
                        }
                    }
                    accepted()
                }
            }
        }
    }
}

/// The SSE body of a resumable POST answer: a priming event, then each message stored and
/// sent with its id. The request runs to its end even when the client went away (its session
/// closing still cancels it), so its answer waits in the history; until then it holds its
/// in-flight permits (`held`), so hanging up does not free a place under the caps.
///
/// A message the store fails to take is appended again for up to [`APPEND_RETRY_FOR`] (the
/// stream waits meanwhile); one it still fails to take is delivered live if the client is
/// still connected, and the stream is marked broken either way: the history misses that message, so a resumption
/// is refused (`410`) rather than served without it (review W22). Nothing more is recorded for
/// a broken stream. The end of an intact stream is recorded, again after a failure, for up to
/// [`FINISH_RETRY_FOR`].
fn record(
    resumable: Resumable,
    first: JsonRpcMessage,
    mut stream: ResponseStream,
    held: Held,
) -> McpBody {
    let (tx, rx) = tokio::sync::mpsc::channel(FRAME_QUEUE);
    let Resumable {
        events,
        session,
        posts,
        streams,
        owner,
    } = resumable;
    let n = posts.fetch_add(1, Ordering::Relaxed) + 1;
    let name = match owner {
        Some(owner) => format!("p{n}-{owner}"),
        None => format!("p{n}"),
    };
    let (running, ended) = tokio::sync::watch::channel(());
    if let Ok(mut streams) = streams.lock() {
        streams.running.insert(name.clone(), ended);
    }
    tokio::spawn(async move {
        let priming = Bytes::from(format!(
            "id: {name}.0\nretry: {}\ndata: \n\n",
            SSE_RETRY.as_millis()
        ));
        let mut live = tx.send(priming).await.is_ok().then_some(tx);
        let mut next = Some(first);
        let mut broken = false;
        loop {
            let message = match next.take() {
                Some(message) => message,
                None => match stream.next().await {
                    Some(message) => message,
                    None => break,
                },
            };
            let frame = if broken {
                live_frame(&message)
            } else {
                match stored_frame_retrying(&*events, &session, &name, &message).await {
                    Ok((_, frame)) => frame,
                    Err(_) => {
                        broken = true;
                        if let Ok(mut streams) = streams.lock() {
                            streams.mark_broken(&name);
                        }
                        if live.is_none() {
                            tracing::warn!(
                                "an SSE stream lost a message: the event store failed and its client is gone; resuming it is refused"
                            );
                        }
                        live_frame(&message)
                    }
                }
            };
            if let Some(tx) = &live
                && tx.send(frame).await.is_err()
            {
                live = None;
            }
        }
        drop(held);
        // The request ended: resumptions waiting on it close after what the history holds.
        if let Ok(mut streams) = streams.lock() {
            streams.running.remove(&name);
        }
        drop(running);
        if !broken {
            finish_stream(&*events, &session, &name).await;
        }
    });
    McpBody::frames(rx)
}

/// Records the end of a stream, again after a failure (50 ms apart, doubling to 2 s) for up to
/// [`FINISH_RETRY_FOR`]: without it a resumption on another process would wait for the
/// history to expire.
async fn finish_stream(events: &dyn EventStore, session: &str, stream: &str) {
    let give_up = tokio::time::Instant::now() + FINISH_RETRY_FOR;
    let mut pause = Duration::from_millis(50);
    loop {
        let Err(e) = events.finish(session, stream).await else {
            return;
        };
        if tokio::time::Instant::now() + pause > give_up {
            tracing::warn!(error = %e, "could not mark an SSE stream ended in the event store");
            return;
        }
        tracing::debug!(error = %e, "marking an SSE stream ended failed; trying again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// `message` appended to the history: its number and its encoding with its event id; the
/// store's error (and a warning) when it fails.
pub(crate) async fn stored_frame(
    events: &dyn EventStore,
    session: &str,
    stream: &str,
    message: &JsonRpcMessage,
) -> Result<(u64, Bytes), EventStoreError> {
    match events.append(session, stream, message).await {
        Ok(n) => Ok((n, event_with_id(&format!("{stream}.{n}"), message))),
        Err(e) => {
            tracing::warn!(error = %e, "an SSE event could not be recorded in the event store");
            Err(e)
        }
    }
}

/// [`stored_frame`], again after a failure (50 ms apart, doubling to 800 ms) for up to
/// [`APPEND_RETRY_FOR`]; the last failure when the store never took it.
async fn stored_frame_retrying(
    events: &dyn EventStore,
    session: &str,
    stream: &str,
    message: &JsonRpcMessage,
) -> Result<(u64, Bytes), EventStoreError> {
    let give_up = tokio::time::Instant::now() + APPEND_RETRY_FOR;
    let mut pause = Duration::from_millis(50);
    loop {
        match stored_frame(events, session, stream, message).await {
            Ok(stored) => return Ok(stored),
            Err(e) if tokio::time::Instant::now() + pause > give_up => return Err(e),
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(800));
            }
        }
    }
}

/// `message` as an SSE event without an id: for the live client only.
pub(crate) fn live_frame(message: &JsonRpcMessage) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// `p3.5` → (`p3`, 5); `p3-i1~3f9a01c2.5` → (`p3-i1~3f9a01c2`, 5); `g.2` → (`g`, 2).
/// Anything else is not ours.
pub(crate) fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, n) = id.split_once('.')?;
    let n = n.parse().ok()?;
    let ours = stream == GET_STREAM
        || stream.strip_prefix('p').is_some_and(|rest| {
            let (k, owner) = rest.split_once('-').unwrap_or((rest, ""));
            !k.is_empty()
                && k.bytes().all(|b| b.is_ascii_digit())
                && owner
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~'))
                && owner.is_empty() != rest.contains('-')
        });
    ours.then_some((stream, n))
}

/// How long a resumption following another member's stream waits for an event before it
/// asks again whether that member still runs.
const FOLLOW_CHECK: Duration = Duration::from_secs(2);

/// The fleet member a POST stream's name ends with (`p3-i1~3f9a01c2` → `i1~3f9a01c2`).
pub(crate) fn stream_owner(stream: &str) -> Option<&str> {
    stream
        .strip_prefix('p')?
        .split_once('-')
        .map(|(_, owner)| owner)
        .filter(|owner| !owner.is_empty())
}

/// Whether fleet member `owner` still runs: someone listens on its answers channel, within
/// [`fleet::GONE_AFTER`] (a live member reconnecting to the bus is found). A bus that cannot
/// answer counts as alive (the stream is followed, not declared lost).
async fn member_alive(fleet: &Fleet, owner: &str) -> bool {
    !matches!(
        fleet::publish_heard(&**fleet.bus(), &fleet::answers_channel(owner), fleet::PING).await,
        Ok(0)
    )
}

/// Whether a stream another member ran, unfinished, lost its request with that member.
/// The member it was, when it is gone.
async fn lost_elsewhere<'s>(
    foreign: Option<&(Fleet, Duration)>,
    finished: bool,
    stream: &'s str,
) -> Option<&'s str> {
    match (foreign, stream_owner(stream)) {
        (Some((fleet, _)), Some(owner)) if !finished && !member_alive(fleet, owner).await => {
            Some(owner)
        }
        _ => None,
    }
}

/// The answer to a resumption of a stream whose request died with `member`, the process
/// running it (named, so that an operator or a test can tell which process it was).
fn lost_with_its_member(member: &str) -> Response<McpBody> {
    plain_owned(
        StatusCode::GONE,
        format!(
            "The server process running this request ({member}) is gone, and the request with it; retry it"
        ),
    )
}

/// The answer to a resumption the history cannot serve.
pub(crate) fn history_refusal(error: &EventStoreError) -> Response<McpBody> {
    match error {
        EventStoreError::Gone => plain(
            StatusCode::GONE,
            "The events after Last-Event-ID are no longer kept",
        ),
        EventStoreError::Unavailable(why) => {
            tracing::warn!(error = %error, "SSE resumption failed");
            // The store's own words name it (Redis, …) and what failed.
            busy_owned(format!(
                "The event history is unavailable ({why}); retry shortly"
            ))
        }
        other => {
            tracing::warn!(error = %other, "SSE resumption failed");
            busy("The event history is unavailable; retry shortly")
        }
    }
}

/// The body of a session's GET stream: the events after `after_get` that `replayed` holds,
/// then each unsolicited message as it comes, recorded in the history first. The body pulls
/// them itself as the client reads (no task, no frame queue: a GET stream stays open for the
/// session's life, and the task and its queue were most of what one cost, issue #50).
pub(crate) fn get_stream(
    stream: SessionStream,
    replayed: Vec<(u64, JsonRpcMessage)>,
    after_get: u64,
    events: Arc<dyn EventStore>,
    session_id: String,
    streams: Arc<Mutex<Resumptions>>,
) -> Response<McpBody> {
    let replayed: Vec<_> = replayed
        .into_iter()
        .filter(|(n, _)| *n > after_get)
        .collect();
    sse_response(McpBody::pulled(Box::new(GetStream {
        stream,
        replayed: replayed.into_iter(),
        history: Arc::new(GetHistory {
            events,
            session_id,
            streams,
        }),
        storing: None,
    })))
}

/// Where a GET stream's messages are recorded, shared with the write in flight.
struct GetHistory {
    events: Arc<dyn EventStore>,
    session_id: String,
    streams: Arc<Mutex<Resumptions>>,
}

impl GetHistory {
    /// `message` recorded in the history, as the frame that carries its event id; one the
    /// store failed to take goes out live only, and a resumption from before it is refused
    /// (`410`) rather than served without it (review W22).
    async fn record(&self, message: JsonRpcMessage) -> Bytes {
        let stored = stored_frame(&*self.events, &self.session_id, GET_STREAM, &message).await;
        if let Ok(mut streams) = self.streams.lock() {
            match &stored {
                Ok((n, _)) => streams.get_gap.stored(*n),
                Err(_) => streams.get_gap.lost(),
            }
        }
        match stored {
            Ok((_, frame)) => frame,
            Err(_) => live_frame(&message),
        }
    }
}

/// A session's GET stream, pulled by its body.
struct GetStream {
    stream: SessionStream,
    replayed: std::vec::IntoIter<(u64, JsonRpcMessage)>,
    history: Arc<GetHistory>,
    /// The write of the message taken last, until the store took it.
    storing: Option<Pin<Box<dyn Future<Output = Bytes> + Send>>>,
}

impl FrameSource for GetStream {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some((n, message)) = self.replayed.next() {
            return Poll::Ready(Some(event_with_id(&format!("{GET_STREAM}.{n}"), &message)));
        }
        loop {
            if let Some(storing) = &mut self.storing {
                let frame = std::task::ready!(storing.as_mut().poll(cx));
                self.storing = None;
                return Poll::Ready(Some(frame));
            }
            // A message the client did not get is in the history: it resumes from there.
            let Some(message) = std::task::ready!(self.stream.poll_next(cx)) else {
                return Poll::Ready(None);
            };
            let history = self.history.clone();
            self.storing = Some(Box::pin(async move { history.record(message).await }));
        }
    }
}

impl Drop for GetStream {
    /// A message taken from the session while its client went away is still recorded, so a
    /// client that resumes gets it.
    fn drop(&mut self) {
        if let Some(storing) = self.storing.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(storing);
        }
    }
}

/// A GET resuming POST stream `stream` after event `after`: what it missed, then the rest
/// as the request produces it, until its answer. A stream whose history misses an event
/// (the store failed) is refused like an expired one; once the request has ended, the
/// stream closes after what the history holds, even when the store never recorded the end
/// (review W22: it used to wait for the history to expire).
pub(crate) async fn resume_post(
    events: &Arc<dyn EventStore>,
    session: &str,
    streams: &Arc<Mutex<Resumptions>>,
    stream: &str,
    after: u64,
    mut draining: tokio::sync::watch::Receiver<bool>,
    foreign: Option<(Fleet, Duration)>,
) -> Response<McpBody> {
    let (broken, running) = match streams.lock() {
        Ok(streams) => (
            streams.is_broken(stream),
            streams.running.get(stream).cloned(),
        ),
        Err(_) => (true, None),
    };
    if broken {
        return history_refusal(&EventStoreError::Gone);
    }
    let first = match events
        .read_after(session, stream, after, Duration::ZERO)
        .await
    {
        Ok(first) => first,
        Err(e) => return history_refusal(&e),
    };
    let foreign = foreign.filter(|_| running.is_none());
    if let Some(member) = lost_elsewhere(foreign.as_ref(), first.finished, stream).await {
        return lost_with_its_member(member);
    }
    let (tx, rx) = tokio::sync::mpsc::channel(FRAME_QUEUE);
    let events = events.clone();
    let streams = streams.clone();
    let session = session.to_owned();
    let stream = stream.to_owned();
    tokio::spawn(async move {
        let mut replay = first;
        let mut after = after;
        // A stream this instance does not run may run on another member of the fleet: its
        // shared history is followed while that member lives, and for at most `silence`
        // without an event.
        let follow = foreign;
        let mut heard = tokio::time::Instant::now();
        let mut running = running;
        loop {
            for (n, message) in &replay.events {
                let frame = event_with_id(&format!("{stream}.{n}"), message);
                if tx.send(frame).await.is_err() {
                    return;
                }
                after = *n;
            }
            let broken = streams.lock().map_or(true, |s| s.is_broken(&stream));
            // Ended, or nothing more will be recorded: a broken stream closes at once, and
            // its client's next resumption is refused.
            if replay.finished || broken {
                return;
            }
            if let Some((fleet, silence)) = &follow {
                if !replay.events.is_empty() {
                    heard = tokio::time::Instant::now();
                } else if heard.elapsed() >= *silence {
                    return;
                } else if let Some(owner) = stream_owner(&stream)
                    && !member_alive(fleet, owner).await
                {
                    // Its member died: the request was lost. The client's next resumption
                    // is told so (410).
                    return;
                }
                replay = tokio::select! {
                    next = events.read_after(&session, &stream, after, FOLLOW_CHECK) => match next {
                        Ok(replay) => replay,
                        Err(e) => {
                            tracing::warn!(error = %e, "a resumed SSE stream lost its history");
                            return;
                        }
                    },
                    () = tx.closed() => return,
                    _ = draining.wait_for(|draining| *draining) => return,
                };
                continue;
            }
            let Some(ended) = running.as_mut() else {
                return;
            };
            let next = tokio::select! {
                next = events.read_after(&session, &stream, after, KEEP_ALIVE) => Some(next),
                _ = ended.changed() => None,
                () = tx.closed() => return,
                _ = draining.wait_for(|draining| *draining) => return,
            };
            let next = match next {
                Some(next) => next,
                None => {
                    // The request ended: what it wrote before is in the history.
                    running = None;
                    events
                        .read_after(&session, &stream, after, Duration::ZERO)
                        .await
                }
            };
            replay = match next {
                Ok(replay) => replay,
                Err(e) => {
                    tracing::warn!(error = %e, "a resumed SSE stream lost its history");
                    return;
                }
            };
        }
    });
    sse_response(McpBody::frames(rx))
}

#[cfg(test)]
mod tests {
    use super::{parse_event_id, stream_owner};

    #[test]
    fn event_ids_name_their_stream_and_a_fleet_stream_its_member() {
        assert_eq!(parse_event_id("p3.5"), Some(("p3", 5)));
        assert_eq!(parse_event_id("g.2"), Some(("g", 2)));
        assert_eq!(
            parse_event_id("p3-i1~3f9a01c2.5"),
            Some(("p3-i1~3f9a01c2", 5))
        );
        assert_eq!(stream_owner("p3-i-1~3f9a01c2"), Some("i-1~3f9a01c2"));
        assert_eq!(stream_owner("p3"), None);
        for not_ours in [
            "p.1",
            "p3-.1",
            "px.1",
            "p3-a b.1",
            "q3.1",
            "p3.x",
            "p3-i1:1.2",
        ] {
            assert_eq!(parse_event_id(not_ours), None, "{not_ours}");
        }
    }
}
