//! Parsing: the attribute's arguments and the annotated function, into the model. Every
//! problem found is collected; none stops the parse early.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, ImplItemFn, ItemFn, Lit, LitStr, Meta, Pat, Path, Signature,
    Token, Type,
};

use crate::model::{Item, Kind, Options, Param, ParamKind};

/// Errors collected across the whole item.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let error = syn::Error::new(span, message);
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

enum Arg {
    Positional(LitStr),
    Named(Ident, Option<Expr>),
}

fn parse_args(input: ParseStream<'_>) -> syn::Result<Vec<Arg>> {
    let mut args = Vec::new();
    while !input.is_empty() {
        if input.peek(LitStr) {
            args.push(Arg::Positional(input.parse()?));
        } else {
            let key: Ident = if input.peek(Token![crate]) {
                let kw: Token![crate] = input.parse()?;
                Ident::new("crate", kw.span)
            } else {
                input.parse()?
            };
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                Some(input.parse::<Expr>()?)
            } else {
                None
            };
            args.push(Arg::Named(key, value));
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(args)
}

fn lit_str(expr: &Expr) -> Option<LitStr> {
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Str(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `["a", "b"]`: the strings, or `None` for anything else.
fn string_list(expr: &Expr) -> Option<Vec<LitStr>> {
    match expr {
        Expr::Array(array) => array.elems.iter().map(lit_str).collect(),
        _ => None,
    }
}

fn bool_flag(value: &Option<Expr>) -> Option<bool> {
    match value {
        None => Some(true),
        Some(Expr::Lit(lit)) => match &lit.lit {
            Lit::Bool(b) => Some(b.value),
            _ => None,
        },
        Some(_) => None,
    }
}

fn path_of(expr: &Expr) -> Option<Path> {
    match expr {
        Expr::Path(p) => Some(p.path.clone()),
        Expr::Lit(_) => lit_str(expr).and_then(|s| s.parse::<Path>().ok()),
        _ => None,
    }
}

const TOOL_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "icon",
    "output",
    "task",
    "ui",
    "scopes",
    "crate",
];
const PROMPT_KEYS: &[&str] = &["name", "title", "description", "icon", "scopes", "crate"];
const RESOURCE_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "mime_type",
    "icon",
    "scopes",
    "crate",
];
const RESOLVER_KEYS: &[&str] = &["name", "crate"];

fn apply(kind: Kind, args: Vec<Arg>, options: &mut Options, errors: &mut Errors) {
    let allowed = match kind {
        Kind::Tool => TOOL_KEYS,
        Kind::Prompt => PROMPT_KEYS,
        Kind::Resource => RESOURCE_KEYS,
        Kind::Resolver => RESOLVER_KEYS,
    };
    for arg in args {
        let (key, value) = match arg {
            Arg::Positional(lit) if kind == Kind::Resource && options.uri.is_none() => {
                options.uri = Some(lit);
                continue;
            }
            Arg::Positional(lit) => {
                errors.push(
                    lit.span(),
                    format!(
                        "unexpected string; {} takes `key = value` arguments",
                        kind.attribute()
                    ),
                );
                continue;
            }
            Arg::Named(key, value) => (key, value),
        };
        let name = key.to_string();
        if !allowed.contains(&name.as_str()) {
            errors.push(
                key.span(),
                format!(
                    "unknown attribute `{name}` on {}; expected one of: {}",
                    kind.attribute(),
                    allowed.join(", ")
                ),
            );
            continue;
        }
        let string = |errors: &mut Errors| -> Option<LitStr> {
            let s = value.as_ref().and_then(lit_str);
            if s.is_none() {
                errors.push(
                    key.span(),
                    format!("`{name}` takes a string, as in `{name} = \"...\"`"),
                );
            }
            s
        };
        match name.as_str() {
            "name" => options.name = string(errors),
            "title" => options.title = string(errors),
            "description" => options.description = string(errors),
            "mime_type" => options.mime_type = string(errors),
            "icon" => options.icons.extend(string(errors)),
            "read_only" | "destructive" | "idempotent" | "open_world" => match bool_flag(&value) {
                Some(flag) => options.hints.push((name.clone(), flag)),
                None => errors.push(
                    key.span(),
                    format!("`{name}` is a flag: write `{name}` or `{name} = false`"),
                ),
            },
            "output" => match value
                .as_ref()
                .and_then(|v| syn::parse2::<Type>(quote::quote!(#v)).ok())
            {
                Some(ty) => options.output = Some(ty),
                None => errors.push(key.span(), "`output` takes a type, as in `output = Total`"),
            },
            "task" => match string(errors) {
                Some(s) if matches!(s.value().as_str(), "optional" | "required" | "forbidden") => {
                    options.task = Some(s)
                }
                Some(s) => errors.push(
                    s.span(),
                    "`task` is one of \"optional\", \"required\" or \"forbidden\"",
                ),
                None => {}
            },
            "ui" => match string(errors) {
                Some(s) if s.value().starts_with("ui://") && s.value().len() > "ui://".len() => {
                    options.ui = Some(s)
                }
                Some(s) => errors.push(
                    s.span(),
                    "`ui` is the URI of an app registered with `McpServer::app`, as in `ui = \"ui://bistro/booking\"`",
                ),
                None => {}
            },
            "scopes" => match value.as_ref().and_then(string_list) {
                Some(list) if !list.is_empty() => options.scopes = list,
                _ => errors.push(
                    key.span(),
                    "`scopes` takes a list of strings, as in `scopes = [\"calendar.write\"]`",
                ),
            },
            "crate" => match value.as_ref().and_then(path_of) {
                Some(path) => options.krate = Some(path),
                None => errors.push(
                    key.span(),
                    "`crate` takes a path, as in `crate = ::my_facade::mcp`",
                ),
            },
            _ => {}
        }
    }
}

/// The text of `///` lines, the leading space of each removed.
pub(crate) fn docs(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => lit_str(&nv.value).map(|s| s.value()),
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect()
}

/// Reads `#[mcp(...)]` on the function (`crate = path`) or on a parameter (`default = expr`,
/// `header = "Name"`, `description = "..."`).
fn mcp_attr(attr: &Attribute, errors: &mut Errors) -> Vec<(Ident, Option<Expr>)> {
    match attr.parse_args_with(|input: ParseStream<'_>| parse_args(input)) {
        Ok(args) => args
            .into_iter()
            .filter_map(|a| match a {
                Arg::Named(k, v) => Some((k, v)),
                Arg::Positional(l) => {
                    errors.push(l.span(), "`#[mcp(...)]` takes `key = value` arguments");
                    None
                }
            })
            .collect(),
        Err(e) => {
            errors.push(e.span(), e);
            Vec::new()
        }
    }
}

fn param(kind: Kind, arg: &FnArg, method: bool, errors: &mut Errors) -> Option<Param> {
    let typed = match arg {
        FnArg::Receiver(r) if method => {
            if !matches!(r.kind, syn::ReceiverKind::Reference(_, _, None)) {
                errors.push(r.span(), "take `&self`: the methods of a `#[mcp::tools]` type run concurrently on one shared value");
            }
            return None;
        }
        FnArg::Receiver(r) => {
            errors.push(
                r.span(),
                format!(
                    "{} cannot be a method taking `self` on its own: annotate the `impl` block with `#[mcp::tools]` and this method with `#[{}]`",
                    kind.attribute(),
                    kind.inner_attribute()
                ),
            );
            return None;
        }
        FnArg::Typed(t) => t,
    };
    let ident = match &*typed.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
        other => {
            errors.push(other.span(), "unsupported parameter pattern: name the parameter with a plain identifier, as in `path: String`");
            return None;
        }
    };
    let mut param = Param {
        index: 0,
        ident,
        ty: (*typed.ty).clone(),
        kind: ParamKind::Argument,
        docs: docs(&typed.attrs),
        default: None,
        header: None,
        span: typed.span(),
    };
    for attr in &typed.attrs {
        if attr.path().is_ident("doc") {
            continue;
        }
        if attr.path().is_ident("resolve") {
            match attr.parse_args::<Path>() {
                Ok(path) => param.kind = ParamKind::Resolve { path, span: attr.span() },
                Err(_) => errors.push(attr.span(), "`#[resolve(...)]` names the resolver function, as in `#[resolve(confirm_delete)]`"),
            }
            continue;
        }
        if attr.path().is_ident("mcp") {
            for (key, value) in mcp_attr(attr, errors) {
                match (key.to_string().as_str(), value) {
                    ("default", Some(expr)) => param.default = Some(expr),
                    ("header", Some(expr)) => match lit_str(&expr) {
                        Some(h) => param.header = Some(h),
                        None => errors.push(key.span(), "`header` takes the header name as a string, as in `header = \"Region\"`"),
                    },
                    ("description", Some(expr)) => match lit_str(&expr) {
                        Some(d) => param.docs = vec![d.value()],
                        None => errors.push(key.span(), "`description` takes a string"),
                    },
                    (other, _) => errors.push(key.span(), format!("unknown parameter attribute `{other}`; expected one of: default, header, description")),
                }
            }
            continue;
        }
        errors.push(attr.span(), "unknown attribute on a parameter; expected `#[resolve(...)]`, `#[mcp(...)]` or a doc comment");
    }
    Some(param)
}

pub(crate) fn parse(kind: Kind, args: TokenStream, item: TokenStream) -> syn::Result<Item> {
    let function: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("{} goes on an `async fn`", kind.attribute()),
        )
    })?;
    parse_fn(kind, args, function, false)
}

