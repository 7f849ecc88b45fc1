//! Tools for [`McpServer`](super::McpServer): a definition (name, schema, annotations), the
//! resolvers of its parameters, and an async body whose return value becomes the result.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_types::content::{ContentBlock, Icon};
use mcp_types::mrtr::Outcome;
use mcp_types::tools::{CallToolResult, Tool, ToolAnnotations};
use mcp_types::{ErrorObject, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::extras::definition_extras;
use super::resolve::{
    FromResolved, ResolvedParam, ResolvedValues, Resolver, add_resolved, add_resolver,
};
use crate::context::RequestContext;
use crate::futures::BoxFuture;
use crate::refusal::Refusal;

/// What a tool body may return: text, content, structured output, a result, an error (which
/// becomes an `isError` result, not a protocol error), or a hand-built round ([`ToolOutcome`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this is the tool's return type",
    note = "return `String`, `CallToolResult`, `Json<T>`, `Vec<ContentBlock>`, `ToolOutcome`, or `Result<T, E>` of those with `E: Display` (the tool's error) or `E = Refusal` (a JSON-RPC error)"
)]
pub trait IntoToolResult {
    /// Whether this type can carry an `InputRequiredResult` (a hand-built round).
    const MAY_ASK: bool = false;

    /// Converts into the call's outcome.
    fn into_tool_result(self) -> Outcome<CallToolResult>;

    /// Converts into the call's outcome or a JSON-RPC error ([`ToolReply::Error`]; every
    /// other type always has an outcome).
    fn into_tool_reply(self) -> Result<Outcome<CallToolResult>, ErrorObject>
    where
        Self: Sized,
    {
        Ok(self.into_tool_result())
    }
}

/// A tool answer that may be a JSON-RPC error instead of a result: `Error` answers the call
/// with that error (and ends a task `failed`), where a returned `Err(e)` of a `Result` is a
/// tool error (`isError: true`, a task ends `completed`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolReply {
    /// The result.
    Result(CallToolResult),
    /// A JSON-RPC error for the client.
    Error(ErrorObject),
}

impl IntoToolResult for ToolReply {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        match self {
            ToolReply::Result(r) => Outcome::Complete(r),
            ToolReply::Error(e) => Outcome::Complete(CallToolResult::error(e.message)),
        }
    }

    fn into_tool_reply(self) -> Result<Outcome<CallToolResult>, ErrorObject> {
        match self {
            ToolReply::Result(r) => Ok(Outcome::Complete(r)),
            ToolReply::Error(e) => Err(e),
        }
    }
}

impl<T: IntoToolResult> IntoToolResult for Result<T, Refusal> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_tool_result(self) -> Outcome<CallToolResult> {
        match self {
            Ok(t) => t.into_tool_result(),
            Err(Refusal(e)) => Outcome::Complete(CallToolResult::error(e.message)),
        }
    }

    fn into_tool_reply(self) -> Result<Outcome<CallToolResult>, ErrorObject> {
        match self {
            Ok(t) => t.into_tool_reply(),
            Err(Refusal(e)) => Err(e),
        }
    }
}

/// A tool's complete result or a hand-built `InputRequiredResult`.
pub type ToolOutcome = Outcome<CallToolResult>;

/// Structured output: serialized into `structuredContent`, with the JSON text as content.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        Outcome::Complete(self)
    }
}

impl IntoToolResult for ToolOutcome {
    const MAY_ASK: bool = true;

    fn into_tool_result(self) -> Outcome<CallToolResult> {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        Outcome::Complete(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        Outcome::Complete(CallToolResult::text(self))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        Outcome::Complete(CallToolResult {
            content: vec![self],
            ..Default::default()
        })
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        Outcome::Complete(CallToolResult {
            content: self,
            ..Default::default()
        })
    }
}

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Outcome<CallToolResult> {
        match serde_json::to_value(&self.0) {
            Ok(value) => Outcome::Complete(CallToolResult {
                content: vec![ContentBlock::text(value.to_string())],
                structured_content: Some(value),
                ..Default::default()
            }),
            Err(e) => Outcome::Complete(CallToolResult::error(format!(
                "the tool's output could not be serialized: {e}"
            ))),
        }
    }
}

impl<T: IntoToolResult, E: fmt::Display> IntoToolResult for Result<T, E> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_tool_result(self) -> Outcome<CallToolResult> {
        match self {
            Ok(t) => t.into_tool_result(),
            Err(e) => Outcome::Complete(CallToolResult::error(e.to_string())),
        }
    }

    /// An `Ok` that is itself a JSON-RPC error (a [`ToolReply::Error`], an `Err` of a
    /// [`Refusal`]) stays one; `Err(e)` is the tool's error.
    fn into_tool_reply(self) -> Result<Outcome<CallToolResult>, ErrorObject> {
        match self {
            Ok(t) => t.into_tool_reply(),
            Err(e) => Ok(Outcome::Complete(CallToolResult::error(e.to_string()))),
        }
    }
}

