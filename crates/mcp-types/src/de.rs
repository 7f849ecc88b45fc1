//! `Deserialize` for the structs that keep unknown members in an `extra` map, without
//! `#[serde(flatten)]`.
//!
//! A derived `Deserialize` with a flattened field first buffers the whole object, every
//! nested object included, as serde's private `Content` tree, and only then reads its fields
//! out of that tree: a `tools/call` request's params were built twice (the params, then its
//! `_meta`, then the capabilities inside it, each buffered again by its own flattened `extra`).
//! [`deserialize_with_extra!`] reads each member once, straight from the input: a known key
//! into its field, any other into `extra` as a `serde_json::Value`. What it accepts and refuses
//! is what the derive accepted and refused (a known field named twice is an error, a required
//! one missing is `missing field`, `null` for an optional one is absent), and the
//! `Serialize` derive, with its `flatten`, is kept: writing a flattened map buffers nothing.

/// A required field's value, or serde's `missing field` error.
pub(crate) fn required<T, E: serde::de::Error>(
    value: Option<T>,
    wire: &'static str,
) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(wire))
}

/// An optional field: absent and `null` are both `None`.
pub(crate) fn optional<T>(value: Option<Option<T>>) -> Option<T> {
    value.flatten()
}

/// An `Arc<T>` read straight into its allocation (serde's own `Arc<T>` reads a `Box<T>`
/// first and moves it into a second allocation), or the thread's last one when the client
/// sent the same text again ([`crate::intern`]): a client's capabilities and identity come
/// with every request's `_meta` (issue #35, #50).
pub(crate) struct Shared<T>(pub(crate) alloc::sync::Arc<T>);

impl<'de, T: crate::intern::Interned> serde::Deserialize<'de> for Shared<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::intern::read(deserializer).map(Shared)
    }
}

/// `deserialize_with_extra!(Type, "what it is", { field: "wireName" => required|optional|shared, … })`
/// implements `Deserialize` for `Type`, whose remaining field is `extra: JsonObject`.
/// `shared` is an optional `Arc<T>` field (read by [`Shared`]).
macro_rules! deserialize_with_extra {
    ($ty:ident, $expecting:literal, { $( $field:ident : $wire:expr => $kind:ident ),* $(,)? }) => {
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[allow(non_camel_case_types)]
                enum Key {
                    $( $field, )*
                    Other(String),
                }
                struct KeyVisitor;
                impl<'de> ::serde::de::Visitor<'de> for KeyVisitor {
                    type Value = Key;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Key, E> {
                        $( if v == $wire { return Ok(Key::$field); } )*
                        Ok(Key::Other(v.to_owned()))
                    }
                }
                impl<'de> ::serde::Deserialize<'de> for Key {
                    fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
                        d.deserialize_identifier(KeyVisitor)
                    }
                }
                struct Visitor;
                impl<'de> ::serde::de::Visitor<'de> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        $( let mut $field = None; )*
                        let mut extra = $crate::JsonObject::new();
                        while let Some(key) = map.next_key::<Key>()? {
                            match key {
                                $( Key::$field => {
                                    if $field.is_some() {
                                        return Err(::serde::de::Error::duplicate_field($wire));
                                    }
                                    $field = Some($crate::de::deserialize_with_extra!(@read $kind, map));
                                } )*
                                Key::Other(name) => {
                                    let value: ::serde_json::Value = map.next_value()?;
                                    extra.insert(name, value);
                                }
                            }
                        }
                        Ok($ty {
                            $( $field: $crate::de::deserialize_with_extra!(@finish $kind, $field, $wire), )*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(Visitor)
            }
        }
    };
    (@read shared, $map:ident) => {
        $map.next_value::<Option<$crate::de::Shared<_>>>()?.map(|shared| shared.0)
    };
    (@read $kind:ident, $map:ident) => {
        $map.next_value()?
    };
    (@finish shared, $field:ident, $wire:expr) => {
        $crate::de::optional($field)
    };
    (@finish required, $field:ident, $wire:expr) => {
        $crate::de::required($field, $wire)?
    };
    (@finish optional, $field:ident, $wire:expr) => {
        $crate::de::optional($field)
    };
}

