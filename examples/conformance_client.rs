//! The client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), built on `mcp::client::Client` over Streamable HTTP.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call MCP_CONFORMANCE_PROTOCOL_VERSION=2026-07-28 \
//!     conformance-client http://localhost:PORT/mcp
//! ```
//!
//! The harness starts a mock server, appends its URL as the last argument, and names the
//! scenario in `MCP_CONFORMANCE_SCENARIO`. `MCP_CONFORMANCE_PROTOCOL_VERSION` picks the era:
//! `2025-11-25` runs the `initialize` handshake, `2026-07-28` speaks the stateless wire.
//! `MCP_CONFORMANCE_CONTEXT` carries scenario data (the `toolCalls` of `http-custom-headers`,
//! the pre-registered credentials of `auth/pre-registration`). The OAuth scenarios (`auth/*`)
//! authorize with `mcp::client::oauth` and a headless authorizer (the harness's authorization
//! server redirects at once), then list the tools and call `test-tool`. The skills scenarios
//! (`sep-2640-client-*`) list the skills and, where the scenario loads one, verify each file.

use std::collections::BTreeMap;
use std::process::ExitCode;

use std::sync::Arc;

use mcp::client::oauth::{
    ClientAuth, ClientCredentials, EnterpriseGrant, HeadlessAuthorizer, MachineGrant, OAuth,
    OAuthConfig, SigningKey, StaticAssertion,
};
use mcp::client::{Client, ClientError, Mode};
use mcp::http::HttpTransport;
use mcp::types::elicitation::{ElicitAction, ElicitRequestParams, ElicitResult, ElicitValue};
use mcp::types::roots::ListRootsResult;
use mcp::types::sampling::CreateMessageResult;
use serde_json::{Value, json};

/// The version the harness names when it does not set one.
const DEFAULT_VERSION: &str = "2025-11-25";

fn fail(message: impl std::fmt::Display) -> ClientError {
    ClientError::InvalidResponse(message.to_string())
}

/// Answers a form elicitation by accepting it with every field filled: the schema's `default`
/// where it has one (SEP-1034), otherwise a value of the field's type.
fn fill_form(params: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        // URL mode: consent without content.
        return wire(json!({"action": "accept"}));
    };
    let mut content = BTreeMap::new();
    for (name, property) in &form.requested_schema.properties {
        let schema = serde_json::to_value(property).unwrap_or(Value::Null);
        let value = match schema.get("default") {
            Some(default) => default.clone(),
            None => match schema.get("type").and_then(Value::as_str) {
                Some("boolean") => json!(true),
                Some("integer") | Some("number") => json!(1),
                Some("array") => json!([]),
                _ => match schema.get("enum").and_then(|e| e.get(0)) {
                    Some(first) => first.clone(),
                    None => json!("conformance"),
                },
            },
        };
        if let Ok(value) = serde_json::from_value::<ElicitValue>(value) {
            content.insert(name.clone(), value);
        }
    }
    ElicitResult {
        action: ElicitAction::Accept,
        content: Some(content),
        meta: None,
        extra: Default::default(),
    }
}

fn wire<T: serde::de::DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(v) => v,
        Err(e) => panic!("a fixture does not match its protocol type: {e}"),
    }
}

fn context() -> Option<Value> {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
}

/// The machine grant a scenario's context describes, for the extension scenarios that have
/// no user: client credentials, workload identity, enterprise-managed authorization.
fn machine_grant(scenario: &str, context: &Value) -> Result<Option<MachineGrant>, ClientError> {
    let field = |name: &str| {
        context
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| fail(format!("MCP_CONFORMANCE_CONTEXT has no {name}")))
    };
    let grant = match scenario {
        "auth/client-credentials-basic" => MachineGrant::ClientCredentials(
            ClientAuth::secret_basic(field("client_id")?, field("client_secret")?),
        ),
        "auth/client-credentials-jwt" => {
            let alg = field("signing_algorithm").unwrap_or_else(|_| "ES256".into());
            let key = SigningKey::from_pkcs8_pem(&field("private_key_pem")?, &alg)
                .map_err(|e| fail(e.to_string()))?;
            MachineGrant::ClientCredentials(ClientAuth::private_key_jwt(field("client_id")?, key))
        }
        "auth/wif-jwt-bearer" => MachineGrant::JwtBearer {
            client: ClientAuth::public(field("client_id")?),
            assertion: Arc::new(StaticAssertion(field("valid_jwt")?)),
        },
        "auth/enterprise-managed-authorization" => MachineGrant::Enterprise(EnterpriseGrant {
            idp_token_endpoint: field("idp_token_endpoint")?,
            idp_client: ClientAuth::public(field("idp_client_id")?),
            id_token: Arc::new(StaticAssertion(field("idp_id_token")?)),
            client: ClientAuth::secret_basic(field("client_id")?, field("client_secret")?),
        }),
        _ => return Ok(None),
    };
    Ok(Some(grant))
}

