//! OAuth metadata and token-response parsing, through the whole flow: a scripted web where one
//! answer (chosen by the first byte) is the fuzz input: the resource metadata, the
//! authorization server metadata, the registration reply, the token reply, the
//! `WWW-Authenticate` challenge or the redirect's `Location`. The flow never panics, and a
//! token it returns is the one the token endpoint sent.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mcp_client::BoxFuture;
use mcp_client::oauth::{
    HeadlessAuthorizer, HttpFetch, HttpRequest, HttpResponse, OAuth, OAuthConfig,
    is_secure_endpoint,
};
use serde_json::json;

const SERVER: &str = "http://localhost:4000/mcp";
const PRM: &str = "http://localhost:4000/.well-known/oauth-protected-resource/mcp";
const AS: &str = "http://localhost:5000";
const REDIRECT: &str = "http://localhost:1/callback";

#[derive(Clone, Copy, PartialEq)]
enum Slot {
    Prm,
    AsMetadata,
    Register,
    Token,
    Challenge,
    Location,
}

struct Web {
    slot: Slot,
    fuzz: Vec<u8>,
}

fn ok(body: Vec<u8>) -> HttpResponse {
    HttpResponse {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body,
    }
}

impl Web {
    fn answer(&self, request: &HttpRequest) -> HttpResponse {
        let path = request.url.split('?').next().unwrap_or_default();
        let fuzzed = |slot: Slot, normal: serde_json::Value| {
            if self.slot == slot {
                ok(self.fuzz.clone())
            } else {
                ok(normal.to_string().into_bytes())
            }
        };
        match path {
            PRM => fuzzed(
                Slot::Prm,
                json!({"resource": SERVER, "authorization_servers": [AS]}),
            ),
            "http://localhost:5000/.well-known/oauth-authorization-server" => fuzzed(
                Slot::AsMetadata,
                json!({"issuer": AS, "authorization_endpoint": format!("{AS}/authorize"),
                    "token_endpoint": format!("{AS}/token"), "registration_endpoint": format!("{AS}/register"),
                    "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}),
            ),
            "http://localhost:5000/register" => fuzzed(
                Slot::Register,
                json!({"client_id": "c", "token_endpoint_auth_method": "none"}),
            ),
            "http://localhost:5000/token" => fuzzed(
                Slot::Token,
                json!({"access_token": "the-token", "token_type": "Bearer", "expires_in": 60}),
            ),
            "http://localhost:5000/authorize" => {
                let state = request
                    .url
                    .split(['?', '&'])
                    .find_map(|p| p.strip_prefix("state="))
                    .unwrap_or_default();
                let location = if self.slot == Slot::Location {
                    String::from_utf8_lossy(&self.fuzz).into_owned()
                } else {
                    format!("{REDIRECT}?code=c&state={state}&iss=http%3A%2F%2Flocalhost%3A5000")
                };
                HttpResponse {
                    status: 302,
                    headers: vec![("Location".into(), location)],
                    body: Vec::new(),
                }
            }
            _ => HttpResponse {
                status: 404,
                headers: Vec::new(),
                body: Vec::new(),
            },
        }
    }
}

impl HttpFetch for Web {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        let response = self.answer(&request);
        Box::pin(async move { Ok(response) })
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, fuzz)) = data.split_first() else {
        return;
    };
    let slot = [
        Slot::Prm,
        Slot::AsMetadata,
        Slot::Register,
        Slot::Token,
        Slot::Challenge,
        Slot::Location,
    ][usize::from(selector) % 6];
    let text = String::from_utf8_lossy(fuzz).into_owned();
    let _ = is_secure_endpoint(&text);
    let web = Arc::new(Web {
        slot,
        fuzz: fuzz.to_vec(),
    });
    let oauth = OAuth::new(
        OAuthConfig::new(REDIRECT),
        web.clone(),
        Arc::new(HeadlessAuthorizer::new(web)),
    );
    let challenge = match slot {
        Slot::Challenge => Some(text.as_str()),
        _ => Some("Bearer error=\"invalid_token\""),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let outcome = runtime.block_on(oauth.unauthorized(SERVER, challenge, None));
    if let Ok(token) = outcome {
        if slot == Slot::Token {
            // Read the way the client reads it: serde_json skips the bytes of members it
            // ignores without checking their UTF-8, so a stricter `Value` parse may refuse
            // what the client (rightly) accepted.
            #[derive(serde::Deserialize)]
            struct Sent {
                access_token: String,
            }
            let sent: Sent = serde_json::from_slice(fuzz).expect("the client accepted it");
            assert_eq!(sent.access_token, token);
        } else {
            assert_eq!(token, "the-token");
        }
    }
});
