//! What users write: a resolver's [`Resolution`], the values it resolves to, and the
//! parameter types that take them (`Accepted`, `Ready`, `ElicitationResult`, ...).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use mcp_types::JsonObject;
use mcp_types::elicitation::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams, ElicitResult,
};
use mcp_types::mrtr::InputRequest;
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use serde_json::Value;

use crate::elicit::{
    ElicitModel, ElicitationResult, SchemaError, elicitation_form, elicitation_schema,
    parse_elicit_result,
};

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

pub(super) fn downcast<T: Clone + 'static>(value: &Arc<dyn Any + Send + Sync>) -> Option<T> {
    value.downcast_ref::<T>().cloned()
}

pub(super) fn check_model<T: ElicitModel>() -> Result<(), SchemaError> {
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
