//! Servers of this process mounted into a gateway: names, schemas, routing, collisions,
//! pages and cursors, unknown names, and the caller's principal reaching the mounted server.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Client, ClientError, MemoryTransport, Mode};
use mcp_proxy::{Gateway, GatewayError};
use mcp_server_core::policy::{Call, Layer, Next, Reply};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::seal::Principal;
use mcp_server_core::{BoxFuture, Server, Service, TransportContext};
use mcp_types::tools::{ListToolsResult, Tool, ToolAnnotations};
use mcp_types::{ErrorCode, ErrorObject};
use serde_json::{Value, json};

async fn within<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), what)
        .await
        .expect("the test finished in time")
}

/// A server with one `echo` tool that counts its runs and answers `{name}: {text}`.
fn echo_server(name: &'static str, runs: Arc<AtomicUsize>) -> McpServer {
    let echo = ToolDef::new("echo")
        .description(format!("Echoes, on {name}."))
        .annotations(ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        })
        .handler(move |_ctx, args: Value| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                format!("{name}: {}", args["text"].as_str().unwrap_or(""))
            }
        });
    McpServer::new(name).tool(echo)
}

async fn connect(service: &Service, mode: Mode) -> Client {
    Client::builder()
        .mode(mode)
        .connect(MemoryTransport::new(service))
        .await
        .unwrap()
}

async fn tools_of(service: &Service) -> Vec<Tool> {
    connect(service, Mode::Auto)
        .await
        .list_all_tools()
        .await
        .unwrap()
}

#[tokio::test]
async fn two_servers_under_prefixes_list_their_tools_as_they_are_but_for_the_name() {
    within(async {
        let (a_runs, b_runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let original = tools_of(&echo_server("A", a_runs.clone()).into_service().unwrap()).await;
        let gateway = Gateway::new("hub")
            .mount("a", echo_server("A", a_runs.clone()))
            .mount("b", echo_server("B", b_runs.clone()))
            .into_service()
            .await
            .unwrap();
        for (mode, version) in [(Mode::Auto, "2026-07-28"), (Mode::Legacy, "2025-11-25")] {
            let client = connect(&gateway, mode).await;
            assert_eq!(client.protocol_version().as_deref(), Some(version));
            let tools = client.list_all_tools().await.unwrap();
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["a_echo", "b_echo"]);
            let mut renamed = original[0].clone();
            renamed.name = "a_echo".into();
            assert_eq!(tools[0], renamed);
            assert_eq!(tools[0].description.as_deref(), Some("Echoes, on A."));
            assert_eq!(tools[1].description.as_deref(), Some("Echoes, on B."));

            let before = b_runs.load(Ordering::SeqCst);
            let result = client
                .call_tool("a_echo", json!({"text": "hi"}))
                .await
                .unwrap();
            assert_eq!(result.content[0].as_text(), Some("A: hi"));
            assert_eq!(result.is_error, None);
            assert_eq!(b_runs.load(Ordering::SeqCst), before);
        }
        assert_eq!(a_runs.load(Ordering::SeqCst), 2);
    })
    .await;
}

#[tokio::test]
async fn a_root_mount_keeps_its_names() {
    within(async {
        let runs = Arc::new(AtomicUsize::new(0));
        let gateway = Gateway::new("hub")
            .mount("", echo_server("A", runs.clone()))
            .build()
            .await
            .unwrap();
        assert_eq!(gateway.tools(), ["echo"]);
        let client = connect(&gateway.into_service(), Mode::Auto).await;
        let result = client
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("A: x"));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    })
    .await;
}

