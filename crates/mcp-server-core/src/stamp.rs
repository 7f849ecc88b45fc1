//! What the engine adds to every result on the way out: on 2026-07-28 `resultType`, the
//! server's identity in `_meta`, and the caching hints where the schema requires them; on
//! 2025-11-25 none of those (they are not part of that revision).

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;

use mcp_types::common::{CacheScope, EmptyResult};
use mcp_types::completion::CompleteResult;
use mcp_types::discover::DiscoverResult;
use mcp_types::elicitation::ElicitRequestParams;
use mcp_types::ext::tasks::{CreateTaskResult, GetTaskResult, TaskAck};
use mcp_types::lifecycle::Implementation;
use mcp_types::meta::Meta;
use mcp_types::mrtr::InputRequest;
use mcp_types::prompts::{GetPromptResult, ListPromptsResult};
use mcp_types::resources::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use mcp_types::tools::{CallToolResult, ListToolsResult};
use mcp_types::{InputRequiredResult, ResultType};

/// The caching hints a server puts on cacheable 2026-07-28 results it did not set itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// Freshness in milliseconds (0: stale at once).
    pub ttl_ms: u64,
    /// Who may reuse the result.
    pub scope: CacheScope,
}

impl Default for CacheHints {
    /// `ttlMs: 0, cacheScope: "private"`: the safe choice when unsure.
    fn default() -> Self {
        CacheHints {
            ttl_ms: 0,
            scope: CacheScope::Private,
        }
    }
}

pub(crate) struct Stamp<'a> {
    pub(crate) server_info: &'a Arc<Implementation>,
    pub(crate) cache: CacheHints,
}

/// The Tasks extension's results (`CreateTaskResult`, `tasks/get`, `tasks/update` and
/// `tasks/cancel`) write their own `resultType`; they carry the server's identity like every
/// other 2026-07-28 result, and never go to a 2025-11-25 session.
macro_rules! stamped_task {
    ($($t:ty),*) => {$(
        impl Stamped for $t {
            fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
                stamp_meta(&mut self.meta, stamp.server_info);
            }
            fn strip_legacy(&mut self) {}
        }
    )*};
}

stamped_task!(CreateTaskResult, GetTaskResult, TaskAck);

/// A result the engine sends.
pub(crate) trait Stamped {
    /// Adds what 2026-07-28 requires.
    fn stamp_modern(&mut self, stamp: &Stamp<'_>);
    /// Removes what 2025-11-25 does not have.
    fn strip_legacy(&mut self);
    /// Stamps for 2026-07-28 and writes the result; `server_info` is the `_meta` holding the
    /// server's identity, already serialized ([`server_info_bytes`]), for a result that can
    /// copy it in.
    fn write_modern(
        mut self,
        stamp: &Stamp<'_>,
        server_info: &RawValue,
    ) -> Result<Box<RawValue>, serde_json::Error>
    where
        Self: Sized + Serialize,
    {
        let _ = server_info;
        self.stamp_modern(stamp);
        serde_json::value::to_raw_value(&self)
    }
}

pub(crate) fn stamp_meta(meta: &mut Option<Meta>, info: &Arc<Implementation>) {
    let meta = meta.get_or_insert_with(Meta::default);
    if meta.server_info.is_none() {
        meta.server_info = Some(info.clone());
    }
}

macro_rules! stamped {
    (cacheable: $($t:ty),*) => {$(
        impl Stamped for $t {
            fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
                self.result_type.get_or_insert(ResultType::Complete);
                stamp_meta(&mut self.meta, stamp.server_info);
                self.ttl_ms.get_or_insert(stamp.cache.ttl_ms);
                self.cache_scope.get_or_insert(stamp.cache.scope);
            }
            fn strip_legacy(&mut self) {
                self.result_type = None;
                self.ttl_ms = None;
                self.cache_scope = None;
            }
        }
    )*};
    (plain: $($t:ty),*) => {$(
        impl Stamped for $t {
            fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
                self.result_type.get_or_insert(ResultType::Complete);
                stamp_meta(&mut self.meta, stamp.server_info);
            }
            fn strip_legacy(&mut self) {
                self.result_type = None;
            }
        }
    )*};
}

