//! Sealing of the Model Context Protocol `requestState`.
//!
//! Package `keel-mcp-state-seal` on crates.io: `cargo add keel-mcp-state-seal`,
//! then `use mcp_state_seal::…`.
//!
//! From protocol revision 2026-07-28 a server that needs more input answers
//! `tools/call`, `prompts/get` or `resources/read` with
//! `{"resultType":"input_required", …, "requestState":"…"}`, and the client echoes
//! `requestState` back on its retry. The state therefore comes back as client
//! input: this crate seals it (authenticated encryption) and binds it to a time
//! window, the original request, the server's audience and the authenticated
//! principal, so a server only ever reads state it minted itself, for this very
//! request.
//!
//! * [`RequestStateSecurity`] is the policy: keys (or a custom [`Codec`]), TTL,
//!   audience and principal binding. [`bind`](RequestStateSecurity::bind) fixes it
//!   for one server and returns the [`SealingBoundary`] that seals and unseals.
//! * [`KeyRing`] is the built-in codec: AES-256-GCM with HKDF-derived keys and
//!   rotation, in the token format of the Python SDK (`mcp` 2.3.0), so a mixed
//!   fleet of Python and Rust instances sharing keys accepts each other's state.
//! * [`RequestBinding`] and [`ArgsDigest`] identify the request; [`Principal`]
//!   the caller; [`QuestionDigest`] pins a recorded answer to the exact question.
//! * Every verification failure is the same [`InvalidRequestState`], displayed as
//!   `Invalid or expired requestState` (JSON-RPC `-32602`); its
//!   [`reason`](InvalidRequestState::reason) is for the server's log only.
//!
//! ```
//! use mcp_state_seal::{RequestBinding, RequestStateSecurity, INVALID_REQUEST_STATE_MESSAGE};
//! use serde_json::json;
//!
//! // One server, default policy: a process-local key, the server name as audience.
//! let boundary = RequestStateSecurity::ephemeral().bind(Some("files"))?;
//!
//! // Round 1: the handler asks a question and keeps its progress in a state string.
//! let args = json!({"path": "/tmp/x"});
//! let binding = RequestBinding::new("tools/call", "delete_folder", Some(&args));
//! let token = boundary.seal(&binding, "asked-confirmation", None)?;
//! assert!(token.starts_with("v1."));
//!
//! // Round 2: the client echoes the token with the same request.
//! assert_eq!(boundary.unseal(&binding, &token, None)?, "asked-confirmation");
//!
//! // A token replayed with other arguments is refused, with the one fixed message.
//! let other_args = json!({"path": "/"});
//! let replay = RequestBinding::new("tools/call", "delete_folder", Some(&other_args));
//! let err = boundary.unseal(&replay, &token, None).unwrap_err();
//! assert_eq!(err.to_string(), INVALID_REQUEST_STATE_MESSAGE);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod b64url;
#[macro_use]
mod canonical;
mod binding;
mod boundary;
mod claims;
mod codec;
mod error;
mod handle;
mod jsontext;
mod jwk;
mod keyring;
mod policy;
mod principal;
mod pyjson;
mod pywrite;
mod question;
mod replay;
mod scan;

pub use binding::{
    CARRIER_METHODS, PROMPTS_GET, RESOURCES_READ, RequestBinding, TOOLS_CALL, is_carrier_method,
};
pub use boundary::SealingBoundary;
pub use canonical::{ArgsDigest, canonical_json, canonical_json_text};
pub use codec::Codec;
pub use error::{
    BindPrincipalError, ConfigError, INVALID_REQUEST_STATE_CODE, INVALID_REQUEST_STATE_DATA_REASON,
    INVALID_REQUEST_STATE_MESSAGE, InvalidRequestState, JsonSyntaxError, KeyError, RejectReason,
    SealError,
};
pub use handle::{
    DEFAULT_HANDLE_TTL, HANDLE_PURPOSE, HandleSpec, INVALID_HANDLE_MESSAGE, InvalidHandle,
};
pub use jwk::jwk_thumbprint;
pub use keyring::KeyRing;
pub use policy::{DEFAULT_TTL, RequestStateSecurity};
pub use principal::{Principal, PrincipalSource};
pub use pyjson::compact_json;
pub use question::QuestionDigest;
pub use replay::{DEFAULT_SEEN_CAPACITY, MemorySeenStore, SeenStore, UseClaim};

/// Fills `bytes` from the operating system's secure random source (for callers that need
/// unguessable identifiers, such as session ids, without a dependency of their own).
pub fn random_bytes(bytes: &mut [u8]) -> Result<(), SealError> {
    use ring::rand::SecureRandom;
    ring::rand::SystemRandom::new()
        .fill(bytes)
        .map_err(|_| SealError::Random)
}

/// A fresh random id: 128 bits from the system's secure generator, as 32 lower-case hex
/// digits. The one way the workspace mints ids a peer must not guess (session ids, task ids,
/// elicitation ids, token ids).
pub fn random_hex_id() -> Result<String, SealError> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes)?;
    let mut id = String::with_capacity(32);
    for b in bytes {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_ids_are_32_hex_digits_and_differ() {
        let (a, b) = (
            super::random_hex_id().unwrap(),
            super::random_hex_id().unwrap(),
        );
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
            "{a}"
        );
        assert_ne!(a, b);
    }
}
