//! The built-in codec: AES-256-GCM under keys derived with HKDF-SHA256, in the
//! Python SDK's token format, so Rust and Python servers sharing keys read each
//! other's state. `keys[0]` seals; every key in the ring unseals (rotation).

use std::fmt;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{digest, hkdf};
use zeroize::{Zeroize, Zeroizing};

use crate::b64url;
use crate::codec::Codec;
use crate::error::{InvalidRequestState, KeyError, RejectReason, SealError};

/// Every token starts with this; it is also the start of the associated data, so
/// a token cannot be passed off as another format version.
pub(crate) const TOKEN_PREFIX: &str = "v1.";
const HKDF_INFO: &[u8] = b"mcp/request-state/v1/aes-256-gcm";
const KID_LABEL: &[u8] = b"mcp/request-state/v1/kid:";
const KID_LEN: usize = 4;
const TAG_LEN: usize = 16;
/// kid and nonce, in front of the ciphertext.
pub(crate) const HEADER_LEN: usize = KID_LEN + NONCE_LEN;
const MIN_SECRET_LEN: usize = 32;

/// A ring of AES-256-GCM keys: the built-in [`Codec`].
///
/// Tokens are `v1.` followed by unpadded base64url of
/// `kid[4] ‖ nonce[12] ‖ ciphertext ‖ tag[16]`, where
///
/// * the AES key is `HKDF-SHA256(ikm = secret, salt = none, info = "mcp/request-state/v1/aes-256-gcm", L = 32)`,
/// * `kid` is `SHA-256("mcp/request-state/v1/kid:" ‖ aes_key)[..4]`, a public
///   fingerprint that picks the key when unsealing,
/// * the nonce is fresh randomness for every seal,
/// * the associated data is `b"v1." ‖ kid`.
///
/// This is byte for byte the format of the Python SDK's `AESGCMRequestStateCodec`.
/// Key derivation runs once, when the ring is built.
///
/// ```
/// use mcp_state_seal::{Codec, KeyRing};
///
/// let ring = KeyRing::new(["0123456789abcdef0123456789abcdef"])?;
/// let token = ring.seal(b"hello")?;
/// assert!(token.starts_with("v1.oBT0C")); // the kid a014f40b fills the first characters
/// assert_eq!(ring.unseal(&token)?, b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyRing {
    /// `slots[0]` seals.
    slots: Vec<Slot>,
    rng: SystemRandom,
}

struct Slot {
    kid: [u8; KID_LEN],
    key: LessSafeKey,
}

