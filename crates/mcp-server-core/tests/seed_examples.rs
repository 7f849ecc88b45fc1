//! The seed documents' examples on `McpServer`, through the in-memory transport, in both eras:
//! `delete_folder` (resolver), `briefing` (a prompt that asks), `book_table` (direct
//! `ctx.elicit`), `pay_deposit`/`confirm_deposit` (URL elicitation), the Deployer's envelope
//! codec, and a template resource that asks.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::TestClient;
use mcp_server_core::Service;
use mcp_server_core::registry::{
    Accepted, Context, ElicitationResult, McpServer, PromptDef, Resolution, Resolver,
    ResourceTemplateDef, ToolDef,
};
use mcp_server_core::seal::{
    Codec, InvalidRequestState, RejectReason, RequestStateSecurity, SealError,
};
use mcp_types::elicitation::ElicitAction;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ELICIT: &str = r#"{"elicitation": {"form": {}, "url": {}}}"#;

fn caps() -> Value {
    serde_json::from_str(ELICIT).unwrap()
}

/// Drives a 2026-07-28 call through its rounds, answering each input request with `answer`;
/// returns every round's result (the last one complete, or an error).
async fn drive(
    c: &mut TestClient,
    method: &str,
    params: Value,
    caps: Value,
    mut answer: impl FnMut(&str, &Value) -> Value,
) -> Vec<Value> {
    let mut rounds = Vec::new();
    let mut params = params;
    for _ in 0..10 {
        let r = c.modern(method, params.clone(), caps.clone()).await;
        rounds.push(r.clone());
        if r["result"]["resultType"] != "input_required" {
            return rounds;
        }
        let mut responses = serde_json::Map::new();
        for (key, request) in r["result"]["inputRequests"]
            .as_object()
            .into_iter()
            .flatten()
        {
            responses.insert(key.clone(), answer(key, request));
        }
        params["inputResponses"] = Value::Object(responses);
        match r["result"].get("requestState") {
            Some(state) => params["requestState"] = state.clone(),
            None => {
                params.as_object_mut().unwrap().remove("requestState");
            }
        }
    }
    panic!("more than 10 rounds: {rounds:?}");
}

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
}

// ---------------------------------------------------------------------------------------------
// Files: delete_folder with a resolver.

#[derive(Deserialize, JsonSchema)]
struct DeleteFolder {
    /// The folder to delete.
    path: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

fn folder_len(path: &str) -> usize {
    match path {
        "/tmp/empty" => 0,
        "/tmp/project" => ["main.py", "README.md"].len(),
        _ => 1,
    }
}

fn confirm_delete() -> Resolver {
    Resolver::new("confirm_delete", |input| async move {
        let path: String = match input.argument("path") {
            Ok(p) => p,
            Err(e) => return Resolution::reject(e),
        };
        match folder_len(&path) {
            0 => Resolution::ready(Confirm { ok: true }),
            n => Resolution::elicit(format!("{path} has {n} file(s). Delete anyway?")),
        }
    })
    .reads(["path"])
}

fn files(calls: Arc<AtomicUsize>) -> Service {
    let delete = ToolDef::new("delete_folder")
        .description("Delete a folder, asking for confirmation when it is not empty.")
        .arguments::<DeleteFolder>()
        .resolve::<ElicitationResult<Confirm>>("confirm", confirm_delete())
        .handler_resolved(move |_ctx, args: DeleteFolder, mut resolved| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok::<_, String>(
                    match resolved.take::<ElicitationResult<Confirm>>("confirm")? {
                        ElicitationResult::Accepted(Confirm { ok: true }) => {
                            format!("deleted {}", args.path)
                        }
                        ElicitationResult::Accepted(_) => "kept the folder".to_owned(),
                        ElicitationResult::Declined => "declined: folder not deleted".to_owned(),
                        ElicitationResult::Cancelled => "cancelled: folder not deleted".to_owned(),
                    },
                )
            }
        });
    let strict = ToolDef::new("delete_folder_strict")
        .description("Delete a folder; a refusal ends the call.")
        .arguments::<DeleteFolder>()
        .resolve::<Accepted<Confirm>>("confirm", confirm_delete())
        .handler_resolved(|_ctx, args: DeleteFolder, mut resolved| async move {
            let Accepted(confirm) = resolved.take::<Accepted<Confirm>>("confirm")?;
            Ok::<_, String>(if confirm.ok {
                format!("deleted {}", args.path)
            } else {
                "kept the folder".to_owned()
            })
        });
    McpServer::new("Files")
        .tool(delete)
        .tool(strict)
        .into_service()
        .unwrap()
}

