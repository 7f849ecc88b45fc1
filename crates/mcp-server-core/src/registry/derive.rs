//! The contract between the macros (`#[mcp::tool]`, `#[mcp::resolver]`...) and the runtime:
//! what a resolver function exposes to the tools that use it, and the compile-time checks the
//! generated code runs. Nothing here is meant to be written by hand.

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;

use super::resolve::{FromResolved, Resolver};
use super::{PromptDef, ResourceDef, ResourceTemplateDef, ToolDef};

/// What an annotated function returns: its body's future, tagged with the type that carries
/// the item's definition, so the function itself can be registered (`.tool(delete_folder)`)
/// and still be called and awaited like the `async fn` it was written as.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Tagged<M, F> {
    future: F,
    _meta: PhantomData<fn() -> M>,
}

impl<M, F> Tagged<M, F> {
    /// Tags `future`.
    pub fn new(future: F) -> Self {
        Tagged {
            future,
            _meta: PhantomData,
        }
    }
}

impl<M, F: Future> IntoFuture for Tagged<M, F> {
    type Output = F::Output;
    type IntoFuture = F;

    fn into_future(self) -> F {
        self.future
    }
}

/// The definition behind a `#[mcp::tool]` function.
pub trait ToolMeta {
    /// The tool definition.
    fn tool_def() -> ToolDef;
}

/// The definition behind a `#[mcp::prompt]` function.
pub trait PromptMeta {
    /// The prompt definition.
    fn prompt_def() -> PromptDef;
}

/// The definition behind a `#[mcp::resource]` function: a static resource or a template.
pub trait ResourceMeta {
    /// The resource definition.
    fn resource_def() -> ResourceEntry;
}

/// A static resource or a resource template.
#[derive(Debug, Clone)]
pub enum ResourceEntry {
    /// A static resource.
    Static(ResourceDef),
    /// A resource template.
    Template(ResourceTemplateDef),
}

/// Anything `McpServer::tool` accepts: a `#[mcp::tool]` function or a [`ToolDef`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a function annotated with `#[mcp::tool]`, or a `ToolDef`",
    note = "annotate the function with `#[mcp::tool]`"
)]
pub trait IntoToolDef<Marker> {
    /// The definition.
    fn into_tool_def(self) -> ToolDef;
}

/// Anything `McpServer::prompt` accepts: a `#[mcp::prompt]` function or a [`PromptDef`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt",
    label = "expected a function annotated with `#[mcp::prompt]`, or a `PromptDef`",
    note = "annotate the function with `#[mcp::prompt]`"
)]
pub trait IntoPromptDef<Marker> {
    /// The definition.
    fn into_prompt_def(self) -> PromptDef;
}

/// Anything `McpServer::resource` accepts: a `#[mcp::resource]` function, a [`ResourceDef`] or
/// a [`ResourceTemplateDef`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource",
    label = "expected a function annotated with `#[mcp::resource(\"uri\")]`, a `ResourceDef` or a `ResourceTemplateDef`",
    note = "annotate the function with `#[mcp::resource(\"scheme://...\")]`"
)]
pub trait IntoResourceDef<Marker> {
    /// The definition.
    fn into_resource_def(self) -> ResourceEntry;
}

impl IntoResourceDef<((), ())> for ResourceEntry {
    fn into_resource_def(self) -> ResourceEntry {
        self
    }
}

pub use super::handlers::Handlers;

impl IntoToolDef<()> for ToolDef {
    fn into_tool_def(self) -> ToolDef {
        self
    }
}

impl IntoPromptDef<()> for PromptDef {
    fn into_prompt_def(self) -> PromptDef {
        self
    }
}

impl IntoResourceDef<()> for ResourceDef {
    fn into_resource_def(self) -> ResourceEntry {
        ResourceEntry::Static(self)
    }
}

impl IntoResourceDef<((),)> for ResourceTemplateDef {
    fn into_resource_def(self) -> ResourceEntry {
        ResourceEntry::Template(self)
    }
}

macro_rules! by_arity {
    ($($a:ident),*) => {
        impl<F, M: ToolMeta, Fut, $($a),*> IntoToolDef<(M, Fut, $($a,)*)> for F
        where
            F: Fn($($a),*) -> Tagged<M, Fut>,
        {
            fn into_tool_def(self) -> ToolDef {
                M::tool_def()
            }
        }

        impl<F, M: PromptMeta, Fut, $($a),*> IntoPromptDef<(M, Fut, $($a,)*)> for F
        where
            F: Fn($($a),*) -> Tagged<M, Fut>,
        {
            fn into_prompt_def(self) -> PromptDef {
                M::prompt_def()
            }
        }

        impl<F, M: ResourceMeta, Fut, $($a),*> IntoResourceDef<(M, Fut, $($a,)*)> for F
        where
            F: Fn($($a),*) -> Tagged<M, Fut>,
        {
            fn into_resource_def(self) -> ResourceEntry {
                M::resource_def()
            }
        }
    };
}

by_arity!();
by_arity!(A1);
by_arity!(A1, A2);
by_arity!(A1, A2, A3);
by_arity!(A1, A2, A3, A4);
by_arity!(A1, A2, A3, A4, A5);
by_arity!(A1, A2, A3, A4, A5, A6);
by_arity!(A1, A2, A3, A4, A5, A6, A7);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9, A10);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13);
by_arity!(A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14);
by_arity!(
    A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15
);
by_arity!(
    A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16
);

