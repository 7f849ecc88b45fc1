//! Checks that need the whole function: every mistake gets a sentence at the span of the
//! offending parameter or attribute, and all of them are reported together.

use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::model::{
    Item, Kind, Param, ParamKind, context_type, header_json_type, last_segment, state_type,
};
use crate::parse::Errors;

/// The type a function returns (`()` when it declares none).
pub(crate) fn return_type(item: &Item) -> Type {
    match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    }
}

/// Whether a return type carries a hand-built round (`ToolOutcome`, `Outcome<_>`, or a
/// `Result` of one).
fn is_hand_built(ty: &Type) -> bool {
    match last_segment(ty) {
        Some((name, _)) if name == "ToolOutcome" || name == "Outcome" => true,
        Some((name, Some(inner))) if name == "Result" => is_hand_built(inner),
        _ => false,
    }
}

/// The `{variables}` of a URI template.
pub(crate) fn template_variables(uri: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = uri;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = rest[open + 1..open + close].trim_start_matches('+');
        out.push(name.to_owned());
        rest = &rest[open + close + 1..];
    }
    out
}

/// Runs every rule over the function; each pushes what it finds to one collector, so all the
/// mistakes are reported together. The rules run in this order, which is the order their
/// messages appear in.
pub(crate) fn check(mut item: Item) -> syn::Result<Item> {
    let mut cx = Errors::default();
    check_async(&mut cx, &item);
    check_not_generic(&mut cx, &item);
    check_named_return(&mut cx, &item);
    classify_context(&mut cx, &mut item);
    let template = Template::of(&item);
    for param in &item.params {
        check_param_options(&mut cx, &item, param);
        check_header(&mut cx, param);
        check_argument(&mut cx, &item, &template, param);
    }
    match item.kind {
        Kind::Resource => check_resource_uri(&mut cx, &item, &template),
        Kind::Resolver => check_resolver_return(&mut cx, &item),
        Kind::Tool => check_tool_return(&mut cx, &item),
        Kind::Prompt => {}
    }
    cx.finish(item)
}

/// The resource URI of the item and its `{variables}` (none when there is no URI).
struct Template {
    uri: Option<String>,
    variables: Vec<String>,
}

impl Template {
    fn of(item: &Item) -> Template {
        let uri = item.options.uri.as_ref().map(|u| u.value());
        let variables = uri.as_deref().map(template_variables).unwrap_or_default();
        Template { uri, variables }
    }
}

/// Whether any parameter is filled by a resolver.
fn resolves(item: &Item) -> bool {
    item.params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Resolve { .. }))
}

/// The attributes go on an `async fn`.
fn check_async(cx: &mut Errors, item: &Item) {
    if item.sig.asyncness.is_none() {
        cx.push(
            item.sig.fn_token.span(),
            format!(
                "{} goes on an `async fn`; add `async` before `fn`",
                item.kind.attribute()
            ),
        );
    }
}

/// The function has no generic parameters and no `where` clause.
fn check_not_generic(cx: &mut Errors, item: &Item) {
    if !item.sig.generics.params.is_empty() || item.sig.generics.where_clause.is_some() {
        cx.push(
            item.sig.generics.span(),
            format!("{} functions cannot be generic", item.kind.attribute()),
        );
    }
}

/// The return type is named, not `impl Trait`.
fn check_named_return(cx: &mut Errors, item: &Item) {
    if let ReturnType::Type(_, ty) = &item.sig.output
        && matches!(**ty, Type::ImplTrait(_))
    {
        cx.push(ty.span(), "return a named type, not `impl Trait`");
    }
}

/// Marks the arguments that take the request context as such (only one may), and those that
/// take the server's application state.
fn classify_context(cx: &mut Errors, item: &mut Item) {
    let mut contexts = 0;
    for p in &mut item.params {
        if matches!(p.kind, ParamKind::Argument)
            && let Some((inner, by_ref)) = state_type(&p.ty)
        {
            if by_ref {
                cx.push(
                    p.span,
                    "take `State<T>` by value: it is a cheap clone of the server's shared value",
                );
            }
            p.kind = ParamKind::State { inner };
            continue;
        }
        if matches!(p.kind, ParamKind::Argument)
            && let Some(by_ref) = context_type(&p.ty)
        {
            p.kind = ParamKind::Context { by_ref };
            contexts += 1;
            if contexts > 1 {
                cx.push(p.span, "only one parameter can take the request context");
            }
        }
    }
}

/// `#[mcp(default = ...)]` and `#[mcp(header = ...)]` go on tool arguments only.
fn check_param_options(cx: &mut Errors, item: &Item, p: &Param) {
    let is_arg = matches!(p.kind, ParamKind::Argument);
    if (p.header.is_some() || p.default.is_some()) && !(is_arg && item.kind == Kind::Tool) {
        cx.push(
            p.span,
            "`#[mcp(default = ...)]` and `#[mcp(header = ...)]` only apply to tool arguments",
        );
    }
}