fn answer_confirm(ok: Option<bool>) -> impl FnMut(&str, &Value) -> Value {
    move |key, request| {
        assert_eq!(key, "confirm_delete");
        assert_eq!(request["method"], "elicitation/create");
        match ok {
            Some(ok) => json!({"action": "accept", "content": {"ok": ok}}),
            None => json!({"action": "decline"}),
        }
    }
}

#[tokio::test]
async fn delete_folder_asks_only_when_the_folder_is_not_empty() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut c = TestClient::new(&files(calls.clone()));
    let rounds = drive(
        &mut c,
        "tools/call",
        json!({"name": "delete_folder", "arguments": {"path": "/tmp/empty"}}),
        caps(),
        |_, _| panic!("an empty folder is deleted without asking"),
    )
    .await;
    assert_eq!(rounds.len(), 1);
    assert_eq!(text(&rounds[0]), "deleted /tmp/empty");

    let rounds = drive(
        &mut c,
        "tools/call",
        json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
        caps(),
        answer_confirm(Some(true)),
    )
    .await;
    assert_eq!(rounds.len(), 2);
    assert_eq!(
        rounds[0]["result"]["inputRequests"]["confirm_delete"]["params"],
        json!({
            "mode": "form",
            "message": "/tmp/project has 2 file(s). Delete anyway?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        })
    );
    assert!(
        rounds[0]["result"]["requestState"]
            .as_str()
            .unwrap()
            .starts_with("v1."),
        "sealed by default"
    );
    assert_eq!(text(&rounds[1]), "deleted /tmp/project");
    // The body ran once per completed call, never on a round that asked.
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn delete_folder_reports_every_outcome() {
    let mut c = TestClient::new(&files(Arc::default()));
    let call = json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}});
    let kept = drive(
        &mut c,
        "tools/call",
        call.clone(),
        caps(),
        answer_confirm(Some(false)),
    )
    .await;
    assert_eq!(text(kept.last().unwrap()), "kept the folder");
    let declined = drive(
        &mut c,
        "tools/call",
        call.clone(),
        caps(),
        answer_confirm(None),
    )
    .await;
    assert_eq!(
        text(declined.last().unwrap()),
        "declined: folder not deleted"
    );
    let cancelled = drive(
        &mut c,
        "tools/call",
        call,
        caps(),
        |_, _| json!({"action": "cancel"}),
    )
    .await;
    assert_eq!(
        text(cancelled.last().unwrap()),
        "cancelled: folder not deleted"
    );
}

#[tokio::test]
async fn the_resolved_parameter_is_not_in_the_input_schema_and_a_client_value_is_ignored() {
    let mut c = TestClient::new(&files(Arc::default()));
    let list = c.modern("tools/list", json!({}), json!({})).await;
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"]["properties"],
        json!({"path": {"type": "string", "description": "The folder to delete."}})
    );
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"]["required"],
        json!(["path"])
    );
    let rounds = drive(
        &mut c,
        "tools/call",
        json!({"name": "delete_folder", "arguments": {"path": "/tmp/project", "confirm": {"ok": true}}}),
        caps(),
        answer_confirm(None),
    )
    .await;
    assert_eq!(
        rounds.len(),
        2,
        "the forged value was ignored and the question asked"
    );
    assert_eq!(text(&rounds[1]), "declined: folder not deleted");
}

#[tokio::test]
async fn with_the_plain_model_a_refusal_ends_the_call_and_the_body_never_runs() {
    let mut c = TestClient::new(&files(Arc::default()));
    let call = json!({"name": "delete_folder_strict", "arguments": {"path": "/tmp/project"}});
    let declined = drive(
        &mut c,
        "tools/call",
        call.clone(),
        caps(),
        answer_confirm(None),
    )
    .await;
    let last = declined.last().unwrap();
    assert_eq!(last["result"]["isError"], true);
    assert_eq!(
        text(last),
        "Error executing tool delete_folder_strict: Resolver for parameter 'confirm' could not resolve: elicitation was decline"
    );
    let cancelled = drive(
        &mut c,
        "tools/call",
        call.clone(),
        caps(),
        |_, _| json!({"action": "cancel"}),
    )
    .await;
    assert_eq!(
        text(cancelled.last().unwrap()),
        "Error executing tool delete_folder_strict: Resolver for parameter 'confirm' could not resolve: elicitation was cancel"
    );
    let accepted = drive(
        &mut c,
        "tools/call",
        call,
        caps(),
        answer_confirm(Some(true)),
    )
    .await;
    assert_eq!(text(accepted.last().unwrap()), "deleted /tmp/project");
}

