//! The boxed future this crate's traits return ([`TokenVerifier::verify`]), defined here so
//! that the server needs no client crate. It is the same type as `mcp_client::BoxFuture`, so
//! an implementation written against either compiles.
//!
//! [`TokenVerifier::verify`]: crate::auth::TokenVerifier::verify

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future borrowing for `'a`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
