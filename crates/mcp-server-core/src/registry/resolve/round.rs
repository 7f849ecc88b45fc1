//! One call's round: run what can run, batch the questions into one `InputRequiredResult`
//! (2026-07-28, the answers carried back in sealed state) or ask them live (2025-11-25), and
//! read the answers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::question::digest;
use mcp_types::elicitation::{ElicitAction, ElicitRequestParams, ElicitValue, ElicitationSchema};
use mcp_types::mrtr::{InputRequest, InputResponse};
use mcp_types::version::Era;
use mcp_types::{ClientResult, ErrorObject, InputRequiredResult, JsonObject, ServerRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::RequestContext;
use crate::gating::Requirement;

use crate::registry::resolve::{Erased, convert_params};
use crate::registry::{Graph, Question, Resolved, ResolvedParam, ResolvedValues, ResolverInput};

/// The resolver progress carried in `requestState` between rounds (private to this server,
/// sealed by the boundary).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct RoundState {
    pub(super) v: u8,
    #[serde(default)]
    pub(super) outcomes: BTreeMap<String, Outcome>,
    #[serde(default)]
    pub(super) asked: BTreeMap<String, String>,
    /// The rounds asked so far (0 before the first question).
    #[serde(default)]
    pub(super) n: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Outcome {
    pub(super) q: String,
    pub(super) r: InputResponseValue,
}

/// An answer as stored: the client's response, exactly as it came.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct InputResponseValue(Value);

pub(super) const STATE_VERSION: u8 = 1;

impl RoundState {
    /// Keeps this retry's answers (by resolver key and question digest) for the next round.
    fn keep(&mut self, answered: Vec<(&str, String, &InputResponse)>) -> Result<(), ErrorObject> {
        for (key, q, answer) in answered {
            let stored =
                serde_json::to_value(answer).map_err(|e| ErrorObject::internal(e.to_string()))?;
            self.outcomes.insert(
                key.to_owned(),
                Outcome {
                    q,
                    r: InputResponseValue(stored),
                },
            );
        }
        Ok(())
    }

    pub(super) fn read(state: Option<&str>) -> Self {
        // Anything else (another version, a hand-made state) is "no progress yet".
        state
            .and_then(|s| serde_json::from_str::<RoundState>(s).ok())
            .filter(|s| s.v == STATE_VERSION)
            .unwrap_or_default()
    }
}

/// How a round ended.
#[allow(clippy::large_enum_variant)] // one per call, moved once
pub(crate) enum Round {
    /// Every resolver has a value: run the body.
    Done(HashMap<String, Resolved>),
    /// Questions for the client (2026-07-28 only).
    Ask(InputRequiredResult),
    /// The call ends with an error result with this message.
    Fail(String),
}

/// Checks submitted form content against the schema that was asked: every required field
/// present, every field of its declared type (and among the enum values, when there are some).
pub(super) fn check_content(
    schema: &ElicitationSchema,
    content: &BTreeMap<String, ElicitValue>,
) -> Result<(), String> {
    for name in schema.required.iter().flatten() {
        if !matches!(content.get(name), Some(v) if *v != ElicitValue::Null) {
            return Err(format!("field '{name}' is required"));
        }
    }
    for (name, value) in content {
        let Some(field) = schema.properties.get(name) else {
            continue;
        };
        let ok = match (field.type_.as_str(), value) {
            (_, ElicitValue::Null) => !schema.required.iter().flatten().any(|r| r == name),
            ("string", ElicitValue::String(s)) => {
                field.enum_.as_ref().is_none_or(|e| e.contains(s))
                    && field
                        .one_of
                        .as_ref()
                        .is_none_or(|o| o.iter().any(|opt| &opt.const_ == s))
            }
            ("number", ElicitValue::Number(_)) => true,
            ("integer", ElicitValue::Number(n)) => n.is_i64() || n.is_u64(),
            ("boolean", ElicitValue::Bool(_)) => true,
            ("array", ElicitValue::Strings(values)) => field.items.as_ref().is_none_or(|items| {
                values.iter().all(|v| {
                    items.enum_.as_ref().is_none_or(|e| e.contains(v))
                        && items
                            .any_of
                            .as_ref()
                            .is_none_or(|o| o.iter().any(|opt| &opt.const_ == v))
                })
            }),
            _ => false,
        };
        if !ok {
            return Err(format!("field '{name}' must be a {}", field.type_));
        }
    }
    Ok(())
}

/// Reads an answer to `request` into a value, checking that it is of the right kind.
pub(super) fn answer_to_resolved(
    key: &str,
    request: &InputRequest,
    answer: &InputResponse,
) -> Result<Resolved, String> {
    match (request, answer) {
        (InputRequest::Elicit(ElicitRequestParams::Form(form)), InputResponse::Elicit(r)) => {
            if r.action == ElicitAction::Accept {
                let Some(content) = &r.content else {
                    return Err(format!(
                        "Resolver '{key}' received an accepted elicitation with no content"
                    ));
                };
                check_content(&form.requested_schema, content).map_err(|why| {
                    format!("Resolver '{key}' received an accepted elicitation whose content does not match the requested schema: {why}")
                })?;
            }
            Ok(Resolved::Elicited(r.clone()))
        }
        (InputRequest::Elicit(ElicitRequestParams::Url(_)), InputResponse::Elicit(r)) => {
            Ok(Resolved::Elicited(r.clone()))
        }
        (InputRequest::CreateMessage(_), InputResponse::CreateMessage(r)) => {
            Ok(Resolved::Sampled(r.clone()))
        }
        (InputRequest::ListRoots(_), InputResponse::ListRoots(r)) => Ok(Resolved::Roots(r.clone())),
        _ => Err(format!(
            "Resolver '{key}' received a response of the wrong kind"
        )),
    }
}

pub(super) fn client_result_to_resolved(
    key: &str,
    request: &InputRequest,
    result: ClientResult,
) -> Result<Resolved, String> {
    let answer = match result {
        ClientResult::Elicit(r) => InputResponse::Elicit(r),
        ClientResult::CreateMessage(r) => InputResponse::CreateMessage(r),
        ClientResult::ListRoots(r) => InputResponse::ListRoots(r),
        _ => {
            return Err(format!(
                "Resolver '{key}' received a response of the wrong kind"
            ));
        }
    };
    answer_to_resolved(key, request, &answer)
}

pub(super) fn as_server_request(request: InputRequest) -> Option<ServerRequest> {
    Some(match request {
        InputRequest::Elicit(p) => ServerRequest::Elicit(p),
        InputRequest::CreateMessage(p) => ServerRequest::CreateMessage(p),
        InputRequest::ListRoots(p) => ServerRequest::ListRoots(p),
        InputRequest::Unknown { .. } => return None,
    })
}

/// Runs one round of the resolver graph for a call.
pub(crate) async fn run_round(
    graph: &Graph,
    ctx: &RequestContext,
    arguments: Arc<JsonObject>,
) -> Result<Round, ErrorObject> {
    let modern = ctx.era() == Era::Modern;
    let state = if modern {
        RoundState::read(ctx.request_state())
    } else {
        RoundState::default()
    };
    if modern {
        crate::trace::record_round(state.n.saturating_add(1));
    }
    let mut next = RoundState {
        v: STATE_VERSION,
        n: state.n.saturating_add(1),
        ..RoundState::default()
    };
    let mut values: HashMap<String, Resolved> = HashMap::new();
    let mut pending: BTreeMap<String, InputRequest> = BTreeMap::new();
    let mut waiting: HashSet<&str> = HashSet::new();
    // This retry's answers, by resolver key and question digest.
    let mut answered: Vec<(&str, String, &InputResponse)> = Vec::new();
    for resolver in &graph.order {
        let key = resolver.key.as_str();
        if resolver
            .depends_on
            .iter()
            .any(|d| waiting.contains(d.as_str()))
        {
            // A dependency still waits for its answer: this one runs in a later round.
            waiting.insert(key);
            continue;
        }
        let input = ResolverInput {
            ctx: ctx.clone(),
            arguments: arguments.clone(),
            resolved: Arc::new(values.clone()),
        };
        let question = match (resolver.run)(input).await {
            Erased::Ready(value) => {
                values.insert(key.to_owned(), Resolved::Value(value));
                continue;
            }
            Erased::Reject(message) => return Ok(Round::Fail(message)),
            Erased::Ask(question) => question,
        };
        let Question {
            request: question,
            rendered_schema,
        } = question;
        let question = *question;
        let Some(requirement) = Requirement::of_input_request(&question) else {
            return Err(ErrorObject::internal(format!(
                "resolver '{key}' asked with an unsupported method"
            )));
        };
        if !requirement.is_met(ctx.client_capabilities()) {
            return Err(requirement.error(&format!("resolver '{key}'")));
        }
        if !modern {
            let question = with_input_key(with_legacy_elicitation_id(question)?, key);
            let Some(request) = as_server_request(question.clone()) else {
                return Err(ErrorObject::internal(format!(
                    "resolver '{key}' asked with an unsupported method"
                )));
            };
            // Boxed: the live ask is a large future that a 2026-07-28 round never holds.
            let result = Box::pin(ctx.send_request(request))
                .await
                .map_err(ErrorObject::from)?;
            match client_result_to_resolved(key, &question, result) {
                Ok(resolved) => values.insert(key.to_owned(), resolved),
                Err(message) => return Ok(Round::Fail(message)),
            };
            continue;
        }
        // 2026-07-28 has no `elicitationId`: the client learns the outcome by retrying.
        let mut question = question;
        if let InputRequest::Elicit(ElicitRequestParams::Url(url)) = &mut question {
            url.elicitation_id = None;
        }
        let q = digest(&question, rendered_schema.as_ref());
        // An answer from an earlier round, to exactly this question.
        if let Some(outcome) = state.outcomes.get(key).filter(|o| o.q == q)
            && let Ok(answer) = serde_json::from_value::<InputResponse>(outcome.r.0.clone())
            && let Ok(resolved) = answer_to_resolved(key, &question, &answer)
        {
            values.insert(key.to_owned(), resolved);
            next.outcomes.insert(key.to_owned(), outcome.clone());
            continue;
        }
        // An answer in this retry, to the question we asked (and are asking again now). It is
        // kept for the next round's state only if there is a next round.
        if state.asked.get(key) == Some(&q)
            && let Some(answer) = ctx.input_responses().and_then(|r| r.get(key))
        {
            match answer_to_resolved(key, &question, answer) {
                Ok(resolved) => {
                    answered.push((key, q, answer));
                    values.insert(key.to_owned(), resolved);
                    continue;
                }
                Err(message) => return Ok(Round::Fail(message)),
            }
        }
        next.asked.insert(key.to_owned(), q);
        pending.insert(key.to_owned(), question);
        waiting.insert(key);
    }
    if pending.is_empty() {
        return Ok(Round::Done(values));
    }
    next.keep(answered)?;
    let state = serde_json::to_string(&next).map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Round::Ask(InputRequiredResult::new(pending, Some(state))))
}

