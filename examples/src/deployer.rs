//! Deployer: request state sealed by a codec of your own.
//!
//! The seed documents' KMS example: a data key unwrapped once at start (a random stand-in
//! here), AES-256-GCM per token, tokens `kms1.` + lowercase hex(nonce ‖ ciphertext ‖ tag), the
//! prefix as associated data. Only the exact canonical hex is accepted; any other token is an
//! invalid request state, which the client sees as `-32602 Invalid or expired requestState`.

use mcp::seal::{Codec, InvalidRequestState, RejectReason, SealError};
use mcp::{Accepted, McpServer, RequestStateSecurity, Resolution};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use schemars::JsonSchema;
use serde::Deserialize;

/// The token prefix, also the associated data of every seal.
pub const PREFIX: &str = "kms1.";

const NONCE: usize = 12;
const TAG: usize = 16;

/// Envelope encryption with one data key.
pub struct EnvelopeCodec {
    key: LessSafeKey,
}

impl EnvelopeCodec {
    /// Wraps a 32-byte data key (in production: the key your KMS unwrapped at start).
    pub fn new(data_key: [u8; 32]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, &data_key).expect("a 32-byte key fits AES-256");
        EnvelopeCodec {
            key: LessSafeKey::new(key),
        }
    }

    /// A codec over a fresh random data key: the stand-in for a KMS unwrap.
    pub fn random() -> Result<Self, SealError> {
        let mut data_key = [0u8; 32];
        mcp::seal::random_bytes(&mut data_key)?;
        Ok(Self::new(data_key))
    }
}

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push(DIGITS[usize::from(b >> 4)] as char);
        hex.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    hex
}

/// Lowercase hex only: uppercase digits would be a second spelling of the same token.
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    fn digit(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.as_bytes()
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

impl Codec for EnvelopeCodec {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE];
        mcp::seal::random_bytes(&mut nonce)?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(plaintext);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(PREFIX),
                &mut sealed[NONCE..],
            )
            .map_err(|_| SealError::codec("AES-256-GCM sealing failed"))?;
        sealed.extend_from_slice(tag.as_ref());
        Ok(format!("{PREFIX}{}", to_hex(&sealed)))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let malformed = || InvalidRequestState::new(RejectReason::MalformedToken);
        let bytes = token
            .strip_prefix(PREFIX)
            .and_then(from_hex)
            .filter(|b| b.len() >= NONCE + TAG)
            .ok_or_else(malformed)?;
        let (nonce, sealed) = bytes.split_at(NONCE);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| malformed())?;
        let mut sealed = sealed.to_vec();
        let plaintext = self
            .key
            .open_in_place(nonce, Aad::from(PREFIX), &mut sealed)
            .map_err(|_| InvalidRequestState::new(RejectReason::Unauthentic))?;
        Ok(plaintext.to_vec())
    }
}

/// The answer to "Deploy to production?".
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// Go ahead with the deployment.
    pub ok: bool,
}

/// Always asks before deploying.
#[mcp::resolver]
pub async fn confirm_deploy(service: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Deploy {service} to production?"))
}

/// Deploy a service to production, after confirmation.
#[mcp::tool]
pub async fn deploy(
    /// The service to deploy.
    service: String,
    #[resolve(confirm_deploy)] confirm: Accepted<Confirm>,
) -> String {
    if confirm.0.ok {
        format!("Deployed {service}.")
    } else {
        format!("{service} was not deployed.")
    }
}

/// The Deployer server, its request state sealed by `codec`.
pub fn server(codec: EnvelopeCodec) -> McpServer {
    McpServer::new("Deployer")
        .tool(deploy)
        .request_state_security(RequestStateSecurity::codec(codec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_opens() {
        let codec = EnvelopeCodec::new([7; 32]);
        let token = codec.seal(b"state").unwrap();
        assert!(token.starts_with(PREFIX));
        assert_eq!(token.len(), PREFIX.len() + 2 * (NONCE + 5 + TAG));
        assert_eq!(codec.unseal(&token).unwrap(), b"state");
        let upper = format!("{PREFIX}{}", token[PREFIX.len()..].to_uppercase());
        assert!(codec.unseal(&upper).is_err());
        let mut flipped = token.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(
            codec
                .unseal(std::str::from_utf8(&flipped).unwrap())
                .is_err()
        );
        assert!(codec.unseal(&token[1..]).is_err());
        assert!(EnvelopeCodec::new([8; 32]).unseal(&token).is_err());
    }
}
