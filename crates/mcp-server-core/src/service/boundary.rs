//! The sealing boundary, where request state crosses to the client and back: opening a round's `requestState`,
//! binding it to the request, and sealing the next round's.

use std::sync::Arc;

use mcp_state_seal::{
    INVALID_REQUEST_STATE_DATA_REASON, INVALID_REQUEST_STATE_MESSAGE, Principal, PrincipalSource,
    RequestBinding, SealingBoundary, UseClaim,
};
use mcp_types::capabilities::ClientCapabilities;
use mcp_types::mrtr::{Outcome, RetryParams};
use mcp_types::version::Era;
use mcp_types::{ErrorObject, InputRequiredResult};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::context::RequestContext;
use crate::gating;
use crate::server::Handler;
use crate::stamp::{Stamp, Stamped};

use crate::TransportContext;
use crate::service::Inner;
use crate::service::inner::serialize_error;
use crate::service::reply::finish;

pub(super) struct BindingParts {
    pub(super) method: &'static str,
    pub(super) target: String,
    pub(super) arguments: Option<Value>,
}

impl BindingParts {
    pub(super) fn binding(&self) -> RequestBinding<'_> {
        RequestBinding::new(self.method, &self.target, self.arguments.as_ref())
    }
}

pub(super) fn invalid_request_state() -> ErrorObject {
    ErrorObject::invalid_params(INVALID_REQUEST_STATE_MESSAGE)
        .with_data(serde_json::json!({ "reason": INVALID_REQUEST_STATE_DATA_REASON }))
}

/// A method that may answer `input_required`: verify the incoming state, run the handler,
/// check and seal the outgoing round.
///
/// A plain function returning its future, not an `async fn`: an `async fn` keeps each argument
/// twice in its future (as passed, then moved into its body), and this one's arguments are
/// the request's params and context; the future is moved into its box whole, at its full
/// size, on every request.
#[allow(clippy::manual_async_fn)] // the `async fn` form is the one this avoids
pub(super) fn sealed_round<P, T>(
    inner: &Arc<Inner>,
    handler: Option<&Handler<P, Outcome<T>>>,
    mut params: P,
    mut ctx: RequestContext,
    transport: &TransportContext,
    binding: Option<BindingParts>,
    missing: impl FnOnce(&P) -> ErrorObject,
) -> impl Future<Output = Result<Box<RawValue>, ErrorObject>>
where
    P: RetryParams,
    T: Stamped + Serialize,
{
    async move {
        let Some(handler) = handler else {
            return Err(missing(&params));
        };
        let era = ctx.era;
        let boundary = inner
            .server
            .boundary
            .as_deref()
            .filter(|_| era == Era::Modern);
        let mut opened = Opened::default();
        if era == Era::Modern {
            opened = open_state(boundary, binding.as_ref(), &mut params, transport).await?;
            ctx.request_state = params.request_state().map(str::to_owned);
            ctx.input_responses = params.input_responses().cloned().map(Arc::new);
        } else {
            // 2025-11-25 has no requestState: a client's value is never handed on unverified.
            params.set_request_state(None);
        }
        let caps = ctx.client_capabilities.clone();
        let outcome = handler(ctx, params).await;
        // The request produced its answer (a result or an error): its state is done once the
        // transport delivered it (or now, without a transport that says so), so no other
        // instance may take it over after that.
        if let Some(claim) = opened.claim {
            let unheld = match transport.delivery.as_deref() {
                Some(delivery) => delivery.hold(claim).err(),
                None => Some(claim),
            };
            if let Some(claim) = unheld {
                Box::pin(claim.finish()).await;
            }
        }
        let round = match outcome? {
            Outcome::Complete(result) => return finish(inner, era, result),
            Outcome::InputRequired(_) if era == Era::Legacy => {
                tracing::warn!("a handler returned input_required on a 2025-11-25 session");
                return Err(ErrorObject::internal("Handler returned an invalid result"));
            }
            Outcome::InputRequired(round) => round,
        };
        seal_round(
            inner,
            boundary,
            binding.as_ref(),
            opened.principal,
            &caps,
            round,
        )
    }
}

/// What opening a request's incoming state found: the caller as the boundary binds it (once
/// the boundary applies), and the replay guard's claim on the state, marked done once the
/// handler answered.
#[derive(Default)]
pub(super) struct Opened {
    principal: Option<Result<Option<Principal>, ()>>,
    claim: Option<UseClaim>,
}

