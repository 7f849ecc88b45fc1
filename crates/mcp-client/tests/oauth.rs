//! The OAuth client against a scripted authorization server: discovery order, issuer and `iss`
//! checks, PKCE, registration, step-up and migration, asserted on every request it makes.
#![cfg(feature = "oauth")]

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use mcp_client::BoxFuture;
use mcp_client::oauth::{
    ClientCredentials, HeadlessAuthorizer, HttpFetch, HttpRequest, HttpResponse, OAuth,
    OAuthConfig, OAuthError,
};
use serde_json::{Value, json};

const RS: &str = "http://localhost:4000";
const AS: &str = "http://localhost:5000";
const SERVER: &str = "http://localhost:4000/mcp";

type Route = dyn Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync;

/// A web of scripted endpoints that records every request.
struct Web {
    route: Mutex<Box<Route>>,
    log: Mutex<Vec<HttpRequest>>,
}

impl Web {
    fn new(
        route: impl Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Web {
            route: Mutex::new(Box::new(route)),
            log: Mutex::new(Vec::new()),
        })
    }

    fn urls(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.url.split('?').next().unwrap().to_owned())
            .collect()
    }

    fn requests_to(&self, prefix: &str) -> Vec<HttpRequest> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.url.starts_with(prefix))
            .cloned()
            .collect()
    }
}

impl HttpFetch for Web {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        self.log.lock().unwrap().push(request.clone());
        let response =
            (self.route.lock().unwrap())(&request).unwrap_or_else(|| status(404, json!({})));
        Box::pin(async move { Ok(response) })
    }
}

fn status(status: u16, body: Value) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![],
        body: body.to_string().into_bytes(),
    }
}

fn query(url: &str) -> Vec<(String, String)> {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// An authorization server at `issuer` whose authorize endpoint redirects at once; `iss` says
/// what it puts in the redirect. Records the last PKCE challenge and checks the verifier.
fn authorization_server(
    issuer: &'static str,
    metadata: Value,
    iss: Option<&'static str>,
) -> impl Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync {
    let challenge = Arc::new(Mutex::new(String::new()));
    move |request: &HttpRequest| {
        let path = request.url.strip_prefix(issuer)?;
        let path = path.split('?').next().unwrap();
        match path {
            "/.well-known/oauth-authorization-server" => Some(status(200, metadata.clone())),
            "/authorize" => {
                let q = query(&request.url);
                *challenge.lock().unwrap() = get(&q, "code_challenge").unwrap().to_owned();
                let mut location = format!(
                    "{}?code=the-code&state={}",
                    get(&q, "redirect_uri").unwrap(),
                    get(&q, "state").unwrap()
                );
                if let Some(iss) = iss {
                    location.push_str(&format!(
                        "&iss={}",
                        iss.replace(':', "%3A").replace('/', "%2F")
                    ));
                }
                Some(HttpResponse {
                    status: 302,
                    headers: vec![("Location".into(), location)],
                    body: vec![],
                })
            }
            "/token" => {
                let form = query(&format!("?{}", String::from_utf8_lossy(&request.body)));
                if get(&form, "grant_type") == Some("authorization_code") {
                    let verifier = get(&form, "code_verifier").unwrap();
                    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
                    let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
                    assert_eq!(
                        *challenge.lock().unwrap(),
                        expected,
                        "PKCE verifier matches"
                    );
                }
                Some(status(
                    200,
                    json!({"access_token": format!("token-from-{issuer}"), "token_type": "Bearer", "expires_in": 3600}),
                ))
            }
            "/register" => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                Some(status(
                    201,
                    json!({"client_id": format!("client-of-{issuer}"), "client_secret": "s3cret",
                    "token_endpoint_auth_method": body["token_endpoint_auth_method"]}),
                ))
            }
            _ => None,
        }
    }
}

fn as_metadata(issuer: &str) -> Value {
    json!({"issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
           "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
           "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
           "token_endpoint_auth_methods_supported": ["client_secret_basic"],
           "authorization_response_iss_parameter_supported": true})
}

fn prm(resource: &str, issuer: &str) -> Value {
    json!({"resource": resource, "authorization_servers": [issuer], "scopes_supported": ["mcp:basic", "mcp:read"]})
}

