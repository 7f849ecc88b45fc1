//! Failure stays local: upstream `a` is stopped before the gateway starts, and `b` serves; the
//! log names `a`. A binary of its own: what it logs is captured on its thread, and tracing's
//! per-callsite interest is shared by every test of a process.
#![cfg(feature = "http")]

mod common;

use std::time::Duration;

use common::{Logs, connect, text, tool_names, within};
use mcp_client::Mode;
use mcp_faults::Harness;
use mcp_proxy::{Gateway, Proxy};
use serde_json::json;

#[tokio::test(flavor = "current_thread")]
async fn a_stopped_upstream_costs_only_its_own_tools() {
    within(async {
        let (logs, _guard) = Logs::capture();
        let a = Harness::start().await;
        let a_url = a.url();
        drop(a);
        let b = Harness::start().await;
        let gateway = Gateway::new("hub")
            .mount(
                "a",
                Proxy::http(&a_url)
                    .unwrap()
                    .connect_timeout(Duration::from_secs(2)),
            )
            .mount("b", Proxy::http(&b.url()).unwrap())
            .build()
            .await
            .unwrap();
        assert_eq!(gateway.missing(), ["a"]);
        let service = gateway.into_service();
        for mode in [Mode::Auto, Mode::Legacy] {
            let client = connect(&service, mode).await;
            assert_eq!(
                tool_names(&client).await,
                ["b_charge", "b_lookup", "b_set", "b_hang", "b_hang_task"]
            );
            let failed = client
                .call_tool("a_lookup", json!({"key": "k"}))
                .await
                .unwrap();
            assert_eq!(
                text(&failed),
                (
                    "upstream 'a' is unavailable: transport error: HTTP request failed: client \
                     error (Connect): tcp connect error: Connection refused (os error 111); the \
                     client gave up after sending it 4 times",
                    true
                )
            );
            let served = client
                .call_tool("b_lookup", json!({"key": "k"}))
                .await
                .unwrap();
            assert_eq!(text(&served), ("value of k", false));
        }
        let log = logs.text();
        assert!(
            log.contains("tools/list answers without the tools of upstreams that did not answer")
                && log.contains("missing=a"),
            "{log}"
        );
        assert!(
            log.contains("an upstream did not list its tools; the gateway starts without them")
                && log.contains("upstream=\"a\""),
            "{log}"
        );
        assert_eq!(b.counters.executed("lookup"), 2);
    })
    .await;
}
