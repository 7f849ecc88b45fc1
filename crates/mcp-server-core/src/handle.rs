//! Sealed state handles for tools: state a tool hands the client to pass back on a later
//! call (a basket, a draft, a cursor into a long job), where 2026-07-28 has no session to keep
//! it in. A tool returns `ctx.seal_handle(&basket)?`; a later tool takes `basket: Handle<Basket>`
//! as a parameter and calls `basket.open(&ctx).await?`.
//!
//! The handle is sealed by the server's `RequestStateSecurity` (`McpServer` always has one; a
//! low-level `Server` once `request_state_security` is set) as a handle of the type's
//! [`HandleKind::KIND`]: it cannot be read or forged, opens only for the caller it was sealed
//! for (the principal the boundary binds `requestState` to), for this server's audience,
//! within the kind's TTL, once if the kind is single-use, and never as a `requestState`. Every
//! refusal is `-32602 "Invalid or expired handle"`; why is logged at debug level, never the
//! handle.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use mcp_state_seal::{DEFAULT_HANDLE_TTL, HandleSpec, INVALID_HANDLE_MESSAGE};
use mcp_types::ErrorObject;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::context::RequestContext;
use crate::refusal::Refusal;

/// A type a tool keeps in a [`Handle`]: its kind's name (part of what the seal binds, so a
/// handle of one kind never opens as another), how long a handle lives and whether it is
/// spent on first use (which needs the policy's replay guard).
///
/// ```
/// use mcp_server_core::HandleKind;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Basket { items: Vec<String> }
///
/// impl HandleKind for Basket {
///     const KIND: &'static str = "basket";
/// }
/// ```
pub trait HandleKind: Serialize + DeserializeOwned {
    /// The kind's name, e.g. `basket`.
    const KIND: &'static str;
    /// How long a handle stays valid after it is sealed.
    const TTL: Duration = DEFAULT_HANDLE_TTL;
    /// Whether a handle opens once only.
    const SINGLE_USE: bool = false;
}

fn spec<T: HandleKind>() -> HandleSpec<'static> {
    let spec = HandleSpec::new(T::KIND).ttl(T::TTL);
    if T::SINGLE_USE {
        spec.single_use()
    } else {
        spec
    }
}

/// A sealed handle to a `T`: on the wire an opaque string (its JSON Schema says so), in a
/// tool's parameters a value to [`open`](Self::open), in its result what
/// [`RequestContext::seal_handle`] sealed. Its `Debug` never shows the token.
pub struct Handle<T> {
    token: String,
    kind: PhantomData<fn() -> T>,
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Handle {
            token: self.token.clone(),
            kind: PhantomData,
        }
    }
}

impl<T: HandleKind> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle<{}>(<sealed>)", T::KIND)
    }
}

impl<T> Handle<T> {
    /// The sealed token, as the client sees it.
    pub fn as_str(&self) -> &str {
        &self.token
    }
}

impl<T: HandleKind> Handle<T> {
    /// Verifies the handle for this request's caller and returns the value it holds; a
    /// single-use handle is spent.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] (returned from a tool with `?`, the call's JSON-RPC error):
    /// `-32602 "Invalid or expired handle"` for every refusal (forged, altered, expired,
    /// another caller, kind or audience, a `requestState`, already spent, or a server without
    /// sealing); `-32603` if the sealed value no longer decodes as `T`.
    pub async fn open(&self, ctx: &RequestContext) -> Result<T, Refusal> {
        let Some(sealing) = &ctx.sealing else {
            tracing::warn!(
                kind = T::KIND,
                "a handle was presented to a server without RequestStateSecurity"
            );
            return Err(invalid_handle());
        };
        let principal = sealing
            .caller(&ctx.method, ctx.principal.as_ref())
            .map_err(|()| invalid_handle())?;
        let plaintext = sealing
            .boundary()
            .open_handle(&spec::<T>(), &self.token, principal.as_deref())
            .await
            .map_err(|e| {
                tracing::debug!(kind = T::KIND, reason = %e.reason().as_str(), "handle refused");
                #[cfg(feature = "otel")]
                crate::otel::count_seal_failure("handle", e.reason().as_str().to_owned());
                invalid_handle()
            })?;
        serde_json::from_str(&plaintext).map_err(|e| {
            tracing::warn!(kind = T::KIND, error = %e, "a verified handle holds a value that no longer decodes");
            Refusal(ErrorObject::internal("Internal error"))
        })
    }
}

fn invalid_handle() -> Refusal {
    Refusal(ErrorObject::invalid_params(INVALID_HANDLE_MESSAGE))
}

impl RequestContext {
    /// Seals `value` in a [`Handle`] for this request's caller, to return to the client.
    ///
    /// # Errors
    ///
    /// `-32603 "Internal error"` (the cause logged) when the server has no sealing, the
    /// caller cannot be bound, the kind is single-use without a replay guard, or sealing
    /// fails.
    pub fn seal_handle<T: HandleKind>(&self, value: &T) -> Result<Handle<T>, ErrorObject> {
        let internal = || ErrorObject::internal("Internal error");
        let Some(sealing) = &self.sealing else {
            tracing::warn!(
                kind = T::KIND,
                "sealing a handle needs the server's RequestStateSecurity"
            );
            return Err(internal());
        };
        let principal = sealing
            .caller(&self.method, self.principal.as_ref())
            .map_err(|()| internal())?;
        let plaintext = serde_json::to_string(value).map_err(|e| {
            tracing::warn!(kind = T::KIND, error = %e, "a handle's value does not encode as JSON");
            internal()
        })?;
        let token = sealing
            .boundary()
            .seal_handle(&spec::<T>(), &plaintext, principal.as_deref())
            .map_err(|e| {
                tracing::warn!(kind = T::KIND, error = %e, "sealing a handle failed");
                internal()
            })?;
        Ok(Handle {
            token,
            kind: PhantomData,
        })
    }
}

impl<T> Serialize for Handle<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.token)
    }
}

impl<'de, T> Deserialize<'de> for Handle<T> {
    /// Any string: a handle is verified when opened, with the request's caller.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Handle {
            token: String::deserialize(d)?,
            kind: PhantomData,
        })
    }
}

impl<T: HandleKind> schemars::JsonSchema for Handle<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Handle_{}", T::KIND).into()
    }

    /// Inline, where the parameter is: a client reads what to pass without a `$defs` hop.
    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": format!(
                "A handle to a {}: an opaque value this server returned earlier; pass it back \
                 exactly as received.",
                T::KIND
            ),
        })
    }
}