#[tokio::test]
async fn delete_folder_on_a_legacy_session_asks_live() {
    let mut c = TestClient::new(&files(Arc::default()));
    c.initialize("2025-11-25", caps()).await;
    let messages = c
        .exchange_with(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
            |request| {
                assert_eq!(request["method"], "elicitation/create");
                assert_eq!(
                    request["params"]["message"],
                    "/tmp/project has 2 file(s). Delete anyway?"
                );
                Some(json!({"result": {"action": "accept", "content": {"ok": true}}}))
            },
        )
        .await;
    assert_eq!(messages.len(), 2);
    assert_eq!(text(&messages[1]), "deleted /tmp/project");
    assert!(messages[1]["result"].get("resultType").is_none());
}

#[tokio::test]
async fn a_client_without_elicitation_gets_missing_capability() {
    let mut c = TestClient::new(&files(Arc::default()));
    let r = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
            json!({}),
        )
        .await;
    assert_eq!(
        r["error"],
        json!({"code": -32021,
        "message": "Client did not declare the form elicitation capability required by resolver 'confirm_delete'",
        "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}})
    );
    // URL-only does not count as form.
    let r = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
            json!({"elicitation": {"url": {}}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021);
    // An empty folder needs no question, so no capability.
    let r = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/empty"}}),
            json!({}),
        )
        .await;
    assert_eq!(text(&r), "deleted /tmp/empty");
}

/// Arguments that miss the tool's schema are an input-validation failure: a tool result with
/// `isError` the model can read, as the spec's tools section puts it (and as the Python and
/// TypeScript SDKs answer), not a `-32602` protocol error.
#[tokio::test]
async fn arguments_of_the_wrong_shape_are_a_tool_error() {
    let mut c = TestClient::new(&files(Arc::default()));
    for (arguments, reason) in [
        (
            json!({"path": 7}),
            "invalid type: integer `7`, expected a string",
        ),
        (json!({}), "missing field `path`"),
    ] {
        let r = c
            .modern(
                "tools/call",
                json!({"name": "delete_folder", "arguments": arguments}),
                caps(),
            )
            .await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        let want = format!("Invalid arguments for tool 'delete_folder': {reason}");
        assert!(text(&r).starts_with(&want), "{r}");
    }
}

/// An unknown tool is still a protocol error.
#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let mut c = TestClient::new(&files(Arc::default()));
    let r = c
        .modern(
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
            caps(),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "Unknown tool: nope", "{r}");
}

// ---------------------------------------------------------------------------------------------
// Briefing: a prompt that asks.

#[derive(Clone, Deserialize, JsonSchema)]
struct Audience {
    audience: String,
}

fn briefing() -> Service {
    let ask = Resolver::new("ask_audience", |_input| async {
        Resolution::<Audience>::elicit("Who is the briefing for?")
    });
    let prompt = PromptDef::new("briefing")
        .description("Draft a briefing tuned to its audience.")
        .resolve::<Accepted<Audience>>("audience", ask)
        .handler(|_ctx, _args, mut resolved| async move {
            let Accepted(Audience { audience }) =
                resolved.take::<Accepted<Audience>>("audience")?;
            Ok::<_, String>(format!("Write a briefing for {audience}."))
        });
    McpServer::new("Briefing")
        .prompt(prompt)
        .into_service()
        .unwrap()
}

