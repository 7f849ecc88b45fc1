//! Prompts for [`McpServer`](super::McpServer): a template with string arguments whose body
//! renders messages, possibly after its resolvers asked the user something.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_types::content::Icon;
use mcp_types::mrtr::Outcome;
use mcp_types::prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
use mcp_types::{ErrorObject, JsonObject};

use super::extras::definition_extras;
use super::resolve::{
    FromResolved, ResolvedParam, ResolvedValues, Resolver, add_resolved, add_resolver,
};
use crate::context::RequestContext;
use crate::futures::BoxFuture;

/// What a prompt body may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    note = "return `String` (one user message), `Vec<PromptMessage>`, `GetPromptResult`, `Outcome<GetPromptResult>`, or `Result<T, E>` of those"
)]
pub trait IntoPromptResult {
    /// Whether this type can carry a hand-built `InputRequiredResult`.
    const MAY_ASK: bool = false;

    /// Converts into the prompt's outcome; an error becomes a JSON-RPC error.
    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoPromptResult for Outcome<GetPromptResult> {
    const MAY_ASK: bool = true;

    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        Ok(Outcome::Complete(GetPromptResult {
            messages: self,
            ..Default::default()
        }))
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        vec![PromptMessage::user(self)].into_prompt_result()
    }
}

impl<T: IntoPromptResult, E: fmt::Display> IntoPromptResult for Result<T, E> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_prompt_result(self) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        match self {
            Ok(t) => t.into_prompt_result(),
            Err(e) => Err(ErrorObject::internal(e.to_string())),
        }
    }
}

pub(crate) type PromptBody = Arc<
    dyn Fn(
            RequestContext,
            BTreeMap<String, String>,
            ResolvedValues,
        ) -> BoxFuture<'static, Result<Outcome<GetPromptResult>, ErrorObject>>
        + Send
        + Sync,
>;

/// A completer for an argument: given what was typed, the candidate values.
pub type Completer = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// A prompt definition for [`McpServer::prompt`](super::McpServer::prompt).
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) resolvers: Vec<Resolver>,
    pub(crate) params: Vec<ResolvedParam>,
    pub(crate) body: Option<PromptBody>,
    pub(crate) hand_built: bool,
    pub(crate) completers: BTreeMap<String, Completer>,
    pub(crate) scopes: Vec<String>,
    /// The application state it (or one of its resolvers) takes.
    pub(crate) needs: Vec<crate::state::StateNeed>,
    /// The defining crate's version (`__crate_version`).
    pub(crate) crate_version: Option<&'static str>,
}

impl fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptDef")
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

impl PromptDef {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptDef {
            crate_version: None,
            needs: Vec::new(),
            prompt: Prompt {
                name: name.into(),
                title: None,
                description: None,
                arguments: None,
                icons: None,
                meta: None,
                extra: JsonObject::new(),
            },
            resolvers: Vec::new(),
            params: Vec::new(),
            body: None,
            hand_built: false,
            completers: BTreeMap::new(),
            scopes: Vec::new(),
        }
    }

    definition_extras!("prompt");

    /// The scopes a caller's token must grant to get the prompt: a [`RequireScopes`](crate::policy::RequireScopes)
    /// layer on its `prompts/get`, checked before its other layers. Over HTTP a token without
    /// them gets the 403 `insufficient_scope` challenge naming them.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.prompt.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Declares an argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: Option<&str>,
        required: bool,
    ) -> Self {
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                title: None,
                description: description.map(str::to_owned),
                required: Some(required),
                extra: JsonObject::new(),
            });
        self
    }

    /// Offers completions for argument `name` (`completion/complete`).
    pub fn complete(
        mut self,
        name: impl Into<String>,
        completer: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers.insert(name.into(), Arc::new(completer));
        self
    }

    /// Fills parameter `param` with `resolver`'s value, as type `C`.
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

    /// Overrides whether the body may return a hand-built round (set by the macros).
    #[doc(hidden)]
    pub fn __hand_built(mut self, may_ask: bool) -> Self {
        self.hand_built = may_ask;
        self
    }

    /// The body, given the context, the arguments and the resolved parameters.
    pub fn handler<F, Fut, R>(mut self, body: F) -> Self
    where
        F: Fn(RequestContext, BTreeMap<String, String>, ResolvedValues) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoPromptResult + 'static,
    {
        let body = Arc::new(body);
        self.hand_built = R::MAY_ASK;
        self.body = Some(Arc::new(move |ctx, arguments, resolved| {
            let body = body.clone();
            Box::pin(async move { body(ctx, arguments, resolved).await.into_prompt_result() })
        }));
        self
    }
}
