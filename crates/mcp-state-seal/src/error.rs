//! Every error this crate returns. Inbound verification has exactly one error,
//! [`InvalidRequestState`], whose text never varies; construction and sealing
//! errors are enums with one variant per cause and a message saying what to fix.

use std::fmt;

/// JSON-RPC code of the one rejection of a bad `requestState` (`-32602`, invalid params).
pub const INVALID_REQUEST_STATE_CODE: i64 = -32602;

/// JSON-RPC message of the one rejection of a bad `requestState`. Clients and tests
/// compare it literally, so it is the same for every cause.
pub const INVALID_REQUEST_STATE_MESSAGE: &str = "Invalid or expired requestState";

/// The `data.reason` the Python SDK attaches to the rejection:
/// `{"reason":"invalid_request_state"}`.
pub const INVALID_REQUEST_STATE_DATA_REASON: &str = "invalid_request_state";

/// A `requestState` failed verification.
///
/// Whatever went wrong (tampering, expiry, a replay on another request, another
/// audience or principal, a token from an unknown key), callers see the same
/// error, whose [`Display`](fmt::Display) is exactly
/// [`INVALID_REQUEST_STATE_MESSAGE`]: telling a client *why* would help an
/// attacker probe the seal. The cause is kept for the server's own log through
/// [`reason`](Self::reason). Neither the token nor its plaintext is ever kept.
///
/// ```
/// use mcp_state_seal::{InvalidRequestState, RejectReason};
///
/// let err = InvalidRequestState::new(RejectReason::Expired);
/// assert_eq!(err.to_string(), "Invalid or expired requestState");
/// assert_eq!(err.reason(), RejectReason::Expired);
/// assert_eq!(err.reason().as_str(), "expired");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct InvalidRequestState {
    reason: RejectReason,
}

impl InvalidRequestState {
    /// A rejection for `reason`. Custom [`Codec`](crate::Codec)s build theirs with
    /// [`RejectReason::MalformedToken`], [`RejectReason::UnknownKey`] or
    /// [`RejectReason::Unauthentic`].
    pub const fn new(reason: RejectReason) -> Self {
        Self { reason }
    }

    /// Why the state was rejected: for the server's log (at debug level), never for the wire.
    pub const fn reason(&self) -> RejectReason {
        self.reason
    }

    /// The JSON-RPC error code to answer with: [`INVALID_REQUEST_STATE_CODE`].
    pub const fn code(&self) -> i64 {
        INVALID_REQUEST_STATE_CODE
    }
}

impl fmt::Display for InvalidRequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(INVALID_REQUEST_STATE_MESSAGE)
    }
}

impl fmt::Debug for InvalidRequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvalidRequestState")
            .field("reason", &self.reason)
            .finish()
    }
}

impl std::error::Error for InvalidRequestState {}

impl From<RejectReason> for InvalidRequestState {
    fn from(reason: RejectReason) -> Self {
        Self::new(reason)
    }
}

impl From<BindPrincipalError> for InvalidRequestState {
    /// A principal binding that fails while verifying denies the request.
    fn from(_: BindPrincipalError) -> Self {
        Self::new(RejectReason::PrincipalBinding)
    }
}

/// Why a `requestState` was rejected, in the order the checks run.
///
/// Only for logs: the wire always carries the same [`InvalidRequestState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// `requestState` was present but not a JSON string.
    NotAString,
    /// The token is not in the codec's format (prefix, encoding, length).
    MalformedToken,
    /// The token names a key that is not in the ring.
    UnknownKey,
    /// The authentication tag did not verify: tampered, or sealed under another key.
    Unauthentic,
    /// A custom codec failed in a way it did not classify.
    Codec,
    /// The sealed claims are not the expected JSON envelope (`v`, `iat`, `exp`, `s`).
    MalformedClaims,
    /// `iat` is more than 60 seconds in the future.
    FromTheFuture,
    /// `exp` has passed.
    Expired,
    /// The method, target or arguments differ from the request the state was minted for.
    RequestBinding,
    /// The audience claim names another service.
    Audience,
    /// The deployment's principal binding failed.
    PrincipalBinding,
    /// A principal claim is present on one side only (the token or the request).
    PrincipalDrift,
    /// The principal claim was minted for another principal.
    Principal,
    /// `exp - iat` is longer than this server's TTL (a token minted under a longer TTL).
    Lifetime,
    /// The replay guard has seen this token before, or it carries no `jti` to check.
    Replayed,
    /// The replay guard's store could not answer (Redis away or stalled, or this instance's
    /// liveness in doubt): the state is refused, failing closed, though it may be valid. Not
    /// a verdict on the token, so a server may tell the client to retry.
    GuardUnavailable,
}

