//! A sealed state verifies only for the request, audience, principal and time
//! window it was minted for. Replays on anything else fail with the one error.

use std::time::{Duration, SystemTime};

use mcp_state_seal::{
    BindPrincipalError, InvalidRequestState, Principal, PrincipalSource, RejectReason,
    RequestBinding, RequestStateSecurity, SealError, SealingBoundary,
};
use serde_json::{Value, json};

const KEY: &str = "0123456789abcdef0123456789abcdef";

fn fleet(audience: &str) -> SealingBoundary {
    RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind(Some(audience))
        .unwrap()
}

fn args() -> Value {
    json!({"name": "orders", "replicas": 3})
}

#[track_caller]
fn assert_reason(result: Result<String, InvalidRequestState>, reason: RejectReason) {
    let err = result.expect_err("must be rejected");
    assert_eq!(err.reason(), reason);
    assert_eq!(err.to_string(), "Invalid or expired requestState");
}

#[test]
fn the_same_request_within_the_window_verifies() {
    let b = fleet("orders");
    let args = args();
    let binding = RequestBinding::new("tools/call", "provision", Some(&args));
    let t0 = SystemTime::now();
    let token = b.seal_at(t0, &binding, "state", None).unwrap();
    // Reordered keys are the same arguments.
    let same = json!({"replicas": 3, "name": "orders"});
    let rebound = RequestBinding::new("tools/call", "provision", Some(&same));
    for at in [
        t0,
        t0 + Duration::from_secs(1),
        t0 + Duration::from_millis(599_999),
        t0 - Duration::from_secs(60),
    ] {
        assert_eq!(b.unseal_at(at, &rebound, &token, None).unwrap(), "state");
    }
}

#[test]
fn a_replay_on_another_request_is_rejected() {
    let b = fleet("orders");
    let args = args();
    let binding = RequestBinding::new("tools/call", "provision", Some(&args));
    let token = b.seal(&binding, "state", None).unwrap();

    let other_tool = RequestBinding::new("tools/call", "deprovision", Some(&args));
    assert_reason(
        b.unseal(&other_tool, &token, None),
        RejectReason::RequestBinding,
    );

    let other_args = json!({"name": "orders", "replicas": 4});
    let changed = RequestBinding::new("tools/call", "provision", Some(&other_args));
    assert_reason(
        b.unseal(&changed, &token, None),
        RejectReason::RequestBinding,
    );

    let no_args = RequestBinding::new("tools/call", "provision", None);
    assert_reason(
        b.unseal(&no_args, &token, None),
        RejectReason::RequestBinding,
    );

    let other_method = RequestBinding::new("prompts/get", "provision", Some(&args));
    assert_reason(
        b.unseal(&other_method, &token, None),
        RejectReason::RequestBinding,
    );

    let as_resource = RequestBinding::new("resources/read", "provision", Some(&args));
    assert_reason(
        b.unseal(&as_resource, &token, None),
        RejectReason::RequestBinding,
    );
}

#[test]
fn another_audience_is_rejected() {
    let binding = RequestBinding::new("tools/call", "provision", None);
    let orders = fleet("orders");
    let billing = fleet("billing");
    let token = orders.seal(&binding, "state", None).unwrap();
    assert_reason(
        billing.unseal(&binding, &token, None),
        RejectReason::Audience,
    );

    // An explicit audience overrides the server name on both sides.
    let shared = RequestStateSecurity::keys([KEY]).unwrap().audience("fleet");
    let x = shared.bind(Some("x")).unwrap();
    let y = shared.bind(Some("y")).unwrap();
    let token = x.seal(&binding, "state", None).unwrap();
    assert_eq!(y.unseal(&binding, &token, None).unwrap(), "state");
    assert_reason(
        orders.unseal(&binding, &token, None),
        RejectReason::Audience,
    );

    // Audience-free tokens verify only where no audience is configured.
    let free = RequestStateSecurity::keys([KEY])
        .unwrap()
        .without_audience()
        .bind(Some("orders"))
        .unwrap();
    let token = free.seal(&binding, "state", None).unwrap();
    assert_eq!(free.unseal(&binding, &token, None).unwrap(), "state");
    assert_reason(
        orders.unseal(&binding, &token, None),
        RejectReason::Audience,
    );
    let token = orders.seal(&binding, "state", None).unwrap();
    assert_reason(free.unseal(&binding, &token, None), RejectReason::Audience);
}

