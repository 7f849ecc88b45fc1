//! The bound sealer the server layer calls on every round: it seals outgoing
//! state in a fresh claims envelope and verifies incoming state against the
//! current request, failing closed with the one [`InvalidRequestState`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::rand::SystemRandom;
use serde_json::Value;

use crate::binding::RequestBinding;
use zeroize::Zeroizing;

use crate::claims::{self, Expectation, Stamp, Verified};
use crate::codec::Codec;
use crate::error::{BindPrincipalError, InvalidRequestState, RejectReason, SealError};
use crate::keyring::KeyRing;
use crate::principal::{Principal, PrincipalBinding, PrincipalSource};
use crate::replay::{SeenStore, UseClaim};

/// The codec behind a policy. The built-in ring is kept as its concrete type so
/// the envelope is written straight into the buffer that is encrypted in place.
#[derive(Clone)]
pub(crate) enum Backend {
    Ring(Arc<KeyRing>),
    Custom(Arc<dyn Codec>),
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ring(ring) => ring.fmt(f),
            Self::Custom(_) => f.write_str("<custom codec>"),
        }
    }
}

/// A [`RequestStateSecurity`](crate::RequestStateSecurity) bound to one server,
/// from [`bind`](crate::RequestStateSecurity::bind). Cheap to clone.
///
/// The server layer, for `tools/call`, `prompts/get` and `resources/read` only:
///
/// 1. builds the [`RequestBinding`] and resolves the [`principal`](Self::principal)
///    once per round;
/// 2. if `params.requestState` is present and not `null`, calls
///    [`unseal_json`](Self::unseal_json) and hands the plaintext to the handler, or
///    answers any error with `-32602 "Invalid or expired requestState"`;
/// 3. if the handler answers `input_required` with a `requestState`, replaces it
///    with [`seal`](Self::seal)'s token (a fresh envelope every round), or answers
///    `-32603 "Internal error"` on a [`SealError`].
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use mcp_state_seal::{RejectReason, RequestBinding, RequestStateSecurity};
/// use serde_json::json;
///
/// let boundary = RequestStateSecurity::keys(["0123456789abcdef0123456789abcdef"])?.bind(Some("fleet"))?;
/// let args = json!({"date": "2026-08-01", "party": 2});
/// let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
///
/// let minted = SystemTime::now();
/// let token = boundary.seal_at(minted, &binding, "pick-region-v1", None)?;
/// let later = minted + Duration::from_secs(599);
/// assert_eq!(boundary.unseal_at(later, &binding, &token, None)?, "pick-region-v1");
///
/// // Replayed on another tool: the same error for every cause, the reason for the log.
/// let other = RequestBinding::new("tools/call", "cancel_table", Some(&args));
/// let err = boundary.unseal_at(later, &other, &token, None).unwrap_err();
/// assert_eq!(err.to_string(), "Invalid or expired requestState");
/// assert_eq!(err.reason(), RejectReason::RequestBinding);
///
/// let too_late = minted + Duration::from_secs(600);
/// assert_eq!(boundary.unseal_at(too_late, &binding, &token, None).unwrap_err().reason(), RejectReason::Expired);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SealingBoundary {
    pub(crate) backend: Backend,
    pub(crate) ttl: Duration,
    pub(crate) ttl_secs: f64,
    pub(crate) audience: Option<String>,
    pub(crate) principal: PrincipalBinding,
    pub(crate) rng: SystemRandom,
    pub(crate) replay: Option<Arc<dyn SeenStore>>,
}

impl SealingBoundary {
    /// The audience stamped into and required from every token, if any.
    pub fn audience(&self) -> Option<&str> {
        self.audience.as_deref()
    }

