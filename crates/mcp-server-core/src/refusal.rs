//! [`Refusal`]: the JSON-RPC error a tool body (or a handle that will not open) answers a call
//! with. Below both the handles, which refuse with it, and the tools, which return it.

use mcp_types::ErrorObject;

/// A JSON-RPC error a tool body answers the call with, through `?`: a tool returning
/// `Result<T, Refusal>` answers `Err` with that error, where an `Err` of any other type is the
/// tool's own failure (`isError: true`). [`Handle::open`](crate::Handle::open) refuses with
/// one. It has no `Display` on purpose: that is what keeps the two kinds of `Err` apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal(pub ErrorObject);

impl From<ErrorObject> for Refusal {
    fn from(error: ErrorObject) -> Self {
        Refusal(error)
    }
}

impl From<Refusal> for ErrorObject {
    fn from(refusal: Refusal) -> Self {
        refusal.0
    }
}