/// Parses and validates a call's arguments into the body's argument type.
pub(crate) type ParseFn =
    Arc<dyn Fn(&JsonObject) -> Result<Box<dyn Any + Send>, String> + Send + Sync>;
pub(crate) type ToolBody = Arc<
    dyn Fn(
            RequestContext,
            Box<dyn Any + Send>,
            ResolvedValues,
        ) -> BoxFuture<'static, Result<ToolOutcome, ErrorObject>>
        + Send
        + Sync,
>;

/// A tool definition for [`McpServer::tool`](super::McpServer::tool).
///
/// ```
/// use mcp_server_core::registry::{McpServer, ToolDef};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Echo {
///     /// What to say back.
///     text: String,
/// }
///
/// let echo = ToolDef::new("echo")
///     .description("Says it back.")
///     .arguments::<Echo>()
///     .handler(|_ctx, args: Echo| async move { args.text });
/// let server = McpServer::new("echo").tool(echo).build()?;
/// # Ok::<(), mcp_server_core::registry::BuildError>(())
/// ```
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    pub(crate) resolvers: Vec<Resolver>,
    pub(crate) params: Vec<ResolvedParam>,
    pub(crate) parse: Option<ParseFn>,
    pub(crate) body: Option<ToolBody>,
    pub(crate) hand_built: bool,
    pub(crate) task: crate::tasks::TaskSupport,
    pub(crate) ui: Option<mcp_types::ext::apps::UiToolMeta>,
    pub(crate) scopes: Vec<String>,
    /// The application state it (or one of its resolvers) takes.
    pub(crate) needs: Vec<crate::state::StateNeed>,
    /// The defining crate's version (`__crate_version`).
    pub(crate) crate_version: Option<&'static str>,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("tool", &self.tool)
            .field("resolvers", &self.resolvers)
            .finish_non_exhaustive()
    }
}

/// The input schema of a tool with no arguments.
pub(crate) fn empty_object_schema() -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), Value::from("object"));
    schema.insert("properties".into(), Value::Object(JsonObject::new()));
    schema
}

/// The JSON Schema of `T` as a tool schema: an object root, 2020-12, without `$schema`.
pub fn schema_object<T: JsonSchema>() -> JsonObject {
    let mut schema = match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(o)) => o,
        _ => return empty_object_schema(),
    };
    schema.remove("$schema");
    schema
}

