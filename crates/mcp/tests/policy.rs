//! Per-tool policy through the facade, in both eras: a timeout stops the handler, limits
//! refuse with their documented errors, the audit log records who called what and nothing
//! they sent, declared scopes refuse a token without them and can hide the tool, and a layer
//! on a tool the server lacks is a build error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::policy::{Audit, AuditOutcome, AuditRecord, ConcurrencyLimit, Rate, RateLimit, Timeout};
use mcp::seal::Principal;
use mcp::{McpServer, MemoryConnection, Service, ToolDef, TransportContext};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Counts the handlers of one `slow` tool that started and that were dropped (stopped)
/// unfinished. Each test that uses `slow` makes its own, so tests running side by side in this
/// binary never count each other's calls.
#[derive(Default)]
struct SlowCounts {
    started: AtomicUsize,
    stopped: AtomicUsize,
}

/// Counts a stop when dropped while it still holds its counts.
struct StoppedOnDrop(Option<Arc<SlowCounts>>);

impl Drop for StoppedOnDrop {
    fn drop(&mut self) {
        if let Some(counts) = &self.0 {
            counts.stopped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A tool `slow` that takes an hour, counting into `counts`.
fn slow(counts: &Arc<SlowCounts>) -> ToolDef {
    let counts = Arc::clone(counts);
    ToolDef::new("slow")
        .description("Takes an hour.")
        .handler(move |_ctx, _: Value| {
            let counts = Arc::clone(&counts);
            async move {
                counts.started.fetch_add(1, Ordering::SeqCst);
                let mut guard = StoppedOnDrop(Some(counts));
                tokio::time::sleep(Duration::from_secs(3600)).await;
                guard.0 = None;
                "finished"
            }
        })
}

/// A tool `wait` that counts its starts into `started` and returns once `gate` is open.
fn gated_wait(started: &Arc<AtomicUsize>, gate: &watch::Receiver<bool>) -> ToolDef {
    let started = Arc::clone(started);
    let gate = gate.clone();
    ToolDef::new("wait")
        .description("Waits until the gate opens.")
        .handler(move |_ctx, _: Value| {
            let started = Arc::clone(&started);
            let mut gate = gate.clone();
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                let _ = gate.wait_for(|open| *open).await;
                "waited"
            }
        })
}

/// Waits (up to 10 s) until `done` holds: what a test waits for, not a guess of how long.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}, within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Echoes a secret note.
#[mcp::tool]
async fn note(text: String) -> String {
    format!("noted {text}")
}

/// Buys the basket.
#[mcp::tool(scopes = ["shop.checkout"])]
async fn checkout() -> String {
    "bought".into()
}

fn user(name: &str, scopes: Option<&[&str]>) -> TransportContext {
    TransportContext {
        principal: Some(Principal::new("shop-app").subject(name)),
        scopes: scopes.map(|s| s.iter().map(|s| (*s).to_owned()).collect()),
        ..TransportContext::default()
    }
}

async fn ask(conn: &mut MemoryConnection, id: u64, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    conn.send_raw(request.to_string());
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), conn.recv())
            .await
            .expect("the server answered within 10 s")
            .expect("the connection is open")
            .to_value();
        if message.get("method").is_none() && message["id"] == json!(id) {
            return message;
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Era {
    Modern,
    Legacy,
}

/// A connection as `transport` on `era` (a 2025-11-25 one initialized).
async fn connect(service: &Service, era: Era, transport: TransportContext) -> MemoryConnection {
    let mut conn = MemoryConnection::connect(service, transport);
    if let Era::Legacy = era {
        let init = ask(
            &mut conn,
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
        assert!(init.get("result").is_some(), "{init}");
        conn.send_raw(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    }
    conn
}

fn params(era: Era, mut params: Value) -> Value {
    if let Era::Modern = era {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
    }
    params
}

async fn call(conn: &mut MemoryConnection, era: Era, id: u64, tool: &str, args: Value) -> Value {
    let p = params(era, json!({"name": tool, "arguments": args}));
    ask(conn, id, "tools/call", p).await
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text result: {reply}"))
}

#[tokio::test]
async fn a_timeout_stops_the_handler_and_answers_32001() {
    let counts = Arc::new(SlowCounts::default());
    let service = McpServer::new("shop")
        .tool(slow(&counts))
        .tool(note)
        .method_layer("tools/call", Timeout::new(Duration::from_millis(200)))
        .into_service()
        .unwrap();
    for (i, era) in [Era::Modern, Era::Legacy].into_iter().enumerate() {
        let mut conn = connect(&service, era, TransportContext::default()).await;
        let before = counts.stopped.load(Ordering::SeqCst);
        let reply = call(&mut conn, era, 1, "slow", json!({})).await;
        assert_eq!(
            reply["error"],
            json!({"code": -32001,
                   "message": "tool 'slow' did not finish within 200 ms; the server stopped it",
                   "data": {"timeoutMs": 200}}),
            "{era:?}: {reply}"
        );
        assert_eq!(counts.started.load(Ordering::SeqCst), i + 1);
        assert_eq!(
            counts.stopped.load(Ordering::SeqCst),
            before + 1,
            "{era:?}: the handler was dropped, not left running"
        );
        // A quick call under the same layer is untouched.
        let quick = call(&mut conn, era, 2, "note", json!({"text": "hi"})).await;
        assert_eq!(text(&quick), "noted hi");
    }
}

#[tokio::test]
async fn a_concurrency_limit_refuses_the_call_beyond_it() {
    for era in [Era::Modern, Era::Legacy] {
        let started = Arc::new(AtomicUsize::new(0));
        let (open, gate) = watch::channel(false);
        let service = McpServer::new("shop")
            .tool(gated_wait(&started, &gate))
            .tool_layer("wait", ConcurrencyLimit::new(1))
            .into_service()
            .unwrap();
        let mut first = connect(&service, era, TransportContext::default()).await;
        let mut second = connect(&service, era, TransportContext::default()).await;
        let p = params(era, json!({"name": "wait", "arguments": {}}));
        first.send_raw(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": p}).to_string(),
        );
        until("the first call holds the place", || {
            started.load(Ordering::SeqCst) == 1
        })
        .await;
        // Were the limit not applied, this call would run and wait at the closed gate.
        let refused = tokio::time::timeout(
            Duration::from_secs(10),
            call(&mut second, era, 2, "wait", json!({})),
        )
        .await
        .expect("the second call was not refused: it ran past the limit");
        assert_eq!(
            refused["error"],
            json!({"code": -32029,
                   "message": "tool 'wait' is already running 1 at once; try again when one finished",
                   "data": {"limit": "concurrency", "max": 1}}),
            "{era:?}: {refused}"
        );
        assert_eq!(
            started.load(Ordering::SeqCst),
            1,
            "the refused call never ran"
        );
        // The first call's answer (id 1) comes once the gate opens: read it.
        open.send_replace(true);
        let answer = loop {
            let m = first.recv().await.unwrap().to_value();
            if m["id"] == json!(1) {
                break m;
            }
        };
        assert_eq!(text(&answer), "waited", "{era:?}");
        let again = call(&mut second, era, 3, "wait", json!({})).await;
        assert_eq!(text(&again), "waited", "{era:?}: the place was given back");
    }
}

#[tokio::test]
async fn a_rate_limit_is_per_principal_and_says_when_to_retry() {
    let service = McpServer::new("shop")
        .tool(note)
        .tool_layer(
            "note",
            RateLimit::per_principal("notes", Rate::new(2, Duration::from_secs(60))),
        )
        .into_service()
        .unwrap();
    let mut alice = connect(&service, Era::Modern, user("alice", None)).await;
    let mut alice_legacy = connect(&service, Era::Legacy, user("alice", None)).await;
    let mut bob = connect(&service, Era::Legacy, user("bob", None)).await;
    assert_eq!(
        text(&call(&mut alice, Era::Modern, 1, "note", json!({"text": "a"})).await),
        "noted a"
    );
    assert_eq!(
        text(
            &call(
                &mut alice_legacy,
                Era::Legacy,
                2,
                "note",
                json!({"text": "b"})
            )
            .await
        ),
        "noted b"
    );
    // Alice's bucket is spent across both eras; Bob's is his own.
    let refused = call(&mut alice, Era::Modern, 3, "note", json!({"text": "c"})).await;
    assert_eq!(refused["error"]["code"], -32029, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], "rate");
    let retry = refused["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(
        (29_000..=30_000).contains(&retry),
        "one token refills in 30 s: {retry}"
    );
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("rate limit 'notes' allows 2 calls per 60 s; try again in "),
        "{message}"
    );
    assert_eq!(
        text(&call(&mut bob, Era::Legacy, 4, "note", json!({"text": "d"})).await),
        "noted d"
    );
}

/// Security review X4: anonymous callers are told apart by their address (an IPv6 client by
/// its /64), and a user who registers more OAuth clients does not get more calls.
#[tokio::test]
async fn a_rate_limit_keys_anonymous_callers_by_address_and_a_user_across_clients() {
    let service = McpServer::new("shop")
        .tool(note)
        .tool_layer(
            "note",
            RateLimit::per_principal("notes", Rate::new(1, Duration::from_secs(60))),
        )
        .into_service()
        .unwrap();
    let from = |address: &str| TransportContext {
        peer: Some(address.parse().unwrap()),
        ..TransportContext::default()
    };
    let args = json!({"text": "a"});
    let mut a = connect(&service, Era::Modern, from("203.0.113.5")).await;
    assert_eq!(
        text(&call(&mut a, Era::Modern, 1, "note", args.clone()).await),
        "noted a"
    );
    let refused = call(&mut a, Era::Modern, 2, "note", args.clone()).await;
    assert_eq!(refused["error"]["code"], -32029, "{refused}");
    // Another anonymous client still gets in: A spent its own bucket, not everybody's.
    let mut b = connect(&service, Era::Legacy, from("198.51.100.9")).await;
    assert_eq!(
        text(&call(&mut b, Era::Legacy, 3, "note", args.clone()).await),
        "noted a"
    );
    // Two addresses of one IPv6 /64 are one client.
    let mut v6 = connect(&service, Era::Modern, from("2001:db8:1:2::1")).await;
    assert_eq!(
        text(&call(&mut v6, Era::Modern, 4, "note", args.clone()).await),
        "noted a"
    );
    let mut v6_other = connect(&service, Era::Modern, from("2001:db8:1:2:ffff::9")).await;
    let refused = call(&mut v6_other, Era::Modern, 5, "note", args.clone()).await;
    assert_eq!(refused["error"]["code"], -32029, "{refused}");
    // One user through two self-registered clients: one bucket.
    let through = |client: &str| TransportContext {
        principal: Some(
            Principal::new(client)
                .issuer("https://issuer.example")
                .subject("dave"),
        ),
        ..TransportContext::default()
    };
    let mut first = connect(&service, Era::Modern, through("client-1")).await;
    assert_eq!(
        text(&call(&mut first, Era::Modern, 6, "note", args.clone()).await),
        "noted a"
    );
    let mut second = connect(&service, Era::Modern, through("client-2")).await;
    let refused = call(&mut second, Era::Modern, 7, "note", args.clone()).await;
    assert_eq!(refused["error"]["code"], -32029, "{refused}");
    // `per_client` counts each client apart, as before.
    let per_client = McpServer::new("shop")
        .tool(note)
        .tool_layer(
            "note",
            RateLimit::per_principal("notes", Rate::new(1, Duration::from_secs(60))).per_client(),
        )
        .into_service()
        .unwrap();
    let mut first = connect(&per_client, Era::Modern, through("client-1")).await;
    assert_eq!(
        text(&call(&mut first, Era::Modern, 8, "note", args.clone()).await),
        "noted a"
    );
    let mut second = connect(&per_client, Era::Modern, through("client-2")).await;
    assert_eq!(
        text(&call(&mut second, Era::Modern, 9, "note", args).await),
        "noted a"
    );
}

#[tokio::test]
async fn the_audit_log_records_who_called_what_and_nothing_they_sent() {
    let records: Arc<Mutex<Vec<AuditRecord>>> = Arc::default();
    let sink = records.clone();
    let service = McpServer::new("shop")
        .tool(note)
        .tool(checkout)
        .layer(Audit::new(move |r| sink.lock().unwrap().push(r.clone())))
        .into_service()
        .unwrap();
    for era in [Era::Modern, Era::Legacy] {
        records.lock().unwrap().clear();
        let mut conn = connect(&service, era, user("carol", Some(&[]))).await;
        call(&mut conn, era, 1, "note", json!({"text": "s3cret-note"})).await;
        call(&mut conn, era, 2, "checkout", json!({})).await;
        call(&mut conn, era, 3, "nope", json!({})).await;
        let records = records.lock().unwrap();
        let seen: Vec<_> = records
            .iter()
            .filter(|r| r.method == "tools/call")
            .map(|r| (r.target.clone().unwrap(), r.outcome))
            .collect();
        assert_eq!(
            seen,
            [
                ("note".to_owned(), AuditOutcome::Complete),
                ("checkout".to_owned(), AuditOutcome::Error(-32003)),
                ("nope".to_owned(), AuditOutcome::Error(-32602)),
            ],
            "{era:?}"
        );
        for r in records.iter() {
            assert_eq!(
                r.principal.as_ref().unwrap().subject.as_deref(),
                Some("carol")
            );
            assert!(!format!("{r:?}").contains("s3cret"), "{r:?}");
        }
    }
}

#[tokio::test]
async fn declared_scopes_refuse_a_token_without_them_and_can_hide_the_tool() {
    let build = |hide: bool| {
        McpServer::new("shop")
            .tool(note)
            .tool(checkout)
            .hide_unauthorized_tools(hide)
            .into_service()
            .unwrap()
    };
    let service = build(false);
    assert_eq!(
        service.required_scopes("tools/call", Some("checkout")),
        ["shop.checkout"]
    );
    assert!(
        service
            .required_scopes("tools/call", Some("note"))
            .is_empty()
    );
    for era in [Era::Modern, Era::Legacy] {
        let mut without = connect(&service, era, user("dan", Some(&["shop.browse"]))).await;
        let refused = call(&mut without, era, 1, "checkout", json!({})).await;
        assert_eq!(
            refused["error"],
            json!({"code": -32003,
                   "message": "tool 'checkout' needs the scope shop.checkout, which the request's access token does not grant",
                   "data": {"requiredScopes": ["shop.checkout"], "missingScopes": ["shop.checkout"]}}),
            "{era:?}: {refused}"
        );
        // No token at all: refused too (fail closed).
        let mut anonymous = connect(&service, era, TransportContext::default()).await;
        let refused = call(&mut anonymous, era, 2, "checkout", json!({})).await;
        assert_eq!(
            refused["error"]["message"],
            "tool 'checkout' needs the scope shop.checkout, and this request carries no access token"
        );
        let mut with = connect(&service, era, user("dan", Some(&["shop.checkout"]))).await;
        assert_eq!(
            text(&call(&mut with, era, 3, "checkout", json!({})).await),
            "bought"
        );
        // Listed to everyone unless the server hides it.
        let list = ask(&mut without, 4, "tools/list", params(era, json!({}))).await;
        assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 2);
    }
    let hiding = build(true);
    for era in [Era::Modern, Era::Legacy] {
        let names = |list: &Value| -> Vec<String> {
            list["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let mut without = connect(&hiding, era, user("erin", Some(&[]))).await;
        let list = ask(&mut without, 1, "tools/list", params(era, json!({}))).await;
        assert_eq!(names(&list), ["note"], "{era:?}");
        if let Era::Modern = era {
            assert_eq!(list["result"]["cacheScope"], "private");
        }
        let mut with = connect(&hiding, era, user("erin", Some(&["shop.checkout"]))).await;
        let list = ask(&mut with, 2, "tools/list", params(era, json!({}))).await;
        assert_eq!(names(&list), ["note", "checkout"], "{era:?}");
    }
}

/// Security review X11: a scoped prompt's completions and a scoped resource's subscription
/// need the prompt's and the resource's scopes; without them the caller gets -32003, as for
/// the prompt and the read themselves.
#[tokio::test]
async fn completions_and_subscriptions_need_the_scopes_of_what_they_name() {
    let accounts = mcp::PromptDef::new("accounts")
        .argument("account", None, true)
        .scopes(["bank.read"])
        .complete("account", |typed| {
            ["acct-001-alice", "acct-002-bob"]
                .iter()
                .filter(|a| a.starts_with(typed))
                .map(|a| (*a).to_owned())
                .collect()
        })
        .handler(|_ctx, _args, _resolved| async { "the accounts".to_owned() });
    let ledger = mcp::ResourceDef::new("bank://ledger", "ledger")
        .scopes(["bank.read"])
        .handler(|_ctx| async { "the ledger".to_owned() });
    let service = McpServer::new("bank")
        .prompt(accounts)
        .resource(ledger)
        .into_service()
        .unwrap();
    assert_eq!(
        service.required_scopes("completion/complete", Some("accounts")),
        ["bank.read"]
    );
    let complete = json!({"ref": {"type": "ref/prompt", "name": "accounts"},
                          "argument": {"name": "account", "value": "acct"}});
    for era in [Era::Modern, Era::Legacy] {
        let mut without = connect(&service, era, user("mallory", Some(&[]))).await;
        let refused = ask(
            &mut without,
            1,
            "completion/complete",
            params(era, complete.clone()),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32003, "{era:?}: {refused}");
        assert_eq!(
            refused["error"]["message"],
            "'completion/complete' needs the scope bank.read, which the request's access token does not grant",
            "{era:?}"
        );
        let mut with = connect(&service, era, user("alice", Some(&["bank.read"]))).await;
        let completed = ask(
            &mut with,
            2,
            "completion/complete",
            params(era, complete.clone()),
        )
        .await;
        assert_eq!(
            completed["result"]["completion"]["values"],
            json!(["acct-001-alice", "acct-002-bob"]),
            "{era:?}: {completed}"
        );
    }
    let subscribe = json!({"uri": "bank://ledger"});
    let mut without = connect(&service, Era::Legacy, user("mallory", Some(&[]))).await;
    let refused = ask(
        &mut without,
        3,
        "resources/subscribe",
        params(Era::Legacy, subscribe.clone()),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32003, "{refused}");
    let mut with = connect(&service, Era::Legacy, user("alice", Some(&["bank.read"]))).await;
    let subscribed = ask(
        &mut with,
        4,
        "resources/subscribe",
        params(Era::Legacy, subscribe),
    )
    .await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
}

#[test]
fn a_layer_on_a_tool_the_server_lacks_is_a_build_error() {
    let error = McpServer::new("shop")
        .tool(note)
        .tool_layer("chekout", ConcurrencyLimit::new(1))
        .into_service()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "a layer was added to the tool 'chekout', which this server does not have"
    );
}
