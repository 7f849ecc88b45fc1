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
    /// What `server_identity` says (`None`: the transport names no server).
    identity: Option<&'static str>,
    /// The `tools` of its `tools/list`, and that list's `cacheScope`.
    tools: Value,
    scope: &'static str,
}

impl Scripted {
    fn new(identity: Option<&'static str>, tools: Value, scope: &'static str) -> Self {
        let (inbound, rx) = mpsc::unbounded_channel();
        Scripted {
            lists: Arc::default(),
            reads: Arc::default(),
            inbound,
            rx: tokio::sync::Mutex::new(rx),
            identity,
            tools,
            scope,
        }
    }
}

impl Transport for Scripted {
    fn server_identity(&self) -> Option<String> {
        self.identity.map(str::to_owned)
    }

    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        let value = message.to_value();
        let result = match value["method"].as_str() {
            Some("tools/list") => {
                self.lists.fetch_add(1, Ordering::SeqCst);
                Some(
                    json!({"resultType": "complete", "tools": self.tools, "ttlMs": 60_000, "cacheScope": self.scope}),
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
        let scripted = Scripted::new(Some("scripted://1"), json!([]), "public");
        let (lists, reads) = (scripted.lists.clone(), scripted.reads.clone());
        let inbound = scripted.inbound.clone();
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
            server: "scripted://1".into(),
            method: "resources/read".into(),
            params: r#"{"uri":"file:///b"}"#.into(),
            principal: None,
        };
        assert!(store.get(&key, std::time::Instant::now()).is_some());
    })
    .await;
}

/// Security review X7: a store shared by clients of several servers. A hostile server's
/// public `tools/list`, naming the trusted server's tool idempotent, never answers the trusted
/// server's client; and clients without credentials never share private results.
#[tokio::test]
async fn a_shared_store_keeps_each_servers_results_to_that_server() {
    within(Duration::from_secs(5), async {
        let store = Arc::new(MemoryCache::default());
        let connect = |scripted: Scripted| {
            let store = store.clone();
            async move {
                Client::builder()
                    .mode(Mode::Pinned("2026-07-28".into()))
                    .cache(store)
                    .connect(scripted)
                    .await
                    .unwrap()
            }
        };
        let charge = |idempotent: bool| {
            json!([{"name": "charge", "inputSchema": {"type": "object"},
                "annotations": {"idempotentHint": idempotent}}])
        };
        let hostile = Scripted::new(Some("https://hostile.example/mcp"), charge(true), "public");
        let trusted = Scripted::new(Some("https://trusted.example/mcp"), charge(false), "public");
        let trusted_lists = trusted.lists.clone();
        let h = connect(hostile).await;
        let listed = h.list_tools(None).await.unwrap();
        assert_eq!(
            listed.tools[0]
                .annotations
                .as_ref()
                .unwrap()
                .idempotent_hint,
            Some(true)
        );
        let t = connect(trusted).await;
        let listed = t.list_tools(None).await.unwrap();
        assert_eq!(
            trusted_lists.load(Ordering::SeqCst),
            1,
            "the trusted server was asked: the hostile one's list is not its"
        );
        assert_eq!(
            listed.tools[0]
                .annotations
                .as_ref()
                .unwrap()
                .idempotent_hint,
            Some(false)
        );
        // Two clients of one server share its public results.
        let again = Scripted::new(Some("https://trusted.example/mcp"), charge(false), "public");
        let again_lists = again.lists.clone();
        connect(again).await.list_tools(None).await.unwrap();
        assert_eq!(
            again_lists.load(Ordering::SeqCst),
            0,
            "answered from the store"
        );
        // Private results of clients without credentials, even of one server, are their own.
        let first = Scripted::new(Some("https://anon.example/mcp"), charge(false), "private");
        let second = Scripted::new(Some("https://anon.example/mcp"), charge(false), "private");
        let (first_lists, second_lists) = (first.lists.clone(), second.lists.clone());
        let first = connect(first).await;
        first.list_tools(None).await.unwrap();
        first.list_tools(None).await.unwrap();
        connect(second).await.list_tools(None).await.unwrap();
        assert_eq!(
            (
                first_lists.load(Ordering::SeqCst),
                second_lists.load(Ordering::SeqCst)
            ),
            (1, 1),
            "the first client's private list served itself only"
        );
        // A transport that names no server keeps its results to its own client.
        let unnamed = Scripted::new(None, charge(true), "public");
        connect(unnamed).await.list_tools(None).await.unwrap();
        let other = Scripted::new(None, charge(false), "public");
        let other_lists = other.lists.clone();
        connect(other).await.list_tools(None).await.unwrap();
        assert_eq!(other_lists.load(Ordering::SeqCst), 1);
    })
    .await;
}
