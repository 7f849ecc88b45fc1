//! Sealed state handles: a handle opens only as the kind it was sealed as, for the principal
//! and audience it was sealed for, within its kind's lifetime, once if its kind is single-use;
//! and a handle and a `requestState` never stand in for each other. Every refusal is the one
//! error.

use std::time::{Duration, SystemTime};

use mcp_state_seal::{
    HandleSpec, InvalidHandle, MemorySeenStore, Principal, RejectReason, RequestBinding,
    RequestStateSecurity, SealError, SealingBoundary,
};

const KEY: &str = "0123456789abcdef0123456789abcdef";
const BASKET: HandleSpec<'static> = HandleSpec::new("basket");

fn shop(audience: &str) -> SealingBoundary {
    RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind(Some(audience))
        .unwrap()
}

fn guarded() -> SealingBoundary {
    RequestStateSecurity::keys([KEY])
        .unwrap()
        .replay_guard(MemorySeenStore::default())
        .bind(Some("shop"))
        .unwrap()
}

fn alice() -> Principal {
    Principal::new("shop-app").subject("alice")
}

#[track_caller]
fn assert_refused(result: Result<String, InvalidHandle>, reason: RejectReason) {
    let err = result.expect_err("must be refused");
    assert_eq!(err.reason(), reason);
    assert_eq!(err.to_string(), "Invalid or expired handle");
}