impl RejectReason {
    /// A short phrase for the log line, e.g. `requestState rejected on tools/call: expired`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotAString => "non-string requestState",
            Self::MalformedToken => "malformed token",
            Self::UnknownKey => "unknown key",
            Self::Unauthentic => "authentication tag mismatch",
            Self::Codec => "codec error",
            Self::MalformedClaims => "malformed claims",
            Self::FromTheFuture => "minted in the future",
            Self::Expired => "expired",
            Self::RequestBinding => "request binding",
            Self::Audience => "audience",
            Self::PrincipalBinding => "principal binding error",
            Self::PrincipalDrift => "principal drift",
            Self::Principal => "principal",
            Self::Lifetime => "valid for longer than this server's TTL",
            Self::Replayed => "already used (replay guard)",
            Self::GuardUnavailable => "the replay guard's store cannot answer",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key ring could not be built from the configured secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// No key was given.
    Empty,
    /// `keys[index]` is shorter than 32 bytes.
    TooShort {
        /// Position of the key in the list given.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// `keys[index]` is the same key as `keys[duplicate_of]`.
    Duplicate {
        /// Position of the repeated key.
        index: usize,
        /// Position of its first occurrence.
        duplicate_of: usize,
    },
    /// No key could be derived from `keys[index]` (HKDF failed): the ring is refused
    /// rather than built with a key nobody chose.
    Derivation {
        /// Position of the key in the list given.
        index: usize,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str(
                "the request-state key ring is empty: give at least one key of 32 or more \
                 bytes of secret randomness (generate one with `openssl rand -hex 32`)",
            ),
            Self::TooShort { index, len } => write!(
                f,
                "request-state keys must be at least 32 bytes of secret randomness; keys[{index}] \
                 is {len} bytes. Generate one with `openssl rand -hex 32`"
            ),
            Self::Duplicate {
                index,
                duplicate_of,
            } => write!(
                f,
                "keys[{index}] duplicates keys[{duplicate_of}]: every key in the request-state \
                 ring must be different (remove the repeated one)"
            ),
            Self::Derivation { index } => write!(
                f,
                "no AES key could be derived from keys[{index}] (HKDF failed); the key ring was \
                 not built"
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// A [`RequestStateSecurity`](crate::RequestStateSecurity) policy cannot be bound to a server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// Shared keys or a custom codec are configured, but neither the policy nor the
    /// server names an audience.
    MissingAudience,
    /// The time-to-live is zero.
    ZeroTtl,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingAudience => f.write_str(
                "request-state security is configured with shared keys (or a custom codec) but \
                 this server has no name. Sealed requestState carries the server name as its \
                 audience, so that state minted by another service holding the same keys is \
                 rejected; without a name every such server would accept the others' state. \
                 Name the server (McpServer::new(\"my-service\")) or set an audience \
                 (RequestStateSecurity::keys(..)?.audience(\"my-service\"))",
            ),
            Self::ZeroTtl => f.write_str(
                "the request-state time-to-live must be greater than zero \
                 (the default is 600 seconds)",
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A `requestState` could not be sealed. The server answers `-32603 "Internal error"`
/// and logs this error; nothing of it goes to the wire.
#[derive(Debug)]
#[non_exhaustive]
pub enum SealError {
    /// The operating system's random number generator failed.
    Random,
    /// A custom codec refused to seal; the text is the codec's own.
    Codec(String),
    /// The deployment's principal binding failed.
    PrincipalBinding(BindPrincipalError),
    /// A single-use handle was asked of a policy without a replay guard, which is what
    /// remembers that it was used.
    SingleUseWithoutReplayGuard,
}

impl SealError {
    /// A codec failure with a reason for the log. Never put the plaintext in it.
    pub fn codec(reason: impl Into<String>) -> Self {
        Self::Codec(reason.into())
    }
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random => f.write_str(
                "could not seal requestState: the operating system's random number generator failed",
            ),
            Self::Codec(reason) => {
                write!(f, "could not seal requestState: the codec failed: {reason}")
            }
            Self::PrincipalBinding(err) => write!(f, "could not seal requestState: {err}"),
            Self::SingleUseWithoutReplayGuard => f.write_str(
                "could not seal a single-use handle: the policy has no replay guard to remember \
                 its use (RequestStateSecurity::replay_guard)",
            ),
        }
    }
}

impl std::error::Error for SealError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::PrincipalBinding(err) => Some(err),
            _ => None,
        }
    }
}

impl From<BindPrincipalError> for SealError {
    fn from(err: BindPrincipalError) -> Self {
        Self::PrincipalBinding(err)
    }
}

/// The deployment's principal binding could not tell who is calling.
///
/// Returned by a [`bind_principal`](crate::RequestStateSecurity::bind_principal) hook.
/// Both directions fail closed: sealing gives [`SealError::PrincipalBinding`],
/// verifying gives [`InvalidRequestState`] with [`RejectReason::PrincipalBinding`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindPrincipalError {
    reason: String,
}

impl BindPrincipalError {
    /// A failure with a reason for the log.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// The reason given by the hook.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for BindPrincipalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the principal binding failed: {}", self.reason)
    }
}

impl std::error::Error for BindPrincipalError {}

/// JSON text given for canonicalization is not valid JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonSyntaxError {
    offset: usize,
    kind: JsonSyntaxErrorKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JsonSyntaxErrorKind {
    Unexpected,
    UnexpectedEnd,
    TrailingCharacters,
    TooDeep,
}

impl JsonSyntaxError {
    pub(crate) const fn new(offset: usize, kind: JsonSyntaxErrorKind) -> Self {
        Self { offset, kind }
    }

    /// Byte offset in the text where the problem was found.
    pub const fn offset(&self) -> usize {
        self.offset
    }
}

impl fmt::Display for JsonSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            JsonSyntaxErrorKind::Unexpected => "unexpected character",
            JsonSyntaxErrorKind::UnexpectedEnd => "unexpected end of input",
            JsonSyntaxErrorKind::TrailingCharacters => "trailing characters after the value",
            JsonSyntaxErrorKind::TooDeep => "nesting deeper than 256 levels",
        };
        write!(f, "invalid JSON at byte {}: {what}", self.offset)
    }
}

impl std::error::Error for JsonSyntaxError {}
