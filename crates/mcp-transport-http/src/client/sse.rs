//! Server-sent events on the client: [`SseParser`] splitting a byte stream into events under
//! a size limit, and [`read_sse`] delivering a response stream's messages until the answer
//! arrives, noting where the stream can be resumed from.

use std::time::Duration;

use http_body_util::BodyExt;
use mcp_types::{JsonRpcMessage, RequestId};
use tokio::sync::mpsc;

use super::headers::deliver;
use super::state::State;

/// One SSE event: the fields this client uses.
#[derive(Debug, Default, PartialEq, Eq)]
struct SseEvent {
    /// `id:`, the event id a resumed stream names in `Last-Event-ID`.
    id: Option<String>,
    /// `retry:`, how long to wait (ms) before reconnecting.
    retry: Option<u64>,
    /// The `data:` lines joined, when there were any.
    data: Option<String>,
}

/// An event grew past the parser's limit: the stream is abandoned.
#[derive(Debug, PartialEq, Eq)]
struct SseTooLarge {
    limit: usize,
}

/// Splits an SSE byte stream into events, in one pass over the bytes: only the unfinished line
/// and the event being assembled are kept, and an event's data is decoded as UTF-8 once it is
/// complete, so a character split across two reads arrives whole. An event (its lines together)
/// larger than `max_event` bytes ends the stream.
struct SseParser {
    /// The line being read (its terminator not seen yet).
    line: Vec<u8>,
    /// The `data:` lines of the event being assembled, joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
    event: SseEvent,
    /// Bytes of the event being assembled, its unfinished line included.
    event_size: usize,
    /// The previous chunk ended on `\r`: a `\n` starting this one belongs to it.
    after_cr: bool,
    /// The stream's first bytes are still to be checked for a byte-order mark.
    at_start: bool,
    max_event: usize,
    /// Bytes scanned for a line end and bytes copied, counted for the linear-time test.
    #[cfg(test)]
    work: Work,
}

/// What the parser did per byte, for the test that its work is linear in its input.
#[cfg(test)]
#[derive(Default, Debug)]
struct Work {
    scanned: usize,
    copied: usize,
}