#[test]
fn expired_and_future_tokens_are_rejected() {
    let b = RequestStateSecurity::keys([KEY])
        .unwrap()
        .ttl(Duration::from_secs(30))
        .bind(Some("orders"))
        .unwrap();
    assert_eq!(b.ttl(), Duration::from_secs(30));
    let binding = RequestBinding::new("tools/call", "provision", None);
    let t0 = SystemTime::now();
    let token = b.seal_at(t0, &binding, "state", None).unwrap();
    assert_eq!(
        b.unseal_at(t0 + Duration::from_millis(29_990), &binding, &token, None)
            .unwrap(),
        "state"
    );
    assert_reason(
        b.unseal_at(t0 + Duration::from_secs(30), &binding, &token, None),
        RejectReason::Expired,
    );
    assert_reason(
        b.unseal_at(t0 + Duration::from_secs(3600), &binding, &token, None),
        RejectReason::Expired,
    );
    // Minted more than 60 s ahead of this instance's clock.
    assert_reason(
        b.unseal_at(t0 - Duration::from_millis(60_010), &binding, &token, None),
        RejectReason::FromTheFuture,
    );
    let future = b
        .seal_at(t0 + Duration::from_secs(61), &binding, "state", None)
        .unwrap();
    assert_reason(
        b.unseal(&binding, &future, None),
        RejectReason::FromTheFuture,
    );
    let near_future = b
        .seal_at(t0 + Duration::from_secs(59), &binding, "state", None)
        .unwrap();
    assert_eq!(b.unseal(&binding, &near_future, None).unwrap(), "state");
}

#[test]
fn the_default_ttl_is_ten_minutes() {
    let b = fleet("orders");
    assert_eq!(b.ttl(), Duration::from_secs(600));
    let binding = RequestBinding::new("tools/call", "provision", None);
    let t0 = SystemTime::now();
    let token = b.seal_at(t0, &binding, "state", None).unwrap();
    assert!(
        b.unseal_at(t0 + Duration::from_secs(599), &binding, &token, None)
            .is_ok()
    );
    assert_reason(
        b.unseal_at(t0 + Duration::from_secs(600), &binding, &token, None),
        RejectReason::Expired,
    );
}

#[test]
fn another_principal_is_rejected() {
    let b = fleet("orders");
    let binding = RequestBinding::new("tools/call", "provision", None);
    let alice = Principal::new("client-a")
        .issuer("https://issuer.example")
        .subject("alice");
    let bob = Principal::new("client-a")
        .issuer("https://issuer.example")
        .subject("bob");
    let token = b.seal(&binding, "state", Some(&alice)).unwrap();
    assert_eq!(b.unseal(&binding, &token, Some(&alice)).unwrap(), "state");
    assert_reason(
        b.unseal(&binding, &token, Some(&bob)),
        RejectReason::Principal,
    );
    let other_issuer = Principal::new("client-a")
        .issuer("https://evil.example")
        .subject("alice");
    assert_reason(
        b.unseal(&binding, &token, Some(&other_issuer)),
        RejectReason::Principal,
    );
    // Claims are salted: two seals for one principal differ.
    let again = b.seal(&binding, "state", Some(&alice)).unwrap();
    assert_ne!(token, again);
}

#[test]
fn a_principal_on_one_side_only_is_rejected() {
    let b = fleet("orders");
    let binding = RequestBinding::new("tools/call", "provision", None);
    let alice = Principal::new("client-a").subject("alice");
    let bound = b.seal(&binding, "state", Some(&alice)).unwrap();
    assert_reason(
        b.unseal(&binding, &bound, None),
        RejectReason::PrincipalDrift,
    );
    let unbound = b.seal(&binding, "state", None).unwrap();
    assert_reason(
        b.unseal(&binding, &unbound, Some(&alice)),
        RejectReason::PrincipalDrift,
    );
}

#[test]
fn non_string_state_is_rejected_and_null_is_absent() {
    let b = fleet("orders");
    let binding = RequestBinding::new("tools/call", "provision", None);
    let token = b.seal(&binding, "state", None).unwrap();
    assert_eq!(
        b.unseal_json(&binding, &Value::String(token), None)
            .unwrap(),
        Some("state".to_owned())
    );
    assert_eq!(b.unseal_json(&binding, &Value::Null, None).unwrap(), None);
    for bad in [
        json!(42),
        json!(true),
        json!(["v1.x"]),
        json!({"t": "v1.x"}),
    ] {
        let err = b.unseal_json(&binding, &bad, None).unwrap_err();
        assert_eq!(err.reason(), RejectReason::NotAString, "{bad}");
        assert_eq!(err.to_string(), "Invalid or expired requestState");
    }
}

#[test]
fn any_state_text_round_trips() {
    let b = fleet("orders");
    let binding = RequestBinding::new("tools/call", "provision", None);
    for state in [
        "",
        "plain",
        "quotes \" and \\ backslashes",
        "line\nbreaks\r\tand\u{0}controls\u{7f}",
        "unicode café 😀 \u{ffff} \u{10ffff}",
        r#"{"v":3,"outcomes":{},"asked":{"__main__:ask_confirm":"U10CtpE4KA0WiedCgiXfzw"}}"#,
    ] {
        let token = b.seal(&binding, state, None).unwrap();
        assert_eq!(b.unseal(&binding, &token, None).unwrap(), state);
    }
    let big = "x".repeat(100_000);
    let token = b.seal(&binding, &big, None).unwrap();
    assert_eq!(b.unseal(&binding, &token, None).unwrap(), big);
}