/// A function annotated with `#[mcp::resolver]`: its wire key, the tool arguments it reads, its
/// place in the dependency order, and the resolvers it depends on.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resolver",
    label = "this is not a function annotated with `#[mcp::resolver]`",
    note = "annotate the resolver function with `#[mcp::resolver]`"
)]
pub trait ResolverFn: 'static {
    /// The resolver's key (its `inputRequests` key on the wire): the function's name.
    const KEY: &'static str;
    /// The tool arguments it reads, each with the message shown when a tool lacks it.
    const READS: &'static [(&'static str, &'static str)];
    /// The value type of its `Resolution`.
    type Output: Send + Sync + 'static;

    /// The runtime resolver.
    fn resolver() -> Resolver;

    /// Adds this resolver and, transitively, those it depends on (once each).
    fn collect(into: &mut Vec<Resolver>);
}

/// A parameter type whose resolver must produce `Self::Model`.
pub trait ResolvedParamModel: FromResolved {
    /// The value type the parameter's resolver produces.
    type Model;
}

impl<T: super::ElicitModel> ResolvedParamModel for super::ElicitationResult<T> {
    type Model = T;
}

impl<T: super::ElicitModel> ResolvedParamModel for super::Accepted<T> {
    type Model = T;
}

impl<T: Clone + Send + Sync + 'static> ResolvedParamModel for super::Ready<T> {
    type Model = T;
}

impl ResolvedParamModel for mcp_types::sampling::CreateMessageResult {
    type Model = mcp_types::sampling::CreateMessageResult;
}

impl ResolvedParamModel for mcp_types::roots::ListRootsResult {
    type Model = mcp_types::roots::ListRootsResult;
}

/// Fails to compile unless resolver `R` produces what parameter type `C` takes.
pub const fn assert_resolver_fits<R, C>()
where
    R: ResolverFn<Output = <C as ResolvedParamModel>::Model>,
    C: ResolvedParamModel,
{
}

/// Panics (at compile time, in a `const`) with the resolver's own message when it reads an
/// argument `arguments` does not have.
pub const fn check_reads(arguments: &[&str], reads: &[(&str, &str)]) {
    let mut i = 0;
    while i < reads.len() {
        if !contains(arguments, reads[i].0) {
            panic!("{}", reads[i].1);
        }
        i += 1;
    }
}

const fn contains(haystack: &[&str], needle: &str) -> bool {
    let mut i = 0;
    while i < haystack.len() {
        if str_eq(haystack[i], needle) {
            return true;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A `State<T>` parameter's value. The build checked that the server has a `T` (every
/// annotated item declares what it takes), so the error is for a context made some other way.
pub fn state<T: Send + Sync + 'static>(
    ctx: &crate::RequestContext,
) -> Result<crate::State<T>, String> {
    ctx.state::<T>().ok_or_else(|| {
        format!(
            "this server has no state of type {}: give it one with McpServer::with_state",
            std::any::type_name::<T>()
        )
    })
}

/// The `outputSchema` a tool returning `Json<T>` infers: `(&InferOutput::<T>::new()).infer(def)`
/// picks [`InferWithSchema`] when `T` has a JSON Schema (its `&self` is the receiver as
/// written), and [`InferWithoutSchema`] (one reference further, which leaves the definition
/// as it is) when it does not, so a `Json<T>` of a type without one still compiles, as before.
pub struct InferOutput<T>(PhantomData<T>);

impl<T> InferOutput<T> {
    #[allow(clippy::new_without_default)] // only the generated code makes one
    pub fn new() -> Self {
        InferOutput(PhantomData)
    }
}

/// See [`InferOutput`]: `T` has a schema.
pub trait InferWithSchema {
    fn infer(&self, def: ToolDef) -> ToolDef;
}

impl<T: schemars::JsonSchema> InferWithSchema for InferOutput<T> {
    fn infer(&self, def: ToolDef) -> ToolDef {
        def.output_inferred::<T>()
    }
}

/// See [`InferOutput`]: `T` has none.
pub trait InferWithoutSchema {
    fn infer(&self, def: ToolDef) -> ToolDef;
}

impl<T> InferWithoutSchema for &InferOutput<T> {
    fn infer(&self, def: ToolDef) -> ToolDef {
        def
    }
}

/// How a generated template body fails: the resource does not exist (a variable that does not
/// parse), or an error with this text. No `Display`, like [`NotFound`](super::NotFound).
#[derive(Debug)]
pub enum ReadFailure {
    NotFound,
    Message(String),
}

impl<T: super::IntoReadResult> super::IntoReadResult for Result<T, ReadFailure> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<
        mcp_types::mrtr::Outcome<mcp_types::resources::ReadResourceResult>,
        mcp_types::ErrorObject,
    > {
        match self {
            Ok(t) => t.into_read_result(uri, mime),
            Err(ReadFailure::NotFound) => Err::<T, _>(super::NotFound).into_read_result(uri, mime),
            Err(ReadFailure::Message(message)) => Err(mcp_types::ErrorObject::internal(message)),
        }
    }
}

/// A URI template variable's type: anything that parses from text.
#[diagnostic::on_unimplemented(
    message = "a URI template variable of type `{Self}` cannot be read from the URI's text",
    note = "take `String`, or a type that implements `FromStr` (an integer, a `bool`, your own)"
)]
pub trait TemplateVar: Sized {
    fn from_var(text: &str) -> Option<Self>;
}

impl<T: std::str::FromStr> TemplateVar for T {
    fn from_var(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// The variable `name` of a matched URI, as a `T`; a text that does not parse means the
/// resource does not exist.
pub fn template_var<T: TemplateVar>(
    vars: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Result<T, ReadFailure> {
    T::from_var(vars.get(name).map_or("", String::as_str)).ok_or(ReadFailure::NotFound)
}
