//! `mcp-term` over https (a server in this process with certificates from a test CA made
//! here) and through OAuth against a scripted authorization server on a local port, both as
//! separate processes.

mod out;

use out::Out;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use mcp::client::BoxFuture;
use mcp::http::{AuthError, ProtectedResource, TokenVerifier, VerifiedToken};
use mcp::seal::Principal;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn term(args: &[&str]) -> Out {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-term"))
        .args(args)
        .args(["--timeout", "20"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("mcp-term runs");
    Out::from(out)
}

fn temp(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-term-https-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mcp-term test CA");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

/// A leaf for `sans` signed by `ca`: (certificate PEM, key PEM).
fn leaf(ca: &Ca, sans: Vec<SanType>) -> (String, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = sans;
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// The Files server over TLS with `cert`; its https:// URL.
async fn files_over_tls(cert: &str, key: &str) -> String {
    let config = mcp::http::server_config(cert.as_bytes(), key.as_bytes()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let endpoint = mcp::http::endpoint(mcp_examples::files::server()).unwrap();
    tokio::spawn(endpoint.serve_tls_with_shutdown(
        listener,
        "/mcp",
        config,
        std::future::pending(),
    ));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca_and_a_refused_certificate() {
    let ca = ca();
    let loopback = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let (cert, key) = leaf(&ca, loopback);
    let url = files_over_tls(&cert, &key).await;
    let ca_file = temp("ca.pem", &ca.cert.pem());
    let ca_path = ca_file.to_str().unwrap();

    // Trusting the CA, the whole flow runs over https in both eras: the form's answer too.
    for era in ["2026-07-28", "2025-11-25"] {
        let out = term(&[
            "call",
            "delete_folder",
            "path=/tmp/project",
            "--answer",
            "ok=yes",
            "--era",
            era,
            "--ca",
            ca_path,
            &url,
        ])
        .await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "deleted /tmp/project\n"),
            "{era}: {}",
            out.stderr
        );
    }

    // Without the CA the certificate is refused: exit 4, the cause named, the fix suggested.
    let out = term(&["tools", &url]).await;
    assert_eq!(out.code, 4, "{}", out.stderr);
    let error = out.error();
    assert_eq!(error["error"]["kind"], "tls");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "; the server's certificate was refused: no trusted CA signed it (if a private CA did, trust that CA with --ca FILE)"
        ),
        "{message}"
    );

    // A certificate for another name is refused even with the CA trusted.
    let (cert, key) = leaf(
        &ca,
        vec![SanType::DnsName("example.com".try_into().unwrap())],
    );
    let other = files_over_tls(&cert, &key).await;
    let out = term(&["tools", "--ca", ca_path, &other]).await;
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(
        out.error()["error"]["message"].as_str().unwrap().ends_with(
            "certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"example.com\"); the server's certificate was refused"
        ),
        "{}",
        out.stderr
    );

    // A --ca file without a certificate is the user's mistake, said so.
    let empty = temp("empty.pem", "not a certificate\n");
    let out = term(&["tools", "--ca", empty.to_str().unwrap(), &url]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        format!(
            "--ca {}: no certificate found in the PEM text",
            empty.display()
        )
    );
}

/// One request the scripted authorization server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    body: String,
}

impl Seen {
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap()
    }

    fn query(&self) -> BTreeMap<String, String> {
        form(self.target.split_once('?').map_or("", |(_, q)| q))
    }
}

fn form(s: &str) -> BTreeMap<String, String> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The scripted authorization server's shared state.
#[derive(Default)]
struct AsState {
    seen: Vec<Seen>,
    /// The PKCE challenge of the last authorization request.
    challenge: String,
    /// Issued access token → the resource it is for.
    tokens: BTreeMap<String, String>,
    /// Refuse the code at the token endpoint.
    refuse: bool,
    /// Deny the authorization request with this `error_description`.
    deny: Option<String>,
}