#[test]
fn every_seal_is_fresh() {
    let b = fleet("orders");
    let binding = RequestBinding::new("tools/call", "provision", None);
    let now = SystemTime::now();
    let a = b.seal_at(now, &binding, "state", None).unwrap();
    let c = b.seal_at(now, &binding, "state", None).unwrap();
    assert_ne!(a, c);
}

#[test]
fn a_failing_principal_binding_fails_closed_both_ways() {
    let b = RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind_principal(|source: &PrincipalSource<'_>| {
            if source.method() == "prompts/get" {
                Err(BindPrincipalError::new("no session"))
            } else {
                Ok(source.authenticated().cloned())
            }
        })
        .bind(Some("orders"))
        .unwrap();
    let source = PrincipalSource::new("prompts/get", None);
    let err = b.principal(&source).unwrap_err();
    assert_eq!(err.reason(), "no session");
    let seal_err = SealError::from(err.clone());
    assert!(matches!(seal_err, SealError::PrincipalBinding(_)));
    assert_eq!(
        seal_err.to_string(),
        "could not seal requestState: the principal binding failed: no session"
    );
    let verify_err = InvalidRequestState::from(err);
    assert_eq!(verify_err.reason(), RejectReason::PrincipalBinding);
    assert_eq!(verify_err.to_string(), "Invalid or expired requestState");

    let alice = Principal::new("client-a");
    let ok = PrincipalSource::new("tools/call", Some(&alice));
    assert_eq!(b.principal(&ok).unwrap(), Some(alice.clone()));
}

#[test]
fn the_default_principal_is_the_authenticated_one() {
    let b = fleet("orders");
    let alice = Principal::new("client-a").subject("alice");
    assert_eq!(
        b.principal(&PrincipalSource::new("tools/call", Some(&alice)))
            .unwrap(),
        Some(alice)
    );
    assert_eq!(
        b.principal(&PrincipalSource::new("tools/call", None))
            .unwrap(),
        None
    );
}

/// Runs a future that is ready at once (the in-memory seen-store never waits).
fn ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("the in-memory store waited"),
    }
}

#[test]
fn with_the_replay_guard_a_state_is_accepted_once() {
    let guarded = RequestStateSecurity::keys([KEY])
        .unwrap()
        .replay_guard(mcp_state_seal::MemorySeenStore::new())
        .bind(Some("orders"))
        .unwrap();
    assert!(guarded.guards_replay());
    let args = args();
    let binding = RequestBinding::new("tools/call", "provision", Some(&args));
    let token = guarded.seal(&binding, "confirmed", None).unwrap();
    assert_eq!(
        ready(guarded.unseal_once(&binding, &token, None)).unwrap(),
        "confirmed"
    );
    assert_reason(
        ready(guarded.unseal_once(&binding, &token, None)),
        RejectReason::Replayed,
    );
    // Each seal is a fresh token id: the next round is accepted.
    let next = guarded.seal(&binding, "confirmed", None).unwrap();
    assert_eq!(
        ready(guarded.unseal_once(&binding, &next, None)).unwrap(),
        "confirmed"
    );
    // A state minted without the guard (or by the Python SDK) has no id to check: refused.
    let unguarded = fleet("orders");
    let legacy = unguarded.seal(&binding, "confirmed", None).unwrap();
    assert_reason(
        ready(guarded.unseal_once(&binding, &legacy, None)),
        RejectReason::Replayed,
    );
    // With the guard off nothing changes: the same token verifies as often as it comes.
    for _ in 0..2 {
        assert_eq!(
            ready(unguarded.unseal_once(&binding, &legacy, None)).unwrap(),
            "confirmed"
        );
    }
}

#[test]
fn a_token_minted_under_a_longer_ttl_is_refused_by_a_stricter_member() {
    let args = args();
    let binding = RequestBinding::new("tools/call", "provision", Some(&args));
    let lax = RequestStateSecurity::keys([KEY])
        .unwrap()
        .ttl(Duration::from_secs(3600))
        .bind(Some("orders"))
        .unwrap();
    let strict = fleet("orders");
    let t0 = SystemTime::now();
    let token = lax.seal_at(t0, &binding, "state", None).unwrap();
    assert_reason(
        strict.unseal_at(t0 + Duration::from_secs(1), &binding, &token, None),
        RejectReason::Lifetime,
    );
    assert_eq!(
        lax.unseal_at(t0 + Duration::from_secs(1), &binding, &token, None)
            .unwrap(),
        "state"
    );
}
