//! A `tasks/get` answer written straight from the task's record: the bytes a
//! [`GetTaskResult`](mcp_types::ext::tasks::GetTaskResult) of [`detailed`](super::detailed)
//! would write, without building it first (its two timestamps as strings, its task's copy).
//! A poll is the request a client sends most often while a task runs.

use mcp_types::ext::tasks::TaskStatus;
use mcp_types::meta::Meta;
use mcp_types::mrtr::InputRequests;
use mcp_types::{ErrorObject, JsonObject, ResultType};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;

use super::store::{TaskRecord, Terminal};
use super::time::{iso8601, iso8601_text};
use crate::stamp::{Stamp, Stamped, stamp_meta};

/// The answer to a poll of the task `record`, and its `_meta` once stamped.
pub(crate) struct Poll {
    record: TaskRecord,
    meta: Option<Meta>,
}

impl Poll {
    pub(crate) fn of(record: TaskRecord) -> Self {
        Poll { record, meta: None }
    }

    fn write<M: Serialize + ?Sized, S: Serializer>(
        &self,
        meta: Option<&M>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let r = &self.record;
        let payload = Payload::of(r);
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("resultType", &ResultType::Complete)?;
        map.serialize_entry("taskId", &r.id)?;
        // The payload's status, as `DetailedTask::new` sets it.
        map.serialize_entry("status", &payload.status())?;
        if let Some(message) = &r.status_message {
            map.serialize_entry("statusMessage", message)?;
        }
        map.serialize_entry("createdAt", &Timestamp(r.created_at_ms))?;
        map.serialize_entry("lastUpdatedAt", &Timestamp(r.last_updated_at_ms))?;
        map.serialize_entry("ttlMs", &r.ttl_ms)?;
        if let Some(interval) = &r.poll_interval_ms {
            map.serialize_entry("pollIntervalMs", interval)?;
        }
        match payload {
            Payload::InputRequired(requests) => map.serialize_entry("inputRequests", requests)?,
            Payload::Completed(result) => map.serialize_entry("result", result)?,
            Payload::Failed(error) => map.serialize_entry("error", error)?,
            Payload::Working | Payload::Cancelled => {}
        }
        if let Some(meta) = meta {
            map.serialize_entry("_meta", meta)?;
        }
        map.end()
    }
}

impl Serialize for Poll {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.write(self.meta.as_ref(), s)
    }
}

/// The extension is 2026-07-28's only: nothing to strip. Without a `_meta` of its own (as
/// the engine makes it), the one holding the server's identity is copied in already
/// serialized, as for a call's result.
impl Stamped for Poll {
    fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
        stamp_meta(&mut self.meta, stamp.server_info);
    }

    fn strip_legacy(&mut self) {}

    fn write_modern(
        mut self,
        stamp: &Stamp<'_>,
        server_info: &RawValue,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        if self.meta.is_some() {
            self.stamp_modern(stamp);
            return serde_json::value::to_raw_value(&self);
        }
        struct WithMeta<'a>(&'a Poll, &'a RawValue);
        impl Serialize for WithMeta<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.write(Some(self.1), s)
            }
        }
        serde_json::value::to_raw_value(&WithMeta(&self, server_info))
    }
}

/// The payload of the record's status, borrowed (see `detailed`).
enum Payload<'a> {
    Working,
    InputRequired(&'a InputRequests),
    Completed(&'a JsonObject),
    Failed(&'a ErrorObject),
    Cancelled,
}

impl<'a> Payload<'a> {
    fn of(record: &'a TaskRecord) -> Self {
        match &record.terminal {
            Some(Terminal::Completed(result)) => Payload::Completed(result),
            Some(Terminal::Failed(error)) => Payload::Failed(error),
            Some(Terminal::Cancelled) => Payload::Cancelled,
            None if !record.outstanding.is_empty() => Payload::InputRequired(&record.outstanding),
            None => Payload::Working,
        }
    }

    fn status(&self) -> TaskStatus {
        match self {
            Payload::Working => TaskStatus::Working,
            Payload::InputRequired(_) => TaskStatus::InputRequired,
            Payload::Completed(_) => TaskStatus::Completed,
            Payload::Failed(_) => TaskStatus::Failed,
            Payload::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// [`iso8601`] of milliseconds since the Unix epoch, written from the stack.
struct Timestamp(u64);

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = iso8601_text(self.0);
        match text
            .as_ref()
            .ok()
            .and_then(|t| core::str::from_utf8(t).ok())
        {
            Some(text) => s.serialize_str(text),
            // Past year 9999: the formatted text.
            None => s.serialize_str(&iso8601(self.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use mcp_types::ext::tasks::GetTaskResult;
    use mcp_types::lifecycle::Implementation;
    use mcp_types::mrtr::InputRequest;

    use super::*;
    use crate::stamp::{CacheHints, server_info_bytes};
    use crate::tasks::detailed;

    /// Each status, with and without the optional members, a timestamp past year 9999, and
    /// a record whose `_meta` is its own: the bytes of the `GetTaskResult` built from it.
    #[test]
    fn a_poll_writes_what_the_result_built_from_its_record_writes() {
        let info = Arc::new(Implementation::new("poll-test", "0.1.0"));
        let stamp = Stamp {
            server_info: &info,
            cache: CacheHints::default(),
        };
        let mut outstanding = InputRequests::new();
        outstanding.insert("roots".to_owned(), InputRequest::ListRoots(None));
        let mut result = JsonObject::new();
        result.insert(
            "content".to_owned(),
            serde_json::json!([{"type": "text", "text": "ok"}]),
        );
        let base = TaskRecord {
            id: "t-\"1\"".to_owned(),
            owner: Some("alice".to_owned()),
            client_support: crate::gating::ClientSupport::default(),
            status_message: Some("half way \u{2603}".to_owned()),
            created_at_ms: 1_782_345_600_123,
            last_updated_at_ms: 1_782_345_601_456,
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(500),
            outstanding: InputRequests::new(),
            answers: BTreeMap::new(),
            used_keys: BTreeSet::new(),
            cancel_requested: false,
            terminal: None,
            lease: None,
        };
        let records = [
            base.clone(),
            TaskRecord {
                status_message: None,
                ttl_ms: None,
                poll_interval_ms: None,
                last_updated_at_ms: u64::MAX,
                ..base.clone()
            },
            TaskRecord {
                outstanding: outstanding.clone(),
                ..base.clone()
            },
            TaskRecord {
                terminal: Some(Terminal::Completed(result)),
                ..base.clone()
            },
            TaskRecord {
                terminal: Some(Terminal::Failed(ErrorObject::internal("boom"))),
                outstanding,
                ..base.clone()
            },
            TaskRecord {
                terminal: Some(Terminal::Cancelled),
                ..base
            },
        ];
        for record in records {
            for meta in [None, Some(Meta::default())] {
                let mut built = GetTaskResult {
                    task: detailed(&record),
                    meta: meta.clone(),
                };
                let plain = serde_json::to_string(&built).unwrap();
                built.stamp_modern(&stamp);
                let stamped = serde_json::to_string(&built).unwrap();
                let poll = Poll {
                    record: record.clone(),
                    meta,
                };
                assert_eq!(serde_json::to_string(&poll).unwrap(), plain);
                let written = poll
                    .write_modern(&stamp, &server_info_bytes(&info))
                    .unwrap();
                assert_eq!(written.get(), stamped);
            }
        }
    }
}
