//! The one boxed future of the workspace: what every trait with an async method returns
//! (transports, token verifiers, task and event stores, handlers). It lives in the wire
//! types, the crate every other crate of ours depends on, so an implementation written
//! against `mcp_client::BoxFuture`, `mcp_server_core::BoxFuture` or
//! `mcp_transport_http::BoxFuture` names the same type. `mcp-state-seal` depends on no crate
//! of ours and spells the same type out in its replay guard.

use crate::prelude::*;

use core::future::Future;
use core::pin::Pin;

/// A boxed, `Send` future borrowing for `'a` (`'static` for one that owns everything it
/// uses, such as a handler's).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
