//! Scope step-up end to end (issue #34): a tool that declares `shop.checkout`, behind this
//! crate's protected endpoint. A token without the scope gets 403 with
//! `WWW-Authenticate: Bearer error="insufficient_scope", scope="shop.checkout"` before the tool
//! runs; the HTTP client transport asks the authorization server for the scopes it holds plus
//! that one, and the call completes on the retry, once. Tools the token does not reach are
//! left out of its `tools/list` when the server hides them.
#![cfg(feature = "oauth")]

use std::sync::{Arc, Mutex};

use mcp_client::oauth::{ClientAuth, HttpFetch, HttpRequest, HttpResponse, MachineGrant, OAuth};
use mcp_client::{BoxFuture, Client, Mode};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::seal::Principal;
use mcp_transport_http::{
    AuthError, HttpTransport, McpHttpService, ProtectedResource, TokenVerifier, VerifiedToken,
};
use mcp_types::JsonObject;
use serde_json::{Value, json};
use tokio::net::TcpListener;

const AS: &str = "http://127.0.0.1:9/as";

/// The resource metadata and a scripted authorization server: a token request that asks for
/// `shop.checkout` gets `wide-token`, any other `narrow-token`. It records each request's
/// `scope`.
struct ScriptedAs {
    resource: Mutex<String>,
    asked: Mutex<Vec<String>>,
}

fn form_value(body: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(body).split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.replace("%20", " ").replace('+', " ").replace("%2E", "."))
    })
}

impl HttpFetch for ScriptedAs {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        let resource = self.resource.lock().unwrap().clone();
        let (status, body) = match request.url.as_str() {
            url if url.ends_with("/.well-known/oauth-protected-resource/mcp") => (
                200,
                json!({"resource": resource, "authorization_servers": [AS]}),
            ),
            "http://127.0.0.1:9/.well-known/oauth-authorization-server/as" => (
                200,
                json!({"issuer": AS, "authorization_endpoint": format!("{AS}/authorize"),
                       "token_endpoint": format!("{AS}/token")}),
            ),
            "http://127.0.0.1:9/as/token" => {
                let scope = form_value(&request.body, "scope").unwrap_or_default();
                self.asked.lock().unwrap().push(scope.clone());
                let (token, granted) = if scope.split(' ').any(|s| s == "shop.checkout") {
                    ("wide-token", "shop.browse shop.checkout")
                } else {
                    ("narrow-token", "shop.browse")
                };
                (
                    200,
                    json!({"access_token": token, "token_type": "Bearer", "scope": granted}),
                )
            }
            _ => (404, json!({})),
        };
        Box::pin(async move {
            Ok(HttpResponse {
                status,
                headers: vec![],
                body: body.to_string().into_bytes(),
            })
        })
    }
}

struct Verifier {
    resource: String,
}

impl TokenVerifier for Verifier {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let user = VerifiedToken::new(Principal::new("shop-app").subject("alice"))
            .audience(self.resource.clone());
        let result = match token {
            "narrow-token" => Ok(user.scopes("shop.browse")),
            "wide-token" => Ok(user.scopes("shop.browse shop.checkout")),
            _ => Err(AuthError::InvalidToken("unknown token".into())),
        };
        Box::pin(async move { result })
    }
}

async fn serve(hide: bool) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let browse = ToolDef::new("browse").handler(|_ctx, _a: JsonObject| async { "tea, coffee" });
    let checkout = ToolDef::new("checkout")
        .scopes(["shop.checkout"])
        .handler(|_ctx, _a: JsonObject| async { "bought" });
    let service = McpServer::new("shop")
        .tool(browse)
        .tool(checkout)
        .hide_unauthorized_tools(hide)
        .into_service()
        .unwrap();
    let endpoint = McpHttpService::new(service).bearer_auth(
        Verifier {
            resource: url.clone(),
        },
        ProtectedResource::new(url.clone())
            .authorization_server(AS)
            .scopes_supported(["shop.browse", "shop.checkout"])
            .required_scopes(["shop.browse"]),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stopped.await;
    }));
    (url, stop)
}

fn text(result: &mcp_types::tools::CallToolResult) -> Value {
    serde_json::to_value(&result.content).unwrap()[0]["text"].clone()
}

