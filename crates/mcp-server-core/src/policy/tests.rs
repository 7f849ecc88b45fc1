use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::rate::take_token;
use super::*;

#[test]
fn a_bucket_spends_its_burst_then_refills_at_its_rate() {
    let rate = Rate::new(3, Duration::from_secs(3));
    let mut tokens = 3.0;
    for _ in 0..3 {
        let admission;
        (tokens, admission) = take_token(tokens, Duration::ZERO, rate);
        assert_eq!(admission, Admission::Allowed);
    }
    let (left, refused) = take_token(tokens, Duration::from_millis(250), rate);
    assert_eq!(
        refused,
        Admission::Refused {
            retry_after: Duration::from_millis(750)
        }
    );
    // A second later one token is back, never more than the bucket holds.
    assert_eq!(
        take_token(left, Duration::from_millis(750), rate).1,
        Admission::Allowed
    );
    assert_eq!(take_token(0.0, Duration::from_secs(3600), rate).0, 2.0);
}

#[test]
fn memory_rates_make_room_from_quiet_callers_and_refuse_beyond_that() {
    let store = MemoryRates::with_capacity(2);
    let rate = Rate::new(1, Duration::from_secs(10));
    let t0 = Instant::now();
    assert_eq!(store.take_now("a", rate, t0), Ok(Admission::Allowed));
    assert_eq!(store.take_now("b", rate, t0), Ok(Admission::Allowed));
    // Both buckets are spent: a third caller finds no room.
    let full = store.take_now("c", rate, t0 + Duration::from_secs(1));
    assert_eq!(
        full,
        Err(RateStoreError(
            "the in-memory rate store holds its 2 buckets, all in use".into()
        ))
    );
    // Once "a" and "b" refilled they are dropped for a new caller.
    assert_eq!(
        store.take_now("c", rate, t0 + Duration::from_secs(11)),
        Ok(Admission::Allowed)
    );
}

/// Appends its name on the way in.
struct Mark(&'static str, std::sync::Arc<Mutex<Vec<&'static str>>>);

impl Layer for Mark {
    fn call<'a>(&'a self, _call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        self.1.lock().unwrap().push(self.0);
        next.run()
    }
}

#[tokio::test]
async fn layers_run_server_then_method_then_target_each_in_order_added() {
    let seen: std::sync::Arc<Mutex<Vec<&'static str>>> = Default::default();
    let mark = |name| Arc::new(Mark(name, seen.clone())) as Arc<dyn Layer>;
    let mut policy = Policy::default();
    policy.add_target("tools/call", "t".into(), mark("target 1"));
    policy.add_method("tools/call".into(), mark("method"));
    policy.add_everywhere(mark("server 1"));
    policy.add_everywhere(mark("server 2"));
    policy.add_target_first("tools/call", "t".into(), mark("declared scopes"));
    policy.add_method("tools/list".into(), mark("other method"));
    let transport = crate::TransportContext::default();
    let id = RequestId::Number(1);
    let mut call = Call::new(&id, "tools/call", Era::Modern, &transport);
    call.target = Some("t".into());
    let endpoint: BoxFuture<'_, Reply> =
        Box::pin(async { Ok(RawValue::from_string("{}".into()).unwrap()) });
    let own = policy.target_layers("tools/call", Some("t"));
    let reply = policy.run(&call, own, endpoint).await;
    assert_eq!(reply.unwrap().get(), "{}");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "server 1",
            "server 2",
            "method",
            "declared scopes",
            "target 1"
        ]
    );
}
