//! Sealed state handles: state a server hands a client to pass back on a later call (a
//! basket, a draft, a cursor), sealed like `requestState` so it cannot be forged, read,
//! shared with another user or used after it expires.
//!
//! A handle's binding names [`HANDLE_PURPOSE`], which no MCP request does, and the handle's
//! kind, so a handle is never accepted as a `requestState`, a `requestState` never as a
//! handle, and a handle of one kind never as another's. It carries the audience and the
//! principal like any sealed state, lives for its kind's TTL (an hour by default, not the
//! `requestState`'s minutes), and a single-use kind is spent on its first opening through the
//! policy's replay guard. Every refusal is the one [`InvalidHandle`].

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::binding::RequestBinding;
use crate::boundary::SealingBoundary;
use crate::error::{RejectReason, SealError};
use crate::principal::Principal;

/// The method a handle's binding names: no request has it, so a handle and a `requestState`
/// never stand in for each other.
pub const HANDLE_PURPOSE: &str = "mcp/handle";

/// The one message of every refused handle, whatever the cause.
pub const INVALID_HANDLE_MESSAGE: &str = "Invalid or expired handle";

/// How long a handle stays valid unless its kind says otherwise.
pub const DEFAULT_HANDLE_TTL: Duration = Duration::from_secs(3600);

/// What a kind of handle is: its name (part of what the seal binds), its lifetime, and
/// whether it is spent on first use. The server uses the same spec to seal and to open.
///
/// ```
/// use std::time::Duration;
/// use mcp_state_seal::{HandleSpec, Principal, RequestStateSecurity};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let boundary = RequestStateSecurity::ephemeral().bind(Some("shop"))?;
/// let basket = HandleSpec::new("basket").ttl(Duration::from_secs(1800));
/// let alice = Principal::new("shop-app").subject("alice");
///
/// let handle = boundary.seal_handle(&basket, r#"{"items":["tea"]}"#, Some(&alice))?;
/// assert_eq!(boundary.open_handle(&basket, &handle, Some(&alice)).await?, r#"{"items":["tea"]}"#);
///
/// // Bob holding Alice's handle gets the one error.
/// let bob = Principal::new("shop-app").subject("bob");
/// let refused = boundary.open_handle(&basket, &handle, Some(&bob)).await.unwrap_err();
/// assert_eq!(refused.to_string(), "Invalid or expired handle");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleSpec<'a> {
    kind: &'a str,
    ttl: Duration,
    single_use: bool,
}

impl<'a> HandleSpec<'a> {
    /// A kind of handle named `kind`, valid [`DEFAULT_HANDLE_TTL`], usable until it expires.
    pub const fn new(kind: &'a str) -> Self {
        HandleSpec {
            kind,
            ttl: DEFAULT_HANDLE_TTL,
            single_use: false,
        }
    }

    /// How long a handle of this kind stays valid after it is sealed.
    #[must_use]
    pub const fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Spends a handle of this kind on its first opening (the policy needs a replay guard).
    #[must_use]
    pub const fn single_use(mut self) -> Self {
        self.single_use = true;
        self
    }

    /// The kind's name.
    pub const fn kind(&self) -> &'a str {
        self.kind
    }

    fn binding(&self) -> RequestBinding<'a> {
        RequestBinding::new(HANDLE_PURPOSE, self.kind, None)
    }
}

/// A handle was refused: forged, altered, expired, of another kind, audience or principal,
/// a `requestState`, or a single-use handle already spent. Displayed as
/// [`INVALID_HANDLE_MESSAGE`] whatever the cause; [`reason`](Self::reason) is for the log.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InvalidHandle {
    reason: RejectReason,
}

impl InvalidHandle {
    /// Why the handle was refused: for the server's log, never for the wire.
    pub const fn reason(&self) -> RejectReason {
        self.reason
    }
}

impl fmt::Display for InvalidHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(INVALID_HANDLE_MESSAGE)
    }
}

impl fmt::Debug for InvalidHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvalidHandle")
            .field("reason", &self.reason.as_str())
            .finish()
    }
}

impl std::error::Error for InvalidHandle {}

impl SealingBoundary {
    /// Seals `value` as a handle of `spec`'s kind for `principal`, valid from now for the
    /// kind's TTL.
    ///
    /// # Errors
    ///
    /// [`SealError`] if randomness or the codec fails, and
    /// [`SealError::SingleUseWithoutReplayGuard`] for a single-use kind on a policy
    /// without a replay guard.
    pub fn seal_handle(
        &self,
        spec: &HandleSpec<'_>,
        value: &str,
        principal: Option<&Principal>,
    ) -> Result<String, SealError> {
        self.seal_handle_at(SystemTime::now(), spec, value, principal)
    }

    /// [`seal_handle`](Self::seal_handle) with the clock read by the caller.
    ///
    /// # Errors
    ///
    /// As [`seal_handle`](Self::seal_handle).
    pub fn seal_handle_at(
        &self,
        now: SystemTime,
        spec: &HandleSpec<'_>,
        value: &str,
        principal: Option<&Principal>,
    ) -> Result<String, SealError> {
        if spec.single_use && !self.guards_replay() {
            return Err(SealError::SingleUseWithoutReplayGuard);
        }
        self.seal_claims(
            now,
            &spec.binding(),
            value,
            principal,
            spec.ttl.as_secs_f64(),
            spec.single_use,
        )
    }

    /// Opens a handle of `spec`'s kind presented by `principal` and returns its value; a
    /// single-use handle is spent here (a second opening is refused, on every instance that
    /// shares the replay guard's store).
    ///
    /// # Errors
    ///
    /// [`InvalidHandle`] for every failure.
    pub async fn open_handle(
        &self,
        spec: &HandleSpec<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<String, InvalidHandle> {
        self.open_handle_at(SystemTime::now(), spec, token, principal)
            .await
    }

    /// [`open_handle`](Self::open_handle) with the clock read by the caller.
    ///
    /// # Errors
    ///
    /// As [`open_handle`](Self::open_handle).
    pub async fn open_handle_at(
        &self,
        now: SystemTime,
        spec: &HandleSpec<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<String, InvalidHandle> {
        let refused = |reason| InvalidHandle { reason };
        let verified = self
            .verify_claims(
                now,
                &spec.binding(),
                token,
                principal,
                spec.ttl.as_secs_f64(),
            )
            .map_err(|e| refused(e.reason()))?;
        if !spec.single_use {
            return Ok(verified.state);
        }
        let (Some(store), Some(jti)) = (self.replay.as_ref(), verified.jti.as_deref()) else {
            return Err(refused(RejectReason::Replayed));
        };
        // Spent at once, in one step: a handle is a value handed over, not a request in
        // progress that another instance could have to take over (security review X12).
        if !store.spend(jti, verified.exp).await {
            return Err(refused(RejectReason::Replayed));
        }
        Ok(verified.state)
    }
}