/// What a call does after its resolver round.
#[allow(clippy::large_enum_variant)] // one per call, moved once
pub(crate) enum Step {
    /// Run the body with these parameters.
    Body(ResolvedValues),
    /// Ask the client (2026-07-28).
    Ask(InputRequiredResult),
    /// End the call with an error result carrying this message.
    Fail(String),
}

/// Runs the round and converts the parameters: the single entry point for tools, prompts and
/// template resources.
pub(crate) async fn prepare(
    graph: &Graph,
    params: &[ResolvedParam],
    ctx: &RequestContext,
    arguments: Arc<JsonObject>,
) -> Result<Step, ErrorObject> {
    if graph.order.is_empty() {
        return Ok(Step::Body(ResolvedValues::default()));
    }
    // Boxed: a round is a large future, and tools without resolvers never build one.
    Ok(match Box::pin(run_round(graph, ctx, arguments)).await? {
        Round::Ask(round) => Step::Ask(round),
        Round::Fail(message) => Step::Fail(message),
        Round::Done(values) => match convert_params(params, &values) {
            Ok(values) => Step::Body(values),
            Err(message) => Step::Fail(message),
        },
    })
}

/// A question sent live on a 2025-11-25 session carries its resolver's key in `_meta`
/// ([`INPUT_KEY`](mcp_types::meta::INPUT_KEY)), the name a 2026-07-28 client sees it under.
fn with_input_key(mut question: InputRequest, key: &str) -> InputRequest {
    let meta = match &mut question {
        InputRequest::Elicit(ElicitRequestParams::Form(p)) => &mut p.meta,
        InputRequest::Elicit(ElicitRequestParams::Url(p)) => &mut p.meta,
        InputRequest::CreateMessage(p) => &mut p.meta,
        InputRequest::ListRoots(p) => &mut p.get_or_insert_with(Default::default).meta,
        InputRequest::Unknown { .. } => return question,
    };
    meta.get_or_insert_with(Default::default).extra.insert(
        mcp_types::meta::INPUT_KEY.to_owned(),
        Value::String(key.to_owned()),
    );
    question
}

/// A URL question sent live on a 2025-11-25 session needs an `elicitationId`; one is made up
/// when the resolver named none.
pub(super) fn with_legacy_elicitation_id(
    mut question: InputRequest,
) -> Result<InputRequest, ErrorObject> {
    if let InputRequest::Elicit(ElicitRequestParams::Url(url)) = &mut question
        && url.elicitation_id.is_none()
    {
        let id = crate::seal::random_hex_id()
            .map_err(|e| ErrorObject::internal(format!("no elicitation id: {e}")))?;
        url.elicitation_id = Some(id);
    }
    Ok(question)
}
