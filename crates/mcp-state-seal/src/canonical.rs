//! The canonical form of request arguments and the short digests built on it.
//! Canonical means Python's `json.dumps(sort_keys=True, separators=(",", ":"))`,
//! so the `a` claim of a Rust-sealed token matches the one a Python server computes.

use base64::Engine as _;
use ring::digest;
use serde_json::Value;

use crate::b64url::ENGINE;
use crate::error::JsonSyntaxError;
use crate::jsontext::{self, JsonStr, Node};
use crate::pywrite::{push_code_point, write_escaped_body, write_float, write_int, write_str};

/// The 22 base64url characters of a truncated SHA-256 (16 bytes), as the Python SDK
/// writes its argument and question digests.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ShortDigest([u8; 22]);

impl ShortDigest {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let hash = digest::digest(&digest::SHA256, bytes);
        let mut text = [0u8; 22];
        // 16 bytes always encode to exactly 22 unpadded characters.
        let _ = ENGINE.encode_slice(&hash.as_ref()[..16], &mut text);
        Self(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        // base64url output is ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

macro_rules! short_digest_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub(crate) ShortDigest);

        impl $name {
            /// The digest as written in the claims: 22 base64url characters, no padding.
            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.as_str())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

short_digest_type! {
    /// The `a` claim: `base64url(SHA-256(canonical arguments)[..16])`.
    ///
    /// Missing or falsy arguments (`null`, `{}`, `[]`, `""`, `0`, `false`) digest as
    /// `{}`, as Python's `arguments or {}` does.
    ///
    /// ```
    /// use mcp_state_seal::ArgsDigest;
    /// use serde_json::json;
    ///
    /// let a = ArgsDigest::of_value(Some(&json!({"party": 2, "date": "2026-08-01"})));
    /// assert_eq!(a, "mSmFTmBaoC2yxh031hriRg");
    /// assert_eq!(ArgsDigest::of_value(None), "RBNvo1WzZ4oRRq0W9-hkng");
    ///
    /// // Integers beyond 64 bits only survive the raw-text path.
    /// let big = ArgsDigest::of_json_text(Some(r#"{"big":100000000000000000000}"#)).unwrap();
    /// assert_eq!(big.as_str().len(), 22);
    /// ```
    ArgsDigest
}

impl ArgsDigest {
    /// Digest of arguments held as a [`Value`].
    ///
    /// Exact for the value given, but a `Value` parsed from the wire may already
    /// differ from what Python parsed: `serde_json` cannot hold integers beyond 64
    /// bits (without `arbitrary_precision`), and its default float parser can land
    /// one ulp away from the correctly rounded double for long decimals (without
    /// `float_roundtrip`). A Python instance of the fleet would then compute another
    /// digest; for arguments straight off the wire, prefer
    /// [`of_json_text`](Self::of_json_text).
    pub fn of_value(arguments: Option<&Value>) -> Self {
        let mut out = Vec::with_capacity(64);
        match arguments {
            Some(value) if !value_is_falsy(value) => write_canonical_value(&mut out, value),
            _ => out.extend_from_slice(b"{}"),
        }
        Self(ShortDigest::of(&out))
    }

    /// Digest of arguments given as their raw JSON text, exactly as Python digests
    /// what its `json.loads` made of that text (big integers included).
    ///
    /// # Errors
    ///
    /// [`JsonSyntaxError`] if the text is not a JSON document.
    pub fn of_json_text(arguments: Option<&str>) -> Result<Self, JsonSyntaxError> {
        let mut out = Vec::with_capacity(64);
        match arguments {
            None => out.extend_from_slice(b"{}"),
            Some(text) => {
                let node = jsontext::parse(text)?;
                if node.is_falsy() {
                    out.extend_from_slice(b"{}");
                } else {
                    write_canonical_node(&mut out, &node, true);
                }
            }
        }
        Ok(Self(ShortDigest::of(&out)))
    }
}

/// Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))` of a [`Value`]:
/// keys sorted by code point at every level, ASCII only, Python float repr.
///
/// ```
/// use serde_json::json;
///
/// let canon = mcp_state_seal::canonical_json(&json!({"b": {"z": 1, "a": [3, 1]}, "a": 1.0, "u": "café 😀"}));
/// assert_eq!(canon, r#"{"a":1.0,"b":{"a":[3,1],"z":1},"u":"caf\u00e9 \ud83d\ude00"}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    write_canonical_value(&mut out, value);
    ascii_to_string(out)
}

/// [`canonical_json`] of raw JSON text, keeping what a [`Value`] would lose:
/// integers of any size stay exact, `-0` becomes `0`, a duplicate key keeps its
/// last value (all as Python's `json.loads` then `json.dumps` do).
///
/// ```
/// let canon = mcp_state_seal::canonical_json_text(r#"{"t": true, "big": 100000000000000000000, "f": 1e-07, "n": null}"#).unwrap();
/// assert_eq!(canon, r#"{"big":100000000000000000000,"f":1e-07,"n":null,"t":true}"#);
/// ```
///
/// # Errors
///
/// [`JsonSyntaxError`] if the text is not a JSON document.
pub fn canonical_json_text(text: &str) -> Result<String, JsonSyntaxError> {
    let node = jsontext::parse(text)?;
    let mut out = Vec::with_capacity(text.len());
    write_canonical_node(&mut out, &node, true);
    Ok(ascii_to_string(out))
}

pub(crate) fn ascii_to_string(out: Vec<u8>) -> String {
    // Everything this module writes is ASCII.
    String::from_utf8(out).unwrap_or_default()
}