#[tokio::test]
async fn collisions_bad_prefixes_and_a_prefix_twice_are_refused_at_build() {
    within(async {
        let runs = Arc::new(AtomicUsize::new(0));
        let e = Gateway::new("hub")
            .mount("", echo_server("A", runs.clone()))
            .mount("", echo_server("B", runs.clone()))
            .build()
            .await
            .unwrap_err();
        let GatewayError::Collision {
            name,
            first,
            second,
        } = &e
        else {
            panic!("expected a collision, got {e:?}");
        };
        assert_eq!(
            (name.as_str(), first.as_str(), second.as_str()),
            ("echo", "(root: A)", "(root: B)")
        );

        // `a` + `_` + `echo` against a root tool named `a_echo`.
        let a_echo = McpServer::new("X")
            .tool(ToolDef::new("a_echo").handler(|_ctx, _args: Value| async { "x" }));
        let e = Gateway::new("hub")
            .mount("", a_echo)
            .mount("a", echo_server("A", runs.clone()))
            .build()
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool \"a_echo\" is exposed by both upstream '(root: X)' and upstream 'a'"
        );

        let e = Gateway::new("hub")
            .mount("bad prefix!", echo_server("A", runs.clone()))
            .build()
            .await
            .unwrap_err();
        assert!(
            matches!(&e, GatewayError::InvalidPrefix { prefix, .. } if prefix == "bad prefix!"),
            "{e:?}"
        );
        let e = Gateway::new("hub")
            .mount("a", echo_server("A", runs.clone()))
            .mount("a", echo_server("B", runs.clone()))
            .build()
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "prefix \"a\" is mounted twice");
        let e = Gateway::new("hub")
            .separator('/')
            .build()
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            GatewayError::InvalidSeparator { separator: '/' }
        ));
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn an_unknown_name_is_invalid_params_naming_it() {
    within(async {
        let gateway = Gateway::new("hub")
            .mount("a", echo_server("A", Arc::default()))
            .into_service()
            .await
            .unwrap();
        for mode in [Mode::Auto, Mode::Legacy] {
            let client = connect(&gateway, mode).await;
            let e = client.call_tool("zz", json!({})).await.unwrap_err();
            assert_eq!(
                e,
                ClientError::Server(ErrorObject::invalid_params("Unknown tool: zz"))
            );
            // Under the prefix, but not one of a's tools: a's own answer, naming the
            // qualified name the caller sent.
            let e = client.call_tool("a_zz", json!({})).await.unwrap_err();
            assert_eq!(
                e,
                ClientError::Server(ErrorObject::invalid_params("Unknown tool: a_zz"))
            );
        }
    })
    .await;
}

/// A server whose `tools/list` fails until `up` is set, with one tool `t`.
fn late_server(up: Arc<std::sync::atomic::AtomicBool>) -> Server {
    let tool: Tool =
        serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}})).unwrap();
    Server::new("late")
        .on_list_tools(move |_ctx, _params| {
            let (up, tool) = (up.load(Ordering::SeqCst), tool.clone());
            async move {
                if !up {
                    return Err(ErrorObject::internal("not yet"));
                }
                Ok(ListToolsResult {
                    tools: vec![tool],
                    ..ListToolsResult::default()
                })
            }
        })
        .on_call_tool(|_ctx, _params| async {
            Ok(mcp_types::Outcome::Complete(
                mcp_types::tools::CallToolResult::text("late answer"),
            ))
        })
}

#[tokio::test]
async fn many_tools_come_in_pages_and_a_cursor_of_an_older_catalog_is_refused() {
    within(async {
        let mut many = McpServer::new("many");
        for i in 0..250 {
            many = many.tool(
                ToolDef::new(format!("t{i:03}")).handler(|_ctx, _args: Value| async { "ok" }),
            );
        }
        let up = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let gateway = Gateway::new("hub")
            .page_size(100)
            .mount("", many)
            .mount("late", late_server(up.clone()))
            .build()
            .await
            .unwrap();
        assert_eq!(gateway.missing(), ["late"]);
        let client = connect(&gateway.into_service(), Mode::Auto).await;
        let first = client.list_tools(None).await.unwrap();
        assert_eq!(first.tools.len(), 100);
        assert_eq!(first.next_cursor.as_deref(), Some("1.100"));
        let second = client.list_tools(first.next_cursor.clone()).await.unwrap();
        assert_eq!(second.tools[0].name, "t100");
        let third = client.list_tools(second.next_cursor).await.unwrap();
        assert_eq!((third.tools.len(), third.next_cursor), (50, None));

        // `late` answers now: a call under its prefix finds its tool (the catalog changes).
        up.store(true, Ordering::SeqCst);
        let result = client.call_tool("late_t", json!({})).await.unwrap();
        assert_eq!(result.content[0].as_text(), Some("late answer"));
        let e = client.list_tools(first.next_cursor).await.unwrap_err();
        assert_eq!(
            e,
            ClientError::Server(ErrorObject::invalid_params("Invalid cursor: \"1.100\""))
        );
        assert_eq!(client.list_all_tools().await.unwrap().len(), 251);
    })
    .await;
}

