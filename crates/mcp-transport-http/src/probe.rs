//! The parts of a request's params the HTTP headers repeat (`name`, `uri`, `taskId`, `_meta`'s
//! protocol version, a tool's `arguments`), read without building the rest: from params
//! already decoded as their method's type, or from the raw JSON as any value. The server
//! checks the headers against them; the client writes its headers from them.

use mcp_types::JsonObject;
use mcp_types::messages::ClientRequest;
use serde_json::Value;

/// The parts of a request's params the HTTP layer checks against headers.
#[derive(serde::Deserialize, Default)]
pub(crate) struct ParamsProbe {
    #[serde(rename = "_meta")]
    pub(crate) meta: Option<MetaProbe>,
    pub(crate) name: Option<Value>,
    pub(crate) uri: Option<Value>,
    #[serde(rename = "taskId")]
    pub(crate) task_id: Option<Value>,
}

impl ParamsProbe {
    /// Reads the parts from raw params (absent or unreadable params have none).
    pub(crate) fn read(params: Option<&serde_json::value::RawValue>) -> Self {
        params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    }

    /// The value of the parameter `Mcp-Name` repeats, by its name in the method table
    /// ([`mcp_types::methods::name_param`]); `None` for one the probe does not read.
    pub(crate) fn named(&self, field: &str) -> Option<&Value> {
        match field {
            "name" => self.name.as_ref(),
            "uri" => self.uri.as_ref(),
            "taskId" => self.task_id.as_ref(),
            _ => None,
        }
    }

    /// `_meta`'s protocol version, if it is a string.
    pub(crate) fn protocol_version(&self) -> Option<&str> {
        self.meta
            .as_ref()
            .and_then(|m| m.protocol_version.as_ref())
            .and_then(Value::as_str)
    }
}

/// What the server reads of a request's params to check its headers: borrowed from the
/// request the body's one pass decoded (no copy), or read from the raw JSON when the params
/// did not decode as their method's type. Only string values count, the same either way.
pub(crate) enum Probe<'a> {
    Typed(&'a ClientRequest),
    Raw(ParamsProbe),
}

impl<'a> Probe<'a> {
    /// From the decoded request when there is one, from `raw` otherwise.
    pub(crate) fn new(
        typed: Option<&'a ClientRequest>,
        raw: Option<&serde_json::value::RawValue>,
    ) -> Self {
        match typed {
            Some(typed) => Probe::Typed(typed),
            None => Probe::Raw(ParamsProbe::read(raw)),
        }
    }

    /// `_meta`'s protocol version, if it is a string.
    pub(crate) fn protocol_version(&self) -> Option<&str> {
        match self {
            Probe::Typed(typed) => typed.meta().and_then(|m| m.protocol_version.as_deref()),
            Probe::Raw(probe) => probe.protocol_version(),
        }
    }

    /// The string value of the parameter `Mcp-Name` repeats, by its name in the method table
    /// ([`mcp_types::methods::name_param`]): `name`, `uri` or `taskId`, of the methods that
    /// have it.
    pub(crate) fn named(&self, field: &str) -> Option<&str> {
        match self {
            Probe::Typed(typed) => match (*typed, field) {
                (ClientRequest::CallTool(p), "name") => Some(&p.name),
                (ClientRequest::GetPrompt(p), "name") => Some(&p.name),
                (ClientRequest::ReadResource(p), "uri") => Some(&p.uri),
                (ClientRequest::GetTask(p) | ClientRequest::CancelTask(p), "taskId") => {
                    Some(&p.task_id)
                }
                (ClientRequest::UpdateTask(p), "taskId") => Some(&p.task_id),
                _ => None,
            },
            Probe::Raw(probe) => probe.named(field).and_then(Value::as_str),
        }
    }
}

/// A `tools/call`'s `arguments` object, read from its raw params only when a tool mirrors
/// some of them in headers (empty when absent or not an object).
pub(crate) fn arguments(params: Option<&serde_json::value::RawValue>) -> JsonObject {
    #[derive(serde::Deserialize)]
    struct Arguments {
        arguments: Option<JsonObject>,
    }
    params
        .and_then(|p| serde_json::from_str::<Arguments>(p.get()).ok())
        .and_then(|a| a.arguments)
        .unwrap_or_default()
}

/// The one member of `_meta` the HTTP layer reads, `protocolVersion`, without building the rest
/// (the service parses the whole envelope again). Any JSON is accepted: a `_meta` that is not
/// an object has no version, as before.
#[derive(Default)]
pub(crate) struct MetaProbe {
    pub(crate) protocol_version: Option<Value>,
}

