//! Bring-your-own crypto: whatever the codec, the policy stamps and checks every
//! claim, and the codec's failures fail closed.

use std::time::{Duration, SystemTime};

use mcp_state_seal::{
    Codec, ConfigError, InvalidRequestState, Principal, RejectReason, RequestBinding,
    RequestStateSecurity, SealError,
};

/// Deliberately no confidentiality and no integrity: it shows that the claims
/// checks do not depend on the codec. Tokens are `plain.` + the plaintext.
struct PlainCodec;

impl Codec for PlainCodec {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        let text = std::str::from_utf8(plaintext).map_err(|_| SealError::codec("not UTF-8"))?;
        Ok(format!("plain.{text}"))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        token
            .strip_prefix("plain.")
            .map(|t| t.as_bytes().to_vec())
            .ok_or(InvalidRequestState::new(RejectReason::MalformedToken))
    }
}

struct BrokenCodec;

impl Codec for BrokenCodec {
    fn seal(&self, _: &[u8]) -> Result<String, SealError> {
        Err(SealError::codec("KMS unavailable"))
    }

    fn unseal(&self, _: &str) -> Result<Vec<u8>, InvalidRequestState> {
        Err(InvalidRequestState::new(RejectReason::Codec))
    }
}

#[test]
fn a_custom_codec_needs_an_audience_like_shared_keys() {
    assert_eq!(
        RequestStateSecurity::codec(PlainCodec)
            .bind(None)
            .unwrap_err(),
        ConfigError::MissingAudience
    );
    assert!(
        RequestStateSecurity::codec(PlainCodec)
            .bind(Some("svc"))
            .is_ok()
    );
}

#[test]
fn claims_are_enforced_whatever_the_codec() {
    let b = RequestStateSecurity::codec(PlainCodec)
        .ttl(Duration::from_secs(10))
        .bind(Some("svc"))
        .unwrap();
    let binding = RequestBinding::new("prompts/get", "greet", None);
    let alice = Principal::new("client-a");
    let t0 = SystemTime::now();
    let token = b.seal_at(t0, &binding, "s", Some(&alice)).unwrap();
    assert!(token.starts_with(r#"plain.{"v":1,"iat":"#), "{token}");
    assert!(token.contains(
        r#","m":"prompts/get","t":"greet","a":"RBNvo1WzZ4oRRq0W9-hkng","s":"s","aud":"svc","p":""#
    ));
    assert_eq!(
        b.unseal_at(t0, &binding, &token, Some(&alice)).unwrap(),
        "s"
    );

    let reason = |r: Result<String, InvalidRequestState>| r.unwrap_err().reason();
    let other = RequestBinding::new("prompts/get", "farewell", None);
    assert_eq!(
        reason(b.unseal_at(t0, &other, &token, Some(&alice))),
        RejectReason::RequestBinding
    );
    assert_eq!(
        reason(b.unseal_at(t0, &binding, &token, None)),
        RejectReason::PrincipalDrift
    );
    let late = t0 + Duration::from_secs(10);
    assert_eq!(
        reason(b.unseal_at(late, &binding, &token, Some(&alice))),
        RejectReason::Expired
    );
    let forged = token.replace(r#""s":"s""#, r#""s":7"#);
    assert_eq!(
        reason(b.unseal_at(t0, &binding, &forged, Some(&alice))),
        RejectReason::MalformedClaims
    );
    let forged = token.replace(r#""v":1"#, r#""v":2"#);
    assert_eq!(
        reason(b.unseal_at(t0, &binding, &forged, Some(&alice))),
        RejectReason::MalformedClaims
    );
    let forged = token.replace(r#""aud":"svc""#, r#""aud":"other""#);
    assert_eq!(
        reason(b.unseal_at(t0, &binding, &forged, Some(&alice))),
        RejectReason::Audience
    );
    assert_eq!(
        reason(b.unseal_at(t0, &binding, "x", Some(&alice))),
        RejectReason::MalformedToken
    );
}

#[test]
fn codec_failures_fail_closed() {
    let b = RequestStateSecurity::codec(BrokenCodec)
        .bind(Some("svc"))
        .unwrap();
    let binding = RequestBinding::new("tools/call", "t", None);
    let err = b.seal(&binding, "secret-state", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not seal requestState: the codec failed: KMS unavailable"
    );
    let err = b.unseal(&binding, "anything", None).unwrap_err();
    assert_eq!(err.reason(), RejectReason::Codec);
    assert_eq!(err.to_string(), "Invalid or expired requestState");
}

#[test]
fn a_shared_codec_can_be_plugged_in_behind_an_arc() {
    let codec = std::sync::Arc::new(PlainCodec);
    let b = RequestStateSecurity::codec(codec.clone())
        .bind(Some("svc"))
        .unwrap();
    let binding = RequestBinding::new("tools/call", "t", None);
    let token = b.seal(&binding, "s", None).unwrap();
    assert!(codec.unseal(&token).is_ok());
}
