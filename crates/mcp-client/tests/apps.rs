//! MCP Apps and extensions on the client, against our server over the in-memory transport on
//! both eras: the declaration, the server's advertisement, a tool's app link, the app fetched
//! and checked, and what a client that does not declare the extension is shown.

use mcp_client::{Client, ClientError, MemoryTransport, Mode};
use mcp_server_core::registry::{AppDef, McpServer, ResourceDef, ToolDef};
use mcp_server_core::{Extension, Service};
use mcp_types::JsonObject;
use mcp_types::ext::apps::{UiCsp, UiResourceMeta, Visibility};
use serde_json::json;

const APP: &str = "ui://bistro/booking";
const HTML: &str = "<!doctype html><title>Booking</title>";

fn service() -> Service {
    let book = ToolDef::new("book_table")
        .ui(APP)
        .handler(|_ctx, _a: JsonObject| async { "Booked.".to_owned() });
    let slots = ToolDef::new("open_slots")
        .ui(APP)
        .ui_visibility(&[Visibility::App])
        .handler(|_ctx, _a: JsonObject| async { "19:00".to_owned() });
    let menu = ResourceDef::new("test://menu", "menu")
        .mime_type("text/plain")
        .handler(|_ctx| async { Ok::<_, String>("Soup".to_owned()) });
    let stamps = Extension::new("com.example/stamps")
        .unwrap()
        .settings(json!({"inks": ["red"]}).as_object().cloned().unwrap());
    McpServer::new("bistro")
        .app(
            AppDef::new(APP, "booking")
                .html(HTML)
                .connect_domain("https://api.bistro.example"),
        )
        .tool(book)
        .tool(slots)
        .resource(menu)
        .extension(stamps)
        .into_service()
        .unwrap()
}

#[tokio::test]
async fn a_host_declaring_apps_reads_the_links_and_fetches_the_app_on_both_eras() {
    let service = service();
    for mode in [Mode::Auto, Mode::Legacy] {
        let client = Client::builder()
            .mode(mode.clone())
            .apps(true)
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        assert!(client.declares_extension("io.modelcontextprotocol/ui"));
        assert_eq!(
            client.server_extension("io.modelcontextprotocol/ui"),
            Some(JsonObject::new())
        );
        assert_eq!(
            client.server_extension("com.example/stamps"),
            json!({"inks": ["red"]}).as_object().cloned()
        );
        let tools = client.list_all_tools().await.unwrap();
        let links: Vec<_> = tools
            .iter()
            .map(|t| {
                Client::tool_app(t).map(|ui| (ui.resource_uri.clone().unwrap(), ui.model_visible()))
            })
            .collect();
        assert_eq!(
            links,
            [Some((APP.to_owned(), true)), Some((APP.to_owned(), false))],
            "{mode:?}"
        );
        let app = client.read_app(APP).await.unwrap();
        assert_eq!(app.uri, APP);
        assert_eq!(app.html, HTML);
        assert_eq!(
            app.meta,
            UiResourceMeta {
                csp: Some(UiCsp {
                    connect_domains: Some(vec!["https://api.bistro.example".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }
        );
        let not_an_app = client.read_app("test://menu").await.unwrap_err();
        assert_eq!(
            not_an_app.to_string(),
            "test://menu is not an MCP App: an app's URI starts with ui://"
        );
    }
}

#[tokio::test]
async fn a_client_that_does_not_declare_apps_sees_no_app() {
    let service = service();
    for mode in [Mode::Auto, Mode::Legacy] {
        let client = Client::builder()
            .mode(mode)
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        assert!(!client.declares_extension("io.modelcontextprotocol/ui"));
        assert_eq!(client.server_extension("io.modelcontextprotocol/ui"), None);
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "book_table");
        assert_eq!(Client::tool_app(&tools[0]), None);
        let resources = client.list_all_resources().await.unwrap();
        let uris: Vec<_> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["test://menu"]);
    }
}

#[tokio::test]
async fn read_app_refuses_what_is_not_an_app() {
    // A server that serves a ui:// URI with another MIME type.
    let service = McpServer::new("odd")
        .resource(
            ResourceDef::new("ui://odd/page", "page")
                .mime_type("text/html")
                .handler(|_ctx| async { Ok::<_, String>("<p>".to_owned()) }),
        )
        .into_service()
        .unwrap();
    let client = Client::builder()
        .apps(true)
        .connect(MemoryTransport::new(&service))
        .await
        .unwrap();
    let refused = client.read_app("ui://odd/page").await.unwrap_err();
    assert!(matches!(refused, ClientError::NotAnApp { .. }));
    assert_eq!(
        refused.to_string(),
        "ui://odd/page is not an MCP App: the MIME type is text/html, not text/html;profile=mcp-app"
    );
}

#[tokio::test]
async fn the_server_sees_what_the_builder_declares_on_both_eras() {
    let echo = ToolDef::new("declared").handler(|ctx, _a: JsonObject| async move {
        json!({
            "ui": ctx.extension("io.modelcontextprotocol/ui"),
            "stamps": ctx.extension("com.example/stamps"),
        })
        .to_string()
    });
    let service = McpServer::new("echo").tool(echo).into_service().unwrap();
    for mode in [Mode::Auto, Mode::Legacy] {
        let client = Client::builder()
            .mode(mode.clone())
            .apps(true)
            .extension(
                "com.example/stamps",
                json!({"ink": "red"}).as_object().cloned().unwrap(),
            )
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        let result = client.call_tool("declared", json!({})).await.unwrap();
        let text = result.content[0].as_text().unwrap().to_owned();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            json!({"ui": {"mimeTypes": ["text/html;profile=mcp-app"]}, "stamps": {"ink": "red"}}),
            "{mode:?}"
        );
        let plain = Client::builder()
            .mode(mode)
            .apps(true)
            .apps(false)
            .connect(MemoryTransport::new(&service))
            .await
            .unwrap();
        let result = plain.call_tool("declared", json!({})).await.unwrap();
        assert_eq!(
            result.content[0].as_text().unwrap(),
            r#"{"stamps":null,"ui":null}"#
        );
    }
}