impl<'de> serde::Deserialize<'de> for MetaProbe {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = MetaProbe;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<MetaProbe, A::Error> {
                let mut probe = MetaProbe::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == mcp_types::meta::PROTOCOL_VERSION {
                        probe.protocol_version = Some(map.next_value()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(probe)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<MetaProbe, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(MetaProbe::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_unit<E>(self) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(params: &str) -> ParamsProbe {
        serde_json::from_str(params).unwrap()
    }

    fn version(params: &str) -> Option<Value> {
        probe(params).meta.and_then(|m| m.protocol_version)
    }

    /// `(version, name, uri, taskId)` as read by the probe of the decoded params and by the
    /// one of the raw JSON.
    type Read = [Option<String>; 4];

    fn both_probes(method: &str, params: &str) -> [Read; 2] {
        let raw = serde_json::value::RawValue::from_string(params.to_owned()).unwrap();
        let typed = ClientRequest::from_parts(method, Some(&raw)).unwrap();
        [Probe::new(Some(&typed), None), Probe::new(None, Some(&raw))].map(|p| {
            [
                p.protocol_version(),
                p.named("name"),
                p.named("uri"),
                p.named("taskId"),
            ]
            .map(|v| v.map(str::to_owned))
        })
    }

    #[test]
    fn the_probe_of_decoded_params_reads_what_the_raw_probe_reads() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let cases = [
            (
                "tools/call",
                format!(r#"{{"name":"echo","arguments":{{"text":"hi"}},{meta}}}"#),
            ),
            ("prompts/get", format!(r#"{{"name":"greet",{meta}}}"#)),
            ("resources/read", format!(r#"{{"uri":"file:///a",{meta}}}"#)),
            ("tasks/get", format!(r#"{{"taskId":"t-1",{meta}}}"#)),
            ("tasks/cancel", format!(r#"{{"taskId":"t-2",{meta}}}"#)),
            ("tasks/list", format!(r#"{{{meta}}}"#)),
            ("tools/call", r#"{"name":"echo"}"#.to_owned()),
        ];
        for (method, params) in cases {
            let [typed, raw] = both_probes(method, &params);
            assert_eq!(typed, raw, "{method} {params}");
        }
        let [typed, _] = both_probes("tasks/get", &format!(r#"{{"taskId":"t-1",{meta}}}"#));
        assert!(matches!(
            Probe::new(None, None),
            Probe::Raw(ParamsProbe { meta: None, .. })
        ));
        assert_eq!(typed[0].as_deref(), Some("2026-07-28"));
        assert_eq!(typed[3].as_deref(), Some("t-1"));
        let [typed, raw] = both_probes("tools/call", r#"{"name":"echo","uri":"file:///x"}"#);
        assert_eq!(typed[1].as_deref(), Some("echo"));
        // A member its method does not have: kept as unknown by the decoded params, never
        // asked for (only the method's own `Mcp-Name` parameter is).
        assert_eq!(
            (typed[2].as_deref(), raw[2].as_deref()),
            (None, Some("file:///x"))
        );
    }

    #[test]
    fn the_meta_probe_reads_only_the_protocol_version() {
        let params = r#"{"name":"echo","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
            "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}"#;
        assert_eq!(version(params), Some(Value::from("2026-07-28")));
        assert_eq!(probe(params).name, Some(Value::from("echo")));
        // Not a string: kept as sent, so the caller sees no version (as with a `Value` probe).
        assert_eq!(
            version(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#),
            Some(Value::from(7))
        );
        // A repeated key: the last one counts, as when `_meta` was read into a map.
        assert_eq!(
            version(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}"#
            ),
            Some(Value::from("b"))
        );
        assert_eq!(version(r#"{"_meta":{}}"#), None);
    }

    #[test]
    fn a_meta_that_is_not_an_object_has_no_version_and_the_rest_is_still_read() {
        for meta in ["5", "-1", "1.5", "true", "null", r#""x""#, r#"[1,{"a":2}]"#] {
            let parsed = probe(&format!(
                r#"{{"_meta":{meta},"name":"echo","uri":"a://b"}}"#
            ));
            assert!(
                parsed.meta.and_then(|m| m.protocol_version).is_none(),
                "{meta}"
            );
            assert_eq!(parsed.name, Some(Value::from("echo")), "{meta}");
            assert_eq!(parsed.uri, Some(Value::from("a://b")), "{meta}");
        }
    }
}