#[tokio::test]
async fn the_briefing_prompt_asks_for_its_audience_on_both_eras() {
    let mut c = TestClient::new(&briefing());
    let rounds = drive(&mut c, "prompts/get", json!({"name": "briefing"}), caps(), |key, request| {
        assert_eq!(key, "ask_audience");
        assert_eq!(request["params"]["requestedSchema"], json!({"type": "object", "properties": {"audience": {"type": "string"}}, "required": ["audience"]}));
        assert_eq!(request["params"]["message"], "Who is the briefing for?");
        json!({"action": "accept", "content": {"audience": "the board"}})
    })
    .await;
    assert_eq!(rounds.len(), 2);
    assert_eq!(
        rounds[1]["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Write a briefing for the board."}}])
    );

    let mut legacy = TestClient::new(&briefing());
    legacy.initialize("2025-11-25", caps()).await;
    let messages = legacy
        .exchange_with("prompts/get", json!({"name": "briefing"}), |_| {
            Some(json!({"result": {"action": "accept", "content": {"audience": "engineers"}}}))
        })
        .await;
    assert_eq!(
        messages[1]["result"]["messages"][0]["content"]["text"],
        "Write a briefing for engineers."
    );
}

// ---------------------------------------------------------------------------------------------
// Bistro: book_table with ctx.elicit, pay_deposit / confirm_deposit with URL elicitation.