/// An `x-mcp-header` names a valid header token and carries a scalar.
fn check_header(cx: &mut Errors, p: &Param) {
    let Some(header) = &p.header else {
        return;
    };
    let name = header.value();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        cx.push(
            header.span(),
            format!("`{name}` is not a valid HTTP header name token"),
        );
    }
    let scalar = header_json_type(&p.ty).is_some();
    if !scalar {
        cx.push(
            p.span,
            "an `x-mcp-header` argument must be a string, an integer or a boolean",
        );
    }
}

/// An argument has the type its kind of item reads it as.
fn check_argument(cx: &mut Errors, item: &Item, template: &Template, p: &Param) {
    if !matches!(p.kind, ParamKind::Argument) {
        return;
    }
    match item.kind {
        Kind::Tool => check_tool_argument(cx, p),
        Kind::Prompt => check_prompt_argument(cx, p),
        Kind::Resource => check_template_argument(cx, template, p),
        Kind::Resolver => {}
    }
}

/// Tool arguments are deserialized, so they are owned.
fn check_tool_argument(cx: &mut Errors, p: &Param) {
    if matches!(p.ty, Type::Reference(_)) {
        cx.push(p.ty.span(), "tool arguments are deserialized from JSON: take an owned type such as `String` instead of a reference");
    }
}

/// Prompt arguments are `String` or `Option<String>`.
fn check_prompt_argument(cx: &mut Errors, p: &Param) {
    let ok = last_segment(&p.ty).is_some_and(|(n, inner)| {
        n == "String"
            || (n == "Option"
                && inner
                    .and_then(last_segment)
                    .is_some_and(|(n, _)| n == "String"))
    });
    if !ok {
        cx.push(
            p.ty.span(),
            "prompt arguments are strings: take `String`, or `Option<String>` for an optional one",
        );
    }
}

/// A resource's arguments are its URI template's variables, as `String`s.
fn check_template_argument(cx: &mut Errors, template: &Template, p: &Param) {
    let name = p.ident.to_string();
    if !template.variables.contains(&name) {
        let message = match &template.uri {
            Some(uri) if template.variables.is_empty() => {
                format!(
                    "`{uri}` is a static resource: it has no variables, so it takes no parameter `{name}`"
                )
            }
            Some(uri) => {
                format!("the URI template `{uri}` has no variable `{{{name}}}`")
            }
            None => format!("parameter `{name}` matches no URI template variable"),
        };
        cx.push(p.ident.span(), message);
    }
    if matches!(p.ty, Type::Reference(_)) {
        cx.push(
            p.ty.span(),
            "URI template variables are read from the URI's text into an owned value: take `String`, an integer, or any type that implements `FromStr`",
        );
    }
}

/// A resource has a URI; a static one cannot ask, and every template variable has a parameter.
fn check_resource_uri(cx: &mut Errors, item: &Item, template: &Template) {
    let Some(uri) = &template.uri else {
        cx.push(
            item.sig.ident.span(),
            "#[mcp::resource] needs the URI, as in `#[mcp::resource(\"vault://{item}\")]`",
        );
        return;
    };
    if template.variables.is_empty() && resolves(item) {
        for p in item
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Resolve { .. }))
        {
            cx.push(p.span, format!("`{uri}` is a static resource and static resources cannot ask: only a resource template (a URI with `{{variables}}`) may have `#[resolve]` parameters"));
        }
    }
    for var in &template.variables {
        if !item.params.iter().any(|p| p.ident == var.as_str()) {
            let span = item
                .options
                .uri
                .as_ref()
                .map_or_else(|| item.sig.ident.span(), |u| u.span());
            cx.push(
                span,
                format!("the URI template variable `{{{var}}}` has no parameter `{var}` (a `String`, or any type that implements `FromStr`)"),
            );
        }
    }
}

/// A resolver returns `Resolution<T>`.
fn check_resolver_return(cx: &mut Errors, item: &Item) {
    let ret = return_type(item);
    if !matches!(last_segment(&ret), Some((name, Some(_))) if name == "Resolution") {
        cx.push(
            ret.span(),
            "a resolver returns `Resolution<T>`: a value, one question, or a rejection",
        );
    }
}

/// A tool asks through its resolvers or builds the round by hand, not both.
fn check_tool_return(cx: &mut Errors, item: &Item) {
    let ret = return_type(item);
    if resolves(item) && is_hand_built(&ret) {
        cx.push(
            ret.span(),
            "a tool with `#[resolve]` parameters cannot return a hand-built InputRequiredResult: ask through its resolvers, or build the round yourself without them, not both",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_variables_are_found() {
        assert_eq!(
            template_variables("vault://{item}/x/{+path}"),
            ["item", "path"]
        );
        assert!(template_variables("file:///readme").is_empty());
    }

    #[test]
    fn hand_built_returns_are_recognized() {
        assert!(is_hand_built(&syn::parse_quote!(ToolOutcome)));
        assert!(is_hand_built(
            &syn::parse_quote!(Result<mcp::ToolOutcome, String>)
        ));
        assert!(!is_hand_built(&syn::parse_quote!(Result<String, String>)));
    }
}