/// An OAuth client for the `auth/*` scenarios: a machine grant where the scenario has no user;
/// otherwise the conformance CIMD URL where the server supports it, the context's
/// pre-registered credentials, dynamic registration otherwise.
fn oauth(transport: &HttpTransport, scenario: &str) -> Result<Arc<OAuth>, ClientError> {
    let fetch = transport.fetcher();
    let data = context().unwrap_or(Value::Null);
    if let Some(grant) = machine_grant(scenario, &data)? {
        let oauth = OAuth::machine(grant, fetch);
        let oauth = match data.get("issuer").and_then(Value::as_str) {
            Some(issuer) => oauth.bound_to_issuer(issuer),
            // The harness starts its authorization server on a port it picks at run time and
            // names it only in the mock MCP server's resource metadata, not in the context:
            // the client cannot know the issuer in advance. The credentials are the harness's
            // throwaway test values and every server is on loopback, so trusting the server's
            // choice risks nothing here. A real machine client binds its credential instead.
            None => oauth.danger_send_credentials_to_any_issuer(),
        };
        return Ok(Arc::new(oauth));
    }
    let mut config = OAuthConfig::new("http://localhost:3030/callback");
    config.client_name = "mcp-rs conformance client".into();
    config.client_metadata_url = Some("https://conformance-test.local/client-metadata.json".into());
    if let Some(context) = context()
        && let (Some(issuer), Some(id)) = (
            context.get("issuer").and_then(Value::as_str),
            context.get("client_id").and_then(Value::as_str),
        )
    {
        let secret = context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        config.pre_registered = vec![ClientCredentials::pre_registered(issuer, id, secret)];
    }
    let authorizer = Arc::new(HeadlessAuthorizer::new(fetch.clone()));
    let mut oauth = OAuth::new(config, fetch, authorizer);
    if scenario.starts_with("auth/dpop") {
        let key = SigningKey::generate_es256().map_err(|e| fail(e.to_string()))?;
        oauth = oauth.with_dpop(key);
    }
    Ok(Arc::new(oauth))
}

async fn connect(url: &str, version: &str, scenario: &str) -> Result<Client, ClientError> {
    let mode = match version {
        "2026-07-28" => Mode::Pinned(version.to_owned()),
        _ => Mode::Legacy,
    };
    let mut transport = HttpTransport::new(url).map_err(ClientError::Transport)?;
    if scenario.starts_with("auth/") {
        let oauth = oauth(&transport, scenario)?;
        transport = transport.oauth(oauth);
    }
    Client::builder()
        .client_info("mcp-rs-conformance-client", env!("CARGO_PKG_VERSION"))
        .mode(mode)
        .elicitation(|_info, params| async move { Ok(fill_form(&params)) })
        .sampling(|_info, _params| async move {
            Ok::<CreateMessageResult, _>(wire(json!({"role": "assistant",
                "content": {"type": "text", "text": "This is a conformance test response."},
                "model": "conformance-model", "stopReason": "endTurn"})))
        })
        .roots(|_info| async move {
            Ok::<ListRootsResult, _>(wire(
                json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}),
            ))
        })
        .connect(transport)
        .await
}

/// Lists the tools and calls each one with no arguments.
async fn call_every_tool(client: &Client) -> Result<(), ClientError> {
    for tool in client.list_all_tools().await? {
        let result = client.call_tool(&tool.name, json!({})).await?;
        eprintln!("{}: {:?}", tool.name, result.content);
    }
    Ok(())
}

/// Loads a skill (its verified `SKILL.md`), then reads and verifies every other file it lists.
async fn load_every_file(
    client: &Client,
    skill: &mcp::types::ext::skills::SkillEntry,
) -> Result<(), ClientError> {
    let loaded = client.load_skill(skill).await?;
    eprintln!(
        "loaded {} ({} bytes of instructions)",
        skill.uri,
        loaded.body.len()
    );
    if let mcp::types::ext::skills::SkillResources::Files(files) = &skill.resources {
        for file in files.iter().filter(|f| f.uri != skill.uri) {
            let content = client.read_skill_file(skill, &file.uri).await?;
            eprintln!(
                "read {} ({} bytes, verified)",
                content.uri,
                content.bytes.len()
            );
        }
    }
    Ok(())
}

