//! MCP Apps (`io.modelcontextprotocol/ui`) on the wire of both eras: a host that declares the
//! extension with the app MIME type sees the app resource, the tools' links and the app-only
//! tool; any other client sees exactly what the same server without apps answers.

mod common;

use std::time::Duration;

use common::{TestClient, envelope};
use mcp_server_core::Service;
use mcp_server_core::registry::{
    AppDef, McpServer, ResourceDef, ToolDef, UiPermissions, UiVisibility,
};
use mcp_types::JsonObject;
use serde_json::{Value, json};

const HTML: &str = "<!doctype html><html><body><h1>Booking</h1></body></html>";
const APP: &str = "ui://bistro/booking";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    date: String,
    party_size: u32,
}

fn book_table() -> ToolDef {
    ToolDef::new("book_table")
        .description("Book a table.")
        .arguments::<Booking>()
        .handler(|_ctx, b: Booking| async move {
            format!("Booked a table for {} on {}.", b.party_size, b.date)
        })
}

fn open_slots() -> ToolDef {
    ToolDef::new("open_slots")
        .description("The free slots of a day, for the booking app.")
        .handler(|_ctx, _a: JsonObject| async { "19:00, 21:00".to_owned() })
}

fn menu() -> ResourceDef {
    ResourceDef::new("test://menu", "menu")
        .handler(|_ctx| async { Ok::<_, String>("Soup of the day".to_owned()) })
}

/// The Bistro without apps: the reference a client without the extension must see.
fn without_apps() -> Service {
    McpServer::new("bistro")
        .version("1.0")
        .tool(book_table())
        .resource(menu())
        .into_service()
        .unwrap()
}

fn with_apps() -> Service {
    let app = AppDef::new(APP, "booking")
        .title("Book a table")
        .html(HTML)
        .connect_domain("https://api.bistro.example")
        .resource_domain("https://cdn.bistro.example")
        .permissions(UiPermissions {
            clipboard_write: Some(JsonObject::new()),
            ..Default::default()
        })
        .prefers_border(true);
    McpServer::new("bistro")
        .version("1.0")
        .app(app)
        .resource(menu())
        .tool(book_table().ui(APP))
        .tool(open_slots().ui(APP).ui_visibility(&[UiVisibility::App]))
        .into_service()
        .unwrap()
}

async fn raw(c: &mut TestClient, method: &str, params: Value) -> String {
    let id = c.next_id();
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    assert!(c.conn.send_raw(request.to_string().into_bytes()));
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), c.conn.recv())
            .await
            .expect("the server did not answer within 10 s")
            .expect("the connection closed")
            .to_string();
        let value: Value = serde_json::from_str(&message).unwrap();
        if value.get("method").is_none() && value["id"] == json!(id) {
            return message;
        }
    }
}

/// A client of either era declaring `caps`: it sends through `send`, which adds the
/// 2026-07-28 envelope or, on 2025-11-25, initializes the session first.
struct Host {
    c: TestClient,
    caps: Value,
    legacy: bool,
    /// The `server/discover` or `initialize` answer.
    hello: String,
}

impl Host {
    async fn new(service: &Service, caps: Value, legacy: bool) -> Self {
        let mut c = TestClient::new(service);
        let hello = if legacy {
            let init = json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "host", "version": "1"}});
            let r = raw(&mut c, "initialize", init).await;
            c.notify("notifications/initialized", json!({}));
            r
        } else {
            let params = json!({"_meta": envelope(caps.clone())});
            raw(&mut c, "server/discover", params).await
        };
        Host {
            c,
            caps,
            legacy,
            hello,
        }
    }

    async fn send(&mut self, method: &str, mut params: Value) -> String {
        if !self.legacy {
            params["_meta"] = envelope(self.caps.clone());
        }
        raw(&mut self.c, method, params).await
    }

    async fn transcript(&mut self) -> Vec<String> {
        let mut out = vec![self.hello.clone()];
        out.push(self.send("tools/list", json!({})).await);
        out.push(self.send("resources/list", json!({})).await);
        let call =
            json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party_size": 4}});
        out.push(self.send("tools/call", call).await);
        out
    }
}

fn apps_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

#[tokio::test]
async fn a_client_without_the_extension_sees_the_server_without_apps() {
    for legacy in [false, true] {
        for caps in [
            json!({}),
            // Declared, but without the app MIME type: not negotiated.
            json!({"extensions": {"io.modelcontextprotocol/ui": {}}}),
            json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}}),
        ] {
            let with = Host::new(&with_apps(), caps.clone(), legacy)
                .await
                .transcript()
                .await;
            let without = Host::new(&without_apps(), caps.clone(), legacy)
                .await
                .transcript()
                .await;
            assert_eq!(with, without, "legacy: {legacy}, caps: {caps}");
        }
    }
}

