//! The attributes of the `mcp` crate: `#[mcp::tool]`, `#[mcp::prompt]`, `#[mcp::resource]`
//! and `#[mcp::resolver]`. They only wire what `mcp-server-core` defines: parse the function,
//! model its parameters, check them (every mistake, not just the first), then expand.
//!
//! Package `keel-mcp-server-macros` on crates.io: `cargo add keel-mcp-server-macros`,
//! then `use mcp_server_macros::…`.
//!
//! Use them through the facade (`mcp`), which re-exports them; generated code refers to
//! `::mcp`, or to the path given with `#[mcp(crate = path)]`.
//!
//! Through the facade, a tool is an `async fn`; its doc comment describes it and its parameters
//! become the input schema:
//!
//! ```
//! /// Book a table at the bistro.
//! #[mcp::tool]
//! async fn book_table(
//!     /// The day, as YYYY-MM-DD.
//!     date: String,
//!     /// How many people.
//!     party_size: u32,
//! ) -> String {
//!     format!("Booked a table for {party_size} on {date}.")
//! }
//!
//! let server = mcp::McpServer::new("bistro").tool(book_table);
//! # drop(server);
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod check;
mod expand;
mod methods;
mod model;
mod parse;

use proc_macro::TokenStream;

/// Turns an `async fn` into an MCP tool. See the `mcp` crate for the full story.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    run(model::Kind::Tool, args, item)
}

/// Turns an `async fn` returning `String` or messages into an MCP prompt.
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, item: TokenStream) -> TokenStream {
    run(model::Kind::Prompt, args, item)
}

/// Turns an `async fn` into an MCP resource (`#[mcp::resource("file:///readme")]`) or a
/// resource template (`#[mcp::resource("vault://{item}")]`).
#[proc_macro_attribute]
pub fn resource(args: TokenStream, item: TokenStream) -> TokenStream {
    run(model::Kind::Resource, args, item)
}

/// Turns an `async fn` returning `Resolution<T>` into a resolver that `#[resolve(...)]`
/// parameters name.
#[proc_macro_attribute]
pub fn resolver(args: TokenStream, item: TokenStream) -> TokenStream {
    run(model::Kind::Resolver, args, item)
}

/// Turns the `#[tool]`, `#[prompt]` and `#[resource("...")]` methods of an `impl` block into
/// items that share one value of the type; register it with `McpServer::register`.
#[proc_macro_attribute]
pub fn tools(args: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    match methods::expand(args.into(), item.clone()) {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            let mut out = error.to_compile_error();
            out.extend(methods::strip(item));
            out.into()
        }
    }
}

fn run(kind: model::Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    let result = parse::parse(kind, args.into(), item.clone())
        .and_then(check::check)
        .map(expand::expand);
    match result {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // Keep the function (without our parameter attributes) so the only errors the user
            // sees are ours, not a cascade about a missing item.
            let mut out = error.to_compile_error();
            out.extend(parse::strip(item));
            out.into()
        }
    }
}
