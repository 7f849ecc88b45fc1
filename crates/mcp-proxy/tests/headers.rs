//! `x-mcp-header` through the gateway: a tool whose argument is mirrored in an `Mcp-Param-*`
//! header, on an HTTP upstream that checks it. The gateway's own HTTP endpoint checks the
//! header its caller sends (400, -32020), and the gateway sends the upstream the right one.
#![cfg(feature = "http")]

mod common;

use std::net::SocketAddr;

use common::{text, within};
use mcp_client::Client;
use mcp_proxy::{Gateway, Proxy};
use mcp_server_core::Service;
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::{HttpTransport, McpHttpService};
use mcp_types::JsonObject;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `service` on a loopback port until the returned sender drops.
async fn serve(service: Service) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(
        McpHttpService::new(service).serve_with_shutdown(listener, "/mcp", async {
            let _ = stopped.await;
        }),
    );
    (addr, stop)
}

/// A server whose tool `where` mirrors its `region` argument in `Mcp-Param-Region`.
fn regional() -> McpServer {
    let schema: JsonObject = serde_json::from_value(json!({
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"]
    }))
    .unwrap();
    let tool =
        ToolDef::new("where")
            .input_schema(schema)
            .handler(|_ctx, args: JsonObject| async move {
                format!("region {}", args["region"].as_str().unwrap_or("?"))
            });
    McpServer::new("regional").tool(tool)
}

/// One POST by hand: the status and the body's JSON.
async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let json = &answer[answer.find('{').unwrap()..=answer.rfind('}').unwrap()];
    (status, serde_json::from_str(json).unwrap())
}

#[tokio::test]
async fn param_headers_are_checked_at_the_gateway_and_sent_right_to_the_upstream() {
    within(async {
        let (upstream, _stop_upstream) = serve(regional().into_service().unwrap()).await;
        let gateway = Gateway::new("hub")
            .mount("r", Proxy::http(&format!("http://{upstream}/mcp")).unwrap())
            .into_service()
            .await
            .unwrap();
        let (front, _stop_front) = serve(gateway).await;

        // Our client over HTTP sends the header the gateway's list announces; the gateway
        // sends the upstream the one the upstream announced (which checks it too).
        let client = Client::builder()
            .connect(HttpTransport::new(&format!("http://{front}/mcp")).unwrap())
            .await
            .unwrap();
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(
            tools[0].input_schema["properties"]["region"]["x-mcp-header"],
            "Region"
        );
        let result = client
            .call_tool("r_where", json!({"region": "us-east"}))
            .await
            .unwrap();
        assert_eq!(text(&result), ("region us-east", false));

        // A caller whose header does not mirror the argument is refused at the gateway.
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "r_where",
                "arguments": {"region": "us-east"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }
        })
        .to_string();
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "r_where"),
        ];
        let mut wrong = headers.to_vec();
        wrong.push(("mcp-param-region", "eu-west"));
        let (status, answer) = post(front, &wrong, &body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(
            answer["error"],
            json!({
                "code": -32020,
                "message": "mcp-param-region header does not match the request body's 'region' argument"
            })
        );
        let mut right = headers.to_vec();
        right.push(("mcp-param-region", "us-east"));
        let (status, answer) = post(front, &right, &body).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "region us-east");
    })
    .await;
}