#[tokio::test]
async fn a_handle_opens_for_its_owner_within_its_lifetime() {
    let b = shop("shop");
    let t0 = SystemTime::now();
    let spec = BASKET.ttl(Duration::from_secs(7200));
    let handle = b
        .seal_handle_at(t0, &spec, r#"{"items":["tea"]}"#, Some(&alice()))
        .unwrap();
    assert!(
        !handle.contains("tea"),
        "the value is not readable: {handle}"
    );
    for later in [0, 3600, 7199] {
        let at = t0 + Duration::from_secs(later);
        assert_eq!(
            b.open_handle_at(at, &spec, &handle, Some(&alice()))
                .await
                .unwrap(),
            r#"{"items":["tea"]}"#
        );
    }
    assert_refused(
        b.open_handle_at(
            t0 + Duration::from_secs(7200),
            &spec,
            &handle,
            Some(&alice()),
        )
        .await,
        RejectReason::Expired,
    );
    // Opened by a kind that allows less time than it was sealed for.
    assert_refused(
        b.open_handle_at(t0, &BASKET, &handle, Some(&alice())).await,
        RejectReason::Lifetime,
    );
}

#[tokio::test]
async fn a_forged_or_altered_handle_is_refused() {
    let b = shop("shop");
    let handle = b.seal_handle(&BASKET, "basket-1", None).unwrap();
    let mut altered = handle.clone().into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    assert_refused(
        b.open_handle(&BASKET, &altered, None).await,
        RejectReason::Unauthentic,
    );
    assert_refused(
        b.open_handle(&BASKET, "basket-1", None).await,
        RejectReason::MalformedToken,
    );
    let other_keys = RequestStateSecurity::keys(["fedcba9876543210fedcba9876543210"])
        .unwrap()
        .bind(Some("shop"))
        .unwrap();
    let forged = other_keys.seal_handle(&BASKET, "basket-1", None).unwrap();
    assert!(b.open_handle(&BASKET, &forged, None).await.is_err());
}

#[tokio::test]
async fn another_principal_audience_or_kind_is_refused() {
    let b = shop("shop");
    let handle = b.seal_handle(&BASKET, "basket-1", Some(&alice())).unwrap();
    let bob = Principal::new("shop-app").subject("bob");
    assert_refused(
        b.open_handle(&BASKET, &handle, Some(&bob)).await,
        RejectReason::Principal,
    );
    assert_refused(
        b.open_handle(&BASKET, &handle, None).await,
        RejectReason::PrincipalDrift,
    );
    assert_refused(
        shop("billing")
            .open_handle(&BASKET, &handle, Some(&alice()))
            .await,
        RejectReason::Audience,
    );
    assert_refused(
        b.open_handle(&HandleSpec::new("draft"), &handle, Some(&alice()))
            .await,
        RejectReason::RequestBinding,
    );
}

#[tokio::test]
async fn a_handle_is_never_a_request_state_nor_the_reverse() {
    let b = shop("shop");
    let handle = b.seal_handle(&BASKET, "basket-1", None).unwrap();
    // A handle of kind "basket" against a request whose target is also "basket".
    for method in ["tools/call", "prompts/get", "resources/read"] {
        let binding = RequestBinding::new(method, "basket", None);
        let err = b.unseal(&binding, &handle, None).unwrap_err();
        assert_eq!(err.reason(), RejectReason::RequestBinding, "{method}");
    }
    let binding = RequestBinding::new("tools/call", "basket", None);
    let state = b.seal(&binding, "basket-1", None).unwrap();
    assert_refused(
        b.open_handle(&BASKET, &state, None).await,
        RejectReason::RequestBinding,
    );
}

#[tokio::test]
async fn a_single_use_handle_opens_once() {
    let b = guarded();
    let voucher = HandleSpec::new("voucher").single_use();
    let handle = b.seal_handle(&voucher, "10% off", None).unwrap();
    assert_eq!(
        b.open_handle(&voucher, &handle, None).await.unwrap(),
        "10% off"
    );
    assert_refused(
        b.open_handle(&voucher, &handle, None).await,
        RejectReason::Replayed,
    );
    // Reusable handles on the same boundary carry no use to spend.
    let basket = b.seal_handle(&BASKET, "basket-1", None).unwrap();
    for _ in 0..3 {
        assert_eq!(
            b.open_handle(&BASKET, &basket, None).await.unwrap(),
            "basket-1"
        );
    }
    // A reusable handle presented where the kind is single-use has no use to spend.
    let reusable = b
        .seal_handle(&HandleSpec::new("voucher"), "10% off", None)
        .unwrap();
    assert_refused(
        b.open_handle(&voucher, &reusable, None).await,
        RejectReason::Replayed,
    );
}

/// A fleet's seen-store at its worst moment: every claim belongs to an instance that died (so
/// `first_use` hands it over), and no done mark can be written (Redis timed out). Its `spend`
/// is the one atomic write a fleet store makes for handles.
#[derive(Default)]
struct OwnerDied {
    done: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl mcp_state_seal::SeenStore for OwnerDied {
    fn first_use<'a>(
        &'a self,
        jti: &'a str,
        _expires_at: f64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        let done = self.done.lock().unwrap().contains(jti);
        Box::pin(async move { !done })
    }

    fn spend<'a>(
        &'a self,
        jti: &'a str,
        _expires_at: f64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        let fresh = self.done.lock().unwrap().insert(jti.to_owned());
        Box::pin(async move { fresh })
    }
}

/// Security review X12: a single-use handle is spent in one step, never claimed then marked
/// done, so a done mark that failed and a claim taken over after its owner died cannot open
/// it twice.
#[tokio::test]
async fn a_single_use_handle_is_spent_at_once_and_never_taken_over() {
    let b = RequestStateSecurity::keys([KEY])
        .unwrap()
        .replay_guard(OwnerDied::default())
        .bind(Some("shop"))
        .unwrap();
    let voucher = HandleSpec::new("voucher").single_use();
    let handle = b.seal_handle(&voucher, "10% off", None).unwrap();
    assert_eq!(
        b.open_handle(&voucher, &handle, None).await.unwrap(),
        "10% off"
    );
    assert_refused(
        b.open_handle(&voucher, &handle, None).await,
        RejectReason::Replayed,
    );
}

#[test]
fn a_single_use_handle_needs_the_replay_guard() {
    let err = shop("shop")
        .seal_handle(&HandleSpec::new("voucher").single_use(), "x", None)
        .unwrap_err();
    assert!(
        matches!(err, SealError::SingleUseWithoutReplayGuard),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "could not seal a single-use handle: the policy has no replay guard to remember its \
         use (RequestStateSecurity::replay_guard)"
    );
}