impl SseParser {
    fn new(max_event: usize) -> Self {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event: SseEvent::default(),
            event_size: 0,
            after_cr: false,
            at_start: true,
            max_event,
            #[cfg(test)]
            work: Work::default(),
        }
    }

    fn push(&mut self, mut chunk: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        let mut events = Vec::new();
        if self.at_start {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let seen = self.line.len() + chunk.len();
            let mut probe = self.line.clone();
            probe.extend_from_slice(&chunk[..chunk.len().min(BOM.len())]);
            if seen < BOM.len() && BOM.starts_with(&probe) {
                // Too few bytes to tell yet: keep them as the line's start.
                self.line = probe;
                return Ok(events);
            }
            self.at_start = false;
            if probe.starts_with(BOM) {
                let from_chunk = BOM.len() - self.line.len();
                self.line.clear();
                chunk = &chunk[from_chunk..];
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let end = chunk.iter().position(|&b| b == b'\n' || b == b'\r');
            #[cfg(test)]
            {
                self.work.scanned += end.map_or(chunk.len(), |at| at + 1);
            }
            match end {
                Some(at) => {
                    self.grow(at)?;
                    self.line.extend_from_slice(&chunk[..at]);
                    #[cfg(test)]
                    {
                        self.work.copied += at;
                    }
                    let cr = chunk[at] == b'\r';
                    chunk = &chunk[at + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                None => {
                    self.grow(chunk.len())?;
                    self.line.extend_from_slice(chunk);
                    #[cfg(test)]
                    {
                        self.work.copied += chunk.len();
                    }
                    chunk = &[];
                }
            }
        }
        Ok(events)
    }

    fn grow(&mut self, by: usize) -> Result<(), SseTooLarge> {
        self.event_size = self.event_size.saturating_add(by);
        if self.event_size > self.max_event {
            return Err(SseTooLarge {
                limit: self.max_event,
            });
        }
        Ok(())
    }

    /// A complete line: an empty one ends the event.
    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let mut event = std::mem::take(&mut self.event);
            if std::mem::take(&mut self.has_data) {
                event.data = Some(String::from_utf8_lossy(&self.data).into_owned());
            }
            self.data.clear();
            self.event_size = 0;
            return (event != SseEvent::default()).then_some(event);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                #[cfg(test)]
                {
                    self.work.copied += value.len();
                }
                self.has_data = true;
            }
            b"id" if !value.contains(&0) => {
                self.event.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => {
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.event.retry = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

/// The client's SSE parser for the fuzz targets (feature `fuzzing`; not a stable API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// Feeds `chunks` to a parser capped at `max_event` bytes; returns each event as
    /// `(id, retry, data)`, and whether the stream was abandoned at the cap.
    #[allow(clippy::type_complexity)]
    pub fn sse_events<'a>(
        chunks: impl IntoIterator<Item = &'a [u8]>,
        max_event: usize,
    ) -> (Vec<(Option<String>, Option<u64>, Option<String>)>, bool) {
        let mut parser = super::SseParser::new(max_event);
        let mut out = Vec::new();
        for chunk in chunks {
            match parser.push(chunk) {
                Ok(events) => out.extend(events.into_iter().map(|e| (e.id, e.retry, e.data))),
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }
}

/// How a response's SSE stream ended.
#[derive(Debug, Default)]
pub(super) struct StreamEnd {
    /// The answer to the request arrived.
    pub(super) answered: bool,
    /// The last event id seen: the stream can be resumed from it.
    pub(super) last_event_id: Option<String>,
    /// The reconnection delay the server asked for (clamped).
    pub(super) retry: Option<Duration>,
    /// Why the stream was given up before its end (an event over the size limit).
    pub(super) abandoned: Option<String>,
}

/// How long to wait before resuming a stream when the server named no `retry`.
pub(super) const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How many times one request's stream is resumed before giving up.
pub(super) const MAX_RESUMPTIONS: u32 = 5;

/// Reads an SSE response body, delivering its messages, until the answer to `id` arrives or
/// the stream ends.
pub(super) async fn read_sse(
    mut body: hyper::body::Incoming,
    state: &State,
    tx: &mpsc::Sender<JsonRpcMessage>,
    method: &str,
    id: Option<&RequestId>,
) -> StreamEnd {
    let mut parser = SseParser::new(state.limits.max_message);
    let mut end = StreamEnd::default();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let events = match parser.push(&data) {
            Ok(events) => events,
            Err(SseTooLarge { limit }) => {
                let why = format!(
                    "the server sent an SSE event larger than the {limit}-byte limit \
                     (HttpTransport::max_message_size); the stream was abandoned"
                );
                tracing::warn!(%why);
                end.abandoned = Some(why);
                break;
            }
        };
        for event in events {
            if let Some(event_id) = event.id {
                end.last_event_id = Some(event_id);
            }
            if let Some(ms) = event.retry {
                end.retry = Some(state.limits.retry_delay(ms));
            }
            // A priming event (an id with empty data) carries no message.
            let Some(json) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            match JsonRpcMessage::from_str(&json) {
                Ok(message) => {
                    let answers = id.is_some()
                        && matches!(
                            &message,
                            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
                        )
                        && message.id() == id;
                    deliver(state, tx, method, message).await;
                    end.answered |= answers;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the server sent an SSE event that is not a JSON-RPC message")
                }
            }
        }
        if end.answered {
            break;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::state::DEFAULT_MAX_MESSAGE;

    #[test]
    fn sse_events_are_split_on_blank_lines() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        assert!(
            p.push(b"event: message\r\ndata: {\"a\":")
                .unwrap()
                .is_empty()
        );
        let events = p
            .push(b"1}\r\n\r\n: ping\n\nevent: message\ndata: 2\n\n")
            .unwrap();
        let data: Vec<_> = events.iter().map(|e| e.data.as_deref()).collect();
        assert_eq!(data, [Some("{\"a\":1}"), Some("2")]);
    }

    #[test]
    fn sse_events_carry_their_id_and_retry() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let events = p
            .push(b"id: event-1\nretry: 500\ndata: \n\nid: event-2\ndata: {}\n\n")
            .unwrap();
        assert_eq!(
            events,
            [
                SseEvent {
                    id: Some("event-1".into()),
                    retry: Some(500),
                    data: Some(String::new())
                },
                SseEvent {
                    id: Some("event-2".into()),
                    retry: None,
                    data: Some("{}".into())
                }
            ]
        );
    }

    fn data(events: Vec<SseEvent>) -> Vec<String> {
        events.into_iter().filter_map(|e| e.data).collect()
    }

    #[test]
    fn a_character_split_across_two_reads_arrives_whole() {
        // "café ☕": é is C3 A9, ☕ is E2 98 95; every split point inside them.
        let event = "data: {\"t\":\"café ☕\"}\n\n".as_bytes();
        for at in 1..event.len() {
            let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
            let mut got = data(p.push(&event[..at]).unwrap());
            got.extend(data(p.push(&event[at..]).unwrap()));
            assert_eq!(got, ["{\"t\":\"café ☕\"}"], "split at {at}");
        }
        // One byte per read.
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let mut got = Vec::new();
        for byte in event {
            got.extend(data(p.push(std::slice::from_ref(byte)).unwrap()));
        }
        assert_eq!(got, ["{\"t\":\"café ☕\"}"]);
    }

    #[test]
    fn every_line_ending_and_a_split_crlf_end_events() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let mut got = data(p.push(b"\xEF\xBB\xBFdata: a\r").unwrap());
        got.extend(data(p.push(b"\n\r\ndata: b\r\rdata: c\n").unwrap()));
        got.extend(data(p.push(b"data: d\n\n").unwrap()));
        assert_eq!(got, ["a", "b", "c\nd"]);
    }

    #[test]
    fn an_event_over_the_limit_ends_the_stream() {
        let mut p = SseParser::new(64);
        assert_eq!(
            data(p.push(b"data: 0123456789\n\n").unwrap()),
            ["0123456789"]
        );
        // Without a blank line the event grows until the limit, not forever.
        let mut refused = None;
        for _ in 0..100 {
            if let Err(e) = p.push(b"data: xxxxxxxxxxxxxxxx\n") {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(refused, Some(SseTooLarge { limit: 64 }));
        // A single endless line too.
        let mut p = SseParser::new(64);
        assert!(p.push(&[b'x'; 60]).is_ok());
        assert_eq!(p.push(&[b'x'; 60]), Err(SseTooLarge { limit: 64 }));
    }

    #[test]
    fn a_long_stream_is_parsed_in_linear_time() {
        // 4 MiB of one event in 1-KiB reads: a parser that rescans its buffer per read does
        // ~8 GiB of work here; this one scans each byte once and copies it at most twice
        // (into the line, then into the event's data). Counted, not timed, wherever the
        // parser keeps bytes: a regression that re-copies the data assembled so far, or
        // rescans the line, multiplies the count by the number of reads.
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let line = [b"data: ".as_slice(), &[b'y'; 1017], b"\n"].concat();
        for _ in 0..4096 {
            assert!(p.push(&line).unwrap().is_empty());
            assert!(p.line.is_empty());
        }
        let pushed = 4096 * line.len();
        assert_eq!(p.work.scanned, pushed, "{:?}", p.work);
        assert!(p.work.copied <= 2 * pushed, "{:?}", p.work);
        let events = p.push(b"\n").unwrap();
        assert_eq!(
            events[0].data.as_ref().map(String::len),
            Some(4096 * 1018 - 1)
        );
    }
}