/// Parses a method of a `#[mcp::tools]` block, which takes `&self`.
pub(crate) fn parse_method(
    kind: Kind,
    args: TokenStream,
    method: &ImplItemFn,
) -> syn::Result<Item> {
    if !method
        .sig
        .inputs
        .iter()
        .any(|a| matches!(a, FnArg::Receiver(_)))
    {
        return Err(syn::Error::new(
            method.sig.ident.span(),
            format!(
                "a `#[{}]` method of a `#[mcp::tools]` block takes `&self`",
                kind.inner_attribute()
            ),
        ));
    }
    let function = ItemFn {
        attrs: method.attrs.clone(),
        vis: method.vis.clone(),
        modifiers: method.modifiers.clone(),
        sig: method.sig.clone(),
        block: Box::new(method.block.clone()),
    };
    parse_fn(kind, args, function, true)
}

/// Parses a function (or, with `method`, an `&self` method of a `#[mcp::tools]` block).
fn parse_fn(kind: Kind, args: TokenStream, function: ItemFn, method: bool) -> syn::Result<Item> {
    let mut errors = Errors::default();
    let mut options = Options::default();
    match Parser::parse2(parse_args, args) {
        Ok(args) => apply(kind, args, &mut options, &mut errors),
        Err(e) => errors.push(e.span(), e),
    }
    let mut attrs = Vec::new();
    for attr in &function.attrs {
        if attr.path().is_ident("mcp") {
            for (key, value) in mcp_attr(attr, &mut errors) {
                if key == "crate"
                    && let Some(path) = value.as_ref().and_then(path_of)
                {
                    options.krate = Some(path);
                } else {
                    errors.push(
                        key.span(),
                        "`#[mcp(...)]` on a function takes `crate = path`",
                    );
                }
            }
        } else {
            attrs.push(attr.clone());
        }
    }
    let params: Vec<Param> = function
        .sig
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(index, arg)| {
            param(kind, arg, method, &mut errors).map(|p| Param { index, ..p })
        })
        .collect();
    let mut sig = function.sig.clone();
    // The body keeps the user's parameters, without our attributes on them.
    sig.inputs = sig
        .inputs
        .into_iter()
        .map(|mut arg| {
            if let FnArg::Typed(t) = &mut arg {
                t.attrs.clear();
            }
            arg
        })
        .collect::<Punctuated<_, _>>();
    if kind == Kind::Resource
        && !options.scopes.is_empty()
        && options
            .uri
            .as_ref()
            .is_some_and(|u| u.value().contains('{'))
    {
        errors.push(
            options.scopes[0].span(),
            "`scopes` on a resource template is not supported: guard its reads with `McpServer::method_layer(\"resources/read\", RequireScopes::new([...]))`",
        );
    }
    let item = Item {
        kind,
        docs: docs(&function.attrs),
        attrs,
        vis: function.vis.clone(),
        sig,
        block: function.block.clone(),
        params,
        options,
    };
    errors.finish(item)
}