stamped!(cacheable: ListToolsResult, ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult, DiscoverResult);
stamped!(plain: GetPromptResult, CompleteResult, EmptyResult);

impl Stamped for CallToolResult {
    fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
        self.result_type.get_or_insert(ResultType::Complete);
        stamp_meta(&mut self.meta, stamp.server_info);
    }
    fn strip_legacy(&mut self) {
        self.result_type = None;
    }
    fn write_modern(
        self,
        stamp: &Stamp<'_>,
        server_info: &RawValue,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        write_call_result(self, stamp, server_info)
    }
}

impl Stamped for InputRequiredResult {
    fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
        modern_round(self);
        stamp_meta(&mut self.meta, stamp.server_info);
    }

    fn strip_legacy(&mut self) {}

    /// As for a call's result: without a `_meta` of the handler's, the one holding the
    /// server's identity is copied in already serialized.
    fn write_modern(
        mut self,
        stamp: &Stamp<'_>,
        server_info: &RawValue,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        if self.meta.is_some() {
            self.stamp_modern(stamp);
            return serde_json::value::to_raw_value(&self);
        }
        modern_round(&mut self);
        serde_json::value::to_raw_value(&RoundWithServerInfo {
            round: &self,
            server_info,
        })
    }
}

/// What 2026-07-28 makes of a round besides its `_meta`: its `resultType`, and URL
/// elicitations without an `elicitationId` (correlation lives in the state).
fn modern_round(round: &mut InputRequiredResult) {
    round.result_type = ResultType::InputRequired;
    for request in round.input_requests.iter_mut().flat_map(|r| r.values_mut()) {
        if let InputRequest::Elicit(ElicitRequestParams::Url(url)) = request {
            url.elicitation_id = None;
        }
    }
}

/// An `InputRequiredResult` without `_meta`, written with the one that holds only the
/// server's identity, in the members' order of its derived `Serialize`.
struct RoundWithServerInfo<'a> {
    round: &'a InputRequiredResult,
    server_info: &'a RawValue,
}

impl Serialize for RoundWithServerInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.round;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("resultType", &r.result_type)?;
        if let Some(requests) = &r.input_requests {
            map.serialize_entry("inputRequests", requests)?;
        }
        if let Some(state) = &r.request_state {
            map.serialize_entry("requestState", state)?;
        }
        map.serialize_entry("_meta", self.server_info)?;
        for (key, value) in &r.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The `_meta` of a 2026-07-28 result whose handler set none, `{"io.modelcontextprotocol/
/// serverInfo": …}`, serialized once when the service is built: the server's identity never
/// changes.
pub(crate) fn server_info_bytes(info: &Implementation) -> Box<RawValue> {
    let meta = Meta {
        server_info: Some(Arc::new(info.clone())),
        ..Meta::default()
    };
    serde_json::value::to_raw_value(&meta).expect("a Meta always serializes")
}

/// A 2026-07-28 `tools/call` result, stamped and written in one pass: when the handler set no
/// `_meta`, the one holding the server's identity is copied in from `server_info` instead of
/// serialized field by field, and the bytes are those [`Stamped::stamp_modern`] then
/// `serde_json` would write (the test below holds the two side by side).
pub(crate) fn write_call_result(
    mut result: CallToolResult,
    stamp: &Stamp<'_>,
    server_info: &RawValue,
) -> Result<Box<RawValue>, serde_json::Error> {
    if result.meta.is_some() {
        result.stamp_modern(stamp);
        return serde_json::value::to_raw_value(&result);
    }
    result.result_type.get_or_insert(ResultType::Complete);
    serde_json::value::to_raw_value(&WithServerInfo {
        result: &result,
        server_info,
    })
}

/// A `CallToolResult` without `_meta`, written with the `_meta` that holds only the server's
/// identity (already serialized), in the members' order of its derived `Serialize` (`_meta`
/// before the unknown members).
struct WithServerInfo<'a> {
    result: &'a CallToolResult,
    server_info: &'a RawValue,
}

