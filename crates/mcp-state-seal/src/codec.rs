//! Bring-your-own crypto: the [`Codec`] trait. A codec only protects bytes; the
//! policy still stamps and checks every claim (expiry, request, audience,
//! principal), whichever codec is plugged in.

use std::sync::Arc;

use crate::error::{InvalidRequestState, SealError};

/// Authenticated encryption of the sealed envelope.
///
/// The contract:
///
/// * `unseal(&seal(p)?)` returns `p`;
/// * `unseal` fails with [`InvalidRequestState`] for every token this codec did
///   not mint unmodified: one changed, added or removed character must fail, so
///   accept exactly one spelling of each token (e.g. canonical encodings only);
/// * tokens never name an algorithm the reader would obey: version them with a
///   fixed prefix bound under the authentication tag;
/// * both methods are synchronous and run on the request path, so keep key
///   material in memory (unwrap a data key once) rather than calling a KMS per
///   token;
/// * never panic, and never put the plaintext in an error.
///
/// [`KeyRing`](crate::KeyRing) is the built-in implementation.
///
/// # Example: envelope encryption with a data key
///
/// A data key is generated (or fetched) once and kept wrapped by a KMS at rest;
/// the process unwraps it at start-up and seals with it locally. Tokens are
/// `kms1.` followed by lowercase hex of `nonce[12] ‖ ciphertext ‖ tag[16]`, with
/// the prefix as associated data.
///
/// ```
/// use mcp_state_seal::{Codec, InvalidRequestState, RejectReason, RequestStateSecurity, SealError};
/// use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
/// use ring::rand::{SecureRandom, SystemRandom};
///
/// const PREFIX: &str = "kms1.";
///
/// struct KmsCodec {
///     data_key: LessSafeKey,
///     rng: SystemRandom,
/// }
///
/// impl KmsCodec {
///     /// `unwrap` stands for the KMS call that decrypts the wrapped data key.
///     fn new(wrapped_data_key: &[u8], unwrap: impl Fn(&[u8]) -> [u8; 32]) -> Self {
///         let key = UnboundKey::new(&AES_256_GCM, &unwrap(wrapped_data_key)).unwrap();
///         Self { data_key: LessSafeKey::new(key), rng: SystemRandom::new() }
///     }
/// }
///
/// impl Codec for KmsCodec {
///     fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
///         let mut nonce = [0u8; NONCE_LEN];
///         self.rng.fill(&mut nonce).map_err(|_| SealError::Random)?;
///         let mut body = nonce.to_vec();
///         body.extend_from_slice(plaintext);
///         let tag = self
///             .data_key
///             .seal_in_place_separate_tag(
///                 Nonce::assume_unique_for_key(nonce),
///                 Aad::from(PREFIX.as_bytes()),
///                 &mut body[NONCE_LEN..],
///             )
///             .map_err(|_| SealError::codec("AES-GCM refused the plaintext"))?;
///         body.extend_from_slice(tag.as_ref());
///         let mut token = String::from(PREFIX);
///         token.extend(body.iter().map(|b| format!("{b:02x}")));
///         Ok(token)
///     }
///
///     fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
///         let malformed = InvalidRequestState::new(RejectReason::MalformedToken);
///         let hex = token.strip_prefix(PREFIX).ok_or(malformed)?;
///         // Only canonical lowercase hex: one spelling per token.
///         if hex.len() % 2 != 0 || !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
///             return Err(malformed);
///         }
///         let mut body: Vec<u8> = (0..hex.len())
///             .step_by(2)
///             .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
///             .collect::<Result<_, _>>()
///             .map_err(|_| malformed)?;
///         if body.len() < NONCE_LEN + 16 {
///             return Err(malformed);
///         }
///         let (nonce, sealed) = body.split_at_mut(NONCE_LEN);
///         let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| malformed)?;
///         let len = self
///             .data_key
///             .open_in_place(nonce, Aad::from(PREFIX.as_bytes()), sealed)
///             .map_err(|_| InvalidRequestState::new(RejectReason::Unauthentic))?
///             .len();
///         Ok(body[NONCE_LEN..NONCE_LEN + len].to_vec())
///     }
/// }
///
/// // A stand-in KMS whose "unwrap" is the identity.
/// let codec = KmsCodec::new(&[7u8; 32], |wrapped| wrapped.try_into().unwrap());
/// let token = codec.seal(b"step-2")?;
/// assert!(token.starts_with("kms1."));
/// assert_eq!(codec.unseal(&token)?, b"step-2");
/// assert!(codec.unseal(&token.to_uppercase().replace("KMS1.", "kms1.")).is_err());
///
/// // The policy adds the claims on top of any codec.
/// let boundary = RequestStateSecurity::codec(codec).audience("fleet").bind(None)?;
/// let binding = mcp_state_seal::RequestBinding::new("tools/call", "deploy", None);
/// let sealed = boundary.seal(&binding, "step-2", None)?;
/// assert_eq!(boundary.unseal(&binding, &sealed, None)?, "step-2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Codec: Send + Sync {
    /// Returns an opaque, URL-safe token protecting `plaintext`.
    ///
    /// # Errors
    ///
    /// [`SealError`] when the codec cannot seal; the server answers with an
    /// internal error and nothing of the plaintext leaves the process.
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError>;

    /// Reverses [`seal`](Self::seal).
    ///
    /// # Errors
    ///
    /// [`InvalidRequestState`] for any token this codec did not mint unmodified.
    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState>;
}

impl<C: Codec + ?Sized> Codec for Arc<C> {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        (**self).seal(plaintext)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        (**self).unseal(token)
    }
}

impl<C: Codec + ?Sized> Codec for Box<C> {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        (**self).seal(plaintext)
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        (**self).unseal(token)
    }
}