impl ToolDef {
    /// A tool named `name` with no arguments and no body yet.
    pub fn new(name: impl Into<String>) -> Self {
        ToolDef {
            crate_version: None,
            needs: Vec::new(),
            tool: Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: empty_object_schema(),
                output_schema: None,
                annotations: None,
                icons: None,
                execution: None,
                meta: None,
                extra: JsonObject::new(),
            },
            resolvers: Vec::new(),
            params: Vec::new(),
            parse: None,
            body: None,
            hand_built: false,
            task: crate::tasks::TaskSupport::Forbidden,
            ui: None,
            scopes: Vec::new(),
        }
    }

    definition_extras!("tool");

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The wire definition as `tools/list` shows it.
    pub fn definition(&self) -> &Tool {
        &self.tool
    }

    /// Renames the tool.
    pub fn rename(mut self, name: impl Into<String>) -> Self {
        self.tool.name = name.into();
        self
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Sets the description the model reads.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    /// Sets the behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.tool.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Sets the input schema from the arguments type (object root, JSON Schema 2020-12).
    pub fn arguments<A: JsonSchema>(mut self) -> Self {
        self.tool.input_schema = schema_object::<A>();
        self
    }

    /// Sets the input schema by hand.
    pub fn input_schema(mut self, schema: JsonObject) -> Self {
        self.tool.input_schema = schema;
        self
    }

    /// Sets the output schema; return [`Json<O>`] so `structuredContent` follows it. An
    /// annotated tool that returns `Json<O>` gets it without this, when `O` has a schema.
    pub fn output<O: JsonSchema>(mut self) -> Self {
        self.tool.output_schema = Some(schema_object::<O>());
        self
    }

    /// The output schema of a tool returning `Json<O>`, unless one is set already: `O`'s, when
    /// it describes an object (an `outputSchema` must), none otherwise.
    pub(crate) fn output_inferred<O: JsonSchema>(mut self) -> Self {
        if self.tool.output_schema.is_none() {
            let schema = schema_object::<O>();
            if schema.get("type").and_then(Value::as_str) == Some("object") {
                self.tool.output_schema = Some(schema);
            }
        }
        self
    }

    /// Fills parameter `param` with `resolver`'s value, as type `C` (checked when the server
    /// is built). The parameter never appears in the input schema, and a value the client
    /// sends for it is ignored.
    pub fn resolve<C: FromResolved>(
        mut self,
        param: impl Into<String>,
        resolver: Resolver,
    ) -> Self {
        add_resolved::<C>(
            &mut self.params,
            &mut self.resolvers,
            param.into(),
            resolver,
        );
        self
    }

    /// Registers a resolver other resolvers depend on, without a parameter of its own.
    pub fn resolver(mut self, resolver: Resolver) -> Self {
        add_resolver(&mut self.resolvers, resolver);
        self
    }

    /// Lets the tool run as a task (the Tasks extension, `io.modelcontextprotocol/tasks`):
    /// with `Optional` a 2026-07-28 call that declares the extension answers a
    /// `CreateTaskResult` at once and the body runs in the background; `Required` also
    /// refuses a call that does not declare it (`-32021`). Resolvers still run first, on the
    /// `tools/call` itself; questions the body asks (`ctx.elicit()`...) become the task's
    /// `inputRequests`. A 2025-11-25 session runs the body inline. See
    /// [`crate::tasks`].
    pub fn task(mut self, support: crate::tasks::TaskSupport) -> Self {
        self.task = support;
        self
    }

    /// The scopes a caller's token must grant to call the tool: a [`RequireScopes`](crate::policy::RequireScopes)
    /// layer on its `tools/call`, checked before its other layers. Over HTTP a token without
    /// them gets the 403 `insufficient_scope` challenge naming them.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The tool's task support.
    pub fn task_support(&self) -> crate::tasks::TaskSupport {
        self.task
    }

    /// Overrides whether the body may return a hand-built round (set by the macros from the
    /// declared return type).
    #[doc(hidden)]
    pub fn __hand_built(mut self, may_ask: bool) -> Self {
        self.hand_built = may_ask;
        self
    }

    /// The body, given the context and the arguments (deserialized as `A`).
    pub fn handler<A, F, Fut, R>(self, body: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult + 'static,
    {
        let body = Arc::new(body);
        self.handler_resolved(move |ctx, args: A, _resolved| {
            let body = body.clone();
            async move { body(ctx, args).await }
        })
    }

    /// The body, given the context, the arguments and the resolved parameters.
    pub fn handler_resolved<A, F, Fut, R>(mut self, body: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(RequestContext, A, ResolvedValues) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult + 'static,
    {
        let body = Arc::new(body);
        self.hand_built = R::MAY_ASK;
        self.parse = Some(Arc::new(|arguments: &JsonObject| {
            parse_arguments::<A>(arguments).map(|args| Box::new(args) as Box<dyn Any + Send>)
        }));
        self.body = Some(Arc::new(move |ctx, args, resolved| {
            let body = body.clone();
            Box::pin(async move {
                match args.downcast::<A>() {
                    Ok(args) => body(ctx, *args, resolved).await.into_tool_reply(),
                    Err(_) => Ok(Outcome::Complete(CallToolResult::error(
                        "the arguments were parsed as another type",
                    ))),
                }
            })
        }));
        self
    }
}

/// A tool's arguments as `A`, read in place from the request's map: no copy of the arguments
/// on the way (issue #35). A type that reads a map reference differently from an object value
/// (an `Option`, a newtype struct: serde_json forwards those to the map itself) and any
/// refusal are read again from a copy as an object value, so what is accepted, and the message
/// of what is not, are the value's.
fn parse_arguments<A: DeserializeOwned>(arguments: &JsonObject) -> Result<A, String> {
    A::deserialize(arguments).or_else(|_| {
        serde_json::from_value::<A>(Value::Object(arguments.clone())).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod parse_tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Args {
        text: String,
        #[serde(default)]
        times: Option<u32>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Wrapped(Args);

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// Every shape reads what `serde_json::from_value` read, and refusals say what it said.
    #[test]
    fn arguments_read_in_place_as_from_a_value() {
        let given = object(json!({"text": "hi", "times": 2}));
        let expected = Args {
            text: "hi".into(),
            times: Some(2),
        };
        assert_eq!(parse_arguments::<Args>(&given), Ok(expected));
        let optional = parse_arguments::<Option<Args>>(&given).unwrap();
        assert_eq!(optional.map(|a| a.text).as_deref(), Some("hi"));
        let wrapped = parse_arguments::<Wrapped>(&given).unwrap();
        assert_eq!(wrapped.0.times, Some(2));
        assert_eq!(
            parse_arguments::<Value>(&given).unwrap(),
            json!({"text": "hi", "times": 2})
        );
        for refused in [
            json!({"times": 2}),
            json!({"text": 5}),
            json!({"text": "a", "times": -1}),
        ] {
            let map = object(refused);
            let reference = serde_json::from_value::<Args>(Value::Object(map.clone()))
                .unwrap_err()
                .to_string();
            assert_eq!(parse_arguments::<Args>(&map), Err(reference));
        }
    }
}