fn oauth(web: &Arc<Web>) -> OAuth {
    OAuth::new(
        OAuthConfig::new("http://localhost:1/callback"),
        web.clone(),
        Arc::new(HeadlessAuthorizer::new(web.clone())),
    )
}

fn with_prm(
    prm_url: &'static str,
    document: Value,
    auth: impl Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync + 'static,
) -> impl Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync + 'static {
    move |r: &HttpRequest| {
        if r.url == prm_url {
            Some(status(200, document.clone()))
        } else {
            auth(r)
        }
    }
}

#[tokio::test]
async fn the_full_flow_discovers_registers_and_redeems_with_pkce_and_the_resource() {
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        authorization_server(AS, as_metadata(AS), Some(AS)),
    ));
    let client = oauth(&web);
    let token = client
        .unauthorized(SERVER, Some("Bearer error=\"invalid_token\""), None)
        .await
        .unwrap();
    assert_eq!(token, "token-from-http://localhost:5000");
    assert_eq!(client.access_token().as_deref(), Some(token.as_str()));
    assert_eq!(
        web.urls(),
        [
            "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
            "http://localhost:5000/.well-known/oauth-authorization-server",
            "http://localhost:5000/register",
            "http://localhost:5000/authorize",
            "http://localhost:5000/token",
        ]
    );
    let register: Value =
        serde_json::from_slice(&web.requests_to("http://localhost:5000/register")[0].body).unwrap();
    assert_eq!(register["application_type"], "native");
    assert_eq!(
        register["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(
        register["token_endpoint_auth_method"],
        "client_secret_basic"
    );
    let authorize = query(&web.requests_to("http://localhost:5000/authorize")[0].url);
    assert_eq!(get(&authorize, "resource"), Some(SERVER));
    assert_eq!(get(&authorize, "scope"), Some("mcp:basic mcp:read"));
    assert_eq!(get(&authorize, "code_challenge_method"), Some("S256"));
    assert_eq!(
        get(&authorize, "client_id"),
        Some("client-of-http://localhost:5000")
    );
    let token_request = &web.requests_to("http://localhost:5000/token")[0];
    let basic = token_request
        .headers
        .iter()
        .find(|(n, _)| n == "Authorization")
        .unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(basic.1.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        "client-of-http%3A%2F%2Flocalhost%3A5000:s3cret"
    );
    let body = query(&format!(
        "?{}",
        String::from_utf8_lossy(&token_request.body)
    ));
    assert_eq!(get(&body, "resource"), Some(SERVER));
    assert_eq!(
        get(&body, "client_secret"),
        None,
        "basic sends no secret in the body"
    );
}

#[tokio::test]
async fn the_challenge_url_and_scope_win_and_the_root_is_never_probed_for_a_tenant() {
    const TENANT: &str = "http://localhost:5000/tenant1";
    let mut metadata = as_metadata(TENANT);
    metadata["authorization_response_iss_parameter_supported"] = json!(false);
    let auth = authorization_server(AS, json!(null), None);
    let web = Web::new(with_prm(
        "http://localhost:4000/custom.json",
        prm(RS, TENANT),
        move |r: &HttpRequest| {
            if r.url == "http://localhost:5000/tenant1/.well-known/openid-configuration" {
                return Some(status(200, metadata.clone()));
            }
            // The tenant's endpoints live under /tenant1 on the same server.
            let mut r = r.clone();
            r.url = r.url.replace("/tenant1/", "/");
            if r.url.contains("/.well-known/") {
                return None;
            }
            auth(&r)
        },
    ));
    let client = oauth(&web);
    let header =
        r#"Bearer resource_metadata="http://localhost:4000/custom.json", scope="mcp:write""#;
    client
        .unauthorized(SERVER, Some(header), None)
        .await
        .unwrap();
    let urls = web.urls();
    assert_eq!(
        &urls[..4],
        [
            "http://localhost:4000/custom.json",
            "http://localhost:5000/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:5000/.well-known/openid-configuration/tenant1",
            "http://localhost:5000/tenant1/.well-known/openid-configuration",
        ]
    );
    assert!(
        !urls
            .iter()
            .any(|u| u == "http://localhost:5000/.well-known/oauth-authorization-server")
    );
    let authorize = query(&web.requests_to("http://localhost:5000/tenant1/authorize")[0].url);
    assert_eq!(get(&authorize, "scope"), Some("mcp:write"));
    assert_eq!(
        get(&authorize, "resource"),
        Some(RS),
        "the resource exactly as the metadata spells it"
    );
}

