//! Resources for [`McpServer`](super::McpServer): static resources, and resource templates
//! (RFC 6570 level 1 and `{+var}`) whose body may ask through resolvers. Static resources
//! cannot ask.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_types::content::{Icon, ResourceContents};
use mcp_types::mrtr::Outcome;
use mcp_types::resources::{ReadResourceResult, Resource, ResourceTemplate};
use mcp_types::version::Era;
use mcp_types::{ErrorCode, ErrorObject, JsonObject};

use super::extras::definition_extras;
use super::prompt::Completer;
use super::resolve::{
    FromResolved, ResolvedParam, ResolvedValues, Resolver, add_resolved, add_resolver,
};
use crate::context::RequestContext;
use crate::futures::BoxFuture;
use crate::service::resource_not_found;

/// What a resource body may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource",
    note = "return `String` (text), `Vec<ResourceContents>`, `ReadResourceResult`, `Outcome<ReadResourceResult>`, or `Result<T, E>` of those"
)]
pub trait IntoReadResult {
    /// Whether this type can carry a hand-built `InputRequiredResult`.
    const MAY_ASK: bool = false;

    /// Converts into the read's outcome for `uri`; an error becomes a JSON-RPC error.
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject>;
}

impl IntoReadResult for String {
    fn into_read_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let mut contents = ResourceContents::text(uri, self);
        contents.mime_type = mime_type.map(str::to_owned);
        vec![contents].into_read_result(uri, mime_type)
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        Ok(Outcome::Complete(ReadResourceResult {
            contents: self,
            ..Default::default()
        }))
    }
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        Ok(Outcome::Complete(self))
    }
}

impl IntoReadResult for Outcome<ReadResourceResult> {
    const MAY_ASK: bool = true;

    fn into_read_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        Ok(self)
    }
}

impl<T: IntoReadResult, E: fmt::Display> IntoReadResult for Result<T, E> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        match self {
            Ok(t) => t.into_read_result(uri, mime),
            Err(e) => Err(ErrorObject::internal(e.to_string())),
        }
    }
}

/// A resource that does not exist. `Err(NotFound)` from a resource or a template answers
/// the error the specification names for the request's era: `-32602` with `data.uri` on
/// 2026-07-28, `-32002` on 2025-11-25 (an `Err` of any other type is an internal error,
/// `-32603`, with its text).
///
/// It has no `Display` on purpose: `Result<T, NotFound>` is read apart from the `Result<T, E:
/// Display>` of other errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotFound;

impl<T: IntoReadResult> IntoReadResult for Result<T, NotFound> {
    const MAY_ASK: bool = T::MAY_ASK;

    fn into_read_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        match self {
            Ok(t) => t.into_read_result(uri, mime),
            // Said the 2025-11-25 way here, which knows no era; `in_era` says it in the
            // request's.
            Err(NotFound) => Err(resource_not_found(Era::Legacy, uri)),
        }
    }
}

/// A "not found" from a body, in the request's era.
fn in_era(error: ErrorObject, era: Era, uri: &str) -> ErrorObject {
    if error.code == ErrorCode::LEGACY_RESOURCE_NOT_FOUND {
        resource_not_found(era, uri)
    } else {
        error
    }
}

/// Whether a matched URI's variables read as a template's parameters.
pub(crate) type VarsCheck = fn(&BTreeMap<String, String>) -> bool;

pub(crate) type ReadBody = Arc<
    dyn Fn(
            RequestContext,
            String,
            BTreeMap<String, String>,
            ResolvedValues,
        ) -> BoxFuture<'static, Result<Outcome<ReadResourceResult>, ErrorObject>>
        + Send
        + Sync,
>;

/// A static resource for [`McpServer::resource`](super::McpServer::resource).
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) body: Option<ReadBody>,
    pub(crate) scopes: Vec<String>,
    /// The application state it (or one of its resolvers) takes.
    pub(crate) needs: Vec<crate::state::StateNeed>,
    /// The defining crate's version (`__crate_version`).
    pub(crate) crate_version: Option<&'static str>,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceDef {
            crate_version: None,
            needs: Vec::new(),
            resource: Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                icons: None,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            },
            body: None,
            scopes: Vec::new(),
        }
    }

    definition_extras!("resource");

    /// The scopes a caller's token must grant to read the resource: a [`RequireScopes`](crate::policy::RequireScopes)
    /// layer on its `resources/read`, checked before its other layers. Over HTTP a token without
    /// them gets the 403 `insufficient_scope` challenge naming them.
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.resource.description = Some(description.into());
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.resource.mime_type = Some(mime_type.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.resource.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// The body that reads the resource.
    pub fn handler<F, Fut, R>(mut self, body: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
        let body = Arc::new(body);
        let mime = self.resource.mime_type.clone();
        self.body = Some(Arc::new(move |ctx, uri, _vars, _resolved| {
            let body = body.clone();
            let mime = mime.clone();
            let era = ctx.era();
            Box::pin(async move {
                let out = body(ctx).await;
                out.into_read_result(&uri, mime.as_deref())
                    .map_err(|e| in_era(e, era, &uri))
            })
        }));
        self
    }
}

