//! Tool arguments from the command line: `k=v` coerced by the tool's input schema, `k:=JSON`
//! taken as JSON, a base object from `--args`; unknown names refused with a suggestion.

use serde_json::{Map, Value};

/// Edit distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The closest of `names` to `wanted`, if it is close enough to be a typo.
pub fn suggest<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .map(|n| (distance(wanted, n), n))
        .filter(|(d, n)| *d <= (n.chars().count() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// The first non-null `type` of a property schema.
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// Coerces `raw` to what `schema` says: a string stays a string (`"012"` too), numbers,
/// booleans and `null` are parsed, arrays are JSON or comma-separated with each item
/// coerced by `items`, objects are JSON.
pub fn coerce(raw: &str, schema: Option<&Value>) -> Result<Value, String> {
    let Some(schema) = schema else {
        return Ok(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())));
    };
    match type_of(schema) {
        Some("string") => Ok(Value::String(raw.to_owned())),
        Some("integer") => raw
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{raw:?} is not an integer")),
        Some("number") => match raw.parse::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => raw
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{raw:?} is not a number")),
        },
        Some("boolean") => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("{raw:?} is not true or false")),
        },
        Some("null") => match raw {
            "null" => Ok(Value::Null),
            _ => Err(format!("{raw:?} is not null")),
        },
        Some("array") => {
            if raw.trim_start().starts_with('[') {
                return serde_json::from_str(raw).map_err(|e| format!("not a JSON array: {e}"));
            }
            let items = schema.get("items");
            raw.split(',')
                .filter(|p| !p.is_empty())
                .map(|p| coerce(p.trim(), items))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        Some("object") => serde_json::from_str(raw).map_err(|e| format!("not a JSON object: {e}")),
        _ => Ok(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))),
    }
}

/// Builds the arguments object from a base (`--args`) and `k=v` / `k:=JSON` pairs, checked
/// against `schema`'s properties.
pub fn build(
    base: Option<Value>,
    pairs: &[String],
    schema: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut out = match base {
        None => Map::new(),
        Some(Value::Object(o)) => o,
        Some(other) => return Err(format!("--args must be a JSON object, not {other}")),
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let open = schema
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
        || properties.is_none_or(|p| p.is_empty()) && schema.get("additionalProperties").is_none();
    for pair in pairs {
        let (name, value) = if let Some((k, v)) = pair.split_once(":=") {
            if k.contains('=') {
                split_eq(pair, properties)?
            } else {
                let json = serde_json::from_str(v).map_err(|e| format!("{k}:= takes JSON: {e}"))?;
                (k.to_owned(), json)
            }
        } else {
            split_eq(pair, properties)?
        };
        if !open && !properties.is_some_and(|p| p.contains_key(&name)) {
            let names = properties
                .into_iter()
                .flat_map(|p| p.keys().map(String::as_str));
            let hint = suggest(&name, names)
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
            return Err(format!("the tool has no argument {name:?}{hint}"));
        }
        out.insert(name, value);
    }
    Ok(out)
}

fn split_eq(
    pair: &str,
    properties: Option<&Map<String, Value>>,
) -> Result<(String, Value), String> {
    let Some((k, v)) = pair.split_once('=') else {
        return Err(format!(
            "{pair:?}: write arguments as name=value or name:=JSON"
        ));
    };
    let value = coerce(v, properties.and_then(|p| p.get(k))).map_err(|e| format!("{k}: {e}"))?;
    Ok((k.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}, "zip": {"type": "string"}, "n": {"type": "integer"},
            "x": {"type": "number"}, "force": {"type": "boolean"},
            "sizes": {"type": "array", "items": {"type": "number"}},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "opts": {"type": "object"}}, "additionalProperties": false})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn values_follow_the_schema() {
        let pairs: Vec<String> = [
            "path=/tmp/x",
            "zip=012",
            "n=3",
            "x=1.5",
            "force=true",
            "sizes=1.5,2.5",
            "tags=a,b",
            "opts:={\"a\":1}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            Value::Object(build(None, &pairs, &schema()).unwrap()),
            json!({"path": "/tmp/x", "zip": "012", "n": 3, "x": 1.5, "force": true, "sizes": [1.5, 2.5],
                "tags": ["a", "b"], "opts": {"a": 1}})
        );
    }

    #[test]
    fn bad_values_and_unknown_names_are_refused() {
        let s = schema();
        assert_eq!(
            build(None, &["n=three".into()], &s),
            Err("n: \"three\" is not an integer".into())
        );
        assert_eq!(
            build(None, &["pth=/x".into()], &s),
            Err("the tool has no argument \"pth\"; did you mean path?".into())
        );
        assert_eq!(
            build(None, &["zzzzzz=1".into()], &s),
            Err("the tool has no argument \"zzzzzz\"".into())
        );
        assert!(
            build(None, &["path".into()], &s)
                .unwrap_err()
                .contains("name=value")
        );
        assert!(build(Some(json!([1])), &[], &s).is_err());
    }

    #[test]
    fn the_base_object_is_overridden_by_pairs() {
        let out = build(
            Some(json!({"path": "/a", "n": 1})),
            &["n=2".into()],
            &schema(),
        )
        .unwrap();
        assert_eq!(Value::Object(out), json!({"path": "/a", "n": 2}));
    }

    #[test]
    fn a_schema_without_properties_takes_any_name() {
        let open = json!({"type": "object"}).as_object().unwrap().clone();
        let out = build(None, &["a=1".into(), "b=x".into()], &open).unwrap();
        assert_eq!(Value::Object(out), json!({"a": 1, "b": "x"}));
    }

    #[test]
    fn suggestions_are_for_typos_only() {
        assert_eq!(
            suggest("delete_fodler", ["delete_folder", "book_table"]),
            Some("delete_folder")
        );
        assert_eq!(suggest("xyz", ["delete_folder"]), None);
    }
}
