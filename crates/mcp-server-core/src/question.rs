//! The digest of a question a server asks (an elicitation, a sampling request, a roots
//! request): what the sealed rounds and a task's replay pin each answer to. Below the
//! resolvers and the task engine, which both compute it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_state_seal::QuestionDigest;
use mcp_types::elicitation::ElicitRequestParams;
use mcp_types::mrtr::InputRequest;

/// What identifies a question: its method and parameters (with a model's schema, the schema
/// as rendered). The sealed rounds pin each answer to it; a task's replay keeps it beside each
/// answer (security review X8).
pub(crate) fn digest(request: &InputRequest, rendered_schema: Option<&Arc<str>>) -> String {
    // A form asked with a model's schema: only the message is rendered per call. Same bytes
    // as the generic path (see the test `form_digest_fast_path_matches_the_generic_one`).
    if let (InputRequest::Elicit(ElicitRequestParams::Form(form)), Some(rendered)) =
        (request, rendered_schema)
        && form.mode.as_deref() == Some("form")
        && form.task.is_none()
        && form.meta.is_none()
        && form.extra.is_empty()
    {
        return form_digest(&form.message, rendered);
    }
    let digest = match request {
        InputRequest::Elicit(p) => QuestionDigest::of(p),
        InputRequest::CreateMessage(p) => QuestionDigest::of(p),
        InputRequest::ListRoots(p) => QuestionDigest::of(p),
        InputRequest::Unknown { params, .. } => QuestionDigest::of(params),
    };
    // Our own params always serialize; an empty digest would simply never match.
    digest.map(|d| d.as_str().to_owned()).unwrap_or_default()
}

/// The form digests kept, by the address of their rendered schema, then by message.
type Kept = HashMap<usize, (Arc<str>, HashMap<String, String>)>;
static FORM_DIGESTS: OnceLock<Mutex<Kept>> = OnceLock::new();

fn schema_key(rendered: &Arc<str>) -> usize {
    Arc::as_ptr(rendered).cast::<u8>() as usize
}

/// How many form digests [`form_digest`] keeps per schema before it starts over: a message
/// may carry what a client sent, so the messages it sees are not bounded by the server.
const FORM_DIGESTS_KEPT: usize = 256;

/// The digest of a form question, kept per rendered schema and message: a resolver asks the
/// same question on every call (and the retry digests it again to match the answer), and the
/// digest hashes the whole schema, 6.7k instructions of a two-leg call (issue #50). The key
/// is the schema's allocation, held by the entry so its address names it for as long as the
/// entry lives (the renderings are made once per model type and kept).
fn form_digest(message: &str, rendered: &Arc<str>) -> String {
    let key = schema_key(rendered);
    let kept = FORM_DIGESTS.get_or_init(Default::default);
    if let Ok(kept) = kept.lock()
        && let Some(digest) = kept.get(&key).and_then(|(_, by)| by.get(message))
    {
        return digest.clone();
    }
    let digest = QuestionDigest::of_form(message, rendered)
        .as_str()
        .to_owned();
    if let Ok(mut kept) = kept.lock() {
        let (_, by_message) = kept
            .entry(key)
            .or_insert_with(|| (rendered.clone(), HashMap::new()));
        if by_message.len() >= FORM_DIGESTS_KEPT {
            by_message.clear();
        }
        by_message.insert(message.to_owned(), digest.clone());
    }
    digest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_form_digest_is_the_one_computed_and_the_kept_set_stays_bounded() {
        let schema: Arc<str> = Arc::from(r#"{"type":"object","properties":{}}"#);
        let other: Arc<str> =
            Arc::from(r#"{"type":"object","properties":{"b":{"type":"boolean"}}}"#);
        for round in 0..2 {
            for (i, message) in ["Proceed?", "Proceed? ", "Délete \"x\"?"]
                .iter()
                .enumerate()
            {
                let want = QuestionDigest::of_form(message, &schema)
                    .as_str()
                    .to_owned();
                assert_eq!(
                    form_digest(message, &schema),
                    want,
                    "round {round}, message {i}"
                );
                let want = QuestionDigest::of_form(message, &other).as_str().to_owned();
                assert_eq!(
                    form_digest(message, &other),
                    want,
                    "round {round}, message {i}"
                );
            }
        }
        for n in 0..(FORM_DIGESTS_KEPT * 2) {
            let message = format!("message {n}");
            let want = QuestionDigest::of_form(&message, &schema)
                .as_str()
                .to_owned();
            assert_eq!(form_digest(&message, &schema), want);
        }
        let kept = FORM_DIGESTS.get().unwrap().lock().unwrap();
        let (held, by_message) = &kept[&schema_key(&schema)];
        assert!(Arc::ptr_eq(held, &schema), "the entry holds its schema");
        assert!(
            by_message.len() <= FORM_DIGESTS_KEPT,
            "{}",
            by_message.len()
        );
        assert!(!by_message.is_empty());
    }
}
