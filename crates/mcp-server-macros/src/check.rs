//! Checks that need the whole function: every mistake gets a sentence at the span of the
//! offending parameter or attribute, and all of them are reported together.

use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::model::{Item, Kind, ParamKind, context_type, last_segment};
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

pub(crate) fn check(mut item: Item) -> syn::Result<Item> {
    let mut errors = Errors::default();
    let attr = item.kind.attribute();
    if item.sig.asyncness.is_none() {
        errors.push(
            item.sig.fn_token.span(),
            format!("{attr} goes on an `async fn`; add `async` before `fn`"),
        );
    }
    if !item.sig.generics.params.is_empty() || item.sig.generics.where_clause.is_some() {
        errors.push(
            item.sig.generics.span(),
            format!("{attr} functions cannot be generic"),
        );
    }
    if let ReturnType::Type(_, ty) = &item.sig.output
        && matches!(**ty, Type::ImplTrait(_))
    {
        errors.push(ty.span(), "return a named type, not `impl Trait`");
    }

    // Classify context parameters.
    let mut contexts = 0;
    for p in &mut item.params {
        if matches!(p.kind, ParamKind::Argument)
            && let Some(by_ref) = context_type(&p.ty)
        {
            p.kind = ParamKind::Context { by_ref };
            contexts += 1;
            if contexts > 1 {
                errors.push(p.span, "only one parameter can take the request context");
            }
        }
    }

    let uri = item.options.uri.as_ref().map(|u| u.value());
    let variables = uri.as_deref().map(template_variables).unwrap_or_default();
    let resolves = item
        .params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Resolve { .. }));

    for p in &item.params {
        let is_arg = matches!(p.kind, ParamKind::Argument);
        if (p.header.is_some() || p.default.is_some()) && !(is_arg && item.kind == Kind::Tool) {
            errors.push(
                p.span,
                "`#[mcp(default = ...)]` and `#[mcp(header = ...)]` only apply to tool arguments",
            );
        }
        if let Some(header) = &p.header {
            let name = header.value();
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                errors.push(
                    header.span(),
                    format!("`{name}` is not a valid HTTP header name token"),
                );
            }
            let scalar = last_segment(&p.ty).is_some_and(|(n, inner)| {
                let scalar_name = |n: &str| {
                    matches!(
                        n,
                        "String"
                            | "bool"
                            | "i8"
                            | "i16"
                            | "i32"
                            | "i64"
                            | "u8"
                            | "u16"
                            | "u32"
                            | "u64"
                            | "isize"
                            | "usize"
                    )
                };
                scalar_name(&n)
                    || (n == "Option"
                        && inner
                            .and_then(last_segment)
                            .is_some_and(|(n, _)| scalar_name(&n)))
            });
            if !scalar {
                errors.push(
                    p.span,
                    "an `x-mcp-header` argument must be a string, an integer or a boolean",
                );
            }
        }
        if !is_arg {
            continue;
        }
        match item.kind {
            Kind::Tool => {
                if matches!(p.ty, Type::Reference(_)) {
                    errors.push(p.ty.span(), "tool arguments are deserialized from JSON: take an owned type such as `String` instead of a reference");
                }
            }
            Kind::Prompt => {
                let ok = last_segment(&p.ty).is_some_and(|(n, inner)| {
                    n == "String"
                        || (n == "Option"
                            && inner
                                .and_then(last_segment)
                                .is_some_and(|(n, _)| n == "String"))
                });
                if !ok {
                    errors.push(p.ty.span(), "prompt arguments are strings: take `String`, or `Option<String>` for an optional one");
                }
            }
            Kind::Resource => {
                let name = p.ident.to_string();
                if !variables.contains(&name) {
                    let message = match &uri {
                        Some(uri) if variables.is_empty() => {
                            format!(
                                "`{uri}` is a static resource: it has no variables, so it takes no parameter `{name}`"
                            )
                        }
                        Some(uri) => {
                            format!("the URI template `{uri}` has no variable `{{{name}}}`")
                        }
                        None => format!("parameter `{name}` matches no URI template variable"),
                    };
                    errors.push(p.ident.span(), message);
                }
                if last_segment(&p.ty).is_none_or(|(n, _)| n != "String") {
                    errors.push(
                        p.ty.span(),
                        "URI template variables are strings: take `String`",
                    );
                }
            }
            Kind::Resolver => {}
        }
    }

    match item.kind {
        Kind::Resource => match &uri {
            None => errors.push(
                item.sig.ident.span(),
                "#[mcp::resource] needs the URI, as in `#[mcp::resource(\"vault://{item}\")]`",
            ),
            Some(uri) => {
                if variables.is_empty() && resolves {
                    for p in item
                        .params
                        .iter()
                        .filter(|p| matches!(p.kind, ParamKind::Resolve { .. }))
                    {
                        errors.push(p.span, format!("`{uri}` is a static resource and static resources cannot ask: only a resource template (a URI with `{{variables}}`) may have `#[resolve]` parameters"));
                    }
                }
                for var in &variables {
                    if !item.params.iter().any(|p| p.ident == var.as_str()) {
                        let span = item
                            .options
                            .uri
                            .as_ref()
                            .map_or_else(|| item.sig.ident.span(), |u| u.span());
                        errors.push(span, format!("the URI template variable `{{{var}}}` has no parameter `{var}: String`"));
                    }
                }
            }
        },
        Kind::Resolver => {
            let ret = return_type(&item);
            if !matches!(last_segment(&ret), Some((name, Some(_))) if name == "Resolution") {
                errors.push(
                    ret.span(),
                    "a resolver returns `Resolution<T>`: a value, one question, or a rejection",
                );
            }
        }
        Kind::Tool => {
            let ret = return_type(&item);
            if resolves && is_hand_built(&ret) {
                errors.push(
                    ret.span(),
                    "a tool with `#[resolve]` parameters cannot return a hand-built InputRequiredResult: ask through its resolvers, or build the round yourself without them, not both",
                );
            }
        }
        Kind::Prompt => {}
    }
    errors.finish(item)
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
