//! The params the gateway sends upstream: the upstream's own tool name and the caller's
//! arguments, under a `_meta` the gateway writes itself. On 2026-07-28 that is the request
//! envelope with the upstream's negotiated version, the caller's capabilities and log level,
//! and the gateway as `clientInfo`; on 2025-11-25 only a progress token, when there is one.

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::common::PaginatedRequestParams;
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::LoggingLevel;
use mcp_types::meta::Meta;
use mcp_types::tools::CallToolRequestParams;
use mcp_types::version::Era;
use mcp_types::{JsonObject, RequestId};
use serde_json::value::RawValue;

/// What the gateway passes on of its caller's request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller {
    /// The capabilities the caller declared.
    pub capabilities: ClientCapabilities,
    /// The least severe log level the caller wants (2026-07-28 `logLevel`).
    pub log_level: Option<LoggingLevel>,
    /// A progress token for the upstream to report progress under, when the gateway relays it.
    pub progress: Option<RequestId>,
}

/// The caller's capabilities as an upstream may see them: without the Tasks extension (and
/// 2025-11-25's `tasks`), since a task's result does not pass through this gateway yet.
pub(crate) fn forwarded_capabilities(declared: &ClientCapabilities) -> ClientCapabilities {
    let mut caps = declared.clone();
    caps.tasks = None;
    if let Some(extensions) = &mut caps.extensions {
        extensions.remove(mcp_types::ext::tasks::EXTENSION_ID);
        if extensions.is_empty() {
            caps.extensions = None;
        }
    }
    caps
}

/// The `_meta` for a request to an upstream speaking `version` of `era`.
pub(crate) fn meta(
    era: Era,
    version: &str,
    caller: &Caller,
    gateway: &Implementation,
) -> Option<Meta> {
    let mut meta = match era {
        Era::Modern => {
            let mut meta = Meta::request(version, forwarded_capabilities(&caller.capabilities));
            meta.client_info = Some(std::sync::Arc::new(gateway.clone()));
            meta.log_level = caller.log_level;
            meta
        }
        Era::Legacy => Meta::default(),
    };
    meta.progress_token = caller.progress.clone();
    (!meta.is_empty()).then_some(meta)
}

/// The params of a forwarded `tools/call`.
pub(crate) fn call_params(
    name: &str,
    arguments: Option<JsonObject>,
    meta: Option<Meta>,
) -> Result<Box<RawValue>, serde_json::Error> {
    let params = CallToolRequestParams {
        name: name.to_owned(),
        arguments,
        meta,
        ..CallToolRequestParams::default()
    };
    mcp_types::jsonrpc::to_raw(&params)
}

/// The params of a `tools/list` page request.
pub(crate) fn list_params(
    cursor: Option<String>,
    meta: Option<Meta>,
) -> Result<Box<RawValue>, serde_json::Error> {
    let params = PaginatedRequestParams {
        cursor,
        meta,
        extra: JsonObject::new(),
    };
    mcp_types::jsonrpc::to_raw(&params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller() -> Caller {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "elicitation": {"form": {}},
            "tasks": {"list": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/ui": {}}
        }))
        .unwrap();
        Caller {
            capabilities,
            log_level: Some(LoggingLevel::Warning),
            progress: None,
        }
    }

    #[test]
    fn a_modern_call_carries_the_envelope_with_the_callers_capabilities_but_not_tasks() {
        let gateway = Implementation::new("hub", "1.0");
        let meta = meta(Era::Modern, "2026-07-28", &caller(), &gateway);
        let raw = call_params("echo", Some(JsonObject::new()), meta).unwrap();
        assert_eq!(
            raw.get(),
            r#"{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/ui":{}}},"io.modelcontextprotocol/clientInfo":{"name":"hub","version":"1.0"},"io.modelcontextprotocol/logLevel":"warning"}}"#
        );
    }

    #[test]
    fn a_legacy_call_carries_no_envelope_and_a_progress_token_only_when_relayed() {
        let gateway = Implementation::new("hub", "1.0");
        let raw = call_params(
            "echo",
            None,
            meta(Era::Legacy, "2025-11-25", &caller(), &gateway),
        )
        .unwrap();
        assert_eq!(raw.get(), r#"{"name":"echo"}"#);
        let relayed = Caller {
            progress: Some(RequestId::String("g1".into())),
            ..caller()
        };
        let raw = list_params(
            Some("c1".into()),
            meta(Era::Legacy, "2025-11-25", &relayed, &gateway),
        )
        .unwrap();
        assert_eq!(
            raw.get(),
            r#"{"cursor":"c1","_meta":{"progressToken":"g1"}}"#
        );
    }
}