/// The function as written, minus the attributes only the macros understand.
pub(crate) fn strip(item: TokenStream) -> TokenStream {
    let Ok(mut function) = syn::parse2::<ItemFn>(item) else {
        return TokenStream::new();
    };
    function.attrs.retain(|a| !a.path().is_ident("mcp"));
    strip_param_attrs(&mut function.sig);
    quote::quote!(#function)
}

/// Removes the attributes only the macros understand (and doc comments) from the parameters.
pub(crate) fn strip_param_attrs(sig: &mut Signature) {
    for arg in &mut sig.inputs {
        if let FnArg::Typed(t) = arg {
            t.attrs.retain(|a| {
                !(a.path().is_ident("resolve")
                    || a.path().is_ident("mcp")
                    || a.path().is_ident("doc"))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    /// The table of options in the `mcp` crate's documentation lists every key the macros take.
    #[test]
    fn the_facade_documents_every_key() {
        let docs = include_str!("../../mcp/src/lib.rs");
        let table: String = docs
            .lines()
            .skip_while(|l| !l.starts_with("//! # The macros' options"))
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !table.is_empty(),
            "the options section is gone from crates/mcp/src/lib.rs"
        );
        for key in super::TOOL_KEYS
            .iter()
            .chain(super::PROMPT_KEYS)
            .chain(super::RESOURCE_KEYS)
            .chain(super::RESOLVER_KEYS)
        {
            assert!(
                table.contains(&format!("| `{key}")) || table.contains(&format!(", `{key}`")),
                "the `{key}` option is not in the table of crates/mcp/src/lib.rs"
            );
        }
    }
}
