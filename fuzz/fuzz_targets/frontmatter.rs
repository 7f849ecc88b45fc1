//! The skill frontmatter parser (`mcp-skills`' hand-written YAML subset), on arbitrary text.
//! Properties: no panic, and a frontmatter it accepts, written back out in the plainest form
//! the subset has (every key and string double-quoted, nesting by indentation), reads back
//! as the same object: the parser agrees with itself on what its values mean.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_skills::parse_frontmatter;
use serde_json::{Map, Value};

/// A double-quoted scalar: `"` and `\` escaped, every control character as `\uXXXX`.
fn quoted(text: &str) -> String {
    let mut out = String::from('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(quoted(s)),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// `map` as block YAML at `indent`, or `None` for what block style cannot write (an empty
/// collection, a sequence of collections).
fn write(map: &Map<String, Value>, indent: usize, out: &mut String) -> Option<()> {
    let pad = " ".repeat(indent);
    for (key, value) in map {
        out.push_str(&format!("{pad}{}:", quoted(key)));
        match value {
            Value::Object(inner) if inner.is_empty() => return None,
            Value::Object(inner) => {
                out.push('\n');
                write(inner, indent + 2, out)?;
            }
            Value::Array(items) if items.is_empty() => return None,
            Value::Array(items) => {
                out.push('\n');
                for item in items {
                    out.push_str(&format!("{pad}  - {}\n", scalar(item)?));
                }
            }
            scalar_value => out.push_str(&format!(" {}\n", scalar(scalar_value)?)),
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = parse_frontmatter(text) else {
        return;
    };
    let mut written = String::from("---\n");
    if write(&parsed, 0, &mut written).is_none() {
        return;
    }
    written.push_str("---\n");
    match parse_frontmatter(&written) {
        Ok(again) => assert_eq!(again, parsed, "{written}"),
        Err(e) => panic!("its own reading, written back, is refused: {e}\n{written}"),
    }
});