    /// Whether `token` was sealed with the key this boundary seals with now: `false` for a
    /// token of an older key still accepted during a rotation, so that state a server keeps
    /// for longer than a rotation (a fleet's session records) can be sealed again before the
    /// older key goes. Reads the token's clear key id only and verifies nothing; `true` for
    /// every token of a [custom codec](crate::RequestStateSecurity::codec), which this
    /// boundary cannot look into.
    ///
    /// ```
    /// use mcp_state_seal::{HandleSpec, RequestStateSecurity};
    ///
    /// let old = RequestStateSecurity::keys(["0123456789abcdef0123456789abcdef"])?.bind(Some("a"))?;
    /// let rotating = RequestStateSecurity::keys([
    ///     "fedcba9876543210fedcba9876543210",
    ///     "0123456789abcdef0123456789abcdef",
    /// ])?
    /// .bind(Some("a"))?;
    /// let record = HandleSpec::new("record");
    /// let token = old.seal_handle(&record, "{}", None)?;
    /// assert!(old.sealed_with_current_key(&token));
    /// assert!(!rotating.sealed_with_current_key(&token));
    /// let again = rotating.seal_handle(&record, "{}", None)?;
    /// assert!(rotating.sealed_with_current_key(&again));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sealed_with_current_key(&self, token: &str) -> bool {
        match &self.backend {
            Backend::Ring(ring) => ring.sealed_with_first(token),
            Backend::Custom(_) => true,
        }
    }

    /// How long a sealed state stays valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The principal this request's state is bound to, by the policy's principal
    /// binding. Resolve it once per round and pass it to both
    /// [`unseal`](Self::unseal) and [`seal`](Self::seal).
    ///
    /// # Errors
    ///
    /// The binding's [`BindPrincipalError`]; it converts into a [`SealError`] when
    /// sealing and into an [`InvalidRequestState`] when verifying, so both
    /// directions fail closed.
    pub fn principal(
        &self,
        source: &PrincipalSource<'_>,
    ) -> Result<Option<Principal>, BindPrincipalError> {
        self.principal.resolve(source)
    }

    /// Seals `state` for the request `binding`, run as `principal`, valid from now
    /// for the policy's time-to-live.
    ///
    /// # Errors
    ///
    /// [`SealError`] if randomness or the codec fails.
    pub fn seal(
        &self,
        binding: &RequestBinding<'_>,
        state: &str,
        principal: Option<&Principal>,
    ) -> Result<String, SealError> {
        self.seal_at(SystemTime::now(), binding, state, principal)
    }

    /// [`seal`](Self::seal) with the clock read by the caller (`iat = now`).
    ///
    /// # Errors
    ///
    /// [`SealError`] if randomness or the codec fails.
    pub fn seal_at(
        &self,
        now: SystemTime,
        binding: &RequestBinding<'_>,
        state: &str,
        principal: Option<&Principal>,
    ) -> Result<String, SealError> {
        self.seal_claims(
            now,
            binding,
            state,
            principal,
            self.ttl_secs,
            self.replay.is_some(),
        )
    }

    /// Seals `state` in a fresh envelope valid `lifetime` seconds from `now`, with a `jti`
    /// when `unique` (what the replay guard checks).
    pub(crate) fn seal_claims(
        &self,
        now: SystemTime,
        binding: &RequestBinding<'_>,
        state: &str,
        principal: Option<&Principal>,
        lifetime: f64,
        unique: bool,
    ) -> Result<String, SealError> {
        let (iat, exp) = claim_times(now, lifetime);
        let jti = if unique { Some(self.new_jti()?) } else { None };
        let stamp = Stamp {
            iat,
            exp,
            binding,
            audience: self.audience.as_deref(),
            principal_claim: principal.map(|p| p.claim(&self.rng)).transpose()?,
            jti: jti.as_deref(),
        };
        let hint = stamp.len_hint(state);
        match &self.backend {
            Backend::Ring(ring) => ring.seal_with(hint, |buf| stamp.write(buf, state)),
            Backend::Custom(codec) => {
                let mut plaintext = Zeroizing::new(Vec::with_capacity(hint));
                stamp.write(&mut plaintext, state);
                codec.seal(&plaintext)
            }
        }
    }

    fn new_jti(&self) -> Result<String, SealError> {
        crate::random_hex_id()
    }

    /// Whether the replay guard is on (see
    /// [`RequestStateSecurity::replay_guard`](crate::RequestStateSecurity::replay_guard)).
    pub fn guards_replay(&self) -> bool {
        self.replay.is_some()
    }

    /// [`unseal`](Self::unseal), then, with the replay guard on, the seen-store: a state is
    /// accepted once, and a state without a `jti` (minted with the guard off, or by the
    /// Python SDK) is refused. With the guard off this is exactly `unseal`. The use is marked
    /// done at once; a server that can say when the request finished uses
    /// [`unseal_claim`](Self::unseal_claim) instead.
    ///
    /// # Errors
    ///
    /// As [`unseal`](Self::unseal), and [`RejectReason::Replayed`].
    pub async fn unseal_once(
        &self,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<String, InvalidRequestState> {
        let (state, claim) = self.unseal_claim(binding, token, principal).await?;
        if let Some(claim) = claim {
            claim.finish().await;
        }
        Ok(state)
    }

    /// [`unseal_once`](Self::unseal_once), leaving the use *claimed*: with the replay guard on
    /// it also returns the claim, which the caller [finishes](UseClaim::finish) once the
    /// request produced its answer (a result or an error). Until then a fleet's seen-store may
    /// hand the state to another instance if this one dies (see
    /// [`SeenStore::first_use`]).
    ///
    /// # Errors
    ///
    /// As [`unseal_once`](Self::unseal_once).
    pub async fn unseal_claim(
        &self,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<(String, Option<UseClaim>), InvalidRequestState> {
        let verified = self.verify_at(SystemTime::now(), binding, token, principal)?;
        let Some(store) = &self.replay else {
            return Ok((verified.state, None));
        };
        let Some(jti) = verified.jti.as_deref() else {
            return Err(InvalidRequestState::new(RejectReason::Replayed));
        };
        match store.first_use_checked(jti, verified.exp).await {
            Ok(true) => {}
            Ok(false) => return Err(InvalidRequestState::new(RejectReason::Replayed)),
            Err(_) => return Err(InvalidRequestState::new(RejectReason::GuardUnavailable)),
        }
        let claim = UseClaim::new(store.clone(), jti.to_owned(), verified.exp);
        Ok((verified.state, Some(claim)))
    }

    /// Verifies `token` for the request `binding`, run as `principal`, and returns
    /// the state it carries.
    ///
    /// # Errors
    ///
    /// [`InvalidRequestState`] for every failure: tampered, malformed, unknown key,
    /// expired, minted more than 60 s in the future, minted for another method,
    /// target, arguments, audience or principal, or a principal on one side only.
    pub fn unseal(
        &self,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<String, InvalidRequestState> {
        self.unseal_at(SystemTime::now(), binding, token, principal)
    }

    /// [`unseal`](Self::unseal) with the clock read by the caller.
    ///
    /// # Errors
    ///
    /// As [`unseal`](Self::unseal).
    pub fn unseal_at(
        &self,
        now: SystemTime,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<String, InvalidRequestState> {
        self.verify_at(now, binding, token, principal)
            .map(|verified| verified.state)
    }

    fn verify_at(
        &self,
        now: SystemTime,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
    ) -> Result<Verified, InvalidRequestState> {
        self.verify_claims(now, binding, token, principal, self.ttl_secs)
    }

    /// Opens `token` and checks its claims against `binding`, this boundary's audience,
    /// `principal` and a lifetime of at most `lifetime` seconds (and one for rounding).
    pub(crate) fn verify_claims(
        &self,
        now: SystemTime,
        binding: &RequestBinding<'_>,
        token: &str,
        principal: Option<&Principal>,
        lifetime: f64,
    ) -> Result<Verified, InvalidRequestState> {
        let expect = Expectation {
            now: epoch_secs(now),
            binding,
            audience: self.audience.as_deref(),
            principal,
            max_lifetime: lifetime + 1.0,
        };
        // The unsealed plaintext is wiped once the claims are read.
        let verified = match &self.backend {
            Backend::Ring(ring) => {
                let mut buf = Zeroizing::new(Vec::new());
                let range = ring.open_into(token, &mut buf)?;
                claims::verify(&buf[range], &expect)?
            }
            Backend::Custom(codec) => {
                let plaintext = Zeroizing::new(codec.unseal(token)?);
                claims::verify(&plaintext, &expect)?
            }
        };
        Ok(verified)
    }

    /// [`unseal`](Self::unseal) of the `requestState` value as it came in the
    /// params: `null` counts as absent (`Ok(None)`), as stripping the field is in
    /// any client's power anyway; any other non-string is rejected.
    ///
    /// # Errors
    ///
    /// As [`unseal`](Self::unseal), and [`RejectReason::NotAString`] for a
    /// number, boolean, array or object.
    pub fn unseal_json(
        &self,
        binding: &RequestBinding<'_>,
        token: &Value,
        principal: Option<&Principal>,
    ) -> Result<Option<String>, InvalidRequestState> {
        match token {
            Value::Null => Ok(None),
            Value::String(token) => self.unseal(binding, token, principal).map(Some),
            _ => Err(InvalidRequestState::new(RejectReason::NotAString)),
        }
    }
}

impl fmt::Debug for SealingBoundary {
    /// Key material never appears.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingBoundary")
            .field("codec", &self.backend)
            .field("ttl", &self.ttl())
            .field("audience", &self.audience)
            .field("bind_principal", &self.principal)
            .finish()
    }
}

/// Seconds since the Unix epoch as a float, like Python's `time.time()`.
/// A seal's `iat` (`now`, to the millisecond below) and `exp` (`lifetime` seconds later):
/// each the double nearest to a whole number of milliseconds when the lifetime is one, so
/// each is written from its integer digits, not searched for its shortest digits (a
/// Python SDK's `time.time()` has microseconds; any number is accepted when opening).
fn claim_times(now: SystemTime, lifetime: f64) -> (f64, f64) {
    let Ok(since) = now.duration_since(UNIX_EPOCH) else {
        let iat = epoch_secs(now);
        return (iat, iat + lifetime);
    };
    #[allow(clippy::cast_precision_loss)] // below 2^53 ms until the year 285,000
    let ms = since.as_millis() as f64;
    let exp_ms = ms + lifetime * 1000.0;
    let exp = if exp_ms.fract() == 0.0 {
        exp_ms / 1000.0
    } else {
        ms / 1000.0 + lifetime
    };
    (ms / 1000.0, exp)
}

fn epoch_secs(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::pywrite::write_float;

    fn text(x: f64) -> String {
        let mut out = Vec::new();
        write_float(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    /// A seal's times are whole milliseconds, written as such; a lifetime that is not a
    /// whole number of milliseconds is added as it is.
    #[test]
    fn a_seal_is_stamped_to_the_millisecond() {
        let now = UNIX_EPOCH + Duration::from_nanos(1_782_345_600_123_456_789);
        let (iat, exp) = claim_times(now, 600.0);
        assert_eq!(
            (text(iat), text(exp)),
            ("1782345600.123".into(), "1782346200.123".into())
        );
        let (iat, exp) = claim_times(now, 0.0005);
        assert_eq!(iat, 1_782_345_600.123);
        assert_eq!(exp, 1_782_345_600.123 + 0.0005);
        let (iat, exp) = claim_times(UNIX_EPOCH + Duration::from_secs(1_782_345_600), 60.5);
        assert_eq!(
            (text(iat), text(exp)),
            ("1782345600.0".into(), "1782345660.5".into())
        );
        // Before the epoch (a clock set wrong): as before, to the nanosecond.
        let (iat, exp) = claim_times(UNIX_EPOCH - Duration::from_millis(1500), 1.0);
        assert_eq!((iat, exp), (-1.5, -0.5));
    }
}
