//! The response cache: a repeated 2026-07-28 list is answered without a request while its
//! `ttlMs` lasts, a `private` result never serves another authorization (a `public` one
//! does), `Refresh` and `Bypass` go to the server, and a list-changed or resource-updated
//! notification drops what it makes stale. Request counts come from the proxy in front of the
//! server (`mcp-faults`), or from a scripted server.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{BoxFuture, CacheMode, CacheStore, Client, MemoryCache, Mode, Transport};
use mcp_faults::{Harness, TestServer};
use mcp_server_core::CacheHints;
use mcp_transport_http::HttpTransport;
use mcp_types::JsonRpcMessage;
use mcp_types::common::CacheScope;
use serde_json::{Value, json};
use tokio::sync::mpsc;

async fn within<T>(limit: Duration, test: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, test)
        .await
        .expect("the test ran past its deadline")
}

async fn harness(ttl_ms: u64, scope: CacheScope) -> Harness {
    Harness::with(TestServer::new().cache_hints(CacheHints { ttl_ms, scope })).await
}

async fn client(harness: &Harness, token: &str, store: &Arc<MemoryCache>) -> Client {
    Client::builder()
        .cache(store.clone())
        .connect(
            HttpTransport::new(&harness.url())
                .unwrap()
                .bearer(token)
                .unwrap(),
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_list_is_answered_from_the_cache_within_its_ttl() {
    within(Duration::from_secs(10), async {
        let harness = harness(400, CacheScope::Private).await;
        let store = Arc::new(MemoryCache::default());
        let hits = Arc::new(Mutex::new(Vec::new()));
        let seen = hits.clone();
        let alice = Client::builder()
            .cache(store.clone())
            .on_cache_hit(move |method| seen.lock().unwrap().push(method.to_owned()))
            .connect(
                HttpTransport::new(&harness.url())
                    .unwrap()
                    .bearer("alice")
                    .unwrap(),
            )
            .await
            .unwrap();
        for _ in 0..3 {
            assert_eq!(alice.list_tools(None).await.unwrap().tools.len(), 5);
        }
        assert_eq!(
            harness.proxy.count("tools/list"),
            1,
            "two of three from the cache"
        );
        assert_eq!(*hits.lock().unwrap(), ["tools/list", "tools/list"]);
        // Refresh asks the server and keeps its answer; Bypass asks and keeps nothing.
        alice
            .with_cache_mode(CacheMode::Refresh)
            .list_tools(None)
            .await
            .unwrap();
        alice
            .with_cache_mode(CacheMode::Bypass)
            .list_tools(None)
            .await
            .unwrap();
        assert_eq!(harness.proxy.count("tools/list"), 3);
        alice.list_tools(None).await.unwrap();
        assert_eq!(harness.proxy.count("tools/list"), 3);
        // Stale after ttlMs.
        tokio::time::sleep(Duration::from_millis(450)).await;
        alice.list_tools(None).await.unwrap();
        assert_eq!(harness.proxy.count("tools/list"), 4);
        // Calls are never cached.
        alice
            .call_tool("lookup", json!({"key": "a"}))
            .await
            .unwrap();
        alice
            .call_tool("lookup", json!({"key": "a"}))
            .await
            .unwrap();
        assert_eq!(harness.counters.executed("lookup"), 2);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_result_never_serves_another_authorization_and_a_public_one_does() {
    within(Duration::from_secs(10), async {
        let private = harness(60_000, CacheScope::Private).await;
        let store = Arc::new(MemoryCache::default());
        let alice = client(&private, "alice", &store).await;
        let bob = client(&private, "bob", &store).await;
        alice.list_tools(None).await.unwrap();
        alice.list_tools(None).await.unwrap();
        bob.list_tools(None).await.unwrap();
        bob.list_tools(None).await.unwrap();
        assert_eq!(
            private.proxy.count("tools/list"),
            2,
            "one each, never shared"
        );

        let public = harness(60_000, CacheScope::Public).await;
        let store = Arc::new(MemoryCache::default());
        let alice = client(&public, "alice", &store).await;
        let bob = client(&public, "bob", &store).await;
        alice.list_tools(None).await.unwrap();
        bob.list_tools(None).await.unwrap();
        assert_eq!(public.proxy.count("tools/list"), 1, "public: shared");
        // A 2025-11-25 session has no caching hints: nothing is kept.
        let legacy = Client::builder()
            .mode(Mode::Legacy)
            .cache(store.clone())
            .connect(HttpTransport::new(&public.url()).unwrap())
            .await
            .unwrap();
        legacy.list_tools(None).await.unwrap();
        legacy.list_tools(None).await.unwrap();
        assert_eq!(public.proxy.count("tools/list"), 3);
    })
    .await;
}

/// A 2026-07-28 server the test drives: it answers `tools/list` and `resources/read` with a
/// one-minute `ttlMs` and counts them; `push` sends it a notification to deliver.
struct Scripted {
    lists: Arc<AtomicUsize>,
    reads: Arc<AtomicUsize>,
    inbound: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
}

impl Transport for Scripted {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let value = message.to_value();
        let result = match value["method"].as_str() {
            Some("tools/list") => {
                self.lists.fetch_add(1, Ordering::SeqCst);
                Some(
                    json!({"resultType": "complete", "tools": [], "ttlMs": 60_000, "cacheScope": "public"}),
                )
            }
            Some("resources/read") => {
                self.reads.fetch_add(1, Ordering::SeqCst);
                let uri = value["params"]["uri"].clone();
                Some(
                    json!({"resultType": "complete", "contents": [{"uri": uri, "text": "t"}], "ttlMs": 60_000, "cacheScope": "public"}),
                )
            }
            _ => None,
        };
        if let Some(result) = result {
            let reply = json!({"jsonrpc": "2.0", "id": value["id"], "result": result});
            let _ = self
                .inbound
                .send(JsonRpcMessage::from_value(&reply).unwrap());
        }
        Box::pin(async { Ok(()) })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }
}

fn notification(method: &str, params: Value) -> JsonRpcMessage {
    JsonRpcMessage::from_value(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .unwrap()
}

#[tokio::test]
async fn a_change_notification_drops_what_it_makes_stale() {
    within(Duration::from_secs(5), async {
        let (inbound, rx) = mpsc::unbounded_channel();
        let (lists, reads) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let scripted = Scripted {
            lists: lists.clone(),
            reads: reads.clone(),
            inbound: inbound.clone(),
            rx: tokio::sync::Mutex::new(rx),
        };
        let store = Arc::new(MemoryCache::default());
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .cache(store.clone())
            .connect(scripted)
            .await
            .unwrap();
        client.list_tools(None).await.unwrap();
        client.read_resource("file:///a").await.unwrap();
        client.read_resource("file:///b").await.unwrap();
        client.list_tools(None).await.unwrap();
        client.read_resource("file:///a").await.unwrap();
        assert_eq!(
            (lists.load(Ordering::SeqCst), reads.load(Ordering::SeqCst)),
            (1, 2)
        );
        // The notifications go through the client's reader, before the next request.
        inbound
            .send(notification("notifications/tools/list_changed", json!({})))
            .unwrap();
        inbound
            .send(notification(
                "notifications/resources/updated",
                json!({"uri": "file:///a"}),
            ))
            .unwrap();
        while store.len() > 1 {
            tokio::task::yield_now().await;
        }
        client.list_tools(None).await.unwrap();
        client.read_resource("file:///a").await.unwrap();
        client.read_resource("file:///b").await.unwrap();
        assert_eq!(
            (lists.load(Ordering::SeqCst), reads.load(Ordering::SeqCst)),
            (2, 3),
            "b was still fresh"
        );
        let key = mcp_client::cache::CacheKey {
            method: "resources/read".into(),
            params: r#"{"uri":"file:///b"}"#.into(),
            principal: None,
        };
        assert!(store.get(&key, std::time::Instant::now()).is_some());
    })
    .await;
}