impl KeyRing {
    /// Builds a ring from secrets, the sealing one first.
    ///
    /// Each secret is raw bytes or text (used as its UTF-8 bytes) of at least 32
    /// bytes of secret randomness, e.g. the output of `openssl rand -hex 32`.
    /// Rotation without downtime, each step rolled out everywhere before the next:
    /// `[old, new]`, then `[new, old]`, then `[new]` one TTL later.
    ///
    /// # Errors
    ///
    /// [`KeyError::Empty`] for no secrets, [`KeyError::TooShort`] for a secret under
    /// 32 bytes, [`KeyError::Duplicate`] for a secret given twice.
    pub fn new<I, K>(secrets: I) -> Result<Self, KeyError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        let mut slots: Vec<Slot> = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_LEN {
                return Err(KeyError::TooShort {
                    index,
                    len: secret.len(),
                });
            }
            let aes_key = derive_aes_key(secret).ok_or(KeyError::Derivation { index })?;
            let kid = kid_of(&aes_key);
            // Keys are told apart by kid, as in the Python SDK: unsealing looks keys
            // up by kid, so two secrets with one kid could not share a ring anyway.
            if let Some(duplicate_of) = slots.iter().position(|s| s.kid == kid) {
                return Err(KeyError::Duplicate {
                    index,
                    duplicate_of,
                });
            }
            let key = UnboundKey::new(&AES_256_GCM, &aes_key[..])
                .expect("a 32-byte key is always valid for AES-256-GCM");
            drop(aes_key);
            slots.push(Slot {
                kid,
                key: LessSafeKey::new(key),
            });
        }
        if slots.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Self {
            slots,
            rng: SystemRandom::new(),
        })
    }

    /// A ring of one fresh random 32-byte key, known only to this process: state
    /// sealed before a restart, or by another process, does not verify.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails.
    pub fn ephemeral() -> Self {
        let mut secret = [0u8; 32];
        SystemRandom::new()
            .fill(&mut secret)
            .expect("the operating system's random number generator failed");
        let ring = Self::new([secret]);
        secret.zeroize();
        // One 32-byte secret can be neither short, duplicate nor missing.
        ring.expect("a single 32-byte key is a valid ring")
    }

    /// The key fingerprints in ring order; the first one seals. They are public:
    /// every token carries one in the clear.
    pub fn kids(&self) -> impl ExactSizeIterator<Item = [u8; 4]> + '_ {
        self.slots.iter().map(|s| s.kid)
    }

    /// Whether `token` names the key that seals now (the ring's first) in its header: `false`
    /// for a token of another key of the ring, of no key of it, or not a token at all. Reads
    /// the clear header only; nothing is verified.
    pub(crate) fn sealed_with_first(&self, token: &str) -> bool {
        // The header's first 6 bytes are the first 8 characters: the kid and 2 nonce bytes.
        let Some(head) = token
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|body| body.get(..8))
            .and_then(b64url::decode_canonical_small::<6>)
        else {
            return false;
        };
        head[..KID_LEN] == self.slots[0].kid
    }

    /// Seals a plaintext that `write` appends to the buffer it is given: the
    /// buffer already holds the token header, and is encrypted in place.
    pub(crate) fn seal_with(
        &self,
        plaintext_len_hint: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<String, SealError> {
        let slot = &self.slots[0];
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| SealError::Random)?;
        let mut buf = Vec::with_capacity(HEADER_LEN + plaintext_len_hint + TAG_LEN);
        buf.extend_from_slice(&slot.kid);
        buf.extend_from_slice(&nonce);
        write(&mut buf);
        let tag = slot
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&slot.kid)),
                &mut buf[HEADER_LEN..],
            )
            .map_err(|_| SealError::codec("the plaintext is too long for AES-GCM"))?;
        buf.extend_from_slice(tag.as_ref());
        let mut token = String::with_capacity(TOKEN_PREFIX.len() + buf.len().div_ceil(3) * 4);
        token.push_str(TOKEN_PREFIX);
        b64url::encode_into(&buf, &mut token);
        Ok(token)
    }

    /// Decodes and decrypts `token` into `buf`, returning the range of `buf` that
    /// holds the plaintext.
    pub(crate) fn open_into(
        &self,
        token: &str,
        buf: &mut Vec<u8>,
    ) -> Result<std::ops::Range<usize>, RejectReason> {
        let body = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or(RejectReason::MalformedToken)?;
        b64url::decode_canonical(body, buf).map_err(|()| RejectReason::MalformedToken)?;
        if buf.len() < HEADER_LEN + TAG_LEN {
            return Err(RejectReason::MalformedToken);
        }
        let mut kid = [0u8; KID_LEN];
        kid.copy_from_slice(&buf[..KID_LEN]);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&buf[KID_LEN..HEADER_LEN]);
        let slot = self
            .slots
            .iter()
            .find(|s| s.kid == kid)
            .ok_or(RejectReason::UnknownKey)?;
        let plaintext_len = slot
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&kid)),
                &mut buf[HEADER_LEN..],
            )
            .map_err(|_| RejectReason::Unauthentic)?
            .len();
        Ok(HEADER_LEN..HEADER_LEN + plaintext_len)
    }
}

