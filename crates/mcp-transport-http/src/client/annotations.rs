//! `x-mcp-header` annotations: which arguments of a tool a 2026-07-28 call mirrors in
//! `Mcp-Param-*` headers, read from its input schema, or why they are invalid.

use serde_json::Value;

/// One `x-mcp-header` annotation: the argument path and the header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The property path inside `arguments`.
    pub path: Vec<String>,
    /// The `{Name}` of `Mcp-Param-{Name}`.
    pub name: String,
}

/// Reads a tool's `x-mcp-header` annotations, or says why they are invalid.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        via_properties: bool,
        out: &mut Vec<HeaderParam>,
    ) -> Result<(), String> {
        let Some(object) = schema.as_object() else {
            return Ok(());
        };
        if let Some(annotation) = object.get("x-mcp-header") {
            if !via_properties || path.is_empty() {
                return Err(
                    "an x-mcp-header annotation is not on a property reached through `properties`"
                        .into(),
                );
            }
            let name = annotation
                .as_str()
                .ok_or("an x-mcp-header annotation is not a string")?;
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(format!("x-mcp-header {name:?} is not a valid header name"));
            }
            let primitive = match object.get("type") {
                Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
                _ => false,
            };
            if !primitive {
                return Err(format!(
                    "x-mcp-header {name:?} annotates a property that is not a string, integer or boolean"
                ));
            }
            out.push(HeaderParam {
                path: path.clone(),
                name: name.to_owned(),
            });
        }
        for (key, child) in object {
            match key.as_str() {
                "properties" => {
                    for (prop, sub) in child.as_object().into_iter().flatten() {
                        path.push(prop.clone());
                        walk(sub, path, true, out)?;
                        path.pop();
                    }
                }
                "x-mcp-header" => {}
                _ => match child {
                    Value::Object(_) => walk(child, path, false, out)?,
                    Value::Array(items) => {
                        for item in items {
                            walk(item, path, false, out)?;
                        }
                    }
                    _ => {}
                },
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(input_schema, &mut Vec::new(), false, &mut out)?;
    let mut seen = std::collections::HashSet::new();
    for p in &out {
        if !seen.insert(p.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} appears twice", p.name));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_and_invalid_header_annotations() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"p": {"type": "integer", "x-mcp-header": "Priority"}}}}});
        let params = header_params(&ok).unwrap();
        assert_eq!(
            params[0],
            HeaderParam {
                path: vec!["nested".into(), "p".into()],
                name: "Priority".into()
            }
        );
        assert_eq!(
            params[1],
            HeaderParam {
                path: vec!["region".into()],
                name: "Region".into()
            }
        );
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
        ] {
            assert!(header_params(&bad).is_err(), "{bad}");
        }
    }
}
