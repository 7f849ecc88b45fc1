//! Resolvers: parameters filled before the body runs, possibly by asking the user (or the
//! client's LLM, or its roots). One resolver graph serves both eras: on 2026-07-28 every
//! question of a round is batched into one `InputRequiredResult` and the answers travel in the
//! sealed state, pinned to a digest of the exact question; on 2025-11-25 each question is a
//! live request in the middle of the call. The body cannot tell the difference.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_state_seal::QuestionDigest;
use mcp_types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitValue, ElicitationSchema,
};
use mcp_types::mrtr::{InputRequest, InputResponse};
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp_types::version::Era;
use mcp_types::{ClientResult, ErrorObject, InputRequiredResult, JsonObject, ServerRequest};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::elicit::{
    ElicitModel, ElicitationResult, SchemaError, elicitation_form, elicitation_schema,
    parse_elicit_result,
};
use crate::context::RequestContext;
use crate::futures::BoxFuture;
use crate::gating::Requirement;

/// What a resolver returns: a value, one question, or a rejection.
///
/// A resolver that answers by itself when it can and asks otherwise; on 2026-07-28 the
/// question becomes an `inputRequests` entry keyed by the resolver's name, on 2025-11-25 a
/// live `elicitation/create`:
///
/// ```
/// use mcp_server_core::registry::{ElicitationResult, McpServer, Resolution, Resolver, ToolDef};
/// use mcp_server_core::{MemoryConnection, TransportContext};
/// use serde_json::{Value, json};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Book {
///     seats: Option<u32>,
/// }
///
/// #[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
/// struct Size {
///     /// Seats at the table.
///     seats: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let size = Resolver::new("party_size", |input| async move {
///     match input.argument::<Option<u32>>("seats") {
///         Ok(Some(0)) => Resolution::reject("a table for nobody"),
///         Ok(Some(seats)) => Resolution::ready(Size { seats }),
///         Ok(None) => Resolution::elicit("How many seats?"),
///         Err(e) => Resolution::reject(e),
///     }
/// })
/// .reads(["seats"]);
/// let book = ToolDef::new("book")
///     .arguments::<Book>()
///     .resolve::<ElicitationResult<Size>>("size", size)
///     .handler_resolved(|_ctx, _args: Book, mut resolved| async move {
///         match resolved.take::<ElicitationResult<Size>>("size")? {
///             ElicitationResult::Accepted(size) => Ok::<_, String>(format!("{} seats", size.seats)),
///             _ => Ok("no booking".to_owned()),
///         }
///     });
/// let service = McpServer::new("Bistro").tool(book).into_service()?;
///
/// let mut conn = MemoryConnection::connect(&service, TransportContext::default());
/// conn.send_raw(
///     json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
///         "name": "book", "arguments": {},
///         "_meta": {
///             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
///             "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
///             "io.modelcontextprotocol/clientInfo": {"name": "doc", "version": "1"}
///         }
///     }})
///     .to_string(),
/// );
/// let reply: Value = serde_json::from_str(&conn.recv().await.unwrap().to_string())?;
/// assert_eq!(reply["result"]["resultType"], "input_required");
/// let question = &reply["result"]["inputRequests"]["party_size"];
/// assert_eq!(question["method"], "elicitation/create");
/// assert_eq!(question["params"]["message"], "How many seats?");
/// assert!(reply["result"]["requestState"].is_string()); // sealed, opaque to the client
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub enum Resolution<T> {
    /// The value, without asking anything.
    Ready(T),
    /// A question for the client; the answer becomes the value.
    Ask(Question),
    /// The call cannot proceed: it ends with an error result carrying this message.
    Reject(String),
}

/// A question a resolver asks: an `elicitation/create`, `sampling/createMessage` or
/// `roots/list` request.
#[derive(Debug, Clone)]
pub struct Question {
    pub(crate) request: Box<InputRequest>,
    /// For a form made by [`Resolution::elicit`]: its schema as the question digest renders
    /// it, made once per model type. Nothing changes a form question's schema after that (the
    /// request is private), so the two always agree.
    pub(crate) rendered_schema: Option<Arc<str>>,
}

impl PartialEq for Question {
    fn eq(&self, other: &Self) -> bool {
        self.request == other.request
    }
}