impl Codec for KeyRing {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        self.seal_with(plaintext.len(), |buf| buf.extend_from_slice(plaintext))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let mut buf = Vec::new();
        let range = self.open_into(token, &mut buf)?;
        buf.truncate(range.end);
        buf.drain(..range.start);
        Ok(buf)
    }
}

impl fmt::Debug for KeyRing {
    /// Shows the public key fingerprints only; key material never appears.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Kid([u8; KID_LEN]);
        impl fmt::Debug for Kid {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
        f.debug_struct("KeyRing")
            .field(
                "kids",
                &self.slots.iter().map(|s| Kid(s.kid)).collect::<Vec<_>>(),
            )
            .field("keys", &"<redacted>")
            .finish()
    }
}

fn aad(kid: &[u8; KID_LEN]) -> [u8; 7] {
    let mut aad = [0u8; 7];
    aad[..3].copy_from_slice(TOKEN_PREFIX.as_bytes());
    aad[3..].copy_from_slice(kid);
    aad
}

/// `hkdf::Okm::fill` needs a type that names the output length.
struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

/// The AES key of a secret, wiped when dropped; `None` if HKDF fails (it cannot for 32
/// bytes, but a key of zeros must never be the fallback).
fn derive_aes_key(secret: &[u8]) -> Option<Zeroizing<[u8; 32]>> {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(secret);
    let mut key = Zeroizing::new([0u8; 32]);
    prk.expand(&[HKDF_INFO], Len32)
        .ok()?
        .fill(&mut key[..])
        .ok()?;
    Some(key)
}

fn kid_of(aes_key: &[u8; 32]) -> [u8; KID_LEN] {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(KID_LABEL);
    ctx.update(aes_key);
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&ctx.finish().as_ref()[..KID_LEN]);
    kid
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn only_a_token_of_the_first_key_is_sealed_with_it() {
        let (a, b) = (
            "0123456789abcdef0123456789abcdef",
            "fedcba9876543210fedcba9876543210",
        );
        let old = KeyRing::new([a]).unwrap();
        let rotating = KeyRing::new([b, a]).unwrap();
        let token = old.seal(b"x").unwrap();
        assert!(old.sealed_with_first(&token));
        assert!(!rotating.sealed_with_first(&token));
        assert!(rotating.sealed_with_first(&rotating.seal(b"x").unwrap()));
        // Nothing that is not a token of the first key counts as one, whatever its length.
        for text in [
            "",
            "v1.",
            "v1.abc",
            "v2.AAAAAAAAAAAA",
            "v1.\u{e9}\u{e9}\u{e9}\u{e9}",
            "v1.\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}",
        ] {
            assert!(!old.sealed_with_first(text), "{text:?}");
        }
        assert!(!old.sealed_with_first(&token[..10]));
    }

    /// The AES key itself is private, so this is the one place it can be compared with the
    /// Python SDK's; the fingerprints and tokens are checked from outside (`tests/vectors.rs`),
    /// from the same recorded vectors.
    #[test]
    fn key_derivation_matches_the_python_vectors() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/captures/request_state_vectors.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut keys = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let vector: serde_json::Value = serde_json::from_str(line).unwrap();
            if vector["kind"] != "key" {
                continue;
            }
            let secret = vector["secret_utf8"].as_str().unwrap();
            let key = derive_aes_key(secret.as_bytes()).unwrap();
            assert_eq!(hex(&key[..]), vector["aes_key_hex"], "{secret}");
            keys += 1;
        }
        assert!(keys >= 2, "the fixture holds {keys} key vector(s)");
    }

    #[test]
    fn debug_shows_kids_and_never_keys() {
        let ring = KeyRing::new(["0123456789abcdef0123456789abcdef"]).unwrap();
        let text = format!("{ring:?}");
        assert_eq!(text, r#"KeyRing { kids: [a014f40b], keys: "<redacted>" }"#);
    }
}
