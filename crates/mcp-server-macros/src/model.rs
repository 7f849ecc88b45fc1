//! The model of an annotated function: what kind of item it is, its options, and what each
//! parameter is (the context, a resolved value, or an argument).

use proc_macro2::Span;
use syn::{Attribute, Block, Expr, Ident, LitStr, Path, Signature, Type, Visibility};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
    Resolver,
}

impl Kind {
    pub(crate) fn inner_attribute(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource(\"uri\")",
            Kind::Resolver => "resolver",
        }
    }

    pub(crate) fn attribute(self) -> &'static str {
        match self {
            Kind::Tool => "#[mcp::tool]",
            Kind::Prompt => "#[mcp::prompt]",
            Kind::Resource => "#[mcp::resource]",
            Kind::Resolver => "#[mcp::resolver]",
        }
    }
}

#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    pub(crate) icons: Vec<LitStr>,
    pub(crate) hints: Vec<(String, bool)>,
    pub(crate) output: Option<Type>,
    /// `task = "optional" | "required" | "forbidden"` on a tool.
    pub(crate) task: Option<LitStr>,
    /// `ui = "ui://…"` on a tool: the MCP App it is linked to.
    pub(crate) ui: Option<LitStr>,
    /// `scopes = ["…"]`: the scopes a caller's token must grant.
    pub(crate) scopes: Vec<LitStr>,
    pub(crate) uri: Option<LitStr>,
    pub(crate) krate: Option<Path>,
}

pub(crate) enum ParamKind {
    /// The request context (`ctx: &Context` or `ctx: Context`).
    Context { by_ref: bool },
    /// The server's application state (`notes: State<Notes>`): `inner` is `Notes`.
    State { inner: Type },
    /// Filled by a resolver.
    Resolve { path: Path, span: Span },
    /// A tool argument, prompt argument or template variable; for a resolver, a tool argument
    /// read by name.
    Argument,
}

pub(crate) struct Param {
    /// The parameter's position, which names the generated code's own binding for it.
    pub(crate) index: usize,
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
    pub(crate) docs: Vec<String>,
    pub(crate) default: Option<Expr>,
    pub(crate) header: Option<LitStr>,
    pub(crate) span: Span,
}

pub(crate) struct Item {
    pub(crate) kind: Kind,
    pub(crate) docs: Vec<String>,
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) block: Box<Block>,
    pub(crate) params: Vec<Param>,
    pub(crate) options: Options,
}

/// The last segment of a type path with its single generic argument, if any.
pub(crate) fn last_segment(ty: &Type) -> Option<(String, Option<&Type>)> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let arg = match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    };
    Some((segment.ident.to_string(), arg))
}

/// The JSON type of an `x-mcp-header` argument: `string`, `integer` or `boolean` for such a
/// Rust scalar or an `Option` of one, `None` for any other type. An `Option` is still the
/// scalar in the schema (not `["string", "null"]`, which clients refuse): a client omits an
/// absent argument, and no header is sent for it.
pub(crate) fn header_json_type(ty: &Type) -> Option<&'static str> {
    let (name, inner) = last_segment(ty)?;
    if name == "Option" {
        return header_json_type(inner?);
    }
    match name.as_str() {
        "String" => Some("string"),
        "bool" => Some("boolean"),
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "isize" | "usize" => {
            Some("integer")
        }
        _ => None,
    }
}

/// Whether `ty` is the request context (`Context`, `RequestContext`, or a reference to one).
pub(crate) fn context_type(ty: &Type) -> Option<bool> {
    let (inner, by_ref) = match ty {
        Type::Reference(r) => (&*r.elem, true),
        other => (other, false),
    };
    match last_segment(inner)?.0.as_str() {
        "Context" | "RequestContext" => Some(by_ref),
        _ => None,
    }
}

/// Whether `ty` is the server's application state, `State<T>` (by the last segment, as
/// `Context` is): `Some((T, false))`, or `Some((T, true))` for a reference to one.
pub(crate) fn state_type(ty: &Type) -> Option<(Type, bool)> {
    let (inner, by_ref) = match ty {
        Type::Reference(r) => (&*r.elem, true),
        other => (other, false),
    };
    let Type::Path(path) = inner else { return None };
    let segment = path.path.segments.last()?;
    if segment.ident != "State" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    let [syn::GenericArgument::Type(t)] = args.args.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    Some((t.clone(), by_ref))
}

/// How a resolved parameter of type `ty` is read: the type the engine converts to, and whether
/// the parameter takes the inner value of `Accepted<T>` (a plain model).
pub(crate) fn resolved_conversion(ty: &Type) -> (Type, bool) {
    match last_segment(ty).map(|(name, _)| name) {
        Some(name)
            if matches!(
                name.as_str(),
                "ElicitationResult"
                    | "Accepted"
                    | "Ready"
                    | "CreateMessageResult"
                    | "ListRootsResult"
            ) =>
        {
            (ty.clone(), false)
        }
        _ => (syn::parse_quote!(__mcp::Accepted<#ty>), true),
    }
}

/// The `T` of a tool's `Json<T>` or `Result<Json<T>, _>` return type.
pub(crate) fn json_output(ty: &Type) -> Option<&Type> {
    match last_segment(ty)? {
        (name, Some(inner)) if name == "Result" => json_output(inner),
        (name, Some(inner)) if name == "Json" => Some(inner),
        _ => None,
    }
}

/// Whether `ty` is `Option<_>`.
pub(crate) fn is_option(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|(name, arg)| name == "Option" && arg.is_some())
}
