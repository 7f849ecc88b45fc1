//! The one rejection never varies on the wire, and no error or `Debug` output
//! ever shows a secret, a token or the sealed state.

use std::time::{Duration, SystemTime};

use mcp_state_seal::{
    INVALID_REQUEST_STATE_CODE, INVALID_REQUEST_STATE_DATA_REASON, INVALID_REQUEST_STATE_MESSAGE,
    KeyRing, Principal, RequestBinding, RequestStateSecurity,
};

const SECRET: &str = "super-secret-key-material-0123456789abcdef";
const STATE: &str = "state-with-credit-card-4111111111111111";

#[test]
fn the_rejection_constants_are_the_python_sdks() {
    assert_eq!(INVALID_REQUEST_STATE_CODE, -32602);
    assert_eq!(
        INVALID_REQUEST_STATE_MESSAGE,
        "Invalid or expired requestState"
    );
    assert_eq!(INVALID_REQUEST_STATE_DATA_REASON, "invalid_request_state");
}

#[test]
fn every_failure_reads_the_same_and_hides_the_token_and_state() {
    let b = RequestStateSecurity::keys([SECRET])
        .unwrap()
        .bind(Some("svc"))
        .unwrap();
    let other_key = RequestStateSecurity::keys(["another-key-0123456789abcdef-0123456789"])
        .unwrap()
        .bind(Some("svc"))
        .unwrap();
    let binding = RequestBinding::new("tools/call", "t", None);
    let alice = Principal::new("alice-client");
    let t0 = SystemTime::now();
    let token = b.seal_at(t0, &binding, STATE, Some(&alice)).unwrap();
    let swap = if token.as_bytes()[40] == b'A' {
        "B"
    } else {
        "A"
    };
    let tampered = format!("{}{swap}{}", &token[..40], &token[41..]);
    let other = RequestBinding::new("tools/call", "u", None);
    let failures = [
        b.unseal_at(t0, &binding, &tampered, Some(&alice)),
        b.unseal_at(
            t0 + Duration::from_secs(601),
            &binding,
            &token,
            Some(&alice),
        ),
        b.unseal_at(t0 - Duration::from_secs(61), &binding, &token, Some(&alice)),
        b.unseal_at(t0, &other, &token, Some(&alice)),
        b.unseal_at(t0, &binding, &token, None),
        b.unseal_at(t0, &binding, &token, Some(&Principal::new("bob"))),
        other_key.unseal_at(t0, &binding, &token, Some(&alice)),
        b.unseal_at(t0, &binding, "not a token", Some(&alice)),
    ];
    let mut reasons = Vec::new();
    for failure in failures {
        let err = failure.unwrap_err();
        assert_eq!(err.to_string(), INVALID_REQUEST_STATE_MESSAGE);
        assert_eq!(err.code(), -32602);
        let debug = format!("{err:?}");
        for secret in [STATE, &token, SECRET, "alice"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        reasons.push(err.reason());
    }
    // Each cause is told apart in the log: eight failures, eight different reasons (any two
    // equal fail, wherever they stand in the list).
    assert_eq!(reasons.len(), 8, "{reasons:?}");
    for (i, reason) in reasons.iter().enumerate() {
        for other in &reasons[i + 1..] {
            assert_ne!(reason, other, "two causes share a reason: {reasons:?}");
        }
    }
}

#[test]
fn debug_output_shows_no_secret() {
    let security = RequestStateSecurity::keys([SECRET])
        .unwrap()
        .audience("svc");
    let boundary = security.bind(None).unwrap();
    let ring = KeyRing::new([SECRET]).unwrap();
    for text in [
        format!("{security:?}"),
        format!("{boundary:?}"),
        format!("{ring:?}"),
        format!("{:?}", RequestStateSecurity::ephemeral()),
    ] {
        assert!(!text.contains(SECRET), "{text}");
        assert!(!text.contains("super-secret"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
