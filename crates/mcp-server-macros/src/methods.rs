//! `#[mcp::tools]` on an `impl` block: its `#[tool]`, `#[prompt]` and `#[resource("...")]`
//! methods become items of a server that share one value of the type.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ItemFn, ItemImpl, Path};

use crate::check;
use crate::expand::{Parts, Target, prompt_parts, resource_parts, tool_parts};
use crate::model::Kind;
use crate::parse::{Errors, parse_fn};

fn marker(attr: &syn::Attribute) -> Option<Kind> {
    let path = attr.path();
    let last = path.segments.last()?.ident.to_string();
    // `#[tool]` or `#[mcp::tool]` both mark a method.
    match last.as_str() {
        "tool" => Some(Kind::Tool),
        "prompt" => Some(Kind::Prompt),
        "resource" => Some(Kind::Resource),
        _ => None,
    }
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut block: ItemImpl = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "#[mcp::tools] goes on an `impl` block whose methods are tools, prompts or resources",
        )
    })?;
    let mut errors = Errors::default();
    let krate: Path = if args.is_empty() {
        syn::parse_quote!(::mcp)
    } else {
        match syn::parse2::<syn::MetaNameValue>(args.clone()) {
            Ok(nv) if nv.path.is_ident("crate") => match &nv.value {
                syn::Expr::Path(p) => p.path.clone(),
                other => {
                    errors.push(
                        other.span(),
                        "`crate` takes a path, as in `crate = ::my_facade::mcp`",
                    );
                    syn::parse_quote!(::mcp)
                }
            },
            _ => {
                errors.push(args.span(), "#[mcp::tools] takes only `crate = path`");
                syn::parse_quote!(::mcp)
            }
        }
    };
    if !block.generics.params.is_empty() || block.trait_.is_some() {
        errors.push(
            block.impl_token.span(),
            "#[mcp::tools] goes on an inherent `impl` block without generics",
        );
    }
    let mut preludes = Vec::new();
    let mut registrations = Vec::new();
    for impl_item in &mut block.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let Some(position) = method.attrs.iter().position(|a| marker(a).is_some()) else {
            continue;
        };
        let attr = method.attrs.remove(position);
        let Some(kind) = marker(&attr) else { continue };
        let attr_args = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => TokenStream::new(),
        };
        if !method
            .sig
            .inputs
            .iter()
            .any(|a| matches!(a, FnArg::Receiver(_)))
        {
            errors.push(
                method.sig.ident.span(),
                format!(
                    "a `#[{}]` method of a `#[mcp::tools]` block takes `&self`",
                    kind.inner_attribute()
                ),
            );
            continue;
        }
        let function = ItemFn {
            attrs: method.attrs.clone(),
            vis: method.vis.clone(),
            modifiers: method.modifiers.clone(),
            sig: method.sig.clone(),
            block: Box::new(method.block.clone()),
        };
        let parsed = parse_fn(kind, attr_args, function, true).and_then(check::check);
        // The method stays as written, minus the attributes only the macros understand.
        method.attrs.retain(|a| !a.path().is_ident("mcp"));
        for arg in &mut method.sig.inputs {
            if let FnArg::Typed(t) = arg {
                t.attrs.retain(|a| {
                    !(a.path().is_ident("resolve")
                        || a.path().is_ident("mcp")
                        || a.path().is_ident("doc"))
                });
            }
        }
        let mut item = match parsed {
            Ok(item) => item,
            Err(e) => {
                errors.push(e.span(), e);
                continue;
            }
        };
        item.options.krate = Some(krate.clone());
        let (Parts { prelude, def }, register) = match kind {
            Kind::Tool => (tool_parts(&item, Target::Method), quote!(tool)),
            Kind::Prompt => (prompt_parts(&item, Target::Method), quote!(prompt)),
            _ => (resource_parts(&item, Target::Method), quote!(resource)),
        };
        preludes.push(prelude);
        registrations.push(quote!(__server = __server.#register(#def);));
    }
    let self_ty = &block.self_ty;
    errors.finish(quote! {
        #block

        const _: () = {
            #[allow(unused_imports)]
            use #krate::__private as __mcp;
            #(#preludes)*

            impl __mcp::derive::Handlers for #self_ty {
                fn register(self: ::std::sync::Arc<Self>, __server: __mcp::McpServer) -> __mcp::McpServer {
                    let mut __server = __server;
                    #(#registrations)*
                    __server
                }
            }
        };
    })
}

/// The block as written, minus the attributes only the macros understand (after an error).
pub(crate) fn strip(item: TokenStream) -> TokenStream {
    let Ok(mut block) = syn::parse2::<ItemImpl>(item) else {
        return TokenStream::new();
    };
    for impl_item in &mut block.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        method
            .attrs
            .retain(|a| marker(a).is_none() && !a.path().is_ident("mcp"));
        for arg in &mut method.sig.inputs {
            if let FnArg::Typed(t) = arg {
                t.attrs.retain(|a| {
                    !(a.path().is_ident("resolve")
                        || a.path().is_ident("mcp")
                        || a.path().is_ident("doc"))
                });
            }
        }
    }
    quote!(#block)
}