impl Question {
    /// The request that will be sent.
    pub fn request(&self) -> &InputRequest {
        &self.request
    }
}

impl<T> Resolution<T> {
    /// The value is known: nothing is asked.
    pub fn ready(value: T) -> Self {
        Resolution::Ready(value)
    }

    /// The call ends with an error result carrying `message`.
    pub fn reject(message: impl Into<String>) -> Self {
        Resolution::Reject(message.into())
    }

    /// Asks the user to open `url` (URL-mode elicitation). The answer is an accept with no
    /// content, a decline or a cancel.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Resolution::Ask(Question {
            request: Box::new(InputRequest::Elicit(ElicitRequestParams::Url(
                ElicitRequestUrlParams {
                    mode: "url".into(),
                    message: message.into(),
                    url: url.into(),
                    elicitation_id: None,
                    task: None,
                    meta: None,
                    extra: JsonObject::new(),
                },
            ))),
            rendered_schema: None,
        })
    }

    /// Names a URL question's `elicitationId`, so a 2025-11-25 server can announce the
    /// out-of-band step's end with `ctx.send_elicit_complete(id)`. Without it a legacy session
    /// gets a random id (the 2025-11-25 schema requires one); a 2026-07-28 client never sees
    /// it (that revision has no such field). Other resolutions are returned unchanged.
    pub fn with_elicitation_id(mut self, id: impl Into<String>) -> Self {
        if let Resolution::Ask(question) = &mut self
            && let InputRequest::Elicit(ElicitRequestParams::Url(url)) = &mut *question.request
        {
            url.elicitation_id = Some(id.into());
        }
        self
    }

    /// Asks the client's LLM (`sampling/createMessage`); the value is its `CreateMessageResult`.
    pub fn sample(params: CreateMessageRequestParams) -> Self {
        Resolution::Ask(Question {
            request: Box::new(InputRequest::CreateMessage(params)),
            rendered_schema: None,
        })
    }

    /// Asks for the client's roots (`roots/list`); the value is its `ListRootsResult`.
    pub fn list_roots() -> Self {
        Resolution::Ask(Question {
            request: Box::new(InputRequest::ListRoots(None)),
            rendered_schema: None,
        })
    }
}

impl<T: ElicitModel> Resolution<T> {
    /// Asks the user to fill in `T` as a form (form-mode elicitation), with `message` as the
    /// question.
    pub fn elicit(message: impl Into<String>) -> Self {
        match elicitation_form::<T>() {
            Ok((schema, rendered)) => Resolution::Ask(Question {
                request: Box::new(InputRequest::Elicit(ElicitRequestParams::Form(
                    ElicitRequestFormParams {
                        mode: Some("form".into()),
                        message: message.into(),
                        requested_schema: (*schema).clone(),
                        task: None,
                        meta: None,
                        extra: JsonObject::new(),
                    },
                ))),
                rendered_schema: Some(rendered),
            }),
            Err(e) => Resolution::Reject(e.0),
        }
    }
}

/// A resolver's value as the engine holds it, before a parameter converts it.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // held in one map per call, moved rarely
pub enum Resolved {
    /// A value returned with [`Resolution::Ready`].
    Value(Arc<dyn Any + Send + Sync>),
    /// The answer to an elicitation.
    Elicited(ElicitResult),
    /// The answer to a sampling request.
    Sampled(CreateMessageResult),
    /// The answer to a roots request.
    Roots(ListRootsResult),
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resolved::Value(_) => f.write_str("Value(..)"),
            Resolved::Elicited(r) => f.debug_tuple("Elicited").field(r).finish(),
            Resolved::Sampled(r) => f.debug_tuple("Sampled").field(r).finish(),
            Resolved::Roots(r) => f.debug_tuple("Roots").field(r).finish(),
        }
    }
}

/// Why a resolved value could not become a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The user declined and the parameter needs the data.
    Declined,
    /// The user cancelled and the parameter needs the data.
    Cancelled,
    /// The answer does not fit (no content, content that does not match the schema).
    Invalid(String),
    /// The answer is of another kind than the parameter takes.
    WrongKind,
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Declined => f.write_str("elicitation was decline"),
            ResolveError::Cancelled => f.write_str("elicitation was cancel"),
            ResolveError::Invalid(why) => write!(f, "received {why}"),
            ResolveError::WrongKind => f.write_str("received a response of the wrong kind"),
        }
    }
}

