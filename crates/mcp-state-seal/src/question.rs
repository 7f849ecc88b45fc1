//! Question digests: a resolver's recorded answer is reused only for the exact
//! question it answered, so a question reworded by a redeploy is asked again.
//!
//! The Python SDK hashes the *rendered* request params of the question (for an
//! elicitation `{"mode":"form","message":…,"requestedSchema":…}`), dumped in field
//! order (not sorted), compact and ASCII-escaped, or `null` when there are none.

use serde::Serialize;

use crate::canonical::{ShortDigest, write_canonical_node};
use crate::error::JsonSyntaxError;
use crate::jsontext;
use crate::pyjson::write_compact_json;
use crate::pywrite::write_str;

short_digest_type! {
    /// The `q` digest of a question: `base64url(SHA-256(rendered params)[..16])`,
    /// where the params are rendered as Python's `json.dumps(params, separators=(",", ":"))`
    /// in field order.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use mcp_state_seal::QuestionDigest;
    /// use serde::Serialize;
    ///
    /// // Field order is part of the digest: serialize the typed params.
    /// #[derive(Serialize)]
    /// #[serde(rename_all = "camelCase")]
    /// struct ElicitParams {
    ///     mode: &'static str,
    ///     message: &'static str,
    ///     requested_schema: Schema,
    /// }
    ///
    /// #[derive(Serialize)]
    /// struct Schema {
    ///     r#type: &'static str,
    ///     properties: BTreeMap<&'static str, Property>,
    ///     required: Vec<&'static str>,
    /// }
    ///
    /// #[derive(Serialize)]
    /// struct Property {
    ///     r#type: &'static str,
    /// }
    ///
    /// let params = ElicitParams {
    ///     mode: "form",
    ///     message: "Which region?",
    ///     requested_schema: Schema {
    ///         r#type: "object",
    ///         properties: BTreeMap::from([("region", Property { r#type: "string" })]),
    ///         required: vec!["region"],
    ///     },
    /// };
    /// let q = QuestionDigest::of(&params)?;
    /// assert_eq!(q, "U10CtpE4KA0WiedCgiXfzw");
    ///
    /// let rendered = r#"{"mode":"form","message":"Which region?","requestedSchema":{"type":"object","properties":{"region":{"type":"string"}},"required":["region"]}}"#;
    /// assert_eq!(QuestionDigest::of_json_text(rendered)?, q);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    QuestionDigest
}

impl QuestionDigest {
    /// Digest of the question's params as they serialize, in field order. Pass the
    /// typed params struct (or `Option` of it: `None` digests as `null`), not a
    /// `serde_json::Value` object, whose keys come out sorted unless serde_json's
    /// `preserve_order` feature is on.
    ///
    /// # Errors
    ///
    /// Whatever the params' [`Serialize`] implementation reports.
    pub fn of<T: Serialize + ?Sized>(params: &T) -> Result<Self, serde_json::Error> {
        let mut out = Vec::with_capacity(256);
        write_compact_json(&mut out, params)?;
        Ok(Self(ShortDigest::of(&out)))
    }

    /// Digest of a form elicitation's params `{"mode":"form","message":…,"requestedSchema":…}`
    /// (no `task`, no `_meta`, no other members), with the schema already rendered by
    /// [`compact_json`](crate::compact_json). Equal to [`QuestionDigest::of`] of those params,
    /// without rendering the schema again: a server that asks with one schema many times
    /// renders it once.
    ///
    /// ```
    /// use mcp_state_seal::{QuestionDigest, compact_json};
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    /// let rendered = compact_json(&schema)?;
    /// let q = QuestionDigest::of_form("Proceed?", &rendered);
    /// let text = format!(r#"{{"mode":"form","message":"Proceed?","requestedSchema":{rendered}}}"#);
    /// assert_eq!(q, QuestionDigest::of_json_text(&text)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_form(message: &str, rendered_schema: &str) -> Self {
        const HEAD: &[u8] = br#"{"mode":"form","message":"#;
        const MIDDLE: &[u8] = br#","requestedSchema":"#;
        let mut out = Vec::with_capacity(
            HEAD.len() + message.len() + MIDDLE.len() + rendered_schema.len() + 3,
        );
        out.extend_from_slice(HEAD);
        write_str(&mut out, message);
        out.extend_from_slice(MIDDLE);
        out.extend_from_slice(rendered_schema.as_bytes());
        out.push(b'}');
        Self(ShortDigest::of(&out))
    }

    /// Digest of already-rendered params JSON. The text is re-rendered in Python's
    /// compact ASCII form, keeping key order, so pretty-printed or non-ASCII text
    /// digests the same as its Python rendering.
    ///
    /// # Errors
    ///
    /// [`JsonSyntaxError`] if the text is not a JSON document.
    pub fn of_json_text(rendered: &str) -> Result<Self, JsonSyntaxError> {
        let node = jsontext::parse(rendered)?;
        let mut out = Vec::with_capacity(rendered.len());
        write_canonical_node(&mut out, &node, false);
        Ok(Self(ShortDigest::of(&out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_digest_from_the_rendered_schema_is_the_digest_of_the_params() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Form<'a> {
            mode: &'a str,
            message: &'a str,
            requested_schema: &'a serde_json::Value,
        }
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean", "title": "Oké"}},
            "required": ["ok"]
        });
        let rendered = crate::compact_json(&schema).unwrap();
        for message in ["Echo 3 character(s)?", "Où \"ça\" ?\n", "", "😀\u{7f}"] {
            let params = Form {
                mode: "form",
                message,
                requested_schema: &schema,
            };
            assert_eq!(
                QuestionDigest::of_form(message, &rendered),
                QuestionDigest::of(&params).unwrap(),
                "{message:?}"
            );
        }
        assert_ne!(
            QuestionDigest::of_form("a", &rendered),
            QuestionDigest::of_form("b", &rendered)
        );
    }

    #[test]
    fn no_params_digest_as_null() {
        let none: Option<u8> = None;
        assert_eq!(
            QuestionDigest::of(&none).unwrap(),
            QuestionDigest::of_json_text("null").unwrap()
        );
    }

    #[test]
    fn rendering_differences_do_not_change_the_digest() {
        let a = QuestionDigest::of_json_text(r#"{"message":"Où ?","mode":"form"}"#).unwrap();
        let b =
            QuestionDigest::of_json_text("{ \"message\" : \"O\\u00f9 ?\",\n \"mode\": \"form\" }")
                .unwrap();
        assert_eq!(a, b);
        let reordered =
            QuestionDigest::of_json_text(r#"{"mode":"form","message":"Où ?"}"#).unwrap();
        assert_ne!(a, reordered);
    }
}
