//! Compact JWS signing with ring, for RFC 7523 client assertions and RFC 9449 DPoP proofs:
//! ES256 (P-256, fixed-length `r || s` signatures) and RS256 (RSASSA-PKCS1-v1_5 with SHA-256).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{Value, json};

use mcp_state_seal::jwk_thumbprint;

use super::OAuthError;

/// A private key that signs JWTs. Its `Debug` output names the algorithm only.
pub struct SigningKey {
    /// Boxed: ring's key pairs are large, and a grant holding one should not be.
    key: Box<Key>,
    key_id: Option<String>,
}

enum Key {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg())
            .field("key_id", &self.key_id)
            .field("private_key", &"<redacted>")
            .finish()
    }
}

fn key_error(why: impl fmt::Display) -> OAuthError {
    OAuthError::Registration(format!("unusable signing key: {why}"))
}

impl SigningKey {
    /// A key from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`) for `alg`: `ES256`
    /// (a P-256 key) or `RS256` (an RSA key of 2048 bits or more).
    pub fn from_pkcs8_pem(pem: &str, alg: &str) -> Result<Self, OAuthError> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("-----"))
            .collect();
        let der = STANDARD
            .decode(body.as_bytes())
            .map_err(|e| key_error(format!("the PEM body is not base64 ({e})")))?;
        Self::from_pkcs8_der(&der, alg)
    }

    /// A key from PKCS#8 DER bytes for `alg` (`ES256` or `RS256`).
    pub fn from_pkcs8_der(der: &[u8], alg: &str) -> Result<Self, OAuthError> {
        let key = match alg {
            "ES256" => Key::Es256(
                EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    der,
                    &SystemRandom::new(),
                )
                .map_err(|e| key_error(format!("not a P-256 PKCS#8 key ({e})")))?,
            ),
            "RS256" => Key::Rs256(
                RsaKeyPair::from_pkcs8(der)
                    .map_err(|e| key_error(format!("not an RSA PKCS#8 key ({e})")))?,
            ),
            other => {
                return Err(key_error(format!(
                    "algorithm {other} is not supported (ES256 or RS256)"
                )));
            }
        };
        Ok(SigningKey {
            key: Box::new(key),
            key_id: None,
        })
    }

    /// A fresh P-256 key (for DPoP proofs).
    pub fn generate_es256() -> Result<Self, OAuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| key_error("the system random generator failed"))?;
        Self::from_pkcs8_der(pkcs8.as_ref(), "ES256")
    }

    /// Sets the `kid` header of every JWT this key signs.
    pub fn with_key_id(mut self, key_id: impl Into<String>) -> Self {
        self.key_id = Some(key_id.into());
        self
    }

    /// `ES256` or `RS256`.
    pub fn alg(&self) -> &'static str {
        match *self.key {
            Key::Es256(_) => "ES256",
            Key::Rs256(_) => "RS256",
        }
    }

    /// The public key as a JWK (RFC 7517), members in RFC 7638 thumbprint order.
    pub fn public_jwk(&self) -> Value {
        match &*self.key {
            Key::Es256(pair) => {
                // An uncompressed point: 0x04 || x || y.
                let point = pair.public_key().as_ref();
                json!({
                    "crv": "P-256",
                    "kty": "EC",
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
                })
            }
            Key::Rs256(pair) => {
                use ring::rsa::PublicKeyComponents;
                let components: PublicKeyComponents<Vec<u8>> = pair.public().into();
                json!({
                    "e": URL_SAFE_NO_PAD.encode(&components.e),
                    "kty": "RSA",
                    "n": URL_SAFE_NO_PAD.encode(&components.n),
                })
            }
        }
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key, base64url (DPoP's `jkt`).
    pub fn thumbprint(&self) -> String {
        // Both key types' public JWKs hold every member RFC 7638 requires, as strings.
        jwk_thumbprint(&self.public_jwk()).expect("an ES256 or RS256 public JWK has a thumbprint")
    }

    /// Signs `claims` with the header `{"alg", "typ", "kid"?}` plus `extra_header`'s members.
    pub fn sign(
        &self,
        typ: &str,
        extra_header: &[(&str, Value)],
        claims: &Value,
    ) -> Result<String, OAuthError> {
        let mut header = serde_json::Map::new();
        header.insert("alg".into(), json!(self.alg()));
        header.insert("typ".into(), json!(typ));
        if let Some(kid) = &self.key_id {
            header.insert("kid".into(), json!(kid));
        }
        for (name, value) in extra_header {
            header.insert((*name).to_owned(), value.clone());
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(Value::Object(header).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match &*self.key {
            Key::Es256(pair) => pair
                .sign(&rng, input.as_bytes())
                .map_err(|_| key_error("ES256 signing failed"))?
                .as_ref()
                .to_vec(),
            Key::Rs256(pair) => {
                let mut out = vec![0u8; pair.public().modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut out,
                )
                .map_err(|_| key_error("RS256 signing failed"))?;
                out
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The header and claims of a compact JWT, decoded without checking the signature.
#[cfg(test)]
pub(crate) fn decode_unverified(jwt: &str) -> Option<(Value, Value)> {
    let mut parts = jwt.split('.');
    let header = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
    let claims = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
    parts.next()?;
    Some((
        serde_json::from_slice(&header).ok()?,
        serde_json::from_slice(&claims).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::UnparsedPublicKey;

    fn verify(jwt: &str, algorithm: &'static dyn signature::VerificationAlgorithm, key: &[u8]) {
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        UnparsedPublicKey::new(algorithm, key)
            .verify(input.as_bytes(), &sig)
            .expect("the signature verifies");
    }

    #[test]
    fn es256_jwts_verify_with_the_public_key_and_carry_the_header() {
        let key = SigningKey::generate_es256().unwrap().with_key_id("k1");
        let jwt = key
            .sign(
                "dpop+jwt",
                &[("jwk", key.public_jwk())],
                &json!({"jti": "x"}),
            )
            .unwrap();
        let (header, claims) = decode_unverified(&jwt).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["kid"], "k1");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(claims, json!({"jti": "x"}));
        let Key::Es256(pair) = &*key.key else {
            unreachable!()
        };
        verify(
            &jwt,
            &signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref(),
        );
    }

    #[test]
    fn pem_keys_load_and_bad_ones_are_refused_with_a_reason() {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &SystemRandom::new(),
        )
        .unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let key = SigningKey::from_pkcs8_pem(&pem, "ES256").unwrap();
        assert_eq!(key.alg(), "ES256");
        let err = SigningKey::from_pkcs8_pem(&pem, "RS256").unwrap_err();
        assert!(err.to_string().contains("not an RSA PKCS#8 key"), "{err}");
        let err = SigningKey::from_pkcs8_pem(&pem, "HS256").unwrap_err();
        assert!(err.to_string().contains("HS256 is not supported"), "{err}");
        let shown = format!("{key:?}");
        assert!(shown.contains("<redacted>") && !shown.contains(&pem[30..60]));
    }
}