/// A parameter type a resolver can fill.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be filled by a resolver",
    label = "this parameter is filled by a resolver",
    note = "use `ElicitationResult<T>` or a plain elicitation model `T` (derive `Deserialize`, `JsonSchema`, `Clone`), `CreateMessageResult`, `ListRootsResult`, or `Ready<T>` for a value"
)]
pub trait FromResolved: Sized + Send + 'static {
    /// Checked when the server is built (e.g. the form schema is flat).
    fn check() -> Result<(), SchemaError> {
        Ok(())
    }

    /// Converts the resolver's value.
    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError>;
}

fn downcast<T: Clone + 'static>(value: &Arc<dyn Any + Send + Sync>) -> Option<T> {
    value.downcast_ref::<T>().cloned()
}

fn check_model<T: ElicitModel>() -> Result<(), SchemaError> {
    // A model that is not an object is a plain value resolver's type: nothing to check.
    let root = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if root.get("type").and_then(Value::as_str) == Some("object") {
        elicitation_schema::<T>().map(|_| ())
    } else {
        Ok(())
    }
}

impl<T: ElicitModel> FromResolved for ElicitationResult<T> {
    fn check() -> Result<(), SchemaError> {
        check_model::<T>()
    }

    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError> {
        match resolved {
            Resolved::Value(v) => downcast::<T>(v)
                .map(ElicitationResult::Accepted)
                .or_else(|| downcast::<ElicitationResult<T>>(v))
                .ok_or(ResolveError::WrongKind),
            Resolved::Elicited(r) => parse_elicit_result(r).map_err(ResolveError::Invalid),
            _ => Err(ResolveError::WrongKind),
        }
    }
}

/// A parameter that takes the accepted data itself: a decline or cancel ends the call with an
/// error result naming the parameter, and the body never runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted<T>(pub T);

impl<T: ElicitModel> FromResolved for Accepted<T> {
    fn check() -> Result<(), SchemaError> {
        check_model::<T>()
    }

    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError> {
        match ElicitationResult::<T>::from_resolved(resolved)? {
            ElicitationResult::Accepted(t) => Ok(Accepted(t)),
            ElicitationResult::Declined => Err(ResolveError::Declined),
            ElicitationResult::Cancelled => Err(ResolveError::Cancelled),
        }
    }
}

/// A parameter filled by a resolver that only computes values (never asks).
#[derive(Debug, Clone, PartialEq)]
pub struct Ready<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromResolved for Ready<T> {
    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError> {
        match resolved {
            Resolved::Value(v) => downcast::<T>(v).map(Ready).ok_or(ResolveError::WrongKind),
            _ => Err(ResolveError::WrongKind),
        }
    }
}

impl FromResolved for CreateMessageResult {
    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError> {
        match resolved {
            Resolved::Sampled(r) => Ok(r.clone()),
            Resolved::Value(v) => downcast::<CreateMessageResult>(v).ok_or(ResolveError::WrongKind),
            _ => Err(ResolveError::WrongKind),
        }
    }
}

impl FromResolved for ListRootsResult {
    fn from_resolved(resolved: &Resolved) -> Result<Self, ResolveError> {
        match resolved {
            Resolved::Roots(r) => Ok(r.clone()),
            Resolved::Value(v) => downcast::<ListRootsResult>(v).ok_or(ResolveError::WrongKind),
            _ => Err(ResolveError::WrongKind),
        }
    }
}

pub(crate) enum Erased {
    Ready(Arc<dyn Any + Send + Sync>),
    Ask(Question),
    Reject(String),
}

type RunFn = Arc<dyn Fn(ResolverInput) -> BoxFuture<Erased> + Send + Sync>;

/// A resolver: a key (its `inputRequests` key on the wire), the resolvers it depends on, the
/// tool arguments it reads, and the async function that produces its [`Resolution`].
#[derive(Clone)]
pub struct Resolver {
    pub(crate) key: String,
    pub(crate) depends_on: Vec<String>,
    pub(crate) reads: Vec<String>,
    pub(crate) run: RunFn,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolver")
            .field("key", &self.key)
            .field("depends_on", &self.depends_on)
            .finish()
    }
}