/// Lets only `alice` through.
struct OnlyAlice;

impl Layer for OnlyAlice {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        let alice = call.principal().is_some_and(|p| p.client_id == "alice");
        Box::pin(async move {
            if alice {
                next.run().await
            } else {
                Err(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "only alice may call",
                ))
            }
        })
    }
}

#[tokio::test]
async fn the_mounted_servers_policy_and_handler_see_the_callers_principal() {
    within(async {
        let whoami = ToolDef::new("whoami").handler(|ctx, _args: Value| async move {
            ctx.principal()
                .map_or("nobody".to_owned(), |p| p.client_id.clone())
        });
        // On the tool only: the gateway lists the mounted server's tools as nobody.
        let mounted = McpServer::new("mine")
            .tool(whoami)
            .tool_layer("whoami", OnlyAlice);
        let gateway = Gateway::new("hub")
            .mount("m", mounted)
            .into_service()
            .await
            .unwrap();
        let as_ = |who: &str| {
            MemoryTransport::with_context(
                &gateway,
                TransportContext {
                    principal: Some(Principal::new(who)),
                    ..TransportContext::default()
                },
            )
        };
        let alice = Client::builder().connect(as_("alice")).await.unwrap();
        let result = alice.call_tool("m_whoami", json!({})).await.unwrap();
        assert_eq!(result.content[0].as_text(), Some("alice"));
        let bob = Client::builder().connect(as_("bob")).await.unwrap();
        let e = bob.call_tool("m_whoami", json!({})).await.unwrap_err();
        assert_eq!(
            e,
            ClientError::Server(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "only alice may call"
            ))
        );
    })
    .await;
}

#[tokio::test]
async fn lists_that_find_an_upstream_missing_ask_it_again_one_at_a_time() {
    within(async {
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        // Lists nothing, slowly: refused after 300 ms, every time.
        let down = Server::new("down").on_list_tools(move |_ctx, _params| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Err::<ListToolsResult, _>(ErrorObject::internal("still down"))
            }
        });
        let gateway = Gateway::new("hub")
            .mount("a", echo_server("A", Arc::default()))
            .mount("down", down)
            .build()
            .await
            .unwrap();
        assert_eq!(gateway.missing(), ["down"]);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let client = connect(&gateway.into_service(), Mode::Auto).await;
        let mut lists = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let client = client.clone();
            lists.spawn(async move { client.list_tools(None).await.unwrap().tools.len() });
        }
        while let Some(listed) = lists.join_next().await {
            assert_eq!(listed.unwrap(), 1);
        }
        // The 20 lists answered at once from the catalog; one refresh asked `down` again.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    })
    .await;
}

#[tokio::test]
async fn a_mounted_servers_progress_and_logs_reach_the_caller() {
    within(async {
        let steps = ToolDef::new("steps").handler(|ctx, _args: Value| async move {
            for step in 1..=3 {
                ctx.progress(f64::from(step), Some(3.0), Some(&format!("step {step}")))
                    .await;
            }
            ctx.log(
                mcp_types::logging::LoggingLevel::Warning,
                Some("steps"),
                json!("done stepping"),
            )
            .await;
            "stepped"
        });
        let gateway = Gateway::new("hub")
            .mount("m", McpServer::new("m").tool(steps))
            .into_service()
            .await
            .unwrap();
        let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (p, l) = (progress.clone(), logs.clone());
        let client = Client::builder()
            .log_level(mcp_types::logging::LoggingLevel::Info)
            .on_progress(move |n| {
                p.lock()
                    .unwrap()
                    .push((n.progress.to_string(), n.message.unwrap_or_default()));
            })
            .on_log(move |m| l.lock().unwrap().push((m.logger, m.data)))
            .connect(MemoryTransport::new(&gateway))
            .await
            .unwrap();
        let options = mcp_client::CallOptions {
            progress: true,
            ..mcp_client::CallOptions::default()
        };
        let result = client
            .call_tool_with("m_steps", json!({}), options)
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("stepped"));
        assert_eq!(
            *progress.lock().unwrap(),
            [
                ("1.0".to_owned(), "step 1".to_owned()),
                ("2.0".to_owned(), "step 2".to_owned()),
                ("3.0".to_owned(), "step 3".to_owned())
            ]
        );
        assert_eq!(
            *logs.lock().unwrap(),
            [(Some("steps".to_owned()), json!("done stepping"))]
        );
    })
    .await;
}

