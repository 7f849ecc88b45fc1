//! The resource server's side of DPoP (RFC 9449 §7): when the [`TokenVerifier`] reports a
//! token bound to a key (`cnf.jkt`, [`VerifiedToken::dpop_bound`]), the request must present
//! it with the `DPoP` scheme and a proof signed by that key, for this request (`htm`, `htu`),
//! recent (`iat`), for this token (`ath`), and not seen before (`jti`).
//!
//! [`TokenVerifier`]: crate::auth::TokenVerifier
//! [`VerifiedToken::dpop_bound`]: crate::auth::VerifiedToken::dpop_bound

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_state_seal::{SeenStore, jwk_thumbprint};
use ring::signature::{self, UnparsedPublicKey};
use serde_json::Value;

use crate::auth_error::AuthError;

/// How far a proof's `iat` may be from this server's clock, in seconds.
pub(crate) const MAX_SKEW: u64 = 300;
/// How many proofs of one key (one `jkt`) an endpoint remembers within their acceptance
/// window: past it, that key's new proofs are refused until some expire, and no other key's
/// are affected (review W8: one user's flood cannot push out a victim's proofs).
pub(crate) const PROOFS_PER_KEY: usize = 1_024;
/// How many proofs an endpoint remembers in all; full of unexpired proofs, it refuses new ones
/// (fails closed) rather than forget one that could still be replayed.
pub(crate) const PROOFS_IN_ALL: usize = 200_000;
/// The largest proof read.
const MAX_PROOF_BYTES: usize = 8 * 1024;

fn invalid(why: &str) -> AuthError {
    AuthError::InvalidDpopProof(why.to_owned())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn decode_json(part: &str) -> Option<Value> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()
}

fn verify_signature(alg: &str, jwk: &Value, input: &[u8], sig: &[u8]) -> Result<(), AuthError> {
    let member = |name: &str| {
        jwk.get(name)
            .and_then(Value::as_str)
            .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
            .ok_or_else(|| invalid("the proof's jwk is incomplete"))
    };
    let ok = match (alg, jwk.get("kty").and_then(Value::as_str)) {
        ("ES256", Some("EC")) => {
            if jwk.get("crv").and_then(Value::as_str) != Some("P-256") {
                return Err(invalid("ES256 needs a P-256 key"));
            }
            let mut point = vec![4u8];
            point.extend(member("x")?);
            point.extend(member("y")?);
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
                .verify(input, sig)
                .is_ok()
        }
        ("RS256", Some("RSA")) => {
            let (n, e) = (member("n")?, member("e")?);
            ring::rsa::PublicKeyComponents { n: &n, e: &e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, sig)
                .is_ok()
        }
        _ => {
            return Err(invalid(
                "the proof's alg is not ES256 or RS256 with a matching key",
            ));
        }
    };
    if ok {
        Ok(())
    } else {
        Err(invalid("the proof's signature does not verify"))
    }
}

/// The proofs an endpoint accepted, remembered until their acceptance window ends (`iat` +
/// [`MAX_SKEW`]), so a captured proof is refused however many requests come between (review
/// W8): in this process, each key with its own share; or in a store a fleet shares.
pub(crate) enum DpopReplay {
    /// This process's memory.
    Memory(ReplayCache),
    /// A seen-store shared by the fleet (e.g. Redis), keyed `dpop {jkt} {jti}`.
    Shared(Arc<dyn SeenStore>),
}

impl Default for DpopReplay {
    fn default() -> Self {
        DpopReplay::Memory(ReplayCache::new(PROOFS_PER_KEY, PROOFS_IN_ALL))
    }
}

