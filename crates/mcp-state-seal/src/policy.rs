//! The sealing policy a deployment configures: which keys (or codec), how long a
//! state stays valid, which audience it is minted for, and how the principal is
//! found. Binding it to a server yields the [`SealingBoundary`] that does the work.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ring::rand::SystemRandom;

use crate::boundary::{Backend, SealingBoundary};
use crate::codec::Codec;
use crate::error::{BindPrincipalError, ConfigError, KeyError};
use crate::keyring::KeyRing;
use crate::principal::{Principal, PrincipalBinding, PrincipalSource};
use crate::replay::SeenStore;

/// How long a sealed state stays valid unless configured: ten minutes of think
/// time per round.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// How `requestState` is protected: codec, time-to-live, audience, principal.
///
/// ```
/// use std::time::Duration;
/// use mcp_state_seal::{Principal, RequestStateSecurity, RequestBinding};
///
/// // Every instance of the fleet shares the keys; keys[0] seals, all verify.
/// let security = RequestStateSecurity::keys([
///     "new-secret-of-at-least-32-bytes-0000",
///     "old-secret-of-at-least-32-bytes-1111",
/// ])?
/// .ttl(Duration::from_secs(300))
/// .audience("fleet");
///
/// // The server layer binds the policy, passing its own name as the default audience.
/// let boundary = security.bind(Some("orders"))?;
/// assert_eq!(boundary.audience(), Some("fleet"));
///
/// let binding = RequestBinding::new("tools/call", "provision", None);
/// let alice = Principal::new("client-a").subject("alice");
/// let token = boundary.seal(&binding, "step-1", Some(&alice))?;
/// assert_eq!(boundary.unseal(&binding, &token, Some(&alice))?, "step-1");
/// assert!(boundary.unseal(&binding, &token, None).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RequestStateSecurity {
    backend: Backend,
    /// Shared keys or a custom codec: state may come from other services, so an
    /// audience is required.
    shared: bool,
    ttl: Duration,
    audience: AudienceChoice,
    principal: PrincipalBinding,
    replay: Option<Arc<dyn SeenStore>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum AudienceChoice {
    /// The server's name, passed to [`RequestStateSecurity::bind`].
    ServerName,
    Named(String),
    /// Deliberately none: tokens carry no `aud` claim.
    Unbound,
}

impl RequestStateSecurity {
    /// The built-in AES-256-GCM codec over a ring of shared secrets, the sealing
    /// one first (see [`KeyRing::new`]).
    ///
    /// # Errors
    ///
    /// [`KeyError`] for an empty ring, a secret under 32 bytes, or a duplicate.
    pub fn keys<I, K>(secrets: I) -> Result<Self, KeyError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        Ok(Self::with_backend(
            Backend::Ring(Arc::new(KeyRing::new(secrets)?)),
            true,
        ))
    }

    /// A fresh random key held only by this process: the default. Right for a
    /// single process (stdio, one HTTP worker); state minted before a restart or
    /// by another instance is rejected, so a fleet uses [`keys`](Self::keys).
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails.
    pub fn ephemeral() -> Self {
        Self::with_backend(Backend::Ring(Arc::new(KeyRing::ephemeral())), false)
    }

    /// Bring-your-own crypto (a KMS, an HSM, another format). The claims are still
    /// stamped and checked by the policy.
    pub fn codec(codec: impl Codec + 'static) -> Self {
        Self::with_backend(Backend::Custom(Arc::new(codec)), true)
    }

    fn with_backend(backend: Backend, shared: bool) -> Self {
        Self {
            backend,
            shared,
            ttl: DEFAULT_TTL,
            audience: AudienceChoice::ServerName,
            principal: PrincipalBinding::default(),
            replay: None,
        }
    }

    /// Turns on the replay guard: every sealed state carries a unique `jti` claim, and
    /// `store` accepts each one once, so a captured state (the final round of a confirmed
    /// `deploy`, say) cannot be sent again within its TTL. Off by default: tokens then
    /// carry no `jti` and stay byte-compatible with the Python SDK's; with the guard on,
    /// states minted without a `jti` (by Python instances, or before the switch) are
    /// refused. A fleet shares one store (see [`SeenStore`]).
    #[must_use]
    pub fn replay_guard(mut self, store: impl SeenStore + 'static) -> Self {
        self.replay = Some(Arc::new(store));
        self
    }

    /// How long a sealed state stays valid after each round: it limits the think
    /// time of one round, since every round re-seals. Must be above zero
    /// ([`bind`](Self::bind) fails otherwise); default [`DEFAULT_TTL`].
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The audience stamped into and required from every token, instead of the
    /// server's name. Services sharing keys must have different audiences.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = AudienceChoice::Named(audience.into());
        self
    }

    /// Mints tokens without an audience claim, whatever the server is called
    /// (interop with a Python low-level server bound with `default_audience=None`).
    /// Any service sharing the keys then accepts these tokens.
    #[must_use]
    pub fn without_audience(mut self) -> Self {
        self.audience = AudienceChoice::Unbound;
        self
    }

    /// Derives the principal from the request, for deployments whose
    /// authentication ends in front of the server. The default is the principal
    /// the server authenticated ([`PrincipalSource::authenticated`]); returning
    /// `Ok(None)` leaves the state unbound to any principal, an error fails the
    /// request closed.
    ///
    /// ```
    /// use mcp_state_seal::{BindPrincipalError, Principal, PrincipalSource, RequestStateSecurity};
    ///
    /// /// What this deployment's server layer attaches as the request context.
    /// struct GatewayHeaders { user: Option<String> }
    ///
    /// let security = RequestStateSecurity::ephemeral().bind_principal(|source: &PrincipalSource<'_>| {
    ///     let headers = source
    ///         .context_as::<GatewayHeaders>()
    ///         .ok_or_else(|| BindPrincipalError::new("no gateway headers"))?;
    ///     Ok(headers.user.as_ref().map(|u| Principal::new("gateway").subject(u.clone())))
    /// });
    /// let boundary = security.bind(Some("orders"))?;
    ///
    /// let headers = GatewayHeaders { user: Some("alice".into()) };
    /// let source = PrincipalSource::new("tools/call", None).with_context(&headers);
    /// assert_eq!(boundary.principal(&source)?, Some(Principal::new("gateway").subject("alice")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn bind_principal<F>(mut self, hook: F) -> Self
    where
        F: Fn(&PrincipalSource<'_>) -> Result<Option<Principal>, BindPrincipalError>
            + Send
            + Sync
            + 'static,
    {
        self.principal = PrincipalBinding::Custom(Arc::new(hook));
        self
    }

    /// Fixes the policy for one server. `default_audience` is the server's name,
    /// used when no [`audience`](Self::audience) was set; `None` or `""` for an
    /// unnamed server.
    ///
    /// # Errors
    ///
    /// [`ConfigError::MissingAudience`] when shared keys or a codec are configured
    /// and neither the policy nor the server names an audience (state minted by
    /// any other service with the same keys would be accepted);
    /// [`ConfigError::ZeroTtl`] for a zero time-to-live.
    pub fn bind(&self, default_audience: Option<&str>) -> Result<SealingBoundary, ConfigError> {
        if self.ttl.is_zero() {
            return Err(ConfigError::ZeroTtl);
        }
        let server_name = default_audience.filter(|name| !name.is_empty());
        let audience = match &self.audience {
            AudienceChoice::Named(name) => Some(name.clone()),
            AudienceChoice::Unbound => None,
            AudienceChoice::ServerName => match server_name {
                Some(name) => Some(name.to_owned()),
                None if self.shared => return Err(ConfigError::MissingAudience),
                // A process-local key cannot be shared, so there is nobody to confuse.
                None => None,
            },
        };
        Ok(SealingBoundary {
            backend: self.backend.clone(),
            ttl: self.ttl,
            ttl_secs: self.ttl.as_secs_f64(),
            audience,
            principal: self.principal.clone(),
            rng: SystemRandom::new(),
            replay: self.replay.clone(),
        })
    }
}