/// An authorization server on a local port that grants at once (its authorize endpoint
/// redirects with a code, no login page); returns its issuer.
async fn authorization_server(state: Arc<Mutex<AsState>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let me = issuer.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            let issuer = me.clone();
            tokio::spawn(async move {
                let Some(seen) = read_request(&mut socket).await else {
                    return;
                };
                let (status, headers, body) = answer(&issuer, &state, &seen);
                state.lock().unwrap().seen.push(seen);
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    issuer
}

/// Reads one HTTP/1.1 request (head and a Content-Length body), at most 64 KiB.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 65536 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length.min(65536) {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut first = head.lines().next()?.split(' ');
    Some(Seen {
        method: first.next()?.to_owned(),
        target: first.next()?.to_owned(),
        body: String::from_utf8_lossy(&buf[head_end..]).into_owned(),
    })
}

fn answer(
    issuer: &str,
    state: &Mutex<AsState>,
    seen: &Seen,
) -> (u16, Vec<(String, String)>, String) {
    let json = |status, v: Value| (status, vec![], v.to_string());
    match (seen.method.as_str(), seen.path()) {
        ("GET", "/.well-known/oauth-authorization-server") => json(
            200,
            json!({"issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true}),
        ),
        ("POST", "/register") => {
            let body: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
            json(
                201,
                json!({"client_id": "mcp-term-client",
                    "redirect_uris": body["redirect_uris"],
                    "token_endpoint_auth_method": "none"}),
            )
        }
        ("GET", "/authorize") => {
            let q = seen.query();
            state.lock().unwrap().challenge = q.get("code_challenge").cloned().unwrap_or_default();
            if let Some(description) = state.lock().unwrap().deny.clone() {
                let location = format!(
                    "{}?error=access_denied&error_description={}&state={}&iss={}",
                    q.get("redirect_uri").cloned().unwrap_or_default(),
                    encode(&description),
                    encode(q.get("state").map_or("", String::as_str)),
                    encode(issuer)
                );
                return (302, vec![("Location".into(), location)], String::new());
            }
            let location = format!(
                "{}?code=the-code&state={}&iss={}",
                q.get("redirect_uri").cloned().unwrap_or_default(),
                encode(q.get("state").map_or("", String::as_str)),
                encode(issuer)
            );
            (302, vec![("Location".into(), location)], String::new())
        }
        ("POST", "/token") => {
            let f = form(&seen.body);
            let mut s = state.lock().unwrap();
            if s.refuse {
                return json(
                    400,
                    json!({"error": "invalid_grant", "error_description": "the code was revoked"}),
                );
            }
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
            let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            if f.get("code").map(String::as_str) != Some("the-code") || expected != s.challenge {
                return json(400, json!({"error": "invalid_grant"}));
            }
            let token = format!("at-{}", s.tokens.len() + 1);
            let resource = f.get("resource").cloned().unwrap_or_default();
            s.tokens.insert(token.clone(), resource);
            json(
                200,
                json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": "mcp:tools"}),
            )
        }
        _ => json(404, json!({"error": "not_found"})),
    }
}

/// Accepts the tokens the scripted authorization server issued, for the resource they name.
struct IssuedTokens {
    state: Arc<Mutex<AsState>>,
    issuer: String,
}

impl TokenVerifier for IssuedTokens {
    fn verify(&self, token: &str) -> BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let found = self.state.lock().unwrap().tokens.get(token).cloned();
        let verdict = match found {
            Some(resource) => Ok(VerifiedToken::new(
                Principal::new("mcp-term")
                    .issuer(&self.issuer)
                    .subject("carol"),
            )
            .audience(resource)
            .scopes("mcp:tools")),
            None => Err(AuthError::InvalidToken("unknown token".into())),
        };
        Box::pin(async move { verdict })
    }
}

/// The Protected example behind the scripted authorization server: (its issuer, the MCP URL).
async fn protected_behind(state: &Arc<Mutex<AsState>>) -> (String, String) {
    let issuer = authorization_server(state.clone()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let resource = ProtectedResource::new(&url)
        .authorization_server(&issuer)
        .scopes_supported(["mcp:tools"])
        .required_scopes(["mcp:tools"]);
    let verifier = IssuedTokens {
        state: state.clone(),
        issuer: issuer.clone(),
    };
    tokio::spawn(
        mcp::http::endpoint(mcp_examples::protected::server())
            .unwrap()
            .bearer_auth(verifier, resource)
            .serve_with_shutdown(listener, "/mcp", std::future::pending()),
    );
    (issuer, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_end_to_end_against_a_scripted_authorization_server() {
    let state = Arc::new(Mutex::new(AsState::default()));
    let (issuer, url) = protected_behind(&state).await;

    // Without --oauth the 401 is an authorization failure (exit 3), and nothing reached the
    // authorization server.
    let out = term(&["call", "deploy", "service=web", "--answer", "ok=yes", &url]).await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error()["error"]["kind"], "auth");
    assert!(state.lock().unwrap().seen.is_empty());

    // With --oauth (no terminal: the headless authorizer follows the redirect) the client
    // discovers, registers, authorizes with PKCE and the resource, gets a token, and the call
    // (with its form) runs as the authorized user.
    let out = term(&[
        "call",
        "deploy",
        "service=web",
        "--answer",
        "ok=yes",
        "--oauth",
        &url,
    ])
    .await;
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "carol deployed web.\n"),
        "{}",
        out.stderr
    );
    let seen = state.lock().unwrap().seen.clone();
    let paths: Vec<&str> = seen.iter().map(Seen::path).collect();
    assert_eq!(
        paths,
        [
            "/.well-known/oauth-authorization-server",
            "/register",
            "/authorize",
            "/token"
        ],
        "{seen:?}"
    );
    let registration: Value = serde_json::from_str(&seen[1].body).unwrap();
    assert_eq!(registration["client_name"], "mcp-term");
    assert_eq!(
        registration["redirect_uris"],
        json!(["http://127.0.0.1:8976/callback"])
    );
    let authorize = seen[2].query();
    assert_eq!(authorize["response_type"], "code");
    assert_eq!(authorize["client_id"], "mcp-term-client");
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["resource"], url);
    assert_eq!(authorize["scope"], "mcp:tools");
    let token = form(&seen[3].body);
    assert_eq!(token["grant_type"], "authorization_code");
    assert_eq!(token["resource"], url);
    assert!(
        !out.stderr.contains("at-1") && !out.stdout.contains("at-1"),
        "the token is never printed: {}",
        out.stderr
    );

    // An authorization server that refuses the code: exit 3 with its reason.
    state.lock().unwrap().refuse = true;
    let out = term(&[
        "call",
        "deploy",
        "service=web",
        "--answer",
        "ok=yes",
        "--oauth",
        &url,
    ])
    .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error()["error"]["kind"], "auth");
    let message = out.error()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.ends_with(&format!(
            "the token request failed: {issuer}/token answered HTTP 400 invalid_grant"
        )),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_servers_error_description_is_printed_without_escapes() {
    let state = Arc::new(Mutex::new(AsState::default()));
    state.lock().unwrap().deny = Some(
        "\u{1b}]52;c;aGk=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2Jyou said no\u{9b}2J\u{202e}\nfake line"
            .into(),
    );
    let (_, url) = protected_behind(&state).await;
    let out = term(&[
        "call",
        "deploy",
        "service=web",
        "--answer",
        "ok=yes",
        "--oauth",
        &url,
    ])
    .await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        !out.stderr
            .contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
        "{:?}",
        out.stderr
    );
    let message = out.error()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.ends_with("the authorization server answered access_denied you said no fake line"),
        "{message}"
    );
    assert_eq!(
        out.stderr.lines().rev().nth(1),
        Some(&*format!("mcp-term: {message}"))
    );
}
