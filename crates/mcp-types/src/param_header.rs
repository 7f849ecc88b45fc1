//! `x-mcp-header`: a tool's input schema may mark an argument to be mirrored in an
//! `Mcp-Param-{Name}` HTTP header of every 2026-07-28 `tools/call`, so intermediaries can route
//! on it without reading the body. This module reads those annotations once, for both sides: a
//! client to know which headers to send (and to drop a tool whose annotations are invalid), a
//! server to check each header against the argument it mirrors.
//!
//! The rules: an annotation sits on a property reached through a chain of `properties` (not
//! under `items`, `anyOf` or the schema's root), names a valid HTTP header token, annotates a
//! `string`, `integer` or `boolean` property, and no two annotations of one tool name the same
//! header (case-insensitively).

use crate::prelude::*;

use core::fmt;

use serde_json::Value;

use crate::JsonObject;

/// The schema keyword that marks an argument for a header.
pub const ANNOTATION: &str = "x-mcp-header";

/// One mirrored argument: the header's `{Name}` and the argument's path through `properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The name after `Mcp-Param-`, as annotated.
    pub name: String,
    /// The property names leading from the arguments object to the value.
    pub path: Vec<String>,
}

/// Why a tool's `x-mcp-header` annotations are invalid (a conforming client leaves the tool
/// out of its list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidParamHeader(pub String);

impl fmt::Display for InvalidParamHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl core::error::Error for InvalidParamHeader {}

impl ParamHeader {
    /// The annotations of a tool's input schema, in schema order, or why they are invalid.
    pub fn read_all(input_schema: &JsonObject) -> Result<Vec<ParamHeader>, InvalidParamHeader> {
        let mut found = Vec::new();
        walk(input_schema, &mut Vec::new(), false, &mut found)?;
        let mut seen = alloc::collections::BTreeSet::new();
        for header in &found {
            if !seen.insert(header.name.to_ascii_lowercase()) {
                return Err(invalid(format!(
                    "x-mcp-header {:?} appears twice",
                    header.name
                )));
            }
        }
        Ok(found)
    }

    /// The argument this header mirrors, if the arguments hold it (absent and `null` are none).
    pub fn value_in<'a>(&self, arguments: &'a JsonObject) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.as_object()?.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }

    /// The argument's path as the error messages name it (`outer.inner`).
    pub fn argument(&self) -> String {
        self.path.join(".")
    }
}

fn invalid(message: String) -> InvalidParamHeader {
    InvalidParamHeader(message)
}

/// Collects the annotations under `schema`; `via_properties` says whether `schema` is a
/// property (reached through `properties` from the root, with `path` naming it).
fn walk(
    schema: &JsonObject,
    path: &mut Vec<String>,
    via_properties: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), InvalidParamHeader> {
    if let Some(annotation) = schema.get(ANNOTATION) {
        if !via_properties {
            return Err(invalid(
                "an x-mcp-header annotation is not on a property reached through `properties`"
                    .into(),
            ));
        }
        found.push(annotated(schema, annotation, path)?);
    }
    for (key, child) in schema {
        match (key.as_str(), child) {
            ("properties", Value::Object(properties)) => {
                for (property, sub) in properties {
                    if let Value::Object(sub) = sub {
                        path.push(property.clone());
                        walk(sub, path, true, found)?;
                        path.pop();
                    }
                }
            }
            ("properties" | ANNOTATION, _) => {}
            // Anywhere else (`items`, `anyOf`, `$defs`...) an annotation is misplaced.
            (_, Value::Object(sub)) => walk(sub, path, false, found)?,
            (_, Value::Array(items)) => {
                for item in items {
                    if let Value::Object(item) = item {
                        walk(item, path, false, found)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The header a property's annotation asks for, once its name and the property's type pass.
fn annotated(
    property: &JsonObject,
    annotation: &Value,
    path: &[String],
) -> Result<ParamHeader, InvalidParamHeader> {
    let name = annotation
        .as_str()
        .ok_or_else(|| invalid("an x-mcp-header annotation is not a string".into()))?;
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(invalid(format!(
            "x-mcp-header {name:?} is not a valid header name"
        )));
    }
    let scalar = matches!(
        property.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "boolean")
    );
    if !scalar {
        return Err(invalid(format!(
            "x-mcp-header {name:?} annotates a property that is not a string, integer or boolean"
        )));
    }
    Ok(ParamHeader {
        name: name.to_owned(),
        path: path.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(schema: Value) -> Result<Vec<ParamHeader>, InvalidParamHeader> {
        ParamHeader::read_all(schema.as_object().unwrap())
    }

    #[test]
    fn annotations_are_read_through_properties_in_schema_order() {
        let found = read(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"p": {"type": "integer", "x-mcp-header": "Priority"}}}
        }}))
        .unwrap();
        assert_eq!(
            found,
            vec![
                ParamHeader {
                    name: "Priority".into(),
                    path: vec!["nested".into(), "p".into()]
                },
                ParamHeader {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
            ]
        );
        assert_eq!(found[0].argument(), "nested.p");
        let args = json!({"nested": {"p": 3}, "region": null});
        let args = args.as_object().unwrap();
        assert_eq!(found[0].value_in(args), Some(&json!(3)));
        assert_eq!(found[1].value_in(args), None, "null counts as absent");
        assert_eq!(read(json!({"type": "object"})).unwrap(), vec![]);
    }

    #[test]
    fn invalid_annotations_say_why() {
        for (schema, why) in [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "x-mcp-header \"\" is not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
                "x-mcp-header \"A\" annotates a property that is not a string, integer or boolean",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "x-mcp-header \"A\" annotates a property that is not a string, integer or boolean",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
                "x-mcp-header \"A B\" is not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
                "x-mcp-header \"Ä\" is not a valid header name",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}),
                "an x-mcp-header annotation is not a string",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
                "x-mcp-header \"a\" appears twice",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "an x-mcp-header annotation is not on a property reached through `properties`",
            ),
            (
                json!({"type": "string", "x-mcp-header": "Root"}),
                "an x-mcp-header annotation is not on a property reached through `properties`",
            ),
        ] {
            assert_eq!(
                read(schema.clone()),
                Err(InvalidParamHeader(why.into())),
                "{schema}"
            );
        }
    }
}
