//! The digest of a question a server asks (an elicitation, a sampling request, a roots
//! request): what the sealed rounds and a task's replay pin each answer to. Below the
//! resolvers and the task engine, which both compute it.

use mcp_state_seal::QuestionDigest;
use mcp_types::elicitation::ElicitRequestParams;
use mcp_types::mrtr::InputRequest;

/// What identifies a question: its method and parameters (with a model's schema, the schema
/// as rendered). The sealed rounds pin each answer to it; a task's replay keeps it beside each
/// answer (security review X8).
pub(crate) fn digest(request: &InputRequest, rendered_schema: Option<&str>) -> String {
    // A form asked with a model's schema: only the message is rendered per call. Same bytes
    // as the generic path (see the test `form_digest_fast_path_matches_the_generic_one`).
    if let (InputRequest::Elicit(ElicitRequestParams::Form(form)), Some(rendered)) =
        (request, rendered_schema)
        && form.mode.as_deref() == Some("form")
        && form.task.is_none()
        && form.meta.is_none()
        && form.extra.is_empty()
    {
        return QuestionDigest::of_form(&form.message, rendered)
            .as_str()
            .to_owned();
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
