//! Failure stays local: two HTTP upstreams `a` and `b`; `a` is slow, misbehaving or lost
//! mid-call, and `b` keeps serving through it all (`a` stopped: tests/stopped.rs).
#![cfg(feature = "http")]

mod common;

use std::time::{Duration, Instant};

use common::{connect, listen_for_tool_changes, next_tools_change, text, tool_names, within};
use mcp_client::Mode;
use mcp_faults::{Fault, Harness, Rule};
use mcp_proxy::{Gateway, Proxy};
use serde_json::json;

/// Asserts that the gateway's `tool` (a test server's `lookup`) answers "value of k".
async fn answers_lookup(client: &mcp_client::Client, tool: &str) {
    let result = client.call_tool(tool, json!({"key": "k"})).await.unwrap();
    assert_eq!(text(&result), ("value of k", false), "{tool}");
}

/// A gateway with `a` and `b` mounted over HTTP under their names.
async fn hub(a: &Harness, b: &Harness) -> mcp_server_core::Service {
    Gateway::new("hub")
        .mount("a", Proxy::http(&a.url()).unwrap())
        .mount("b", Proxy::http(&b.url()).unwrap())
        .into_service()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_slow_upstream_times_out_alone_while_the_other_answers_at_once() {
    within(async {
        let a = Harness::start().await;
        let b = Harness::start().await;
        let service = Gateway::new("hub")
            .mount(
                "a",
                Proxy::http(&a.url())
                    .unwrap()
                    .call_timeout(Duration::from_millis(300)),
            )
            .mount("b", Proxy::http(&b.url()).unwrap())
            .into_service()
            .await
            .unwrap();
        a.fault(Rule::tool("lookup", Fault::Delay(Duration::from_secs(5))));
        let client = connect(&service, Mode::Auto).await;
        let started = Instant::now();
        let slow = client.call_tool("a_lookup", json!({"key": "k"}));
        let fast = async {
            let calls = (0..8).map(|i| client.call_tool("b_lookup", json!({"key": i.to_string()})));
            let mut done = Vec::new();
            for call in calls {
                done.push(call.await.unwrap());
            }
            (done, started.elapsed())
        };
        let (slow, (fast, fast_took)) = tokio::join!(slow, fast);
        let slow_took = started.elapsed();
        assert_eq!(
            text(&slow.unwrap()),
            ("upstream 'a' did not answer within 300 ms", true)
        );
        assert!(slow_took >= Duration::from_millis(300), "{slow_took:?}");
        assert!(slow_took < Duration::from_secs(2), "{slow_took:?}");
        assert_eq!(fast.len(), 8);
        assert_eq!(text(&fast[7]), ("value of 7", false));
        assert!(fast_took < Duration::from_secs(2), "{fast_took:?}");
        assert_eq!(b.counters.executed("lookup"), 8);
    })
    .await;
}

#[tokio::test]
async fn a_502_or_a_cut_body_is_a_clear_error_and_the_gateway_keeps_serving() {
    within(async {
        let a = Harness::start().await;
        let b = Harness::start().await;
        let service = hub(&a, &b).await;
        let client = connect(&service, Mode::Auto).await;
        for (fault, why) in [
            (
                Fault::Status {
                    code: 502,
                    retry_after: None,
                },
                "HTTP 502 Bad Gateway: the proxy refused",
            ),
            (
                Fault::TruncateBody { bytes: 12 },
                "HTTP 200 OK: {\"jsonrpc\":\"",
            ),
        ] {
            a.fault(Rule::tool("charge", fault.clone()).times(1));
            let failed = client.call_tool("a_charge", json!({})).await.unwrap();
            assert_eq!(
                text(&failed),
                (
                    format!(
                        "upstream 'a' lost the call (it may have run): {why}; the client did \
                         not send it again, as it is not known to be safe to repeat"
                    )
                    .as_str(),
                    true
                ),
                "{fault:?}"
            );
            answers_lookup(&client, "b_lookup").await;
            // `a` answers again: its connection is made anew.
            answers_lookup(&client, "a_lookup").await;
        }
    })
    .await;
}

/// The connection breaks after the upstream ran the call and before its answer came back
/// (a crash between the two); the upstream then restarts. (A child process killed mid-call
/// is in tests/stdio.rs: the HTTP test server drains the calls in flight when it restarts.)
#[tokio::test]
async fn an_upstream_lost_mid_call_is_named_and_comes_back_with_list_changes() {
    within(async {
        let a = Harness::start().await;
        let b = Harness::start().await;
        let service = hub(&a, &b).await;
        let mut changes = listen_for_tool_changes(&service);
        let client = connect(&service, Mode::Auto).await;
        a.fault(Rule::tool("charge", Fault::ResetAfterForward).times(1));
        let charged = client.call_tool("a_charge", json!({})).await.unwrap();
        assert_eq!(
            text(&charged),
            (
                "upstream 'a' lost the call (it may have run): HTTP request failed: client error \
                 (SendRequest): connection closed before message completed; the client did not \
                 send it again, as it is not known to be safe to repeat",
                true
            )
        );
        assert_eq!(a.counters.executed("charge"), 1);
        a.restart().await;
        // Its tools left the list.
        next_tools_change(&mut changes).await;
        assert_eq!(
            tool_names(&client).await,
            ["b_charge", "b_lookup", "b_set", "b_hang", "b_hang_task"]
        );
        answers_lookup(&client, "b_lookup").await;
        // `a` (restarted) answers a call under its prefix, and its tools are back.
        answers_lookup(&client, "a_lookup").await;
        next_tools_change(&mut changes).await;
        assert_eq!(client.list_all_tools().await.unwrap().len(), 10);
        assert_eq!(a.counters.executed("charge"), 1);
    })
    .await;
}

/// An in-process server whose first `tools/list` fails at once and every later one after 3 s.
fn slow_lister() -> mcp_server_core::Server {
    let lists = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    mcp_server_core::Server::new("slow-lister").on_list_tools(move |_ctx, _params| {
        let n = lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if n > 0 {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            Err::<mcp_types::tools::ListToolsResult, _>(mcp_types::ErrorObject::internal("down"))
        }
    })
}

#[tokio::test]
async fn a_slow_refresh_of_one_upstream_delays_no_failure_of_another() {
    within(async {
        let a = Harness::start().await;
        let service = Gateway::new("hub")
            .mount("a", Proxy::http(&a.url()).unwrap())
            .mount("slow", slow_lister())
            .into_service()
            .await
            .unwrap();
        let client = connect(&service, Mode::Auto).await;
        // The first list starts asking `slow` again in the background (3 s); the failure
        // below must not wait for it (the bound leaves room for a loaded machine).
        assert_eq!(client.list_all_tools().await.unwrap().len(), 5);
        a.fault(Rule::tool("charge", Fault::ResetAfterForward).times(1));
        let started = Instant::now();
        let charged = client.call_tool("a_charge", json!({})).await.unwrap();
        assert!(text(&charged).1);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(client.list_all_tools().await.unwrap().len(), 0);
    })
    .await;
}