impl Default for RequestStateSecurity {
    /// [`RequestStateSecurity::ephemeral`].
    fn default() -> Self {
        Self::ephemeral()
    }
}

impl fmt::Debug for RequestStateSecurity {
    /// Key material never appears.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateSecurity")
            .field("codec", &self.backend)
            .field("shared", &self.shared)
            .field("ttl", &self.ttl)
            .field("audience", &self.audience)
            .field("bind_principal", &self.principal)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn shared_keys_need_an_audience() {
        let security = RequestStateSecurity::keys([KEY]).unwrap();
        assert_eq!(
            security.bind(None).unwrap_err(),
            ConfigError::MissingAudience
        );
        assert_eq!(
            security.bind(Some("")).unwrap_err(),
            ConfigError::MissingAudience
        );
        assert_eq!(
            security.bind(Some("orders")).unwrap().audience(),
            Some("orders")
        );
        let named = security.clone().audience("fleet");
        assert_eq!(named.bind(None).unwrap().audience(), Some("fleet"));
        assert_eq!(
            named.bind(Some("orders")).unwrap().audience(),
            Some("fleet")
        );
        assert_eq!(
            security
                .clone()
                .without_audience()
                .bind(Some("x"))
                .unwrap()
                .audience(),
            None
        );
    }

    #[test]
    fn ephemeral_keys_need_no_audience() {
        assert_eq!(
            RequestStateSecurity::ephemeral()
                .bind(None)
                .unwrap()
                .audience(),
            None
        );
        assert_eq!(
            RequestStateSecurity::default()
                .bind(Some("files"))
                .unwrap()
                .audience(),
            Some("files")
        );
    }

    #[test]
    fn zero_ttl_is_refused() {
        let security = RequestStateSecurity::ephemeral().ttl(Duration::ZERO);
        assert_eq!(security.bind(Some("x")).unwrap_err(), ConfigError::ZeroTtl);
    }

    #[test]
    fn error_messages_say_what_to_do() {
        let missing = ConfigError::MissingAudience.to_string();
        assert!(missing.contains("Name the server"), "{missing}");
        assert!(missing.contains(".audience("), "{missing}");
    }

    #[test]
    fn debug_never_shows_secrets() {
        let security = RequestStateSecurity::keys([KEY]).unwrap().audience("fleet");
        let text = format!("{security:?}");
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("a014f40b"), "{text}");
        let boundary = security.bind(None).unwrap();
        let text = format!("{boundary:?}");
        assert!(!text.contains(KEY), "{text}");
    }
}
