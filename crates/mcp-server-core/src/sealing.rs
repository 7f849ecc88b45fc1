//! What a request's context keeps to seal and open handles (`handle.rs`): the server's
//! sealing boundary, and the caller as the boundary's principal binding names it, resolved on
//! first use.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use mcp_state_seal::{Principal, PrincipalSource, SealingBoundary};

use crate::transport::TransportContext;

/// What a request's context keeps to seal and open handles: the boundary, and what its
/// principal binding reads (resolved on first use, or once and kept by a task).
#[derive(Clone)]
pub(crate) struct Sealing {
    boundary: Arc<SealingBoundary>,
    caller: Caller,
}

#[derive(Clone)]
enum Caller {
    /// The transport's context, for the binding to read when a handle is first used.
    Pending(Option<Arc<dyn Any + Send + Sync>>),
    /// The binding's answer (`Err`: it refused).
    Resolved(Result<Option<Arc<Principal>>, ()>),
}

impl Sealing {
    pub(crate) fn of(
        boundary: Option<&Arc<SealingBoundary>>,
        transport: &TransportContext,
    ) -> Option<Sealing> {
        boundary.map(|boundary| Sealing {
            boundary: boundary.clone(),
            caller: Caller::Pending(transport.context.clone()),
        })
    }

    pub(crate) fn boundary(&self) -> &SealingBoundary {
        &self.boundary
    }

    /// The caller of a `method` request authenticated as `authenticated`, as the boundary
    /// binds `requestState` to it.
    pub(crate) fn caller(
        &self,
        method: &str,
        authenticated: Option<&Principal>,
    ) -> Result<Option<Cow<'_, Principal>>, ()> {
        match &self.caller {
            Caller::Resolved(Ok(principal)) => Ok(principal.as_deref().map(Cow::Borrowed)),
            Caller::Resolved(Err(())) => Err(()),
            Caller::Pending(context) => {
                resolve(&self.boundary, method, authenticated, context.as_deref())
                    .map(|p| p.map(Cow::Owned))
            }
        }
    }

    /// Resolves the caller now and drops the transport's context: a task keeps only this
    /// for its whole life.
    pub(crate) fn settle(&mut self, method: &str, authenticated: Option<&Principal>) {
        if let Caller::Pending(context) = &self.caller {
            let resolved = resolve(&self.boundary, method, authenticated, context.as_deref())
                .map(|p| p.map(Arc::new));
            self.caller = Caller::Resolved(resolved);
        }
    }
}

fn resolve(
    boundary: &SealingBoundary,
    method: &str,
    authenticated: Option<&Principal>,
    context: Option<&(dyn Any + Send + Sync)>,
) -> Result<Option<Principal>, ()> {
    let source = PrincipalSource::new(method, authenticated);
    let source = match context {
        Some(context) => source.with_context(context),
        None => source,
    };
    boundary.principal(&source).map_err(|e| {
        tracing::debug!(reason = %e.reason(), "principal binding failed for a handle");
    })
}