impl Resolver {
    /// A resolver named `key` (unique within its tool; it is the `inputRequests` key).
    pub fn new<T, F, Fut>(key: impl Into<String>, run: F) -> Self
    where
        T: Send + Sync + 'static,
        F: Fn(ResolverInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Resolution<T>> + Send + 'static,
    {
        let run = Arc::new(run);
        Resolver {
            key: key.into(),
            depends_on: Vec::new(),
            reads: Vec::new(),
            run: Arc::new(move |input| {
                let run = run.clone();
                Box::pin(async move {
                    match run(input).await {
                        Resolution::Ready(v) => Erased::Ready(Arc::new(v)),
                        Resolution::Ask(q) => Erased::Ask(q),
                        Resolution::Reject(m) => Erased::Reject(m),
                    }
                })
            }),
        }
    }

    /// Declares the resolvers (by key) whose values this one reads; they run first.
    pub fn depends_on<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        self.depends_on.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Declares the tool arguments (by name) this resolver reads; checked when the server is
    /// built.
    pub fn reads<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.reads.extend(names.into_iter().map(Into::into));
        self
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// What a resolver can read: the call's arguments (validated), the context, and the values of
/// the resolvers it depends on.
#[derive(Clone)]
pub struct ResolverInput {
    pub(crate) ctx: RequestContext,
    pub(crate) arguments: Arc<JsonObject>,
    pub(crate) resolved: Arc<HashMap<String, Resolved>>,
}

impl ResolverInput {
    /// The request context.
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// All arguments of the call.
    pub fn arguments(&self) -> &JsonObject {
        &self.arguments
    }

    /// One argument, by name (absent reads as `null`, so `Option<T>` works).
    pub fn argument<T: DeserializeOwned>(&self, name: &str) -> Result<T, String> {
        let value = self.arguments.get(name).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| format!("argument '{name}': {e}"))
    }

    /// The value of a resolver this one depends on.
    pub fn resolved<C: FromResolved>(&self, key: &str) -> Result<C, String> {
        let value = self
            .resolved
            .get(key)
            .ok_or_else(|| format!("resolver '{key}' has no value yet"))?;
        C::from_resolved(value).map_err(|e| format!("resolver '{key}' {e}"))
    }
}

/// A resolver in a resolver graph, with its position known.
pub(crate) struct Graph {
    /// Resolvers in an order where every dependency comes first.
    pub(crate) order: Vec<Resolver>,
}

impl Graph {
    /// Orders `resolvers` so that dependencies run first; a cycle or an unknown dependency is
    /// an error naming the resolver.
    pub(crate) fn build(owner: &str, resolvers: Vec<Resolver>) -> Result<Self, String> {
        let keys: HashSet<&str> = resolvers.iter().map(|r| r.key.as_str()).collect();
        for r in &resolvers {
            if let Some(missing) = r.depends_on.iter().find(|d| !keys.contains(d.as_str())) {
                return Err(format!(
                    "{owner}: resolver '{}' depends on '{missing}', which is not a resolver of it",
                    r.key
                ));
            }
        }
        let mut order: Vec<Resolver> = Vec::with_capacity(resolvers.len());
        let mut placed: HashSet<String> = HashSet::new();
        let mut rest = resolvers;
        while !rest.is_empty() {
            let before = rest.len();
            let (ready, waiting): (Vec<Resolver>, Vec<Resolver>) = rest
                .into_iter()
                .partition(|r| r.depends_on.iter().all(|d| placed.contains(d)));
            for r in ready {
                placed.insert(r.key.clone());
                order.push(r);
            }
            rest = waiting;
            if rest.len() == before {
                return Err(format!(
                    "{owner}: resolvers depend on each other in a cycle: {}; remove one of \
                     these `#[resolve(...)]` parameters",
                    cycle(&rest).join(" -> ")
                ));
            }
        }
        Ok(Graph { order })
    }
}

/// A cycle among `stuck`, resolvers none of which can run because each waits for another of
/// them: its keys in dependency order, the first repeated at the end (`'a' -> 'b' -> 'a'`).
/// It starts from the smallest key so the message is the same on every build.
fn cycle(stuck: &[Resolver]) -> Vec<String> {
    let by_key: HashMap<&str, &Resolver> = stuck.iter().map(|r| (r.key.as_str(), r)).collect();
    let Some(mut at) = by_key.keys().min().copied() else {
        return Vec::new();
    };
    let mut path: Vec<&str> = Vec::new();
    // Every stuck resolver waits for at least one other stuck resolver, so following those
    // edges must come back to a resolver already on the path within `stuck.len()` steps.
    while !path.contains(&at) {
        path.push(at);
        let Some(next) = by_key[at]
            .depends_on
            .iter()
            .map(String::as_str)
            .filter(|d| by_key.contains_key(d))
            .min()
        else {
            break;
        };
        at = next;
    }
    let start = path.iter().position(|k| *k == at).unwrap_or(0);
    let mut names: Vec<String> = path[start..].iter().map(|k| format!("'{k}'")).collect();
    names.push(format!("'{at}'"));
    names
}

/// The resolver progress carried in `requestState` between rounds (private to this server,
/// sealed by the boundary).
#[derive(Debug, Default, Serialize, Deserialize)]
struct RoundState {
    v: u8,
    #[serde(default)]
    outcomes: BTreeMap<String, Outcome>,
    #[serde(default)]
    asked: BTreeMap<String, String>,
    /// The rounds asked so far (0 before the first question).
    #[serde(default)]
    n: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Outcome {
    q: String,
    r: InputResponseValue,
}

/// An answer as stored: the client's response, exactly as it came.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
struct InputResponseValue(Value);

const STATE_VERSION: u8 = 1;

impl RoundState {
    fn read(state: Option<&str>) -> Self {
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

fn digest(request: &InputRequest, rendered_schema: Option<&str>) -> String {
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

/// Checks submitted form content against the schema that was asked: every required field
/// present, every field of its declared type (and among the enum values, when there are some).
fn check_content(
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
fn answer_to_resolved(
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

fn client_result_to_resolved(
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

fn as_server_request(request: InputRequest) -> Option<ServerRequest> {
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
            let question = with_legacy_elicitation_id(question)?;
            let Some(request) = as_server_request(question.clone()) else {
                return Err(ErrorObject::internal(format!(
                    "resolver '{key}' asked with an unsupported method"
                )));
            };
            let result = ctx.send_request(request).await.map_err(ErrorObject::from)?;
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
        let q = digest(&question, rendered_schema.as_deref());
        // An answer from an earlier round, to exactly this question.
        if let Some(outcome) = state.outcomes.get(key).filter(|o| o.q == q)
            && let Ok(answer) = serde_json::from_value::<InputResponse>(outcome.r.0.clone())
            && let Ok(resolved) = answer_to_resolved(key, &question, &answer)
        {
            values.insert(key.to_owned(), resolved);
            next.outcomes.insert(key.to_owned(), outcome.clone());
            continue;
        }
        // An answer in this retry, to the question we asked (and are asking again now).
        if state.asked.get(key) == Some(&q)
            && let Some(answer) = ctx.input_responses().and_then(|r| r.get(key))
        {
            match answer_to_resolved(key, &question, answer) {
                Ok(resolved) => {
                    let stored = serde_json::to_value(answer)
                        .map_err(|e| ErrorObject::internal(e.to_string()))?;
                    next.outcomes.insert(
                        key.to_owned(),
                        Outcome {
                            q,
                            r: InputResponseValue(stored),
                        },
                    );
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
    let state = serde_json::to_string(&next).map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Round::Ask(InputRequiredResult::new(pending, Some(state))))
}

/// Checks the JSON Schema of a consumer type when the server is built.
pub(crate) type CheckFn = fn() -> Result<(), SchemaError>;
/// Converts a resolved value for one parameter.
pub(crate) type ConvertFn = fn(&Resolved) -> Result<Box<dyn Any + Send>, ResolveError>;

pub(crate) fn convert<C: FromResolved>(
    resolved: &Resolved,
) -> Result<Box<dyn Any + Send>, ResolveError> {
    C::from_resolved(resolved).map(|c| Box::new(c) as Box<dyn Any + Send>)
}

/// A parameter filled by a resolver.
#[derive(Clone)]
pub(crate) struct ResolvedParam {
    pub(crate) param: String,
    pub(crate) key: String,
    pub(crate) check: CheckFn,
    pub(crate) convert: ConvertFn,
}

/// The resolved parameters of one call, converted before the body runs.
#[derive(Default)]
pub struct ResolvedValues {
    values: HashMap<String, Box<dyn Any + Send>>,
}

impl fmt::Debug for ResolvedValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl ResolvedValues {
    /// Takes the value of parameter `param` as the type it was declared with.
    pub fn take<C: FromResolved>(&mut self, param: &str) -> Result<C, String> {
        let boxed = self
            .values
            .remove(param)
            .ok_or_else(|| format!("parameter '{param}' has no resolved value"))?;
        boxed
            .downcast::<C>()
            .map(|b| *b)
            .map_err(|_| format!("parameter '{param}' was declared with another type"))
    }
}

/// Declares parameter `param`, filled by `resolver` as type `C` (the builders' `resolve`).
pub(crate) fn add_resolved<C: FromResolved>(
    params: &mut Vec<ResolvedParam>,
    resolvers: &mut Vec<Resolver>,
    param: String,
    resolver: Resolver,
) {
    params.push(ResolvedParam {
        param,
        key: resolver.key.clone(),
        check: C::check,
        convert: convert::<C>,
    });
    add_resolver(resolvers, resolver);
}

/// Registers `resolver` once (by key).
pub(crate) fn add_resolver(resolvers: &mut Vec<Resolver>, resolver: Resolver) {
    if !resolvers.iter().any(|r| r.key == resolver.key) {
        resolvers.push(resolver);
    }
}

/// Converts every declared parameter; the first failure ends the call before the body runs.
pub(crate) fn convert_params(
    params: &[ResolvedParam],
    values: &HashMap<String, Resolved>,
) -> Result<ResolvedValues, String> {
    let mut out = ResolvedValues::default();
    for p in params {
        let Some(resolved) = values.get(&p.key) else {
            return Err(format!(
                "Resolver for parameter '{}' produced no value",
                p.param
            ));
        };
        let value = (p.convert)(resolved).map_err(|e| {
            format!(
                "Resolver for parameter '{}' could not resolve: {e}",
                p.param
            )
        })?;
        out.values.insert(p.param.clone(), value);
    }
    Ok(out)
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

/// Checks a resolver graph and its parameters when the server is built.
pub(crate) fn check_resolvers(
    owner: &str,
    resolvers: Vec<Resolver>,
    params: &[ResolvedParam],
    arguments: Option<&[String]>,
) -> Result<Graph, String> {
    let mut seen = HashSet::new();
    for r in &resolvers {
        if !seen.insert(r.key.as_str()) {
            return Err(format!("{owner}: two resolvers share the key '{}'", r.key));
        }
        if let Some(arguments) = arguments
            && let Some(missing) = r.reads.iter().find(|name| !arguments.contains(name))
        {
            return Err(format!(
                "{owner}: resolver '{}' reads argument '{missing}', which is not an argument of it",
                r.key
            ));
        }
    }
    for p in params {
        if !seen.contains(p.key.as_str()) {
            return Err(format!(
                "{owner}: parameter '{}' names resolver '{}', which is not registered",
                p.param, p.key
            ));
        }
        (p.check)().map_err(|e| format!("{owner}: parameter '{}': {e}", p.param))?;
    }
    Graph::build(owner, resolvers)
}

/// A URL question sent live on a 2025-11-25 session needs an `elicitationId`; one is made up
/// when the resolver named none.
fn with_legacy_elicitation_id(mut question: InputRequest) -> Result<InputRequest, ErrorObject> {
    if let InputRequest::Elicit(ElicitRequestParams::Url(url)) = &mut question
        && url.elicitation_id.is_none()
    {
        let mut bytes = [0u8; 16];
        crate::seal::random_bytes(&mut bytes)
            .map_err(|e| ErrorObject::internal(format!("no elicitation id: {e}")))?;
        url.elicitation_id = Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
    }
    Ok(question)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let rendered = question.rendered_schema.as_deref();
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
            digest(&question.request, question.rendered_schema.as_deref()),
            digest(&question.request, None)
        );
    }
}
