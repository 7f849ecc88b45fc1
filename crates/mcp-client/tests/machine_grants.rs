//! The machine grants against a scripted authorization server and enterprise IdP: client
//! credentials (`client_secret_basic`, `private_key_jwt` with ES256 and RS256), the JWT bearer
//! grant with file, environment and callback assertion sources, and enterprise-managed
//! authorization (token exchange for an ID-JAG, then the JWT bearer grant). Every request is
//! recorded and asserted on. Each grant, pointed at an MCP server whose resource metadata names
//! an authorization server its credential is not bound to, sends nothing there.
#![cfg(feature = "oauth")]

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mcp_client::BoxFuture;
use mcp_client::oauth::{
    CallbackAssertion, ClientAuth, EnterpriseGrant, EnvAssertion, FileAssertion, HttpFetch,
    HttpRequest, HttpResponse, MachineGrant, OAuth, OAuthError, SigningKey, StaticAssertion,
};
use ring::signature::{self, KeyPair as _, UnparsedPublicKey};
use serde_json::{Value, json};

const AS: &str = "http://localhost:5000";
const IDP: &str = "http://localhost:6000";
const SERVER: &str = "http://localhost:4000/mcp";
const PRM: &str = "http://localhost:4000/.well-known/oauth-protected-resource/mcp";
const CHALLENGE: &str = "Bearer error=\"invalid_token\", resource_metadata=\"http://localhost:4000/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\"";

/// A 2048-bit RSA test key, generated with `openssl genpkey -algorithm RSA` for this file and
/// used nowhere else.
const RSA_PEM: &str = concat!(
    "-----BEGIN PRIVATE KEY-----\n",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDOX6swGJjNC4uN\n",
    "r1E+3b3PnwbXHTh2jExXWyGW7wTjP+2AswS/7k797BhHY3fEiiOGr4NT7N68n9Ty\n",
    "btQSfVmrowXj8B3wCt2PZr2vLDziqlLu1QZzD/A0/x1hatlABoxAiY7YxPX0looB\n",
    "q2+WamUYHwUc/zauHAyO2SxR6OXSXs1ZQilvXVrDzNFXwspB/EP5PXD6psuGh9C5\n",
    "3sTp2Sdg/1IXazLPfdTiibFJVurRawdSrJtave2SxhpCnb8M5Te3dSONCgISJIkp\n",
    "hJfwgQEqG9WXjzBd6so+0+2e1Fb0Q2xh1dZ944FHuOJ831omqrnyJAojiuupPZAb\n",
    "YCsX19gNAgMBAAECggEADD5Auam75u44aT9tYn1lNVwJ29kv8FiCbuxJIdssPw8b\n",
    "1/bG4VwR855+Ej4kbNSFJwhikigLTsVsrLVGf5JQL46MWulz3TnHyyodNrc5JXlV\n",
    "UjXxHAJmDb7Uz2K3YMUCrRF8GAAXV1tW9KJnDFVjifrNIttBMzMWy6K2rmVSvRgn\n",
    "b71A8L4rJmZDNeuhbPVSeOq2fhcFr+1GkSw3qDGMmizAgv88RKSaY50cH14tDdF7\n",
    "0EaRWoQpFOGGlWQG0TINhY8fcUKADmVy7/92ZmR5WT6/yFWP9adAGXz9d3+50mCp\n",
    "OG09Fj5Pa7oJz1OBnCA8HFSI6xMUxl4gaBx1fojiAQKBgQDp+UkL2+hrv9kAZiWG\n",
    "MSF+6bULgswGYskF7IJaOz4Ac3ocMKU1j89d5IXZqyB7C5SybDv7Fq9hyDpJkaOl\n",
    "DhzPhNgK9QJnBCRZOF1i/lqGAc9GaRMgjFdv0YKtyJsVXRIntypGBMe1jNTV0TG8\n",
    "Cl9GgT8BTYNAYDTPOyqTxT+eOQKBgQDhzTpjPSDsm5AnlPuY1WoVPhJxh9IX6I3n\n",
    "WUr6uIjtRFhCj1mHAGoNGfc3t987XJVvHywKmQbvRzbHztRs4LNr6Rb49rd0BCgh\n",
    "40y2JACSfAuzlm3R+i/yFQPi1VrhlXLf/GrwHLQuGRUzCJAO2+ju7So4ROkgp6hw\n",
    "ZjW/r2jIdQKBgDTVfQA3jVlffhIP/uM5jvXIsoBB7e53OiujR6A2hn61lNpuxa+9\n",
    "pLbwFqWbdf8zE0XjGPxPGBV9kGPyhkCMWkcmGV8ICp3WmpqnFrd29lwSZorgyVft\n",
    "OQVgCyFRDmwZkzLyspITHEHL5nfOAGwU74TNRLv3k+7iiqpNEwVBYmdJAoGAMMs6\n",
    "fMtu2/JZ2lPVcpdbjy+UqLfi7IuybnXbQAa0gCEuuWNkw0mRoTclNwMi2B8Po62m\n",
    "xLuAxiArdE37lXOREhaSgkY+KnHjgj8uCoYJIZ5woOQ24xMfXT6xUkkslGbJJiHT\n",
    "sgNh5DxDWn3VM4DN+yOA5hvuDMJuIavUnZF4ISkCgYEAoiA2yaYK8lLmgqDOfdTX\n",
    "9Rs+ivuftMetuibkGw05bX06FtgFC/IEPk+3f5vuMPsGnUVH0p8NrbwvEDw6F/32\n",
    "HjX2ZhhpU7RaOkM7o0DXOgQiaX1XsnuN1sNqAoXP4fsBW4hvIsMu8xLe1DIDUHRm\n",
    "VjeccZpts0bFy48TF5aUwUg=\n",
    "-----END PRIVATE KEY-----\n",
);