#[tokio::test]
async fn every_mismatch_aborts_before_anything_is_redeemed() {
    // A resource for another server: nothing after the metadata.
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm("https://evil.example.com/mcp", AS),
        authorization_server(AS, as_metadata(AS), Some(AS)),
    ));
    let error = oauth(&web)
        .unauthorized(SERVER, None, None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, OAuthError::ResourceMismatch { .. }),
        "{error}"
    );
    assert_eq!(web.urls().len(), 1);

    // Metadata naming another issuer: its endpoints are never used.
    let mut lying = as_metadata("https://attacker.example.com");
    lying["authorization_endpoint"] = json!("http://localhost:5000/mismatched/authorize");
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        authorization_server(AS, lying, Some(AS)),
    ));
    let error = oauth(&web)
        .unauthorized(SERVER, None, None)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the authorization server metadata for http://localhost:5000 names the issuer https://attacker.example.com; refusing to use it"
    );
    assert!(
        web.requests_to("http://localhost:5000/mismatched")
            .is_empty()
    );

    // iss: wrong, normalised, missing though promised, unexpected though not promised.
    let not_promised = {
        let mut m = as_metadata(AS);
        m["authorization_response_iss_parameter_supported"] = json!(false);
        m
    };
    for (metadata, iss) in [
        (as_metadata(AS), Some("https://evil.example.com")),
        (as_metadata(AS), Some("http://localhost:5000/")),
        (as_metadata(AS), None),
        (not_promised, Some("https://evil.example.com")),
    ] {
        let web = Web::new(with_prm(
            "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
            prm(SERVER, AS),
            authorization_server(AS, metadata, iss),
        ));
        let error = oauth(&web)
            .unauthorized(SERVER, None, None)
            .await
            .unwrap_err();
        assert!(matches!(error, OAuthError::Iss { .. }), "{iss:?}: {error}");
        assert_eq!(web.requests_to("http://localhost:5000/authorize").len(), 1);
        assert!(
            web.requests_to("http://localhost:5000/token").is_empty(),
            "{iss:?}"
        );
    }
}

#[tokio::test]
async fn step_up_asks_for_the_union_once_and_gives_up_when_nothing_is_new() {
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        authorization_server(AS, as_metadata(AS), Some(AS)),
    ));
    let client = oauth(&web);
    client
        .unauthorized(SERVER, Some(r#"Bearer scope="mcp:basic""#), None)
        .await
        .unwrap();
    let challenge = r#"Bearer error="insufficient_scope", scope="mcp:write""#;
    client.insufficient_scope(SERVER, challenge).await.unwrap();
    let authorizations = web.requests_to("http://localhost:5000/authorize");
    assert_eq!(authorizations.len(), 2);
    assert_eq!(
        get(&query(&authorizations[1].url), "scope"),
        Some("mcp:basic mcp:write")
    );
    assert_eq!(
        web.requests_to("http://localhost:5000/register").len(),
        1,
        "the registration is reused"
    );
    let error = client
        .insufficient_scope(SERVER, challenge)
        .await
        .unwrap_err();
    assert_eq!(error, OAuthError::ScopeNotGranted("mcp:write".into()));
    assert_eq!(web.requests_to("http://localhost:5000/authorize").len(), 2);
}

#[tokio::test]
async fn offline_access_only_when_offered_and_pre_registered_clients_stay_with_their_issuer() {
    let mut offering = as_metadata(AS);
    offering["scopes_supported"] = json!(["mcp:basic", "offline_access"]);
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        authorization_server(AS, offering, Some(AS)),
    ));
    let mut config = OAuthConfig::new("http://localhost:1/callback");
    config.pre_registered = vec![
        ClientCredentials::pre_registered("http://other-as", "not-for-this-one", Some("x".into())),
        ClientCredentials::pre_registered(
            AS,
            "pre-registered-client",
            Some("pre-registered-secret".into()),
        ),
    ];
    let client = OAuth::new(
        config,
        web.clone(),
        Arc::new(HeadlessAuthorizer::new(web.clone())),
    );
    client.unauthorized(SERVER, None, None).await.unwrap();
    assert!(web.requests_to("http://localhost:5000/register").is_empty());
    let authorize = query(&web.requests_to("http://localhost:5000/authorize")[0].url);
    assert_eq!(
        get(&authorize, "scope"),
        Some("mcp:basic mcp:read offline_access")
    );
    assert_eq!(get(&authorize, "client_id"), Some("pre-registered-client"));
}