async fn run(scenario: &str, url: &str, version: &str) -> Result<(), ClientError> {
    let client = connect(url, version, scenario).await?;
    let outcome = match scenario {
        auth if auth.starts_with("auth/") => {
            client.list_all_tools().await?;
            let result = client.call_tool("test-tool", json!({})).await?;
            eprintln!("test-tool: {:?}", result.content);
            Ok(())
        }
        "initialize" => client.list_all_tools().await.map(drop),
        "tools_call" => {
            client.list_all_tools().await?;
            let result = client
                .call_tool("add_numbers", json!({"a": 5, "b": 3}))
                .await?;
            eprintln!("add_numbers: {:?}", result.content);
            Ok(())
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_all_tools().await?;
            client
                .call_tool("test_client_elicitation_defaults", json!({}))
                .await
                .map(drop)
        }
        "sse-retry" => {
            client.list_all_tools().await?;
            let result = client.call_tool("test_reconnection", json!({})).await?;
            eprintln!("test_reconnection: {:?}", result.content);
            Ok(())
        }
        "request-metadata" | "http-invalid-tool-headers" => call_every_tool(&client).await,
        "sep-2322-client-request-state" => {
            client.list_all_tools().await?;
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                let result = client.call_tool(tool, json!({})).await?;
                eprintln!("{tool}: {:?}", result.content);
            }
            Ok(())
        }
        "http-standard-headers" => {
            call_every_tool(&client).await?;
            if let Some(resource) = client.list_all_resources().await?.first() {
                client.read_resource(&resource.uri).await?;
            }
            if let Some(prompt) = client.list_all_prompts().await?.first() {
                client.get_prompt(&prompt.name, BTreeMap::new()).await?;
            }
            Ok(())
        }
        "http-custom-headers" => {
            client.list_all_tools().await?;
            let context: Value =
                context().ok_or_else(|| fail("MCP_CONFORMANCE_CONTEXT is missing or not JSON"))?;
            let calls = context
                .get("toolCalls")
                .and_then(Value::as_array)
                .ok_or_else(|| fail("MCP_CONFORMANCE_CONTEXT has no toolCalls list"))?;
            for call in calls {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| fail("a toolCalls entry has no name"))?;
                let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
                client.call_tool(name, arguments).await?;
            }
            Ok(())
        }
        "json-schema-ref-no-deref" => client.list_all_tools().await.map(drop),
        "json-schema-2020-12-preservation" => {
            let tools = client.list_all_tools().await?;
            let focal = tools
                .iter()
                .find(|t| t.input_schema.contains_key("$schema"))
                .ok_or_else(|| fail("no tool carries a 2020-12 inputSchema"))?;
            let echo = tools
                .iter()
                .find(|t| {
                    t.name != focal.name
                        && t.input_schema
                            .get("properties")
                            .and_then(|p| p.get("schema"))
                            .is_some()
                })
                .ok_or_else(|| fail("no echo tool takes a `schema` argument"))?;
            let schema = Value::Object(focal.input_schema.clone());
            client
                .call_tool(&echo.name, json!({"schema": schema}))
                .await
                .map(drop)
        }
        // Skills (SEP-2640): listing reads no file; loading verifies each file against the
        // entry and stops at the first that does not match.
        "sep-2640-client-no-prefetch" => {
            let skills = client.list_all_skills().await?;
            eprintln!("{} skill(s) listed, none loaded", skills.len());
            Ok(())
        }
        verify if verify.starts_with("sep-2640-client-verify-") => {
            for skill in client.list_all_skills().await? {
                match load_every_file(&client, &skill).await {
                    Err(ClientError::SkillVerification { uri, reason }) => {
                        eprintln!("refused {uri}: {reason}");
                    }
                    other => other?,
                }
            }
            Ok(())
        }
        other => Err(fail(format!("unknown scenario `{other}`"))),
    };
    client.close().await;
    outcome
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if scenario.is_empty() {
        eprintln!("conformance-client: MCP_CONFORMANCE_SCENARIO is not set");
        return ExitCode::from(2);
    }

    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| DEFAULT_VERSION.to_owned());
    match run(&scenario, &url, &version).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: scenario `{scenario}` failed: {e}");
            ExitCode::FAILURE
        }
    }
}
