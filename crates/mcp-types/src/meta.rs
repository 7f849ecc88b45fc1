//! The reserved `_meta` keys and one typed `_meta` object for requests, results and
//! notifications.
//!
//! On 2026-07-28 every request carries its own context in `_meta` (version, capabilities,
//! client info, log level); results carry `serverInfo`. Keys this crate does not know stay in
//! [`Meta::extra`] and are written back unchanged.

use crate::prelude::*;

use alloc::sync::Arc;

use serde::Serialize;

use crate::JsonObject;
use crate::capabilities::ClientCapabilities;
use crate::id::RequestId;
use crate::identity::Implementation;
use crate::level::LoggingLevel;

/// `progressToken`: opts a request in to `notifications/progress`.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// `io.modelcontextprotocol/protocolVersion`: required on every 2026-07-28 request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `io.modelcontextprotocol/clientCapabilities`: required on every 2026-07-28 request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `io.modelcontextprotocol/clientInfo`: should be on every 2026-07-28 request; never required.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `io.modelcontextprotocol/logLevel`: opts a request in to `notifications/message` (deprecated).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `io.modelcontextprotocol/serverInfo`: the server's identity on every 2026-07-28 result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `io.modelcontextprotocol/subscriptionId`: tags every notification of a
/// `subscriptions/listen` stream with the id of the listen request.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `io.modelcontextprotocol/related-task`: associates a message with a task (2025-11-25 only).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// OpenTelemetry `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// On a 2025-11-25 server-to-client request this SDK's server sends for a resolver: the
/// resolver's key, the one a 2026-07-28 `inputRequests` entry is named by, so that a client
/// answers each question under the same name in both eras.
pub const INPUT_KEY: &str = "rs.keel/inputKey";
/// OpenTelemetry `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// OpenTelemetry `baggage`.
pub const BAGGAGE: &str = "baggage";

/// Edits the `_meta` object of raw request params (params and `_meta` made objects when
/// absent) and writes the params back. Params that are not an object, or a `_meta` that is
/// not one, are left as they are.
pub fn edit_params_meta(
    params: &mut Option<Box<serde_json::value::RawValue>>,
    edit: impl FnOnce(&mut JsonObject),
) {
    let mut object = match params
        .as_deref()
        .map(|p| serde_json::from_str::<serde_json::Value>(p.get()))
    {
        None => JsonObject::new(),
        Some(Ok(serde_json::Value::Object(object))) => object,
        Some(_) => return,
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(JsonObject::new()));
    let serde_json::Value::Object(meta) = meta else {
        return;
    };
    edit(meta);
    if let Ok(raw) = serde_json::value::to_raw_value(&object) {
        *params = Some(raw);
    }
}

/// A `_meta` object with typed access to the reserved keys.
///
/// The larger members are behind pointers so every type that carries a `_meta` stays small;
/// the client's capabilities and identity are shared (`Arc`), so a server hands them to a
/// request's context without copying them.
/// One type serves requests (the per-request envelope), results (`serverInfo`) and
/// notifications (`subscriptionId`); keys that do not belong where they appear are simply absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Meta {
    /// `progressToken` (a [`ProgressToken`](crate::notifications::ProgressToken): a string or
    /// an integer, like a request id).
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<RequestId>,
    /// `io.modelcontextprotocol/protocolVersion`.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<Arc<ClientCapabilities>>,
    /// `io.modelcontextprotocol/clientInfo`.
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Arc<Implementation>>,
    /// `io.modelcontextprotocol/logLevel`.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// `io.modelcontextprotocol/serverInfo`.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Arc<Implementation>>,
    /// `io.modelcontextprotocol/subscriptionId`.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Every other key, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::de::deserialize_with_extra!(Meta, "a _meta object", { progress_token: PROGRESS_TOKEN => optional, protocol_version: PROTOCOL_VERSION => optional, client_capabilities: CLIENT_CAPABILITIES => shared, client_info: CLIENT_INFO => shared, log_level: LOG_LEVEL => optional, server_info: SERVER_INFO => shared, subscription_id: SUBSCRIPTION_ID => optional });

impl Meta {
    /// The per-request envelope of a 2026-07-28 request.
    pub fn request(protocol_version: &str, client_capabilities: ClientCapabilities) -> Self {
        Meta {
            protocol_version: Some(protocol_version.to_owned()),
            client_capabilities: Some(Arc::new(client_capabilities)),
            ..Meta::default()
        }
    }

    /// The `_meta` of a 2026-07-28 result: the server's identity.
    pub fn result(server_info: Implementation) -> Self {
        Meta {
            server_info: Some(Arc::new(server_info)),
            ..Meta::default()
        }
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Meta::default()
    }

    /// The names of the envelope keys a 2026-07-28 request must carry and this one lacks.
    pub fn missing_envelope_keys(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.protocol_version.is_none() {
            missing.push(PROTOCOL_VERSION);
        }
        if self.client_capabilities.is_none() {
            missing.push(CLIENT_CAPABILITIES);
        }
        missing
    }
}

/// Whether `key` follows the `_meta` key grammar `[prefix/]name`.
pub fn is_valid_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let prefix_ok = prefix.is_none_or(|p| !p.is_empty() && p.split('.').all(is_label));
    name_ok && prefix_ok
}

/// Whether `key` has a prefix reserved for the spec: one whose second label is
/// `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/`, `dev.mcp/`).
pub fn is_reserved_key(key: &str) -> bool {
    key.rsplit_once('/').is_some_and(|(prefix, _)| {
        matches!(
            prefix.split('.').nth(1),
            Some("modelcontextprotocol" | "mcp")
        )
    })
}

fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphabetic()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_grammar_follows_the_spec() {
        assert!(is_valid_key("progressToken"));
        assert!(is_valid_key("io.modelcontextprotocol/protocolVersion"));
        assert!(is_valid_key("com.example/a_b.c-d"));
        assert!(!is_valid_key("io.modelcontextprotocol/"));
        assert!(!is_valid_key("1io.example/x"));
        assert!(!is_valid_key("io.example-/x"));
        assert!(!is_valid_key("-x"));
        assert!(is_reserved_key("io.modelcontextprotocol/x"));
        assert!(is_reserved_key("dev.mcp/x"));
        assert!(!is_reserved_key("com.example.mcp/x"));
        assert!(!is_reserved_key("progressToken"));
    }

    #[test]
    fn edit_params_meta_adds_to_meta_and_leaves_what_is_not_an_object() {
        let add = |meta: &mut JsonObject| {
            meta.insert(TRACEPARENT.into(), "00-a-b-01".into());
        };
        let mut none = None;
        edit_params_meta(&mut none, add);
        assert_eq!(
            none.unwrap().get(),
            r#"{"_meta":{"traceparent":"00-a-b-01"}}"#
        );
        let mut some = Some(
            serde_json::value::to_raw_value(&serde_json::json!({"name": "t", "_meta": {"k": 1}}))
                .unwrap(),
        );
        edit_params_meta(&mut some, add);
        assert_eq!(
            some.unwrap().get(),
            r#"{"_meta":{"k":1,"traceparent":"00-a-b-01"},"name":"t"}"#
        );
        for odd in [r#"[1]"#, r#"{"_meta":3}"#] {
            let mut params = Some(serde_json::value::RawValue::from_string(odd.into()).unwrap());
            edit_params_meta(&mut params, add);
            assert_eq!(params.unwrap().get(), odd);
        }
    }
}
