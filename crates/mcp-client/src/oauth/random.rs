//! Random tokens for the OAuth flows: a PKCE verifier, a `state`, a DPoP proof's `jti`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::error::OAuthError;

/// `bytes` random bytes, base64url: a PKCE verifier (32 bytes, 43 characters) or a state.
pub(super) fn random_token(bytes: usize) -> Result<String, OAuthError> {
    use ring::rand::SecureRandom;
    let mut buffer = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| OAuthError::Authorization("the system random generator failed".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}