type Route = dyn Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync;

struct Web {
    route: Box<Route>,
    log: Mutex<Vec<HttpRequest>>,
}

impl Web {
    fn new(
        route: impl Fn(&HttpRequest) -> Option<HttpResponse> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Web {
            route: Box::new(route),
            log: Mutex::new(Vec::new()),
        })
    }

    fn urls(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.url.clone())
            .collect()
    }

    fn to(&self, url: &str) -> Vec<HttpRequest> {
        let log = self.log.lock().unwrap();
        log.iter().filter(|r| r.url == url).cloned().collect()
    }
}

impl HttpFetch for Web {
    fn fetch(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        self.log.lock().unwrap().push(request.clone());
        let response = (self.route)(&request).unwrap_or_else(|| status(404, json!({})));
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

fn form(body: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let b = s.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
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

fn field(pairs: &[(String, String)], key: &str) -> Option<String> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

fn header(request: &HttpRequest, name: &str) -> Option<String> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
}

/// PRM at the challenge's URL, the AS metadata, and `token` answering the token endpoint.
fn web(
    token: impl Fn(&HttpRequest) -> HttpResponse + Send + Sync + 'static,
    idp: impl Fn(&HttpRequest) -> HttpResponse + Send + Sync + 'static,
) -> Arc<Web> {
    Web::new(move |r: &HttpRequest| match r.url.as_str() {
        PRM => Some(status(
            200,
            json!({"resource": SERVER, "authorization_servers": [AS], "scopes_supported": ["mcp:basic"]}),
        )),
        "http://localhost:5000/.well-known/oauth-authorization-server" => Some(status(
            200,
            json!({"issuer": AS, "authorization_endpoint": format!("{AS}/authorize"),
                   "token_endpoint": format!("{AS}/token"), "registration_endpoint": format!("{AS}/register"),
                   "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                   "scopes_supported": ["mcp:tools", "offline_access"],
                   "token_endpoint_auth_methods_supported": ["client_secret_basic", "private_key_jwt"]}),
        )),
        "http://localhost:5000/token" => Some(token(r)),
        "http://localhost:6000/token" => Some(idp(r)),
        _ => None,
    })
}

fn issued(token: &str) -> HttpResponse {
    status(
        200,
        json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}),
    )
}

fn no_idp(_: &HttpRequest) -> HttpResponse {
    status(500, json!({}))
}

/// The claims of a JWT whose signature `verify` accepts.
fn verified_claims(jwt: &str, verify: impl Fn(&[u8], &[u8]) -> bool) -> (Value, Value) {
    let (input, sig) = jwt.rsplit_once('.').unwrap();
    assert!(
        verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap()),
        "signature verifies"
    );
    let (header, claims) = input.split_once('.').unwrap();
    (
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap(),
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap(),
    )
}

fn pem_of(der: &[u8]) -> String {
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der)
    )
}

#[tokio::test]
async fn client_secret_basic_gets_a_token_with_the_resource_and_the_challenged_scope() {
    let web = web(|_| issued("cc-token"), no_idp);
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret:x")),
        web.clone(),
    )
    .bound_to_issuer(AS);
    let token = oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap();
    assert_eq!(token, "cc-token");
    assert_eq!(oauth.access_token().as_deref(), Some("cc-token"));
    assert_eq!(
        web.urls(),
        [
            PRM,
            "http://localhost:5000/.well-known/oauth-authorization-server",
            "http://localhost:5000/token"
        ],
        "no registration, no authorization page"
    );
    let request = &web.to("http://localhost:5000/token")[0];
    assert_eq!(request.method, "POST");
    let basic = header(request, "Authorization").unwrap();
    let pair = STANDARD
        .decode(basic.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(pair).unwrap(), "machine-1:s3cret%3Ax");
    let body = form(&request.body);
    assert_eq!(
        body,
        [
            ("grant_type".to_owned(), "client_credentials".to_owned()),
            ("scope".to_owned(), "mcp:tools".to_owned()),
            ("resource".to_owned(), SERVER.to_owned()),
        ],
        "no offline_access for a machine, no secret in the body"
    );
}