/// Binds the caller and opens the sealed `requestState` of a 2026-07-28 request in place
/// (its plaintext replaces the token); without a boundary, only checks that a state is a
/// string.
async fn open_state<P: RetryParams>(
    boundary: Option<&SealingBoundary>,
    binding: Option<&BindingParts>,
    params: &mut P,
    transport: &TransportContext,
) -> Result<Opened, ErrorObject> {
    let (Some(boundary), Some(parts)) = (boundary, binding) else {
        // A boundary without a binding never hands a state on unverified.
        if boundary.is_some() && params.request_state_value().is_some() {
            tracing::warn!("requestState rejected: no binding to open it against");
            return Err(invalid_request_state());
        }
        if let Some(state) = params.request_state_value()
            && !state.is_string()
        {
            return Err(ErrorObject::invalid_params(
                "Invalid params: requestState must be a string",
            ));
        }
        return Ok(Opened::default());
    };
    let source = PrincipalSource::new(parts.method, transport.principal.as_ref());
    let source = match transport.context.as_deref() {
        Some(context) => source.with_context(context),
        None => source,
    };
    let resolved = boundary.principal(&source).map_err(|e| {
        tracing::debug!(reason = %e.reason(), "principal binding failed");
    });
    let mut claim = None;
    if let Some(state) = params.request_state_value() {
        let Ok(who) = &resolved else {
            return Err(invalid_request_state());
        };
        let Some(token) = state.as_str() else {
            tracing::debug!(method = parts.method, "requestState rejected: not a string");
            return Err(invalid_request_state());
        };
        match Box::pin(boundary.unseal_claim(&parts.binding(), token, who.as_ref())).await {
            Ok((plaintext, used)) => {
                params.set_request_state(Some(plaintext));
                claim = used;
            }
            Err(e) => {
                tracing::debug!(method = parts.method, reason = %e.reason(), "requestState rejected");
                #[cfg(feature = "otel")]
                crate::otel::count_seal_failure("requestState", e.reason().to_string());
                if e.reason() == mcp_state_seal::RejectReason::GuardUnavailable {
                    // Not a verdict on the state: the client may retry the same round.
                    return Err(ErrorObject::internal(
                        "The replay guard's store (Redis) cannot answer, so the requestState \
                         could not be checked; retry shortly",
                    ));
                }
                return Err(invalid_request_state());
            }
        }
    }
    Ok(Opened {
        principal: Some(resolved),
        claim,
    })
}

/// A round a handler asked: checked against what the client declared, its state sealed for
/// the caller, stamped.
fn seal_round(
    inner: &Inner,
    boundary: Option<&SealingBoundary>,
    binding: Option<&BindingParts>,
    principal: Option<Result<Option<Principal>, ()>>,
    caps: &ClientCapabilities,
    mut round: InputRequiredResult,
) -> Result<Box<RawValue>, ErrorObject> {
    if !round.is_well_formed() {
        tracing::warn!(
            "a handler returned input_required with neither inputRequests nor requestState"
        );
        return Err(ErrorObject::internal("Handler returned an invalid result"));
    }
    if let Some(requests) = &round.input_requests {
        gating::check_input_requests(requests.iter(), caps)?;
    }
    if boundary.is_some() && binding.is_none() && round.request_state.is_some() {
        // A state is never sent unsealed: this handler was said never to ask.
        tracing::warn!("a handler that never asks returned input_required with a requestState");
        return Err(ErrorObject::internal("Handler returned an invalid result"));
    }
    if let (Some(boundary), Some(parts), Some(state)) =
        (boundary, binding, round.request_state.as_ref())
    {
        let Some(Ok(who)) = principal else {
            return Err(ErrorObject::internal("Internal error"));
        };
        match boundary.seal(&parts.binding(), state, who.as_ref()) {
            Ok(token) => round.request_state = Some(token),
            Err(e) => {
                tracing::warn!(error = %e, "sealing requestState failed");
                return Err(ErrorObject::internal("Internal error"));
            }
        }
    }
    let stamp = Stamp {
        server_info: &inner.server.info,
        cache: inner.server.cache,
    };
    round
        .write_modern(&stamp, &inner.server_info)
        .map_err(serialize_error)
}
