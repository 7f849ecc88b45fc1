//! The `x-mcp-header` annotations of a tool's input schema: which arguments an HTTP client
//! mirrors into `Mcp-Param-{Name}` headers, so the transport can check the copies against the
//! body before the tool runs.

use mcp_types::JsonObject;
use serde_json::Value;

/// One mirrored argument: the header's `{Name}` and the argument's path through `properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The name after `Mcp-Param-`, as annotated.
    pub name: String,
    /// The property names leading from the arguments object to the value.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The argument this header mirrors, if the arguments hold it (absent and `null` are none).
    pub fn value_in<'a>(&self, arguments: &'a JsonObject) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.as_object()?.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }
}

/// The annotations reachable through chains of `properties` (the only place the spec allows
/// them), in schema order.
pub fn param_headers(schema: &JsonObject) -> Vec<ParamHeader> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), &mut found);
    found
}

fn collect(schema: &JsonObject, path: &mut Vec<String>, found: &mut Vec<ParamHeader>) {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return;
    };
    for (key, property) in properties {
        let Value::Object(property) = property else {
            continue;
        };
        path.push(key.clone());
        if let Some(Value::String(name)) = property.get("x-mcp-header") {
            found.push(ParamHeader {
                name: name.clone(),
                path: path.clone(),
            });
        }
        // Nesting is bounded by the schema the server itself registered.
        collect(property, path, found);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_found_through_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"p": {"type": "integer", "x-mcp-header": "Priority"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}
        }});
        let found = param_headers(schema.as_object().unwrap());
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
        let args = json!({"nested": {"p": 3}, "region": null});
        let args = args.as_object().unwrap();
        assert_eq!(found[0].value_in(args), Some(&json!(3)));
        assert_eq!(found[1].value_in(args), None, "null counts as absent");
    }
}