#[tokio::test]
async fn private_key_jwt_signs_a_fresh_es256_assertion_for_the_issuer() {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        signature::EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
    let pair = signature::EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        pkcs8.as_ref(),
        &rng,
    )
    .unwrap();
    let public = pair.public_key().as_ref().to_vec();
    let key = SigningKey::from_pkcs8_pem(&pem_of(pkcs8.as_ref()), "ES256").unwrap();
    let web = web(|_| issued("jwt-token"), no_idp);
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::private_key_jwt("machine-2", key)),
        web.clone(),
    )
    .bound_to_issuer(AS);
    oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap();
    oauth
        .unauthorized(SERVER, Some(CHALLENGE), Some("jwt-token"))
        .await
        .unwrap();
    let requests = web.to("http://localhost:5000/token");
    assert_eq!(requests.len(), 2);
    let mut jtis = Vec::new();
    for request in &requests {
        assert_eq!(header(request, "Authorization"), None);
        let body = form(&request.body);
        assert_eq!(
            field(&body, "grant_type").as_deref(),
            Some("client_credentials")
        );
        assert_eq!(
            field(&body, "client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert_eq!(field(&body, "client_id").as_deref(), Some("machine-2"));
        let assertion = field(&body, "client_assertion").unwrap();
        let (header, claims) = verified_claims(&assertion, |input, sig| {
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &public)
                .verify(input, sig)
                .is_ok()
        });
        assert_eq!(header["alg"], "ES256");
        assert_eq!(claims["iss"], "machine-2");
        assert_eq!(claims["sub"], "machine-2");
        assert_eq!(claims["aud"], AS);
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        jtis.push(claims["jti"].as_str().unwrap().to_owned());
    }
    assert_ne!(jtis[0], jtis[1], "every assertion has its own jti");
}

#[tokio::test]
async fn private_key_jwt_signs_rs256_with_an_rsa_key() {
    let key = SigningKey::from_pkcs8_pem(RSA_PEM, "RS256").unwrap();
    let jwk = key.public_jwk();
    let web = web(|_| issued("rsa-token"), no_idp);
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::private_key_jwt("machine-3", key)),
        web.clone(),
    )
    .bound_to_issuer(AS);
    oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap();
    let body = form(&web.to("http://localhost:5000/token")[0].body);
    let assertion = field(&body, "client_assertion").unwrap();
    let n = URL_SAFE_NO_PAD.decode(jwk["n"].as_str().unwrap()).unwrap();
    let e = URL_SAFE_NO_PAD.decode(jwk["e"].as_str().unwrap()).unwrap();
    let (header, claims) = verified_claims(&assertion, |input, sig| {
        ring::rsa::PublicKeyComponents { n: &n, e: &e }
            .verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, sig)
            .is_ok()
    });
    assert_eq!(header["alg"], "RS256");
    assert_eq!(claims["iss"], "machine-3");
    assert_eq!(claims["aud"], AS);
}

#[tokio::test]
async fn the_jwt_bearer_grant_presents_the_workload_assertion_and_surfaces_a_refusal_once() {
    let path = std::env::temp_dir().join(format!("mcp-rs-wif-{}.jwt", std::process::id()));
    std::fs::write(&path, "header.claims.sig\n").unwrap();
    let web = web(
        |r| {
            let body = form(&r.body);
            if field(&body, "assertion").as_deref() == Some("header.claims.sig") {
                issued("wif-token")
            } else {
                status(
                    400,
                    json!({"error": "invalid_grant", "error_description": "assertion expired"}),
                )
            }
        },
        no_idp,
    );
    let oauth = OAuth::machine(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(FileAssertion(path.clone())),
        },
        web.clone(),
    )
    .bound_to_issuer(AS);
    assert_eq!(
        oauth
            .unauthorized(SERVER, Some(CHALLENGE), None)
            .await
            .unwrap(),
        "wif-token"
    );
    let body = form(&web.to("http://localhost:5000/token")[0].body);
    assert_eq!(
        body,
        [
            (
                "grant_type".to_owned(),
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned()
            ),
            ("assertion".to_owned(), "header.claims.sig".to_owned()),
            ("scope".to_owned(), "mcp:tools".to_owned()),
            ("resource".to_owned(), SERVER.to_owned()),
            ("client_id".to_owned(), "workload".to_owned()),
        ]
    );
    std::fs::remove_file(&path).unwrap();

    // A callback sees the audience; the refusal comes back as it was, after one request.
    let audiences = Arc::new(Mutex::new(Vec::new()));
    let seen = audiences.clone();
    let web = web_refusing();
    let oauth = OAuth::machine(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(CallbackAssertion(move |audience: String| {
                seen.lock().unwrap().push(audience);
                async { Ok::<_, OAuthError>("stale.jwt.sig".to_owned()) }
            })),
        },
        web.clone(),
    )
    .bound_to_issuer(AS);
    let err = oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(
            "http://localhost:5000/token answered HTTP 400 invalid_grant assertion expired".into()
        )
    );
    assert_eq!(*audiences.lock().unwrap(), [AS]);
    assert_eq!(
        web.to("http://localhost:5000/token").len(),
        1,
        "no retry, no other grant"
    );
}