async fn client(url: &str, scripted: &Arc<ScriptedAs>, version: &str) -> Client {
    *scripted.resource.lock().unwrap() = url.to_owned();
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("shop-app", "s")),
        scripted.clone(),
    )
    .bound_to_issuer(AS);
    let transport = HttpTransport::new(url).unwrap().oauth(Arc::new(oauth));
    Client::builder()
        .mode(Mode::Pinned(version.into()))
        .connect(transport)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_token_without_the_tools_scope_steps_up_and_the_call_completes() {
    for version in ["2026-07-28", "2025-11-25"] {
        let scripted = Arc::new(ScriptedAs {
            resource: Mutex::new(String::new()),
            asked: Mutex::new(Vec::new()),
        });
        let (url, _stop) = serve(false).await;
        let client = client(&url, &scripted, version).await;
        let browsed = client.call_tool("browse", json!({})).await.unwrap();
        assert_eq!(text(&browsed), "tea, coffee", "{version}");
        assert_eq!(
            *scripted.asked.lock().unwrap(),
            ["shop.browse"],
            "{version}"
        );

        let bought = client.call_tool("checkout", json!({})).await.unwrap();
        assert_eq!(text(&bought), "bought", "{version}");
        assert_eq!(
            *scripted.asked.lock().unwrap(),
            ["shop.browse", "shop.browse shop.checkout"],
            "{version}: one step-up, for the scopes held plus the challenged one"
        );
        // The wider token serves the next call without asking again.
        client.call_tool("checkout", json!({})).await.unwrap();
        assert_eq!(scripted.asked.lock().unwrap().len(), 2, "{version}");
        client.close().await;
    }
}

#[tokio::test]
async fn the_endpoint_challenges_before_the_tool_runs() {
    let (url, _stop) = serve(false).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "checkout", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = reqwest_free_post(&url, "narrow-token", &body).await;
    assert_challenged(&url, &response);
    // The same token calls what it may.
    let browse = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "browse", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert_eq!(
        reqwest_free_post(&url, "narrow-token", &browse).await.0,
        200
    );
}

/// A `tools/call` whose params repeat a member the step-up check does not need (`"uri"`, kept
/// by the call as an unknown member) is challenged like any other: the check reads the tool's
/// name from the decoded params. Before, its raw probe refused the repeated member, saw no
/// tool, and the call was refused later, as `-32003`, without the challenge a client can act
/// on.
#[tokio::test]
async fn a_call_with_a_repeated_unknown_member_is_challenged_too() {
    let (url, _stop) = serve(false).await;
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"checkout","arguments":{{}},"uri":"a","uri":"b",{meta}}}}}"#
    );
    let response = post_text(&url, "narrow-token", "tools/call", "checkout", body).await;
    assert_challenged(&url, &response);
}

#[tokio::test]
async fn a_hiding_server_lists_only_what_the_token_reaches() {
    let scripted = Arc::new(ScriptedAs {
        resource: Mutex::new(String::new()),
        asked: Mutex::new(Vec::new()),
    });
    let (url, _stop) = serve(true).await;
    let client = client(&url, &scripted, "2026-07-28").await;
    let names: Vec<String> = client
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["browse"]);
    client.close().await;
}

/// A 403 whose challenge asks for `shop.checkout`, pointing at the resource's metadata.
fn assert_challenged(url: &str, response: &(u16, String)) {
    assert_eq!(response.0, 403);
    assert_eq!(
        response.1,
        format!(
            "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"shop.checkout\"",
            url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        )
    );
}

/// POSTs `body` with `token` (hyper, no other client): the status and `WWW-Authenticate`.
async fn reqwest_free_post(url: &str, token: &str, body: &Value) -> (u16, String) {
    let method = body["method"].as_str().unwrap();
    let name = body["params"]["name"].as_str().unwrap();
    post_text(url, token, method, name, body.to_string()).await
}

/// POSTs `body`, as it is written, with the headers of `method` and `name`.
async fn post_text(
    url: &str,
    token: &str,
    method: &str,
    name: &str,
    body: String,
) -> (u16, String) {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client as HyperClient;
    use hyper_util::rt::TokioExecutor;
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let response = HyperClient::builder(TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>()
        .request(request)
        .await
        .unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let _ = response.into_body().collect().await;
    (status, challenge)
}