#[derive(Deserialize, JsonSchema)]
struct BookTable {
    date: String,
    party_size: u32,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct AlternativeDate {
    /// Try another date?
    accept_alternative: bool,
    /// Alternative date (YYYY-MM-DD)
    #[serde(default = "default_date")]
    date: String,
}

fn default_date() -> String {
    "2025-12-26".into()
}

#[derive(Deserialize, JsonSchema)]
struct Booking {
    booking_id: String,
}

fn book_table(
    ctx: Context,
    date: String,
    party_size: u32,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>> {
    Box::pin(async move {
        if date != "2025-12-25" {
            return Ok(format!("Booked a table for {party_size} on {date}."));
        }
        let message =
            format!("No tables for {party_size} on {date}. Would you like to try another date?");
        match ctx
            .elicit::<AlternativeDate>(message)
            .await
            .map_err(|e| e.message)?
        {
            ElicitationResult::Accepted(alt) if alt.accept_alternative => {
                book_table(ctx, alt.date, party_size).await
            }
            _ => Ok("No booking made.".to_owned()),
        }
    })
}

fn bistro() -> Service {
    McpServer::new("Bistro")
        .tool(
            ToolDef::new("book_table")
                .description("Book a table at the bistro.")
                .arguments::<BookTable>()
                .handler(|ctx, args: BookTable| book_table(ctx, args.date, args.party_size)),
        )
        .tool(
            ToolDef::new("pay_deposit")
                .description("Take the deposit that confirms a booking.")
                .arguments::<Booking>()
                .handler(|ctx, args: Booking| async move {
                    let id = args.booking_id;
                    let action = ctx
                        .elicit_url(
                            "A 20 EUR deposit confirms your booking.",
                            format!("https://pay.example.com/deposit/{id}"),
                            format!("deposit-{id}"),
                        )
                        .await
                        .map_err(|e| e.message)?;
                    Ok::<_, String>(match action {
                        ElicitAction::Accept => "Complete the payment in your browser.".to_owned(),
                        _ => "No deposit taken. The booking expires in one hour.".to_owned(),
                    })
                }),
        )
        .tool(
            ToolDef::new("confirm_deposit")
                .description("Record a payment reported by the payment provider.")
                .arguments::<Booking>()
                .handler(|ctx, args: Booking| async move {
                    ctx.send_elicit_complete(format!("deposit-{}", args.booking_id))
                        .await
                        .map_err(|e| e.message)?;
                    Ok::<_, String>(format!("Deposit received for booking {}.", args.booking_id))
                }),
        )
        .into_service()
        .unwrap()
}

#[tokio::test]
async fn book_table_asks_for_another_date_on_christmas_and_books_it() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", caps()).await;
    let plain = c
        .request(
            "tools/call",
            json!({"name": "book_table", "arguments": {"date": "2026-01-10", "party_size": 4}}),
        )
        .await;
    assert_eq!(text(&plain), "Booked a table for 4 on 2026-01-10.");
    let mut asked = Vec::new();
    let messages = c
        .exchange_with("tools/call", json!({"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 2}}), |request| {
            asked.push(request.clone());
            Some(json!({"result": {"action": "accept", "content": {"accept_alternative": true, "date": "2025-12-27"}}}))
        })
        .await;
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]["params"],
        json!({
            "mode": "form",
            "message": "No tables for 2 on 2025-12-25. Would you like to try another date?",
            "requestedSchema": {"type": "object", "properties": {
                "accept_alternative": {"type": "boolean", "description": "Try another date?"},
                "date": {"type": "string", "description": "Alternative date (YYYY-MM-DD)", "default": "2025-12-26"}},
                "required": ["accept_alternative"]}
        })
    );
    assert_eq!(
        text(messages.last().unwrap()),
        "Booked a table for 2 on 2025-12-27."
    );
    // A still-full date asks again; a refusal books nothing.
    let mut answers = vec![
        json!({"action": "accept", "content": {"accept_alternative": true, "date": "2025-12-25"}}),
        json!({"action": "decline"}),
    ]
    .into_iter();
    let messages = c
        .exchange_with(
            "tools/call",
            json!({"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 2}}),
            |_| Some(json!({"result": answers.next().unwrap()})),
        )
        .await;
    assert_eq!(messages.len(), 3);
    assert_eq!(text(messages.last().unwrap()), "No booking made.");
}

#[tokio::test]
async fn ctx_elicit_on_a_modern_request_fails_clearly() {
    let mut c = TestClient::new(&bistro());
    let r = c
        .modern(
            "tools/call",
            json!({"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 2}}),
            caps(),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        text(&r),
        "ctx.elicit() needs a 2025-11-25 session with a live back-channel; on a 2026-07-28 request, ask with a resolver (#[resolve(...)]) or return an InputRequiredResult"
    );
}

#[tokio::test]
async fn pay_deposit_uses_url_elicitation_and_confirm_deposit_completes_it() {
    let mut c = TestClient::new(&bistro());
    c.initialize("2025-11-25", caps()).await;
    let messages = c
        .exchange_with(
            "tools/call",
            json!({"name": "pay_deposit", "arguments": {"booking_id": "b1"}}),
            |request| {
                assert_eq!(
                    request["params"],
                    json!({"mode": "url", "message": "A 20 EUR deposit confirms your booking.",
                "url": "https://pay.example.com/deposit/b1", "elicitationId": "deposit-b1"})
                );
                Some(json!({"result": {"action": "accept"}}))
            },
        )
        .await;
    assert_eq!(
        text(messages.last().unwrap()),
        "Complete the payment in your browser."
    );
    let messages = c
        .exchange_with(
            "tools/call",
            json!({"name": "pay_deposit", "arguments": {"booking_id": "b2"}}),
            |_| Some(json!({"result": {"action": "cancel"}})),
        )
        .await;
    assert_eq!(
        text(messages.last().unwrap()),
        "No deposit taken. The booking expires in one hour."
    );
    let messages = c
        .exchange(
            "tools/call",
            json!({"name": "confirm_deposit", "arguments": {"booking_id": "b1"}}),
        )
        .await;
    assert_eq!(
        messages[0],
        json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "deposit-b1"}})
    );
    assert_eq!(text(&messages[1]), "Deposit received for booking b1.");
}

// ---------------------------------------------------------------------------------------------
// Deployer: a bring-your-own envelope codec.

/// Envelope encryption as the seed documents' KMS example: a data key unwrapped once at start
/// (a random stand-in here), AES-256-GCM per token, `kms1.` + lowercase hex.
struct EnvelopeCodec {
    key: ring::aead::LessSafeKey,
}

const PREFIX: &str = "kms1.";

impl EnvelopeCodec {
    fn new() -> Self {
        use ring::rand::SecureRandom;
        let mut data_key = [0u8; 32];
        ring::rand::SystemRandom::new().fill(&mut data_key).unwrap();
        let key = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &data_key).unwrap();
        EnvelopeCodec {
            key: ring::aead::LessSafeKey::new(key),
        }
    }
}