#[tokio::test]
async fn a_resource_that_moves_gets_a_new_registration_and_no_old_credentials() {
    const AS2: &str = "http://localhost:6000";
    let moved = Arc::new(Mutex::new(false));
    let flag = moved.clone();
    let as1 = authorization_server(AS, as_metadata(AS), Some(AS));
    let as2 = authorization_server(AS2, as_metadata(AS2), Some(AS2));
    let web = Web::new(move |r: &HttpRequest| {
        if r.url == "http://localhost:4000/.well-known/oauth-protected-resource/mcp" {
            let issuer = if *flag.lock().unwrap() { AS2 } else { AS };
            return Some(status(200, prm(SERVER, issuer)));
        }
        as1(r).or_else(|| as2(r))
    });
    let client = oauth(&web);
    let first = client.unauthorized(SERVER, None, None).await.unwrap();
    *moved.lock().unwrap() = true;
    // The same refused token twice: the second caller gets the token the first one fetched.
    let second = client
        .unauthorized(SERVER, None, Some(&first))
        .await
        .unwrap();
    assert_eq!(second, "token-from-http://localhost:6000");
    assert_eq!(
        client
            .unauthorized(SERVER, None, Some(&first))
            .await
            .unwrap(),
        second
    );
    assert_eq!(web.requests_to("http://localhost:6000/register").len(), 1);
    for request in web.requests_to(AS2) {
        let text = format!(
            "{} {:?} {}",
            request.url,
            request.headers,
            String::from_utf8_lossy(&request.body)
        );
        assert!(
            !text.contains("client-of-http%3A%2F%2Flocalhost%3A5000")
                && !text.contains("client-of-http://localhost:5000"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_refused_token_is_refreshed_before_anyone_is_asked_to_log_in_again() {
    let auth = authorization_server(AS, as_metadata(AS), Some(AS));
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        move |r: &HttpRequest| {
            if r.url == "http://localhost:5000/token" {
                let form = query(&format!("?{}", String::from_utf8_lossy(&r.body)));
                let token = match get(&form, "grant_type") {
                    Some("refresh_token") => {
                        assert_eq!(get(&form, "refresh_token"), Some("the-refresh-token"));
                        assert_eq!(get(&form, "resource"), Some(SERVER));
                        "refreshed-token"
                    }
                    _ => {
                        auth(r);
                        "first-token"
                    }
                };
                return Some(status(
                    200,
                    json!({"access_token": token, "token_type": "Bearer",
                    "refresh_token": "the-refresh-token"}),
                ));
            }
            auth(r)
        },
    ));
    let client = oauth(&web);
    let first = client.unauthorized(SERVER, None, None).await.unwrap();
    assert_eq!(first, "first-token");
    let second = client
        .unauthorized(SERVER, None, Some(&first))
        .await
        .unwrap();
    assert_eq!(second, "refreshed-token");
    assert_eq!(
        web.requests_to("http://localhost:5000/authorize").len(),
        1,
        "no second login"
    );
    assert_eq!(web.requests_to("http://localhost:5000/token").len(), 2);
}

#[tokio::test]
async fn plaintext_endpoints_off_loopback_are_refused_before_anything_is_sent() {
    const REMOTE: &str = "http://auth.example.com";
    // The resource metadata names an http:// authorization server on a real host.
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, REMOTE),
        authorization_server(REMOTE, as_metadata(REMOTE), Some(REMOTE)),
    ));
    let e = oauth(&web)
        .unauthorized(SERVER, None, None)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        OAuthError::Http(
            "http://auth.example.com/.well-known/oauth-authorization-server is not https (only loopback hosts may use http://); nothing was sent".into()
        )
    );
    assert!(web.requests_to(REMOTE).is_empty(), "{:?}", web.urls());

    // Loopback metadata that points its endpoints off the machine in plaintext.
    let mut metadata = as_metadata(AS);
    metadata["authorization_endpoint"] = json!("http://login.example.com/authorize");
    let web = Web::new(with_prm(
        "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
        prm(SERVER, AS),
        authorization_server(AS, metadata, Some(AS)),
    ));
    let e = oauth(&web)
        .unauthorized(SERVER, None, None)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "authorization failed: the authorization endpoint http://login.example.com/authorize is not https (only loopback hosts may use http://); the user was not sent there"
    );
    assert!(web.requests_to("http://localhost:5000/register").is_empty());

    for (url, secure) in [
        ("https://auth.example.com/token", true),
        ("http://localhost:5000/token", true),
        ("http://127.0.0.1:5000/token", true),
        ("http://[::1]:5000/token", true),
        ("http://auth.example.com/token", false),
        ("http://localhost.example.com/token", false),
        ("http://127.0.0.1.nip.io/token", false),
        ("ftp://localhost/token", false),
    ] {
        assert_eq!(mcp_client::oauth::is_secure_endpoint(url), secure, "{url}");
    }
}