fn web_refusing() -> Arc<Web> {
    web(
        |_| {
            status(
                400,
                json!({"error": "invalid_grant", "error_description": "assertion expired"}),
            )
        },
        no_idp,
    )
}

#[tokio::test]
async fn assertion_sources_refuse_what_is_missing_empty_or_too_large() {
    let oauth = |source: Arc<dyn mcp_client::oauth::AssertionSource>| {
        OAuth::machine(
            MachineGrant::JwtBearer {
                client: ClientAuth::public("w"),
                assertion: source,
            },
            web(|_| issued("t"), no_idp),
        )
        .bound_to_issuer(AS)
    };
    let err = oauth(Arc::new(EnvAssertion(
        "MCP_RS_TEST_NO_SUCH_VARIABLE".into(),
    )))
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(
            "the environment variable MCP_RS_TEST_NO_SUCH_VARIABLE is not set".into()
        )
    );
    let path = std::env::temp_dir().join(format!("mcp-rs-wif-big-{}.jwt", std::process::id()));
    std::fs::write(&path, vec![b'a'; 64 * 1024 + 1]).unwrap();
    let err = oauth(Arc::new(FileAssertion(path.clone())))
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(format!(
            "the assertion in the file {} is larger than 65536 bytes",
            path.display()
        ))
    );
    std::fs::write(&path, "  \n").unwrap();
    let err = oauth(Arc::new(FileAssertion(path.clone())))
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(format!(
            "the assertion in the file {} is empty",
            path.display()
        ))
    );
    std::fs::remove_file(&path).unwrap();
}

fn enterprise(issued_type: &'static str) -> Arc<Web> {
    web(
        |r| {
            let body = form(&r.body);
            if field(&body, "assertion").as_deref() == Some("the-id-jag") {
                issued("enterprise-token")
            } else {
                status(400, json!({"error": "invalid_grant"}))
            }
        },
        move |_| {
            status(
                200,
                json!({"access_token": "the-id-jag", "issued_token_type": issued_type, "token_type": "N_A"}),
            )
        },
    )
}

fn enterprise_grant() -> MachineGrant {
    MachineGrant::Enterprise(EnterpriseGrant {
        idp_token_endpoint: format!("{IDP}/token"),
        idp_client: ClientAuth::public("idp-client"),
        id_token: Arc::new(StaticAssertion("the-id-token".into())),
        client: ClientAuth::secret_basic("mcp-client", "mcp-secret"),
    })
}