impl DpopReplay {
    /// Records the proof `jti` of key `jkt`, valid until `expires_at` (seconds since the Unix
    /// epoch); refuses one seen before, or one there is no room to remember.
    pub(crate) async fn first_use(
        &self,
        jkt: &str,
        jti: &str,
        expires_at: u64,
    ) -> Result<(), AuthError> {
        match self {
            DpopReplay::Memory(cache) => cache.first_use(jkt, jti, expires_at, now()),
            DpopReplay::Shared(store) => {
                let key = format!("dpop {jkt} {jti}");
                let at = expires_at as f64;
                if !store.first_use(&key, at).await {
                    return Err(invalid("the proof was used before"));
                }
                // A proof is spent at once: no other instance may take the claim over.
                store.finished(&key, at).await;
                Ok(())
            }
        }
    }
}

/// Proofs by key, each key with at most `per_key` unexpired ones, `in_all` in total.
pub(crate) struct ReplayCache {
    state: Mutex<Remembered>,
    per_key: usize,
    in_all: usize,
}

#[derive(Default)]
struct Remembered {
    by_key: HashMap<String, HashMap<String, u64>>,
    total: usize,
}

impl ReplayCache {
    pub(crate) fn new(per_key: usize, in_all: usize) -> Self {
        ReplayCache {
            state: Mutex::new(Remembered::default()),
            per_key: per_key.max(1),
            in_all: in_all.max(1),
        }
    }

    fn first_use(&self, jkt: &str, jti: &str, expires_at: u64, now: u64) -> Result<(), AuthError> {
        let Ok(mut state) = self.state.lock() else {
            return Err(invalid("the proof cannot be checked now"));
        };
        let state = &mut *state;
        if state.total >= self.in_all {
            let mut total = 0;
            state.by_key.retain(|_, proofs| {
                proofs.retain(|_, until| *until > now);
                total += proofs.len();
                !proofs.is_empty()
            });
            state.total = total;
            if total >= self.in_all {
                return Err(invalid(
                    "too many recent proofs to check this one; retry shortly",
                ));
            }
        }
        let proofs = state.by_key.entry(jkt.to_owned()).or_default();
        if proofs.contains_key(jti) {
            return Err(invalid("the proof was used before"));
        }
        if proofs.len() >= self.per_key {
            let before = proofs.len();
            proofs.retain(|_, until| *until > now);
            state.total -= before - proofs.len();
            if proofs.len() >= self.per_key {
                return Err(invalid(
                    "too many proofs of this key within the acceptance window; slow down",
                ));
            }
        }
        proofs.insert(jti.to_owned(), expires_at);
        state.total += 1;
        Ok(())
    }
}

/// What a proof that passed every check but the replay one carries for that check.
pub(crate) struct Fresh {
    pub(crate) jti: String,
    /// When the proof leaves its acceptance window.
    pub(crate) expires_at: u64,
}

fn normalized(url: &str) -> &str {
    url.split(['?', '#'])
        .next()
        .unwrap_or(url)
        .trim_end_matches('/')
}

