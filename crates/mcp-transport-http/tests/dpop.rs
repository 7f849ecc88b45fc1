//! DPoP end to end: the HTTP client transport with a DPoP key, against this crate's protected
//! endpoint whose verifier reports the token as bound to that key. The client sends
//! `Authorization: DPoP` with a fresh proof per request, and the endpoint checks each one; a
//! token bound to another key is refused, once, without a loop.
#![cfg(feature = "oauth")]

use std::sync::{Arc, Mutex};

use mcp_client::oauth::{
    ClientAuth, HttpFetch, HttpRequest, HttpResponse, MachineGrant, OAuth, SigningKey,
};
use mcp_client::{BoxFuture, Client, Mode};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_server_core::seal::Principal;
use mcp_transport_http::{
    AuthError, HttpTransport, McpHttpService, ProtectedResource, TokenVerifier, VerifiedToken,
};
use mcp_types::JsonObject;
use serde_json::json;
use tokio::net::TcpListener;

const AS: &str = "http://127.0.0.1:9/as";

/// The resource metadata and the authorization server, scripted: it issues `the-token` as a
/// DPoP token and records the proofs it was sent.
struct ScriptedAs {
    resource: Mutex<String>,
    proofs: Mutex<Vec<String>>,
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
                if let Some((_, proof)) = request.headers.iter().find(|(n, _)| n == "DPoP") {
                    self.proofs.lock().unwrap().push(proof.clone());
                }
                (
                    200,
                    json!({"access_token": "the-token", "token_type": "DPoP"}),
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

/// `the-token`, bound to the key with thumbprint `jkt`, for `resource`.
struct Bound {
    jkt: String,
    resource: String,
}

impl TokenVerifier for Bound {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let result = if token == "the-token" {
            Ok(VerifiedToken::new(Principal::new("machine"))
                .audience(self.resource.clone())
                .dpop_bound(self.jkt.clone()))
        } else {
            Err(AuthError::InvalidToken("unknown token".into()))
        };
        Box::pin(async move { result })
    }
}

async fn serve(jkt: String) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let whoami = ToolDef::new("whoami").handler(|ctx, _a: JsonObject| async move {
        ctx.principal()
            .map(|p| p.client_id.clone())
            .unwrap_or_default()
    });
    let service = McpServer::new("bound").tool(whoami).into_service().unwrap();
    let endpoint = McpHttpService::new(service).bearer_auth(
        Bound {
            jkt,
            resource: url.clone(),
        },
        ProtectedResource::new(url.clone()).authorization_server(AS),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", async {
        let _ = stopped.await;
    }));
    (url, stop)
}

fn machine(fetch: Arc<ScriptedAs>) -> OAuth {
    OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine", "s")),
        fetch,
    )
    .bound_to_issuer(AS)
    .with_dpop(SigningKey::generate_es256().unwrap())
}

#[tokio::test]
async fn a_dpop_bound_token_is_presented_with_a_proof_the_endpoint_accepts() {
    let scripted = Arc::new(ScriptedAs {
        resource: Mutex::new(String::new()),
        proofs: Mutex::new(Vec::new()),
    });
    let oauth = Arc::new(machine(scripted.clone()));
    let (url, _stop) = serve(oauth.dpop_thumbprint().unwrap()).await;
    *scripted.resource.lock().unwrap() = url.clone();
    let transport = HttpTransport::new(&url).unwrap().oauth(oauth.clone());
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(transport)
        .await
        .unwrap();
    // Several requests: each proof has its own jti, or the endpoint would refuse a replay.
    for _ in 0..3 {
        let result = client.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(
            serde_json::to_value(&result.content).unwrap()[0]["text"],
            "machine"
        );
    }
    assert!(oauth.is_dpop_bound());
    assert_eq!(
        scripted.proofs.lock().unwrap().len(),
        1,
        "one token request, with a proof"
    );
    client.close().await;
}

#[tokio::test]
async fn a_token_bound_to_another_key_is_refused_once() {
    let scripted = Arc::new(ScriptedAs {
        resource: Mutex::new(String::new()),
        proofs: Mutex::new(Vec::new()),
    });
    let oauth = Arc::new(machine(scripted.clone()));
    let other = SigningKey::generate_es256().unwrap().thumbprint();
    let (url, _stop) = serve(other).await;
    *scripted.resource.lock().unwrap() = url.clone();
    let transport = HttpTransport::new(&url).unwrap().oauth(oauth);
    let outcome = async {
        let client = Client::builder()
            .mode(Mode::Pinned("2026-07-28".into()))
            .connect(transport)
            .await?;
        client.call_tool("whoami", json!({})).await
    }
    .await;
    let err = outcome.unwrap_err().to_string();
    assert_eq!(err, "transport error: HTTP 401 Unauthorized: Unauthorized");
    assert_eq!(
        scripted.proofs.lock().unwrap().len(),
        1,
        "authorized once, then the refusal is delivered"
    );
}