#[tokio::test]
async fn enterprise_authorization_exchanges_the_id_token_then_presents_the_id_jag() {
    let web = enterprise("urn:ietf:params:oauth:token-type:id-jag");
    let oauth = OAuth::machine(enterprise_grant(), web.clone()).bound_to_issuer(AS);
    assert_eq!(
        oauth
            .unauthorized(SERVER, Some(CHALLENGE), None)
            .await
            .unwrap(),
        "enterprise-token"
    );
    assert_eq!(
        web.urls(),
        [
            PRM,
            "http://localhost:5000/.well-known/oauth-authorization-server",
            "http://localhost:6000/token",
            "http://localhost:5000/token",
        ]
    );
    let exchange = &web.to("http://localhost:6000/token")[0];
    assert_eq!(
        header(exchange, "Authorization"),
        None,
        "the IdP client is public"
    );
    assert_eq!(
        form(&exchange.body),
        [
            (
                "grant_type".to_owned(),
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned()
            ),
            (
                "requested_token_type".to_owned(),
                "urn:ietf:params:oauth:token-type:id-jag".to_owned()
            ),
            ("audience".to_owned(), AS.to_owned()),
            ("resource".to_owned(), SERVER.to_owned()),
            ("subject_token".to_owned(), "the-id-token".to_owned()),
            (
                "subject_token_type".to_owned(),
                "urn:ietf:params:oauth:token-type:id_token".to_owned()
            ),
            ("scope".to_owned(), "mcp:tools".to_owned()),
            ("client_id".to_owned(), "idp-client".to_owned()),
        ]
    );
    let grant = &web.to("http://localhost:5000/token")[0];
    let basic = header(grant, "Authorization").unwrap();
    let pair = STANDARD
        .decode(basic.strip_prefix("Basic ").unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(pair).unwrap(), "mcp-client:mcp-secret");
    let body = form(&grant.body);
    assert_eq!(
        field(&body, "grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(field(&body, "assertion").as_deref(), Some("the-id-jag"));
    assert_eq!(field(&body, "resource").as_deref(), Some(SERVER));
}

#[tokio::test]
async fn enterprise_authorization_refuses_a_token_that_is_not_an_id_jag() {
    let web = enterprise("urn:ietf:params:oauth:token-type:access_token");
    let oauth = OAuth::machine(enterprise_grant(), web.clone()).bound_to_issuer(AS);
    let err = oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(
            "http://localhost:6000/token issued a token of type 'urn:ietf:params:oauth:token-type:access_token', not an ID-JAG".into()
        )
    );
    assert!(
        web.to("http://localhost:5000/token").is_empty(),
        "nothing reaches the AS"
    );
}

#[test]
fn secrets_never_show_in_debug_output() {
    let grant = MachineGrant::Enterprise(EnterpriseGrant {
        idp_token_endpoint: format!("{IDP}/token"),
        idp_client: ClientAuth::public("idp-client"),
        id_token: Arc::new(StaticAssertion("id-t0ken".into())),
        client: ClientAuth::secret_basic("mcp-client", "s3cret"),
    });
    let key = SigningKey::from_pkcs8_pem(RSA_PEM, "RS256").unwrap();
    let jwt = MachineGrant::ClientCredentials(ClientAuth::private_key_jwt("m", key));
    let shown = format!(
        "{grant:?} {jwt:?} {:?} {:?}",
        StaticAssertion("st4tic".into()),
        ClientAuth {
            client_id: "p".into(),
            method: mcp_client::oauth::ClientAuthMethod::SecretPost("p0st".into())
        }
    );
    for secret in ["id-t0ken", "s3cret", "st4tic", "p0st", &RSA_PEM[40..80]] {
        assert!(!shown.contains(secret), "{secret} shows in {shown}");
    }
    assert!(
        shown.contains("mcp-client") && shown.contains("RS256"),
        "{shown}"
    );
}

/// A token endpoint that demands the nonce `n-1` in the DPoP proof, then issues a DPoP token.
fn dpop_web() -> Arc<Web> {
    web(
        |r| {
            let proof = header(r, "DPoP").expect("every token request carries a proof");
            let claims = jwt_claims(&proof);
            if claims.get("nonce").and_then(Value::as_str) != Some("n-1") {
                let mut refusal = status(400, json!({"error": "use_dpop_nonce"}));
                refusal.headers.push(("DPoP-Nonce".into(), "n-1".into()));
                return refusal;
            }
            status(
                200,
                json!({"access_token": "dpop-token", "token_type": "DPoP", "expires_in": 60}),
            )
        },
        no_idp,
    )
}

fn jwt_claims(jwt: &str) -> Value {
    let claims = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap()
}

/// Verifies a DPoP proof with the key in its own header; returns (header, claims).
fn verified_proof(proof: &str) -> (Value, Value) {
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(proof.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    let jwk = &header["jwk"];
    let mut point = vec![4u8];
    point.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
    point.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
    verified_claims(proof, |input, sig| {
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &point)
            .verify(input, sig)
            .is_ok()
    })
}

#[tokio::test]
async fn dpop_proofs_go_with_token_requests_and_a_nonce_challenge_is_answered_once() {
    let web = dpop_web();
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("m", "s")),
        web.clone(),
    )
    .bound_to_issuer(AS)
    .with_dpop(SigningKey::generate_es256().unwrap());
    assert!(!oauth.is_dpop_bound());
    let token = oauth
        .unauthorized(SERVER, Some("DPoP resource_metadata=\"http://localhost:4000/.well-known/oauth-protected-resource/mcp\""), None)
        .await
        .unwrap();
    assert_eq!(token, "dpop-token");
    assert!(oauth.is_dpop_bound());
    let requests = web.to("http://localhost:5000/token");
    assert_eq!(requests.len(), 2, "one refusal, one retry with the nonce");
    let mut jtis = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let (header, claims) = verified_proof(&header(request, "DPoP").unwrap());
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(
            header["jwk"].get("d").is_none(),
            "no private key in the proof"
        );
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://localhost:5000/token");
        assert!(claims["iat"].as_u64().unwrap() > 1_700_000_000);
        assert!(claims.get("ath").is_none(), "no token yet");
        assert_eq!(
            claims.get("nonce").and_then(Value::as_str),
            [None, Some("n-1")][i]
        );
        jtis.push(claims["jti"].as_str().unwrap().to_owned());
    }
    assert_ne!(jtis[0], jtis[1]);

    // Resource requests: ath is the token's hash, htu drops the query; the RS's nonce is used
    // once it is known, and the same nonce twice is not a reason to retry.
    let proof = oauth
        .dpop_proof("POST", "http://localhost:4000/mcp?x=1", "dpop-token")
        .unwrap();
    let (header, claims) = verified_proof(&proof);
    assert_eq!(claims["htu"], SERVER);
    assert_eq!(claims["htm"], "POST");
    let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, b"dpop-token"));
    assert_eq!(claims["ath"], ath);
    assert!(claims.get("nonce").is_none());
    let jkt = mcp_client::oauth::jwk_thumbprint(&header["jwk"]).unwrap();
    assert_eq!(oauth.dpop_thumbprint().as_deref(), Some(jkt.as_str()));
    let challenge = Some("DPoP error=\"use_dpop_nonce\"");
    assert!(oauth.dpop_nonce_challenge(SERVER, challenge, Some("rs-1")));
    assert!(!oauth.dpop_nonce_challenge(SERVER, challenge, Some("rs-1")));
    let proof = oauth.dpop_proof("GET", SERVER, "dpop-token").unwrap();
    assert_eq!(verified_proof(&proof).1["nonce"], "rs-1");
    let proof2 = oauth.dpop_proof("GET", SERVER, "dpop-token").unwrap();
    assert_ne!(
        verified_proof(&proof2).1["jti"],
        verified_proof(&proof).1["jti"]
    );
}