fn value_is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

fn write_canonical_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                write_int(out, i128::from(u));
            } else if let Some(i) = n.as_i64() {
                write_int(out, i128::from(i));
            } else {
                write_float(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // The map is already sorted unless serde_json's `preserve_order` feature is
            // on somewhere in the build; sort explicitly only then.
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            if !members.is_sorted_by(|a, b| a.0 <= b.0) {
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            }
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_canonical_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// Renders a parsed document in Python's compact ASCII form, sorting keys when
/// `sort_keys` (the argument digest) or keeping document order (the question digest).
pub(crate) fn write_canonical_node(out: &mut Vec<u8>, node: &Node<'_>, sort_keys: bool) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Int(lexeme) => {
            // Python's int() of "-0" is 0; every other lexeme is already canonical.
            let lexeme = if *lexeme == "-0" { "0" } else { lexeme };
            out.extend_from_slice(lexeme.as_bytes());
        }
        Node::Float(x) => write_float(out, *x),
        Node::Str(s) => write_json_str(out, s),
        Node::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_node(out, item, sort_keys);
            }
            out.push(b']');
        }
        Node::Object(members) => {
            let members = dedup_members(members, sort_keys);
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(out, key);
                out.push(b':');
                write_canonical_node(out, item, sort_keys);
            }
            out.push(b'}');
        }
    }
}

type Member<'n, 'a> = (&'n JsonStr<'a>, &'n Node<'a>);

/// The members a Python dict built from these pairs holds: one per key, with the
/// last value; positioned by the key's first occurrence, or sorted.
fn dedup_members<'n, 'a>(
    members: &'n [(JsonStr<'a>, Node<'a>)],
    sort_keys: bool,
) -> Vec<Member<'n, 'a>> {
    if sort_keys {
        let mut sorted: Vec<Member<'n, 'a>> = members.iter().map(|(k, v)| (k, v)).collect();
        // A stable sort keeps duplicates in document order, so the last of a run wins.
        sorted.sort_by(|a, b| a.0.cmp_code_points(b.0));
        let mut out: Vec<Member<'n, 'a>> = Vec::with_capacity(sorted.len());
        for member in sorted {
            match out.last_mut() {
                Some(last) if last.0.cmp_code_points(member.0).is_eq() => *last = member,
                _ => out.push(member),
            }
        }
        out
    } else {
        let mut out: Vec<Member<'n, 'a>> = Vec::with_capacity(members.len());
        for (key, value) in members {
            match out.iter_mut().find(|m| m.0.cmp_code_points(key).is_eq()) {
                Some(existing) => existing.1 = value,
                None => out.push((key, value)),
            }
        }
        out
    }
}

fn write_json_str(out: &mut Vec<u8>, s: &JsonStr<'_>) {
    out.push(b'"');
    match s.as_plain() {
        Some(plain) => write_escaped_body(out, plain),
        None => {
            for cp in s.code_points() {
                push_code_point(out, cp);
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_and_text_paths_agree() {
        let texts = [
            r#"{"b":{"z":1,"a":[3,1]},"a":1.0,"u":"café 😀"}"#,
            r#"{"x":-5,"y":18446744073709551615,"z":-9223372036854775808,"w":0.1}"#,
            r#"{"s":"tab\there \"quoted\" back\\slash /slash \u0001 \u007f"}"#,
            r#"[1e16, 1.5e16, 1e-5, 0.0001, 123.0, -0.0]"#,
            r#"{"é":1,"e":2,"z":3,"😀":4,"｡":5}"#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                canonical_json(&value),
                canonical_json_text(text).unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn text_path_keeps_what_value_loses() {
        assert_eq!(
            canonical_json_text(r#"{"a":1,"b":2,"a":3}"#).unwrap(),
            r#"{"a":3,"b":2}"#
        );
        assert_eq!(canonical_json_text("-0").unwrap(), "0");
        assert_eq!(canonical_json_text("[-0.0,1E2]").unwrap(), "[-0.0,100.0]");
        assert_eq!(
            canonical_json_text(r#"{"\ud800":"\udfff\ud83d\ude00"}"#).unwrap(),
            r#"{"\ud800":"\udfff\ud83d\ude00"}"#
        );
        assert_eq!(
            canonical_json_text(r#""\/\u00E9""#).unwrap(),
            r#""/\u00e9""#
        );
    }

    #[test]
    fn falsy_arguments_digest_as_an_empty_object() {
        let empty = ArgsDigest::of_value(None);
        assert_eq!(empty, "RBNvo1WzZ4oRRq0W9-hkng");
        for v in [
            json!(null),
            json!({}),
            json!([]),
            json!(""),
            json!(0),
            json!(0.0),
            json!(false),
        ] {
            assert_eq!(ArgsDigest::of_value(Some(&v)), empty, "{v}");
        }
        for t in ["null", "{}", "[]", "\"\"", "0", "-0", "0.0", "false"] {
            assert_eq!(ArgsDigest::of_json_text(Some(t)).unwrap(), empty, "{t}");
        }
        assert_ne!(ArgsDigest::of_value(Some(&json!([0]))), empty);
    }

    #[test]
    fn document_order_is_kept_when_not_sorting() {
        let node = jsontext::parse(r#"{"mode":"form","message":"a","mode":"url"}"#).unwrap();
        let mut out = Vec::new();
        write_canonical_node(&mut out, &node, false);
        assert_eq!(out, br#"{"mode":"url","message":"a"}"#);
    }
}
