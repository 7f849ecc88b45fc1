//! HTTP upstreams: the fault harness's counting server behind `Proxy::http`, in both eras of
//! the caller and of the upstream, a bearer-protected upstream, and cancellation reaching the
//! upstream.
#![cfg(feature = "http")]

mod common;

use std::time::Duration;

use common::{connect, text, tool_names, within};
use mcp_client::{Client, MemoryTransport, Mode};
use mcp_faults::{Harness, TestServer};
use mcp_proxy::{Gateway, Proxy};
use mcp_server_core::seal::Principal;
use mcp_transport_http::{
    AuthError, McpHttpService, ProtectedResource, TokenVerifier, VerifiedToken,
};
use mcp_types::BoxFuture;
use serde_json::json;
use tokio::net::TcpListener;

#[tokio::test]
async fn an_http_upstream_serves_its_tools_under_its_prefix_in_both_eras() {
    within(async {
        for upstream_mode in [Mode::Auto, Mode::Legacy] {
            let harness = Harness::start().await;
            let gateway = Gateway::new("hub")
                .mount(
                    "f",
                    Proxy::http(&harness.url())
                        .unwrap()
                        .mode(upstream_mode.clone()),
                )
                .into_service()
                .await
                .unwrap();
            for caller_mode in [Mode::Auto, Mode::Legacy] {
                let client = connect(&gateway, caller_mode).await;
                let names = tool_names(&client).await;
                assert_eq!(
                    names,
                    ["f_charge", "f_lookup", "f_set", "f_hang", "f_hang_task"]
                );
                let result = client
                    .call_tool("f_lookup", json!({"key": "k"}))
                    .await
                    .unwrap();
                assert_eq!(text(&result), ("value of k", false));
            }
            assert_eq!(harness.counters.executed("lookup"), 2, "{upstream_mode:?}");
            assert_eq!(harness.counters.executed("charge"), 0);
        }
    })
    .await;
}

const RESOURCE: &str = "http://127.0.0.1/mcp";

/// Accepts the token `s3cret` only.
struct OneToken;

impl TokenVerifier for OneToken {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let answer = if token == "s3cret" {
            Ok(VerifiedToken::new(Principal::new("gateway")).audience(RESOURCE))
        } else {
            Err(AuthError::InvalidToken("unknown token".into()))
        };
        Box::pin(async move { answer })
    }
}

/// Serves `endpoint` on a loopback port until the returned sender drops.
async fn serve(endpoint: McpHttpService) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stopped.await;
    }));
    (url, stop)
}

#[tokio::test]
async fn a_bearer_upstream_gets_its_token_and_one_without_it_is_reported_by_name() {
    within(async {
        let server = TestServer::new();
        let endpoint = McpHttpService::new(server.service())
            .bearer_auth(OneToken, ProtectedResource::new(RESOURCE));
        let (url, _stop) = serve(endpoint).await;
        let gateway = Gateway::new("hub")
            .mount("good", Proxy::http(&url).unwrap().bearer("s3cret").unwrap())
            .mount("bad", Proxy::http(&url).unwrap())
            .build()
            .await
            .unwrap();
        assert_eq!(gateway.missing(), ["bad"]);
        let client = connect(&gateway.into_service(), Mode::Auto).await;
        let result = client
            .call_tool("good_lookup", json!({"key": "k"}))
            .await
            .unwrap();
        assert_eq!(text(&result), ("value of k", false));
        let refused = client
            .call_tool("bad_lookup", json!({"key": "k"}))
            .await
            .unwrap();
        assert_eq!(
            text(&refused),
            (
                "upstream 'bad' is unavailable: transport error: HTTP 401 Unauthorized: Unauthorized",
                true
            )
        );
        assert_eq!(server.counters().executed("lookup"), 1);
    })
    .await;
}

#[tokio::test]
async fn a_caller_that_gives_up_cancels_the_call_upstream() {
    within(async {
        let harness = Harness::start().await;
        let gateway = Gateway::new("hub")
            .mount("f", Proxy::http(&harness.url()).unwrap())
            .into_service()
            .await
            .unwrap();
        for mode in [Mode::Auto, Mode::Legacy] {
            let client = Client::builder()
                .mode(mode.clone())
                .request_timeout(Duration::from_millis(300))
                .connect(MemoryTransport::new(&gateway))
                .await
                .unwrap();
            let before = harness.counters.cancelled("hang");
            let e = client.call_tool("f_hang", json!({})).await.unwrap_err();
            assert!(
                matches!(e, mcp_client::ClientError::Timeout { .. }),
                "{e:?}"
            );
            assert!(
                harness
                    .counters
                    .wait_cancelled("hang", before + 1, Duration::from_secs(5))
                    .await,
                "the upstream's hang saw no cancellation ({mode:?})"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_proxys_size_and_tool_caps_hold() {
    within(async {
        let harness = Harness::start().await;
        let gateway = Gateway::new("hub")
            .mount(
                "tiny",
                Proxy::http(&harness.url()).unwrap().max_message_size(200),
            )
            .mount("two", Proxy::http(&harness.url()).unwrap().max_tools(2))
            .build()
            .await
            .unwrap();
        // `tiny` cannot take the answer to its first request; `two` keeps its first two tools.
        assert_eq!(gateway.missing(), ["tiny"]);
        assert_eq!(gateway.tools(), ["two_charge", "two_lookup"]);
        let client = connect(&gateway.into_service(), Mode::Auto).await;
        let refused = client
            .call_tool("tiny_lookup", json!({"key": "k"}))
            .await
            .unwrap();
        assert_eq!(
            text(&refused),
            (
                "upstream 'tiny' is unavailable: transport error: the server's answer is larger \
                 than the 200-byte limit (HttpTransport::max_message_size)",
                true
            )
        );
        let e = client
            .call_tool("two_set", json!({"key": "k"}))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            mcp_client::ClientError::Server(mcp_types::ErrorObject::invalid_params(
                "Unknown tool: two_set"
            ))
        );
        assert_eq!(harness.counters.executed("lookup"), 0);
    })
    .await;
}