#[tokio::test]
async fn a_dpop_token_without_dpop_is_refused_and_an_endless_nonce_demand_gets_one_retry() {
    // Without DPoP the client cannot present a DPoP token.
    let plain = web_issuing_dpop();
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("m", "s")),
        plain.clone(),
    )
    .bound_to_issuer(AS)
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token(
            "http://localhost:5000/token issued a DPoP token; only Bearer tokens are supported"
                .into()
        )
    );

    let stubborn = web(
        |_| {
            let mut refusal = status(400, json!({"error": "use_dpop_nonce"}));
            refusal
                .headers
                .push(("DPoP-Nonce".into(), format!("n-{}", jwt_nonce_counter())));
            refusal
        },
        no_idp,
    );
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("m", "s")),
        stubborn.clone(),
    )
    .bound_to_issuer(AS)
    .with_dpop(SigningKey::generate_es256().unwrap())
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::Token("http://localhost:5000/token answered HTTP 400 use_dpop_nonce".into())
    );
    assert_eq!(stubborn.to("http://localhost:5000/token").len(), 2);
}

fn web_issuing_dpop() -> Arc<Web> {
    web(
        |_| {
            status(
                200,
                json!({"access_token": "dpop-token", "token_type": "DPoP"}),
            )
        },
        no_idp,
    )
}

fn jwt_nonce_counter() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

// Issuer binding: a machine credential goes only to the authorization server it is bound to,
// whatever the MCP server's resource metadata names (W3).

/// An authorization server the hostile MCP server runs. Loopback, so that only the binding,
/// not the https rule, stands between it and the credential.
const EVIL: &str = "http://127.0.0.1:7000";
const EVIL_TOKEN: &str = "http://127.0.0.1:7000/token";
const REFUSED: &str = "the MCP server names the authorization server http://127.0.0.1:7000, but this machine credential is bound to http://localhost:5000; nothing was sent";

fn as_metadata(issuer: &str, token_host: &str) -> Value {
    json!({"issuer": issuer, "authorization_endpoint": format!("{token_host}/authorize"),
           "token_endpoint": format!("{token_host}/token"),
           "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
           "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"]})
}

/// An MCP server whose resource metadata names [`EVIL`], a working authorization server that
/// issues a token to anyone. The real authorization server and the IdP answer as well, so a
/// request that reached either would succeed.
fn hostile() -> Arc<Web> {
    Web::new(|r: &HttpRequest| match r.url.as_str() {
        PRM => Some(status(
            200,
            json!({"resource": SERVER, "authorization_servers": [EVIL]}),
        )),
        "http://127.0.0.1:7000/.well-known/oauth-authorization-server" => {
            Some(status(200, as_metadata(EVIL, EVIL)))
        }
        EVIL_TOKEN => Some(issued("stolen")),
        "http://localhost:5000/.well-known/oauth-authorization-server" => {
            Some(status(200, as_metadata(AS, AS)))
        }
        "http://localhost:5000/token" => Some(issued("real")),
        "http://localhost:6000/token" => Some(status(
            200,
            json!({"access_token": "the-id-jag", "token_type": "N_A",
                   "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}),
        )),
        _ => None,
    })
}

/// Whether any recorded request carries `secret` in its URL, a header or its body.
fn carries(web: &Web, secret: &str) -> bool {
    web.log.lock().unwrap().iter().any(|r| {
        r.url.contains(secret)
            || r.headers.iter().any(|(_, v)| v.contains(secret))
            || String::from_utf8_lossy(&r.body).contains(secret)
    })
}

/// Runs `grant`, bound to [`AS`], against [`hostile`]: the typed error naming both issuers,
/// one request (the resource metadata), nothing to the hostile host, no `secret` anywhere.
async fn refused_by_a_hostile_server(grant: MachineGrant, secrets: &[&str]) {
    let web = hostile();
    let oauth = OAuth::machine(grant, web.clone()).bound_to_issuer(AS);
    let err = oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::UnboundIssuer {
            named: EVIL.into(),
            bound: vec![AS.into()],
        }
    );
    assert_eq!(err.to_string(), REFUSED);
    assert_eq!(
        web.urls(),
        [PRM],
        "nothing after the resource metadata: no metadata request, no token request, no IdP"
    );
    assert!(web.to(EVIL_TOKEN).is_empty());
    for secret in secrets {
        assert!(!carries(&web, secret), "{secret} was sent");
    }
    assert_eq!(oauth.access_token(), None);
}

#[tokio::test]
async fn a_client_secret_basic_is_not_sent_to_an_authorization_server_it_is_not_bound_to() {
    let basic = STANDARD.encode("machine-1:basic-s3cret");
    refused_by_a_hostile_server(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "basic-s3cret")),
        &["basic-s3cret", &basic],
    )
    .await;
}

