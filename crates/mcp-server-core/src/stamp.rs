//! What the engine adds to every result on the way out: on 2026-07-28 `resultType`, the
//! server's identity in `_meta`, and the caching hints where the schema requires them; on
//! 2025-11-25 none of those (they are not part of that revision).

use std::sync::Arc;

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
}

fn stamp_meta(meta: &mut Option<Meta>, info: &Arc<Implementation>) {
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
stamped!(plain: CallToolResult, GetPromptResult, CompleteResult, EmptyResult);

impl Stamped for InputRequiredResult {
    fn stamp_modern(&mut self, stamp: &Stamp<'_>) {
        self.result_type = ResultType::InputRequired;
        stamp_meta(&mut self.meta, stamp.server_info);
        // URL elicitations carry no elicitationId in 2026-07-28: correlation lives in the state.
        for request in self.input_requests.iter_mut().flat_map(|r| r.values_mut()) {
            if let InputRequest::Elicit(ElicitRequestParams::Url(url)) = request {
                url.elicitation_id = None;
            }
        }
    }

    fn strip_legacy(&mut self) {}
}
