//! `#[mcp::tools]` on an `impl` block: its `#[tool]`, `#[prompt]` and `#[resource("...")]`
//! methods become items of a server that share one value of the type. Each method goes
//! through the stages a single function does (parse, check, expand); this module only finds
//! the methods and reads the block's own arguments.

use proc_macro2::TokenStream;
use syn::spanned::Spanned;
use syn::{ImplItem, ImplItemFn, ItemImpl, Path};

use crate::model::{Item, Kind};
use crate::parse::{Errors, strip_param_attrs};
use crate::{check, expand, parse};

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
    let krate = crate_path(args, &mut errors);
    check_block(&block, &mut errors);
    let mut items = Vec::new();
    for impl_item in &mut block.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        if let Some(mut item) = method_item(method, &mut errors) {
            item.options.krate = Some(krate.clone());
            items.push(item);
        }
    }
    let expanded = expand::methods(&block, &krate, &items);
    errors.finish(expanded)
}

/// The block's arguments: nothing, or `crate = path` (`::mcp` otherwise).
fn crate_path(args: TokenStream, errors: &mut Errors) -> Path {
    if args.is_empty() {
        return syn::parse_quote!(::mcp);
    }
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
}

/// The block is an inherent `impl` without generics.
fn check_block(block: &ItemImpl, errors: &mut Errors) {
    if !block.generics.params.is_empty() || block.trait_.is_some() {
        errors.push(
            block.impl_token.span(),
            "#[mcp::tools] goes on an inherent `impl` block without generics",
        );
    }
}

/// A marked method, parsed and checked into an item (its first error pushed when it is not
/// one). The method itself stays in the block as written, minus its marker and the
/// attributes only the macros understand.
fn method_item(method: &mut ImplItemFn, errors: &mut Errors) -> Option<Item> {
    let position = method.attrs.iter().position(|a| marker(a).is_some())?;
    let attr = method.attrs.remove(position);
    let kind = marker(&attr)?;
    let attr_args = match &attr.meta {
        syn::Meta::List(list) => list.tokens.clone(),
        _ => TokenStream::new(),
    };
    let parsed = parse::parse_method(kind, attr_args, method).and_then(check::check);
    method.attrs.retain(|a| !a.path().is_ident("mcp"));
    strip_param_attrs(&mut method.sig);
    parsed.map_err(|e| errors.push(e.span(), e)).ok()
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
        strip_param_attrs(&mut method.sig);
    }
    quote::quote!(#block)
}