#[tokio::test]
async fn metadata_without_s256_is_refused() {
    for methods in [json!(["plain"]), Value::Null] {
        let mut metadata = as_metadata(AS);
        match &methods {
            Value::Null => {
                metadata
                    .as_object_mut()
                    .unwrap()
                    .remove("code_challenge_methods_supported");
            }
            m => metadata["code_challenge_methods_supported"] = m.clone(),
        }
        let web = Web::new(with_prm(
            "http://localhost:4000/.well-known/oauth-protected-resource/mcp",
            prm(SERVER, AS),
            authorization_server(AS, metadata, Some(AS)),
        ));
        let e = oauth(&web)
            .unauthorized(SERVER, None, None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "authorization failed: http://localhost:5000 does not list S256 in code_challenge_methods_supported; the MCP authorization spec requires PKCE with S256, so this client will not authorize",
            "{methods}"
        );
        assert!(web.requests_to("http://localhost:5000/register").is_empty());
        assert!(
            web.requests_to("http://localhost:5000/authorize")
                .is_empty()
        );
    }
}

/// An authorization server that never answers.
struct Silent;

impl HttpFetch for Silent {
    fn fetch(&self, _request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn a_fetch_that_never_answers_fails_at_the_timeout() {
    let mut config = OAuthConfig::new("http://localhost:1/callback");
    config.fetch_timeout = std::time::Duration::from_secs(5);
    let silent = Arc::new(Silent);
    let client = OAuth::new(
        config,
        silent.clone(),
        Arc::new(HeadlessAuthorizer::new(silent)),
    );
    let e = client.unauthorized(SERVER, None, None).await.unwrap_err();
    assert_eq!(
        e,
        OAuthError::Http(
            "http://localhost:4000/.well-known/oauth-protected-resource/mcp did not answer within 5000 ms (OAuthConfig::fetch_timeout)".into()
        )
    );
}

#[test]
fn http_response_debug_redacts_location_cookies_and_credentials() {
    let response = HttpResponse {
        status: 302,
        headers: vec![
            (
                "Location".into(),
                "http://localhost:1/callback?code=SECRET-CODE&state=s".into(),
            ),
            ("set-cookie".into(), "session=SECRET-COOKIE".into()),
            ("Authorization".into(), "Bearer SECRET-TOKEN".into()),
            ("Content-Type".into(), "text/html".into()),
        ],
        body: b"SECRET-BODY".to_vec(),
    };
    let shown = format!("{response:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert_eq!(
        shown,
        "HttpResponse { status: 302, headers: [(\"Location\", \"[redacted]\"), (\"set-cookie\", \"[redacted]\"), (\"Authorization\", \"[redacted]\"), (\"Content-Type\", \"text/html\")], body_len: 11 }"
    );
}