pub(crate) use deserialize_with_extra;

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Value, json};

    use crate::JsonObject;
    use crate::capabilities::ElicitationCapability;
    use crate::lifecycle::Implementation;
    use crate::meta::Meta;
    use crate::tools::CallToolRequestParams;

    /// `Implementation` as the derive with `flatten` read it: the reference.
    #[derive(Debug, Deserialize, PartialEq)]
    struct DerivedImplementation {
        name: String,
        version: String,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        description: Option<String>,
        #[serde(default)]
        icons: Option<Vec<crate::content::Icon>>,
        #[serde(rename = "websiteUrl", default)]
        website_url: Option<String>,
        #[serde(flatten)]
        extra: JsonObject,
    }

    #[test]
    fn implementation_reads_what_the_flattening_derive_read() {
        let cases = [
            json!({"name": "n", "version": "1"}),
            json!({"name": "n", "version": "1", "title": null, "websiteUrl": "https://x"}),
            json!({"name": "n", "version": "1", "vendor": {"a": [1, 2]}, "x": null}),
            json!({"version": "1"}),
            json!({"name": 5, "version": "1"}),
            json!({"name": "n"}),
            json!([]),
            json!("text"),
        ];
        for case in cases {
            let text = case.to_string();
            let ours = serde_json::from_str::<Implementation>(&text);
            let derived = serde_json::from_str::<DerivedImplementation>(&text);
            match (&ours, &derived) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        (&a.name, &a.version, &a.title, &a.website_url, &a.extra),
                        (&b.name, &b.version, &b.title, &b.website_url, &b.extra),
                        "{text}"
                    );
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{text}: ours {ours:?}, derived {derived:?}"),
            }
        }
        let missing = serde_json::from_str::<Implementation>(r#"{"version":"1"}"#).unwrap_err();
        assert!(
            missing.to_string().starts_with("missing field `name`"),
            "{missing}"
        );
    }

    /// `TaskIdParams` as the derive with `flatten` read it: the reference.
    #[derive(Debug, Deserialize, PartialEq)]
    struct DerivedTaskIdParams {
        #[serde(rename = "taskId")]
        task_id: String,
        #[serde(rename = "_meta", default)]
        meta: Option<Meta>,
        #[serde(flatten)]
        extra: JsonObject,
    }

    #[test]
    fn task_id_params_read_what_the_flattening_derive_read() {
        use crate::tasks::TaskIdParams;
        let cases = [
            json!({"taskId": "t1"}),
            json!({"taskId": "t1", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "x": [1]}),
            json!({"taskId": "t1", "_meta": null}),
            json!({"_meta": {}}),
            json!({"taskId": 5}),
            json!({"taskId": "t1", "_meta": 3}),
            json!([]),
            json!(null),
        ];
        for case in cases {
            let text = case.to_string();
            let ours = serde_json::from_str::<TaskIdParams>(&text);
            let derived = serde_json::from_str::<DerivedTaskIdParams>(&text);
            match (&ours, &derived) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        (&a.task_id, &a.meta, &a.extra),
                        (&b.task_id, &b.meta, &b.extra),
                        "{text}"
                    );
                }
                (Err(a), Err(b)) => {
                    // The same words up to the position (a map read whole first reports none).
                    let words = |e: &serde_json::Error| {
                        let e = e.to_string();
                        e.split(" at line").next().unwrap_or_default().to_owned()
                    };
                    assert_eq!(
                        words(a),
                        words(b).replace("DerivedTaskIdParams", "TaskIdParams"),
                        "{text}"
                    );
                }
                _ => panic!("{text}: ours {ours:?}, derived {derived:?}"),
            }
        }
        let twice =
            serde_json::from_str::<TaskIdParams>(r#"{"taskId":"a","taskId":"b"}"#).unwrap_err();
        assert!(
            twice.to_string().starts_with("duplicate field `taskId`"),
            "{twice}"
        );
    }

    #[test]
    fn call_params_keep_every_unknown_member_at_every_level() {
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "echo",
            "arguments": {"text": "hi"},
            "requestState": null,
            "future": 1,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "elicitation": {"form": {}, "later": true},
                    "newThing": {}
                },
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "2", "os": "x"},
                "vendor/key": [1]
            }
        }))
        .unwrap();
        assert_eq!(params.name, "echo");
        assert_eq!(params.request_state, None, "null is absent");
        assert_eq!(params.extra.get("future"), Some(&json!(1)));
        let meta = params.meta.unwrap();
        assert_eq!(meta.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(meta.extra.get("vendor/key"), Some(&json!([1])));
        let caps = meta.client_capabilities.unwrap();
        assert_eq!(caps.extra.get("newThing"), Some(&json!({})));
        let elicitation: &ElicitationCapability = caps.elicitation.as_ref().unwrap();
        assert_eq!(elicitation.extra.get("later"), Some(&json!(true)));
        assert!(elicitation.supports_form());
        assert_eq!(meta.client_info.unwrap().extra.get("os"), Some(&json!("x")));
    }

    #[test]
    fn refusals_name_the_field() {
        let refused = |v: Value| {
            serde_json::from_str::<CallToolRequestParams>(&v.to_string())
                .unwrap_err()
                .to_string()
        };
        assert!(refused(json!({"arguments": {}})).starts_with("missing field `name`"));
        let twice = serde_json::from_str::<CallToolRequestParams>(r#"{"name":"a","name":"b"}"#)
            .unwrap_err()
            .to_string();
        assert!(twice.starts_with("duplicate field `name`"), "{twice}");
        assert!(
            refused(json!({"name": "a", "arguments": 3})).starts_with("invalid type: integer `3`")
        );
        assert!(
            refused(json!({"name": "a", "_meta": "x"}))
                .starts_with("invalid type: string \"x\", expected a _meta object")
        );
        let meta: Meta = serde_json::from_str("{}").unwrap();
        assert_eq!(meta, Meta::default());
    }

    /// The `Arc` fields of `_meta`, read into their allocation by `Shared`: `null` is absent,
    /// a value is read whole, a second one or a wrong type is refused as before.
    #[test]
    fn shared_fields_read_as_serdes_arc_did() {
        const INFO: &str = "io.modelcontextprotocol/clientInfo";
        let meta: Meta = serde_json::from_value(json!({
            INFO: null,
            "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "3"},
        }))
        .unwrap();
        assert_eq!(meta.client_info, None, "null is absent");
        let server = meta.server_info.unwrap();
        assert_eq!((server.name.as_str(), server.version.as_str()), ("s", "3"));
        let twice = serde_json::from_str::<Meta>(&format!(
            r#"{{"{INFO}":{{"name":"a","version":"1"}},"{INFO}":null}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(
            twice.starts_with(&format!("duplicate field `{INFO}`")),
            "{twice}"
        );
        let wrong = serde_json::from_value::<Meta>(json!({INFO: 7}))
            .unwrap_err()
            .to_string();
        assert!(wrong.starts_with("invalid type: integer `7`"), "{wrong}");
    }
}