impl Codec for EnvelopeCodec {
    fn seal(&self, plaintext: &[u8]) -> Result<String, SealError> {
        use ring::rand::SecureRandom;
        let mut nonce = [0u8; 12];
        ring::rand::SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| SealError::codec("no randomness"))?;
        let mut buffer = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                ring::aead::Nonce::assume_unique_for_key(nonce),
                ring::aead::Aad::from(PREFIX),
                &mut buffer,
            )
            .map_err(|_| SealError::codec("seal failed"))?;
        let hex: String = nonce
            .iter()
            .chain(buffer.iter())
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(format!("{PREFIX}{hex}"))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let bad = || InvalidRequestState::new(RejectReason::MalformedToken);
        let hex = token.strip_prefix(PREFIX).ok_or_else(bad)?;
        if hex.len() % 2 != 0
            || hex.len() < 2 * (12 + 16)
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad());
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let (nonce, sealed) = bytes.split_at(12);
        let nonce = ring::aead::Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad())?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, ring::aead::Aad::from(PREFIX), &mut sealed)
            .map_err(|_| bad())?;
        Ok(plain.to_vec())
    }
}

#[tokio::test]
async fn the_deployer_seals_with_its_own_codec() {
    let ask = Resolver::new("confirm_deploy", |_i| async {
        Resolution::<Confirm>::elicit("Deploy to prod?")
    });
    let deploy = ToolDef::new("deploy")
        .resolve::<Accepted<Confirm>>("confirm", ask)
        .handler_resolved(
            |_ctx, _args: serde_json::Map<String, Value>, mut r| async move {
                let Accepted(c) = r.take::<Accepted<Confirm>>("confirm")?;
                Ok::<_, String>(if c.ok { "deployed" } else { "not deployed" }.to_owned())
            },
        );
    let service = McpServer::new("Deployer")
        .tool(deploy)
        .request_state_security(
            RequestStateSecurity::codec(EnvelopeCodec::new()).audience("Deployer"),
        )
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let rounds = drive(
        &mut c,
        "tools/call",
        json!({"name": "deploy"}),
        caps(),
        |_, _| json!({"action": "accept", "content": {"ok": true}}),
    )
    .await;
    let token = rounds[0]["result"]["requestState"].as_str().unwrap();
    assert!(
        token.starts_with("kms1.")
            && token[5..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{token}"
    );
    assert_eq!(text(&rounds[1]), "deployed");
    // Uppercase hex is not the exact token the codec minted.
    let upper = format!("kms1.{}", token[5..].to_uppercase());
    let r = c.modern("tools/call", json!({"name": "deploy", "requestState": upper, "inputResponses": {"confirm_deploy": {"action": "accept", "content": {"ok": true}}}}), caps()).await;
    assert_eq!(r["error"]["message"], "Invalid or expired requestState");
}

// ---------------------------------------------------------------------------------------------
// A template resource that asks.

#[tokio::test]
async fn a_template_resource_asks_before_it_reads() {
    let unlock = Resolver::new("unlock", |input| async move {
        let item: String = input.argument("item").unwrap_or_default();
        Resolution::<Confirm>::elicit(format!("Unlock {item}?"))
    })
    .reads(["item"]);
    let vault = ResourceTemplateDef::new("vault://{item}", "vault")
        .description("Secrets, after confirmation.")
        .mime_type("text/plain")
        .resolve::<Accepted<Confirm>>("confirm", unlock)
        .handler(
            |_ctx, _uri, vars: BTreeMap<String, String>, mut resolved| async move {
                let Accepted(c) = resolved.take::<Accepted<Confirm>>("confirm")?;
                Ok::<_, String>(if c.ok {
                    format!("the {} secret", vars["item"])
                } else {
                    "locked".to_owned()
                })
            },
        );
    let service = McpServer::new("Vault")
        .resource_template(vault)
        .into_service()
        .unwrap();
    let mut c = TestClient::new(&service);
    let rounds = drive(
        &mut c,
        "resources/read",
        json!({"uri": "vault://keys"}),
        caps(),
        |key, request| {
            assert_eq!(key, "unlock");
            assert_eq!(request["params"]["message"], "Unlock keys?");
            json!({"action": "accept", "content": {"ok": true}})
        },
    )
    .await;
    assert_eq!(
        rounds[1]["result"]["contents"],
        json!([{"uri": "vault://keys", "mimeType": "text/plain", "text": "the keys secret"}])
    );
    assert_eq!(rounds[1]["result"]["ttlMs"], 0);
    let missing = c
        .modern("resources/read", json!({"uri": "other://x"}), caps())
        .await;
    assert_eq!(
        missing["error"],
        json!({"code": -32602, "message": "Resource not found", "data": {"uri": "other://x"}})
    );
    let templates = c
        .modern("resources/templates/list", json!({}), json!({}))
        .await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "vault://{item}"
    );
}