impl Serialize for WithServerInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.result;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &r.content)?;
        if let Some(structured) = &r.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if let Some(is_error) = &r.is_error {
            map.serialize_entry("isError", is_error)?;
        }
        if let Some(result_type) = &r.result_type {
            map.serialize_entry("resultType", result_type)?;
        }
        map.serialize_entry("_meta", self.server_info)?;
        for (key, value) in &r.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::JsonObject;

    fn both(result: CallToolResult) -> (String, String) {
        let info = Arc::new(Implementation::new("stamp-test", "1.2.3"));
        let stamp = Stamp {
            server_info: &info,
            cache: CacheHints::default(),
        };
        let mut derived = result.clone();
        derived.stamp_modern(&stamp);
        let derived = serde_json::to_string(&derived).unwrap();
        let written = write_call_result(result, &stamp, &server_info_bytes(&info)).unwrap();
        (derived, written.get().to_owned())
    }

    #[test]
    fn an_input_required_result_is_written_byte_for_byte_as_the_derived_serialize_writes_it() {
        use mcp_types::elicitation::{ElicitRequestFormParams, ElicitRequestUrlParams};
        let info = Arc::new(Implementation::new("stamp-test", "1.2.3"));
        let stamp = Stamp {
            server_info: &info,
            cache: CacheHints::default(),
        };
        let url = ElicitRequestParams::Url(ElicitRequestUrlParams {
            elicitation_id: Some("must-go".into()),
            ..serde_json::from_value(serde_json::json!({
                "mode": "url", "message": "Sign in", "url": "https://example.com/a?b=\"c\""
            }))
            .unwrap()
        });
        let form: ElicitRequestFormParams = serde_json::from_value(serde_json::json!({
            "message": "Go on?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        }))
        .unwrap();
        let mut requests = mcp_types::mrtr::InputRequests::new();
        requests.insert("b_url".into(), InputRequest::Elicit(url));
        requests.insert(
            "a_form".into(),
            InputRequest::Elicit(ElicitRequestParams::Form(form)),
        );
        let mut extra = JsonObject::new();
        extra.insert("zeta".into(), serde_json::json!([1, "two"]));
        let cases = [
            InputRequiredResult::new(requests.clone(), Some("sealed \u{2603} state".into())),
            InputRequiredResult::new(requests, None),
            InputRequiredResult {
                request_state: Some("state only".into()),
                extra,
                ..InputRequiredResult::default()
            },
            InputRequiredResult {
                meta: Some(Meta::default()),
                request_state: Some("the handler's own _meta".into()),
                ..InputRequiredResult::default()
            },
        ];
        for case in cases {
            let mut derived = case.clone();
            derived.stamp_modern(&stamp);
            let derived = serde_json::to_string(&derived).unwrap();
            let written = case
                .write_modern(&stamp, &server_info_bytes(&info))
                .unwrap();
            assert_eq!(written.get(), derived);
            assert!(!derived.contains("must-go"), "{derived}");
            assert!(derived.contains(r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stamp-test","version":"1.2.3"}}"#), "{derived}");
        }
    }

    #[test]
    fn a_call_result_is_written_byte_for_byte_as_the_derived_serialize_writes_it() {
        let mut extra = JsonObject::new();
        extra.insert("zeta".into(), serde_json::json!([1, "two"]));
        extra.insert("alpha".into(), serde_json::json!({"x": null}));
        let cases = [
            CallToolResult::text("hello \"quoted\" \u{2603}"),
            CallToolResult::error("it failed"),
            CallToolResult {
                structured_content: Some(serde_json::json!({"n": 1.5, "s": "x"})),
                result_type: Some(ResultType::Complete),
                extra,
                ..CallToolResult::text("with everything")
            },
            CallToolResult {
                meta: Some(Meta::default()),
                ..CallToolResult::text("the handler's own _meta")
            },
        ];
        for case in cases {
            let (derived, written) = both(case);
            assert_eq!(written, derived);
            assert!(written.contains(r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stamp-test","version":"1.2.3"}}"#), "{written}");
        }
    }
}