#[tokio::test]
async fn a_host_with_the_extension_sees_the_app_the_links_and_the_app_only_tool() {
    for legacy in [false, true] {
        let mut host = Host::new(&with_apps(), apps_caps(), legacy).await;
        let hello: Value = serde_json::from_str(&host.hello).unwrap();
        assert_eq!(
            hello["result"]["capabilities"]["extensions"],
            json!({"io.modelcontextprotocol/ui": {}})
        );

        let tools: Value = serde_json::from_str(&host.send("tools/list", json!({})).await).unwrap();
        let tools = tools["result"]["tools"].as_array().unwrap().clone();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["book_table", "open_slots"]);
        // Both the link hosts read today and the flat key of hosts written before `_meta.ui`.
        assert_eq!(
            tools[0]["_meta"],
            json!({"ui": {"resourceUri": APP}, "ui/resourceUri": APP})
        );
        assert_eq!(
            tools[1]["_meta"],
            json!({"ui": {"resourceUri": APP, "visibility": ["app"]}, "ui/resourceUri": APP})
        );

        let ui_meta = json!({
            "csp": {
                "connectDomains": ["https://api.bistro.example"],
                "resourceDomains": ["https://cdn.bistro.example"]
            },
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": true
        });
        let resources: Value =
            serde_json::from_str(&host.send("resources/list", json!({})).await).unwrap();
        assert_eq!(
            resources["result"]["resources"],
            json!([{"uri": "test://menu", "name": "menu"}, {
                "uri": APP,
                "name": "booking",
                "title": "Book a table",
                "mimeType": "text/html;profile=mcp-app",
                "_meta": {"ui": ui_meta}
            }])
        );

        let read: Value =
            serde_json::from_str(&host.send("resources/read", json!({"uri": APP})).await).unwrap();
        assert_eq!(
            read["result"]["contents"],
            json!([{
                "uri": APP,
                "mimeType": "text/html;profile=mcp-app",
                "text": HTML,
                "_meta": {"ui": ui_meta}
            }])
        );

        // The linked tool still answers its full text result.
        let call =
            json!({"name": "book_table", "arguments": {"date": "2026-12-24", "party_size": 4}});
        let done: Value = serde_json::from_str(&host.send("tools/call", call).await).unwrap();
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": "Booked a table for 4 on 2026-12-24."}])
        );
    }
}

#[tokio::test]
async fn html_from_a_file_or_a_closure_is_read_on_every_read() {
    let dir = std::env::temp_dir().join(format!("mcp-apps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("app.html");
    std::fs::write(&file, "<p>first</p>").unwrap();
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = counter.clone();
    let service = McpServer::new("apps")
        .app(AppDef::new("ui://t/file", "file").html_file(&file))
        .app(AppDef::new("ui://t/made", "made").html_with(move || {
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            format!("<p>render {n}</p>")
        }))
        .into_service()
        .unwrap();
    let mut host = Host::new(&service, apps_caps(), false).await;
    let text = |reply: String| -> String {
        let v: Value = serde_json::from_str(&reply).unwrap();
        v["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        text(
            host.send("resources/read", json!({"uri": "ui://t/file"}))
                .await
        ),
        "<p>first</p>"
    );
    std::fs::write(&file, "<p>second</p>").unwrap();
    assert_eq!(
        text(
            host.send("resources/read", json!({"uri": "ui://t/file"}))
                .await
        ),
        "<p>second</p>"
    );
    assert_eq!(
        text(
            host.send("resources/read", json!({"uri": "ui://t/made"}))
                .await
        ),
        "<p>render 0</p>"
    );
    assert_eq!(
        text(
            host.send("resources/read", json!({"uri": "ui://t/made"}))
                .await
        ),
        "<p>render 1</p>"
    );

    // A file gone after the build: an internal error that does not name the path.
    std::fs::remove_file(&file).unwrap();
    let gone: Value = serde_json::from_str(
        &host
            .send("resources/read", json!({"uri": "ui://t/file"}))
            .await,
    )
    .unwrap();
    assert_eq!(
        gone["error"],
        json!({"code": -32603, "message": "the app ui://t/file could not be read"})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_whose_only_resources_are_apps_lists_none_to_other_clients() {
    // The `resources` capability stays (the app is readable by URI); the list is empty.
    let service = McpServer::new("apps")
        .app(AppDef::new(APP, "booking").html(HTML))
        .tool(book_table().ui(APP))
        .into_service()
        .unwrap();
    let mut host = Host::new(&service, json!({}), false).await;
    let hello: Value = serde_json::from_str(&host.hello).unwrap();
    assert_eq!(
        hello["result"]["capabilities"],
        json!({"resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}})
    );
    let list: Value = serde_json::from_str(&host.send("resources/list", json!({})).await).unwrap();
    assert_eq!(list["result"]["resources"], json!([]));
}