/// A parsed URI template: literals and `{var}` / `{+var}` expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A variable; `reserved` (`{+var}`) may span `/`.
    Var {
        name: String,
        reserved: bool,
    },
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("unclosed '{{' in URI template '{template}'"))?
                + open;
            let expr = &rest[open + 1..close];
            let (reserved, name) = match expr.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expr),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "unsupported expression '{{{expr}}}' in URI template '{template}'"
                ));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(format!(
                    "two adjacent variables in URI template '{template}' cannot be told apart"
                ));
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    pub(crate) fn variables(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Var { name, .. } => Some(name.clone()),
                Part::Literal(_) => None,
            })
            .collect()
    }

    /// The variables of `uri`, if it matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var { name, reserved } => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || (!reserved && value.contains('/')) {
                        return None;
                    }
                    // A name used twice stands for one value (RFC 6570 expands it twice).
                    if let Some(earlier) = vars.insert(name.clone(), value.to_owned())
                        && earlier != value
                    {
                        return None;
                    }
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

/// A resource template for [`McpServer::resource_template`](super::McpServer::resource_template).
#[derive(Clone)]
pub struct ResourceTemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) resolvers: Vec<Resolver>,
    pub(crate) params: Vec<ResolvedParam>,
    pub(crate) body: Option<ReadBody>,
    pub(crate) hand_built: bool,
    pub(crate) completers: BTreeMap<String, Completer>,
    /// The application state it (or one of its resolvers) takes.
    pub(crate) needs: Vec<crate::state::StateNeed>,
    /// The defining crate's version (`__crate_version`).
    pub(crate) crate_version: Option<&'static str>,
    /// Whether a matched URI's variables read as their parameters' types (`__check_vars`):
    /// when not, the resource does not exist, and nothing runs.
    pub(crate) vars_ok: Option<VarsCheck>,
}

impl fmt::Debug for ResourceTemplateDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplateDef")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplateDef {
    /// A template such as `vault://{item}` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplateDef {
            vars_ok: None,
            crate_version: None,
            needs: Vec::new(),
            template: ResourceTemplate {
                uri_template: uri_template.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                icons: None,
                annotations: None,
                meta: None,
                extra: JsonObject::new(),
            },
            resolvers: Vec::new(),
            params: Vec::new(),
            body: None,
            hand_built: false,
            completers: BTreeMap::new(),
        }
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.template.title = Some(title.into());
        self
    }

    /// Checks a matched URI's variables before the resolvers and the body run: an annotated
    /// template whose parameters are not all `String` records one.
    #[doc(hidden)]
    pub fn __check_vars(mut self, ok: VarsCheck) -> Self {
        self.vars_ok = Some(ok);
        self
    }

    definition_extras!("template");

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.template.description = Some(description.into());
        self
    }

    /// Sets the MIME type of every matching resource.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.template.mime_type = Some(mime_type.into());
        self
    }

    /// Offers completions for variable `name` (`completion/complete`).
    pub fn complete(
        mut self,
        name: impl Into<String>,
        completer: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers.insert(name.into(), Arc::new(completer));
        self
    }

    /// Fills parameter `param` with `resolver`'s value, as type `C`. Resolvers read the
    /// template's variables as their arguments.
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

    /// The body, given the context, the URI, its variables and the resolved parameters.
    pub fn handler<F, Fut, R>(mut self, body: F) -> Self
    where
        F: Fn(RequestContext, String, BTreeMap<String, String>, ResolvedValues) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult + 'static,
    {
        let body = Arc::new(body);
        let mime = self.template.mime_type.clone();
        self.hand_built = R::MAY_ASK;
        self.body = Some(Arc::new(move |ctx, uri, vars, resolved| {
            let body = body.clone();
            let mime = mime.clone();
            let era = ctx.era();
            Box::pin(async move {
                let out = body(ctx, uri.clone(), vars, resolved).await;
                out.into_read_result(&uri, mime.as_deref())
                    .map_err(|e| in_era(e, era, &uri))
            })
        }));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_and_extract_variables() {
        let t = UriTemplate::parse("vault://{item}").unwrap();
        assert_eq!(t.matches("vault://keys").unwrap()["item"], "keys");
        assert!(t.matches("vault://a/b").is_none());
        assert!(t.matches("vault://").is_none());
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/42/data").unwrap()["id"], "42");
        assert!(t.matches("test://template/42/other").is_none());
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(t.matches("file:///a/b.txt").unwrap()["path"], "a/b.txt");
        assert!(UriTemplate::parse("x://{a}{b}").is_err());
        assert!(UriTemplate::parse("x://{a").is_err());
    }

    #[test]
    fn a_variable_used_twice_matches_only_one_value() {
        let t = UriTemplate::parse("mirror://{a}/{a}").unwrap();
        assert_eq!(t.matches("mirror://x/x").unwrap()["a"], "x");
        assert_eq!(t.matches("mirror://x/y"), None);
    }
}