#[tokio::test]
async fn a_client_secret_post_is_not_sent_to_an_authorization_server_it_is_not_bound_to() {
    refused_by_a_hostile_server(
        MachineGrant::ClientCredentials(ClientAuth {
            client_id: "machine-1".into(),
            method: mcp_client::oauth::ClientAuthMethod::SecretPost("post-s3cret".into()),
        }),
        &["post-s3cret"],
    )
    .await;
}

#[tokio::test]
async fn no_client_assertion_is_signed_for_an_authorization_server_it_is_not_bound_to() {
    let key = SigningKey::from_pkcs8_pem(RSA_PEM, "RS256").unwrap();
    refused_by_a_hostile_server(
        MachineGrant::ClientCredentials(ClientAuth::private_key_jwt("machine-2", key)),
        &["client_assertion", "machine-2"],
    )
    .await;
}

#[tokio::test]
async fn a_file_assertion_is_not_sent_to_an_authorization_server_it_is_not_bound_to() {
    let path = std::env::temp_dir().join(format!("mcp-rs-w3-{}.jwt", std::process::id()));
    std::fs::write(&path, "file.workload.jwt\n").unwrap();
    refused_by_a_hostile_server(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(FileAssertion(path.clone())),
        },
        &["file.workload.jwt"],
    )
    .await;
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn an_env_assertion_is_not_sent_to_an_authorization_server_it_is_not_bound_to() {
    // A variable cargo sets for every test process stands for the platform's token: setting
    // one here would race with the other tests reading the environment.
    let value = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    refused_by_a_hostile_server(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(EnvAssertion("CARGO_MANIFEST_DIR".into())),
        },
        &[&value],
    )
    .await;
}

#[tokio::test]
async fn a_static_assertion_is_not_sent_to_an_authorization_server_it_is_not_bound_to() {
    refused_by_a_hostile_server(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(StaticAssertion("static.workload.jwt".into())),
        },
        &["static.workload.jwt"],
    )
    .await;
}

#[tokio::test]
async fn an_assertion_source_is_not_even_asked_for_an_authorization_server_it_is_not_bound_to() {
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = asked.clone();
    refused_by_a_hostile_server(
        MachineGrant::JwtBearer {
            client: ClientAuth::public("workload"),
            assertion: Arc::new(CallbackAssertion(move |audience: String| {
                seen.lock().unwrap().push(audience);
                async { Ok::<_, OAuthError>("callback.workload.jwt".to_owned()) }
            })),
        },
        &["callback.workload.jwt"],
    )
    .await;
    assert!(asked.lock().unwrap().is_empty(), "{asked:?}");
}

#[tokio::test]
async fn an_enterprise_grant_asks_the_idp_for_nothing_for_an_authorization_server_it_is_not_bound_to()
 {
    let asked = Arc::new(Mutex::new(0));
    let seen = asked.clone();
    refused_by_a_hostile_server(
        MachineGrant::Enterprise(EnterpriseGrant {
            idp_token_endpoint: format!("{IDP}/token"),
            idp_client: ClientAuth::public("idp-client"),
            id_token: Arc::new(CallbackAssertion(move |_audience: String| {
                *seen.lock().unwrap() += 1;
                async { Ok::<_, OAuthError>("the-id-token".to_owned()) }
            })),
            client: ClientAuth::secret_basic("mcp-client", "mcp-secret"),
        }),
        &["the-id-token", "the-id-jag", "mcp-secret", "idp-client"],
    )
    .await;
    assert_eq!(*asked.lock().unwrap(), 0, "the ID token was never read");
}

#[tokio::test]
async fn a_machine_client_never_bound_to_an_issuer_sends_nothing() {
    let web = web(|_| issued("cc-token"), no_idp);
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    );
    let err = oauth
        .unauthorized(SERVER, Some(CHALLENGE), None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OAuthError::UnboundIssuer {
            named: AS.into(),
            bound: vec![],
        }
    );
    assert_eq!(
        err.to_string(),
        "the MCP server names the authorization server http://localhost:5000, but this machine \
         credential is bound to no authorization server (bind it with OAuth::bound_to_issuer to \
         the issuer it was issued for); nothing was sent"
    );
    assert_eq!(web.urls(), [PRM]);
}

