//! Resolvers: parameters filled before the body runs, possibly by asking the user (or the
//! client's LLM, or its roots). One resolver graph serves both eras: on 2026-07-28 every
//! question of a round is batched into one `InputRequiredResult` and the answers travel in the
//! sealed state, pinned to a digest of the exact question; on 2025-11-25 each question is a
//! live request in the middle of the call. The body cannot tell the difference.

mod graph;
mod params;
mod round;
mod written;

pub use graph::*;
pub use params::*;
pub(super) use round::*;
pub use written::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::digest;
    use mcp_types::elicitation::ElicitRequestParams;
    use mcp_types::mrtr::InputRequest;
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Clone, Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Pick {
        /// Which one.
        choice: String,
        count: Option<i64>,
        ok: bool,
    }

    #[test]
    fn form_digest_fast_path_matches_the_generic_one() {
        for message in ["Echo 3 character(s)?", "Où \"ça\" ?\n", "", "😀\u{7f}"] {
            let Resolution::Ask(question) = Resolution::<Pick>::elicit(message) else {
                panic!("Pick is a form model");
            };
            let rendered = question.rendered_schema.as_ref();
            assert!(rendered.is_some());
            let fast = digest(&question.request, rendered);
            assert_eq!(fast, digest(&question.request, None), "{message:?}");
            assert_eq!(fast.len(), 22);
        }
        // A form that no longer matches the cached rendering's shape takes the generic path.
        let Resolution::Ask(mut question) = Resolution::<Pick>::elicit("m") else {
            panic!("Pick is a form model");
        };
        if let InputRequest::Elicit(ElicitRequestParams::Form(form)) = &mut *question.request {
            form.extra.insert("x".into(), Value::Bool(true));
        }
        assert_eq!(
            digest(&question.request, question.rendered_schema.as_ref()),
            digest(&question.request, None)
        );
    }
}