/// Checks `proof` (the `DPoP` header) for a `method` request to `resource` presenting
/// `token`, bound to the key whose thumbprint is `jkt`.
/// Every check but the replay one ([`DpopReplay::first_use`], which needs the proof's `jti`).
pub(crate) fn check_proof(
    proof: Option<&str>,
    method: &str,
    resource: &str,
    token: &str,
    jkt: &str,
) -> Result<Fresh, AuthError> {
    let proof = proof.ok_or_else(|| invalid("a DPoP-bound token needs a DPoP proof"))?;
    if proof.len() > MAX_PROOF_BYTES {
        return Err(invalid("the proof is too large"));
    }
    let mut parts = proof.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("the proof is not a compact JWS"));
    };
    let header = decode_json(h).ok_or_else(|| invalid("the proof's header is not JSON"))?;
    let claims = decode_json(c).ok_or_else(|| invalid("the proof's claims are not JSON"))?;
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| invalid("the proof's signature is not base64url"))?;
    if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
        return Err(invalid("the proof's typ is not dpop+jwt"));
    }
    let jwk = header
        .get("jwk")
        .filter(|j| j.is_object())
        .ok_or_else(|| invalid("the proof carries no jwk"))?;
    if jwk.get("d").is_some() {
        return Err(invalid("the proof's jwk holds a private key"));
    }
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .unwrap_or_default();
    verify_signature(alg, jwk, format!("{h}.{c}").as_bytes(), &sig)?;
    if jwk_thumbprint(jwk).as_deref() != Some(jkt) {
        return Err(invalid(
            "the proof's key is not the one the token is bound to",
        ));
    }
    let claim = |name: &str| claims.get(name).and_then(Value::as_str);
    if claim("htm") != Some(method) {
        return Err(invalid("the proof's htm is not this request's method"));
    }
    if claim("htu").map(normalized) != Some(normalized(resource)) {
        return Err(invalid("the proof's htu is not this endpoint"));
    }
    let iat = claims
        .get("iat")
        .and_then(Value::as_u64)
        .unwrap_or_default();
    if now().abs_diff(iat) > MAX_SKEW {
        return Err(invalid("the proof's iat is too far from now"));
    }
    let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        token.as_bytes(),
    ));
    if claim("ath") != Some(ath.as_str()) {
        return Err(invalid("the proof's ath is not this token's hash"));
    }
    let jti = claim("jti").filter(|j| !j.is_empty() && j.len() <= 256);
    let jti = jti.ok_or_else(|| invalid("the proof has no usable jti"))?;
    Ok(Fresh {
        jti: jti.to_owned(),
        expires_at: iat.saturating_add(MAX_SKEW + 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair as _};
    use serde_json::json;

    const RS: &str = "https://mcp.example.com/mcp";

    struct Key(EcdsaKeyPair);

    impl Key {
        fn new() -> Self {
            let rng = SystemRandom::new();
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
            Key(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap())
        }

        fn jwk(&self) -> Value {
            let p = self.0.public_key().as_ref();
            json!({"kty": "EC", "crv": "P-256",
                   "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65])})
        }

        fn jkt(&self) -> String {
            jwk_thumbprint(&self.jwk()).unwrap()
        }

        fn sign(&self, header: Value, claims: Value) -> String {
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let sig = self.0.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
        }

        fn proof(&self, claims: Value) -> String {
            self.sign(
                json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()}),
                claims,
            )
        }
    }

    fn ath(token: &str) -> String {
        URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            token.as_bytes(),
        ))
    }

    fn claims(jti: &str) -> Value {
        json!({"jti": jti, "htm": "POST", "htu": RS, "iat": now(), "ath": ath("tok")})
    }

    fn refusal<T: std::fmt::Debug>(result: Result<T, AuthError>) -> String {
        match result {
            Err(AuthError::InvalidDpopProof(why)) => why,
            other => panic!("expected a DPoP refusal, got {other:?}"),
        }
    }

    /// Every check, the replay one against `cache`.
    fn checked(cache: &ReplayCache, proof: &str, jkt: &str) -> Result<(), AuthError> {
        let fresh = check_proof(Some(proof), "POST", RS, "tok", jkt)?;
        cache.first_use(jkt, &fresh.jti, fresh.expires_at, now())
    }

    #[test]
    fn a_valid_proof_passes_once_and_its_replay_is_refused() {
        let cache = ReplayCache::new(PROOFS_PER_KEY, PROOFS_IN_ALL);
        let key = Key::new();
        let jti = format!("jti-{}", now());
        let proof = key.proof(claims(&jti));
        checked(&cache, &proof, &key.jkt()).unwrap();
        // A trailing slash or query on htu is the same endpoint.
        let mut c = claims(&format!("{jti}-2"));
        c["htu"] = json!("https://mcp.example.com/mcp/");
        checked(&cache, &key.proof(c), &key.jkt()).unwrap();
        assert_eq!(
            refusal(checked(&cache, &proof, &key.jkt())),
            "the proof was used before"
        );
    }

    /// Review W8: a user flooding the cache with proofs of their own key cannot push a
    /// victim's proof out of it (the old cache forgot the oldest of 4,096 proofs, whoever's),
    /// and a proof is remembered until its acceptance window ends, then forgotten.
    #[test]
    fn one_keys_flood_leaves_anothers_proofs_remembered_until_they_expire() {
        let cache = ReplayCache::new(3, 10);
        let now = 1_000_000;
        cache
            .first_use("victim", "v1", now + MAX_SKEW, now)
            .unwrap();
        for i in 0..3 {
            cache
                .first_use("flooder", &format!("f{i}"), now + MAX_SKEW, now)
                .unwrap();
        }
        assert_eq!(
            refusal(cache.first_use("flooder", "f3", now + MAX_SKEW, now)),
            "too many proofs of this key within the acceptance window; slow down"
        );
        assert_eq!(
            refusal(cache.first_use("victim", "v1", now + MAX_SKEW, now)),
            "the proof was used before"
        );
        // Past the window the flooder's proofs are forgotten and room comes back; the victim's
        // replay is still refused while its own window lasts.
        let later = now + MAX_SKEW + 1;
        cache
            .first_use("flooder", "f4", later + MAX_SKEW, later)
            .unwrap();
        // Full in all (4 + 1 of 10 is not full; fill it) fails closed, not by forgetting.
        for i in 0..5 {
            cache
                .first_use(&format!("k{i}"), "x", later + MAX_SKEW, later)
                .unwrap();
        }
        let total = cache.state.lock().unwrap().total;
        assert!(total <= 10, "{total}");
    }

    /// Review W8: instances sharing a seen-store refuse a proof spent on any of them.
    #[tokio::test]
    async fn a_shared_store_refuses_a_proof_spent_on_another_instance() {
        let store: Arc<dyn SeenStore> = Arc::new(mcp_state_seal::MemorySeenStore::new());
        let a = DpopReplay::Shared(store.clone());
        let b = DpopReplay::Shared(store);
        let until = now() + MAX_SKEW;
        a.first_use("jkt", "one", until).await.unwrap();
        assert_eq!(
            refusal(b.first_use("jkt", "one", until).await),
            "the proof was used before"
        );
        b.first_use("jkt", "two", until).await.unwrap();
    }

    #[test]
    fn every_mismatch_is_refused_with_its_reason() {
        let key = Key::new();
        let other = Key::new();
        let jkt = key.jkt();
        let with = |name: &str, value: Value| {
            let mut c = claims(&format!("{name}-{}", now()));
            c[name] = value;
            key.proof(c)
        };
        let cases = [
            (
                with("htm", json!("GET")),
                "the proof's htm is not this request's method",
            ),
            (
                with("htu", json!("https://evil.example.com/mcp")),
                "the proof's htu is not this endpoint",
            ),
            (
                with("ath", json!(ath("other"))),
                "the proof's ath is not this token's hash",
            ),
            (
                with("iat", json!(now() - MAX_SKEW - 5)),
                "the proof's iat is too far from now",
            ),
            (with("jti", json!("")), "the proof has no usable jti"),
            (
                other.proof(claims("k")),
                "the proof's key is not the one the token is bound to",
            ),
            (
                key.sign(
                    json!({"typ": "JWT", "alg": "ES256", "jwk": key.jwk()}),
                    claims("t"),
                ),
                "the proof's typ is not dpop+jwt",
            ),
            (
                key.sign(
                    json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": other.jwk()}),
                    claims("s"),
                ),
                "the proof's signature does not verify",
            ),
            (
                key.sign(
                    json!({"typ": "dpop+jwt", "alg": "HS256", "jwk": key.jwk()}),
                    claims("h"),
                ),
                "the proof's alg is not ES256 or RS256 with a matching key",
            ),
            ("a.b".to_owned(), "the proof is not a compact JWS"),
        ];
        for (proof, why) in cases {
            assert_eq!(
                refusal(check_proof(Some(&proof), "POST", RS, "tok", &jkt).map(|_| ())),
                why
            );
        }
        assert_eq!(
            refusal(check_proof(None, "POST", RS, "tok", &jkt).map(|_| ())),
            "a DPoP-bound token needs a DPoP proof"
        );
        let mut private = key.jwk();
        private["d"] = json!("secret");
        let proof = key.sign(
            json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": private}),
            claims("d"),
        );
        assert_eq!(
            refusal(check_proof(Some(&proof), "POST", RS, "tok", &jkt).map(|_| ())),
            "the proof's jwk holds a private key"
        );
    }

    struct Bound(Option<String>);

    impl crate::auth::TokenVerifier for Bound {
        fn verify(
            &self,
            _token: &str,
        ) -> crate::BoxFuture<'_, Result<crate::auth::VerifiedToken, AuthError>> {
            let mut token = crate::auth::VerifiedToken::new(
                mcp_server_core::seal::Principal::new("client-1").subject("alice"),
            )
            .audience(RS);
            if let Some(jkt) = &self.0 {
                token = token.dpop_bound(jkt.clone());
            }
            Box::pin(async move { Ok(token) })
        }
    }

    fn headers(authorization: &str, proof: Option<&str>) -> hyper::HeaderMap {
        let mut h = hyper::HeaderMap::new();
        h.insert("authorization", authorization.parse().unwrap());
        if let Some(p) = proof {
            h.insert("dpop", p.parse().unwrap());
        }
        h
    }

    #[tokio::test]
    async fn the_endpoint_requires_the_dpop_scheme_and_proof_only_for_bound_tokens() {
        use crate::auth::{ProtectedResource, authenticate};
        let key = Key::new();
        let protected = ProtectedResource::new(RS).authorization_server("https://as.example.com");
        let bound = Bound(Some(key.jkt()));
        let replay = DpopReplay::default();
        let proof = key.proof(claims(&format!("auth-{}", now())));
        let ok = authenticate(
            &bound,
            &protected,
            &replay,
            "POST",
            &headers("DPoP tok", Some(&proof)),
        )
        .await;
        assert_eq!(ok.unwrap().principal.subject.as_deref(), Some("alice"));
        let err = authenticate(
            &bound,
            &protected,
            &replay,
            "POST",
            &headers("Bearer tok", Some(&proof)),
        )
        .await;
        assert_eq!(
            err.unwrap_err(),
            AuthError::InvalidDpopProof(
                "a DPoP-bound token must be sent with the DPoP scheme".into()
            )
        );
        let err = authenticate(
            &bound,
            &protected,
            &replay,
            "POST",
            &headers("DPoP tok", None),
        )
        .await;
        assert_eq!(
            err.unwrap_err(),
            AuthError::InvalidDpopProof("a DPoP-bound token needs a DPoP proof".into())
        );
        let unbound = Bound(None);
        let err = authenticate(
            &unbound,
            &protected,
            &replay,
            "POST",
            &headers("DPoP tok", None),
        )
        .await;
        assert_eq!(
            err.unwrap_err(),
            AuthError::InvalidToken(
                "the token is not DPoP-bound; send it as a Bearer token".into()
            )
        );
        assert!(
            authenticate(
                &unbound,
                &protected,
                &replay,
                "POST",
                &headers("Bearer tok", None)
            )
            .await
            .is_ok()
        );
        assert_eq!(
            authenticate(
                &unbound,
                &protected,
                &replay,
                "POST",
                &headers("Basic x", None)
            )
            .await
            .unwrap_err(),
            AuthError::Missing
        );
        assert_eq!(
            protected.challenge(&AuthError::InvalidDpopProof(
                "the proof was used before".into()
            )),
            "DPoP algs=\"ES256 RS256\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", error=\"invalid_dpop_proof\", error_description=\"the proof was used before\""
        );
    }
}