#[tokio::test]
async fn the_bound_issuer_gets_the_token_request_and_an_allow_list_admits_each_of_its_issuers() {
    let web = hostile();
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer("https://as.example")
    .bound_to_issuer(EVIL);
    assert_eq!(
        oauth
            .unauthorized(SERVER, Some(CHALLENGE), None)
            .await
            .unwrap(),
        "stolen",
        "EVIL is on this client's list, so it is trusted like any bound issuer"
    );
    assert_eq!(
        web.urls(),
        [
            PRM,
            "http://127.0.0.1:7000/.well-known/oauth-authorization-server",
            EVIL_TOKEN
        ]
    );

    // Another allow-list without it names both in the refusal.
    let web = hostile();
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer("https://as.example")
    .bound_to_issuer(AS)
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the MCP server names the authorization server http://127.0.0.1:7000, but this machine \
         credential is bound to https://as.example or http://localhost:5000; nothing was sent"
    );
    assert_eq!(web.urls(), [PRM]);
}

#[tokio::test]
async fn an_issuer_is_compared_exactly() {
    let web = web(|_| issued("cc-token"), no_idp);
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer("http://localhost:5000/")
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::UnboundIssuer {
            named: AS.into(),
            bound: vec!["http://localhost:5000/".into()],
        }
    );
    assert_eq!(web.urls(), [PRM]);
}

#[tokio::test]
async fn the_danger_opt_out_sends_the_credential_to_whichever_server_the_mcp_server_names() {
    let web = hostile();
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .danger_send_credentials_to_any_issuer();
    assert_eq!(
        oauth
            .unauthorized(SERVER, Some(CHALLENGE), None)
            .await
            .unwrap(),
        "stolen"
    );
    // What the opt-out risks: the secret went to the server the MCP server chose.
    let request = &web.to(EVIL_TOKEN)[0];
    let basic = header(request, "Authorization").unwrap();
    assert_eq!(
        basic,
        format!("Basic {}", STANDARD.encode("machine-1:s3cret"))
    );
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused_before_anything_is_sent() {
    // The resource metadata names the bound issuer, but the document found there claims to be
    // the hostile server, with its token endpoint.
    let web = Web::new(|r: &HttpRequest| match r.url.as_str() {
        PRM => Some(status(
            200,
            json!({"resource": SERVER, "authorization_servers": [AS]}),
        )),
        "http://localhost:5000/.well-known/oauth-authorization-server" => {
            Some(status(200, as_metadata(EVIL, EVIL)))
        }
        EVIL_TOKEN => Some(issued("stolen")),
        _ => None,
    });
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer(AS)
    .unauthorized(SERVER, Some(CHALLENGE), None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::IssuerMismatch {
            expected: AS.into(),
            found: EVIL.into(),
        }
    );
    assert!(
        !web.urls().iter().any(|u| u.starts_with(EVIL)),
        "{:?}",
        web.urls()
    );
    assert!(!carries(&web, "s3cret"));
}

#[tokio::test]
async fn a_server_without_resource_metadata_is_its_own_authorization_server_and_is_refused_too() {
    // A 2025-03-26 server: no resource metadata, so its origin is the authorization server.
    let web = Web::new(|_| None);
    let err = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer(AS)
    .unauthorized(SERVER, None, None)
    .await
    .unwrap_err();
    assert_eq!(
        err,
        OAuthError::UnboundIssuer {
            named: "http://localhost:4000".into(),
            bound: vec![AS.into()],
        }
    );
    assert_eq!(
        web.urls(),
        [
            PRM,
            "http://localhost:4000/.well-known/oauth-protected-resource"
        ],
        "the resource metadata was looked for; nothing was sent to the server as an authorization server"
    );
}

#[tokio::test]
async fn of_several_listed_authorization_servers_the_bound_one_is_used() {
    let web = Web::new(|r: &HttpRequest| match r.url.as_str() {
        PRM => Some(status(
            200,
            json!({"resource": SERVER, "authorization_servers": [EVIL, AS]}),
        )),
        "http://127.0.0.1:7000/.well-known/oauth-authorization-server" => {
            Some(status(200, as_metadata(EVIL, EVIL)))
        }
        EVIL_TOKEN => Some(issued("stolen")),
        "http://localhost:5000/.well-known/oauth-authorization-server" => {
            Some(status(200, as_metadata(AS, AS)))
        }
        "http://localhost:5000/token" => Some(issued("real")),
        _ => None,
    });
    let oauth = OAuth::machine(
        MachineGrant::ClientCredentials(ClientAuth::secret_basic("machine-1", "s3cret")),
        web.clone(),
    )
    .bound_to_issuer(AS);
    assert_eq!(
        oauth
            .unauthorized(SERVER, Some(CHALLENGE), None)
            .await
            .unwrap(),
        "real"
    );
    assert_eq!(
        web.urls(),
        [
            PRM,
            "http://localhost:5000/.well-known/oauth-authorization-server",
            "http://localhost:5000/token"
        ]
    );
}