#[tokio::test]
async fn a_mounted_server_slower_than_the_local_timeout_is_named_and_the_other_answers() {
    within(async {
        let slow = ToolDef::new("wait").handler(|_ctx, _args: Value| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            "waited"
        });
        let gateway = Gateway::new("hub")
            .local_timeout(Duration::from_millis(200))
            .mount("slow", McpServer::new("slow").tool(slow))
            .mount("a", echo_server("A", Arc::default()))
            .into_service()
            .await
            .unwrap();
        let client = connect(&gateway, Mode::Auto).await;
        let started = std::time::Instant::now();
        let result = client.call_tool("slow_wait", json!({})).await.unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("upstream 'slow' did not answer within 200 ms")
        );
        assert_eq!(result.is_error, Some(true));
        assert!(started.elapsed() < Duration::from_secs(2));
        let served = client
            .call_tool("a_echo", json!({"text": "x"}))
            .await
            .unwrap();
        assert_eq!(served.content[0].as_text(), Some("A: x"));
        // A deadline is not a lost connection: the slow server keeps its tools.
        assert_eq!(client.list_all_tools().await.unwrap().len(), 2);
    })
    .await;
}

/// Sets its flag when dropped (a cancelled handler is dropped, or sees its token and ends).
struct Dropped(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_caller_that_gives_up_cancels_the_call_in_the_mounted_server() {
    within(async {
        let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancelled.clone();
        let hang = ToolDef::new("hang").handler(move |ctx, _args: Value| {
            let guard = Dropped(flag.clone());
            async move {
                let _guard = guard;
                let _ =
                    tokio::time::timeout(Duration::from_secs(20), ctx.cancellation().cancelled())
                        .await;
                "ended"
            }
        });
        let gateway = Gateway::new("hub")
            .mount("m", McpServer::new("m").tool(hang))
            .into_service()
            .await
            .unwrap();
        let client = Client::builder()
            .request_timeout(Duration::from_millis(300))
            .connect(MemoryTransport::new(&gateway))
            .await
            .unwrap();
        let e = client.call_tool("m_hang", json!({})).await.unwrap_err();
        assert!(matches!(e, ClientError::Timeout { .. }), "{e:?}");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !cancelled.load(Ordering::SeqCst) {
            assert!(
                std::time::Instant::now() < deadline,
                "the mounted hang was not cancelled"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    #[allow(dead_code)]
    ok: bool,
}

#[tokio::test]
async fn an_upstream_that_asks_for_input_is_a_tool_error_naming_it_not_a_round() {
    use mcp_server_core::registry::{Accepted, Resolution, Resolver};
    within(async {
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        let confirm = Resolver::new("confirm", move |_input| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Resolution::<Confirm>::elicit("Really?") }
        });
        let delete = ToolDef::new("delete")
            .resolve::<Accepted<Confirm>>("confirm", confirm)
            .handler_resolved(
                |_ctx, _args: Value, _resolved| async move { Ok::<_, String>("deleted") },
            );
        let gateway = Gateway::new("hub")
            .mount("m", McpServer::new("m").tool(delete))
            .into_service()
            .await
            .unwrap();
        for mode in [Mode::Auto, Mode::Legacy] {
            let answered = Arc::new(AtomicUsize::new(0));
            let counter = answered.clone();
            let client = Client::builder()
                .mode(mode)
                .elicitation(move |_info, _params| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async {
                        Ok(mcp_types::elicitation::ElicitResult::accept(
                            [(
                                "ok".to_owned(),
                                mcp_types::elicitation::ElicitValue::Bool(true),
                            )]
                            .into(),
                        ))
                    }
                })
                .connect(MemoryTransport::new(&gateway))
                .await
                .unwrap();
            let result = client.call_tool("m_delete", json!({})).await.unwrap();
            assert_eq!(
                result.content[0].as_text(),
                Some(
                    "upstream 'm' asked for input (an InputRequiredResult), which this gateway \
                     does not pass through"
                )
            );
            assert_eq!(result.is_error, Some(true));
            // The caller was never asked: no round reached it.
            assert_eq!(answered.load(Ordering::SeqCst), 0);
        }
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    })
    .await;
}
