//! The "everything server" of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), built on the `mcp` facade.
//!
//! ```text
//! conformance-server [--port N]      # serves http://127.0.0.1:N/mcp (default 3001; 0: any free port, announced on stderr)
//! ```
//!
//! One endpoint serves both eras: a 2025-11-25 client runs `initialize` and gets a session
//! (live server-to-client requests on the call's SSE stream); a 2026-07-28 client sends
//! stateless requests and gets `InputRequiredResult` rounds whose `requestState` the SDK seals.
//! Every fixture name below is one the suite calls (CONFORMANCE.md §8).

use std::collections::BTreeMap;
use std::time::Duration;

use mcp::types::JsonObject;
use mcp::types::content::ContentBlock;
use mcp::types::elicitation::{ElicitAction, ElicitValue};
use mcp::types::logging::LoggingLevel;
use mcp::types::mrtr::{InputRequest, InputResponse};
use mcp::types::prompts::{GetPromptResult, PromptMessage};
use mcp::types::resources::ReadResourceResult;
use mcp::types::sampling::CreateMessageRequestParams;
use mcp::types::tools::CallToolResult;
use mcp::types::{ClientResult, InputRequiredResult, ServerRequest};
use mcp::{
    Context, McpServer, Outcome, PromptDef, Resolution, Resolver, ResourceDef, ResourceTemplateDef,
    ToolDef, ToolOutcome,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Builds a protocol type from its wire JSON; the fixtures below are literal, so a mismatch is
/// a bug in this file.
fn wire<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(v) => v,
        Err(e) => panic!("a fixture does not match its protocol type: {e}"),
    }
}

fn image() -> ContentBlock {
    wire(json!({"type": "image", "data": PNG, "mimeType": "image/png"}))
}

fn text_result(text: impl Into<String>) -> ToolOutcome {
    Outcome::Complete(CallToolResult::text(text))
}

// ------------------------------------------------------------------------- input requests

fn form(message: &str, schema: Value) -> InputRequest {
    wire(json!({"method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema}}))
}

fn sampling(text: &str, max_tokens: i64) -> InputRequest {
    wire(json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens}}))
}

fn roots() -> InputRequest {
    InputRequest::ListRoots(None)
}

/// One round asking for `requests`, with optional plaintext state (sealed by the SDK).
fn ask(requests: Vec<(&str, InputRequest)>, state: Option<&str>) -> ToolOutcome {
    Outcome::InputRequired(round(requests, state))
}

fn round(requests: Vec<(&str, InputRequest)>, state: Option<&str>) -> InputRequiredResult {
    let requests = requests
        .into_iter()
        .map(|(k, r)| (k.to_owned(), r))
        .collect::<BTreeMap<_, _>>();
    InputRequiredResult::new(requests, state.map(str::to_owned))
}

/// The accepted form content answering `key`, if this retry carries one.
fn accepted<'a>(ctx: &'a Context, key: &str) -> Option<&'a BTreeMap<String, ElicitValue>> {
    match ctx.input_responses()?.get(key)? {
        InputResponse::Elicit(r) if r.action == ElicitAction::Accept => r.content.as_ref(),
        _ => None,
    }
}

fn field(content: &BTreeMap<String, ElicitValue>, name: &str) -> Option<String> {
    match content.get(name)? {
        ElicitValue::String(s) => Some(s.clone()),
        ElicitValue::Null => None,
        other => serde_json::to_value(other).ok().map(|v| v.to_string()),
    }
}

fn sampled(ctx: &Context, key: &str) -> Option<String> {
    match ctx.input_responses()?.get(key)? {
        InputResponse::CreateMessage(r) => Some(text_of(&serde_json::to_value(&r.content).ok()?)),
        _ => None,
    }
}

/// The text of a sampling answer's content (one block or several).
fn text_of(content: &Value) -> String {
    match content {
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(" "),
        other => other
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

fn root_count(ctx: &Context, key: &str) -> Option<usize> {
    match ctx.input_responses()?.get(key)? {
        InputResponse::ListRoots(r) => Some(r.roots.len()),
        _ => None,
    }
}

// ------------------------------------------------------------------------- tools

#[derive(Deserialize)]
struct NoArgs {}

fn simple(name: &str, description: &str, body: fn() -> CallToolResult) -> ToolDef {
    ToolDef::new(name)
        .description(description)
        .handler(move |_ctx, _: NoArgs| async move { body() })
}

fn content_tools() -> Vec<ToolDef> {
    vec![
        simple("test_simple_text", "Returns simple text content", || {
            CallToolResult::text("This is a simple text response for testing.")
        }),
        simple("test_image_content", "Returns image content", || {
            CallToolResult {
                content: vec![image()],
                ..Default::default()
            }
        }),
        simple("test_audio_content", "Returns audio content", || {
            CallToolResult {
                content: vec![wire(
                    json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
                )],
                ..Default::default()
            }
        }),
        simple(
            "test_embedded_resource",
            "Returns an embedded resource",
            || CallToolResult {
                content: vec![wire(json!({"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain",
                    "text": "This is an embedded resource content."}}))],
                ..Default::default()
            },
        ),
        simple(
            "test_multiple_content_types",
            "Returns text, image and resource content",
            || CallToolResult {
                content: vec![
                    ContentBlock::text("Multiple content types test:"),
                    image(),
                    wire(json!({"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource", "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"}})),
                ],
                ..Default::default()
            },
        ),
        simple("test_error_handling", "Always returns a tool error", || {
            CallToolResult::error("This tool intentionally returns an error for testing")
        }),
    ]
}

fn notifying_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new("test_tool_with_logging")
            .description("Sends three log messages while it runs")
            .handler(|ctx, _: NoArgs| async move {
                for (i, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.log(LoggingLevel::Info, Some("conformance"), json!(message))
                        .await;
                }
                "Tool with logging executed successfully"
            }),
        ToolDef::new("test_logging_tool")
            .description("Logs only when the request asked for a log level")
            .handler(|ctx, _: NoArgs| async move {
                ctx.log(
                    LoggingLevel::Info,
                    Some("conformance"),
                    json!("logging tool ran"),
                )
                .await;
                "Logging tool executed"
            }),
        ToolDef::new("test_tool_with_progress")
            .description("Reports progress 0, 50 and 100 of 100")
            .handler(|ctx, _: NoArgs| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(step, Some(100.0), Some("working")).await;
                }
                "Progress tool completed"
            }),
        ToolDef::new("test_reconnection")
            .description(
                "Logs a line, then answers after a pause: on 2025-11-25 the answer is an SSE \
                 stream with a priming event (id, retry) and ids a client resumes from",
            )
            .handler(|ctx, _: NoArgs| async move {
                // A message before the answer makes it a stream (an immediate answer is JSON).
                ctx.log(
                    LoggingLevel::Info,
                    Some("conformance"),
                    json!("reconnection test started"),
                )
                .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                "Reconnection test completed"
            }),
        ToolDef::new("test_trigger_tool_change")
            .description("Announces a change of the tool list")
            .handler(|ctx, _: NoArgs| async move {
                ctx.notifier().tools_list_changed();
                "Tool list change announced"
            }),
        ToolDef::new("test_trigger_prompt_change")
            .description("Announces a change of the prompt list")
            .handler(|ctx, _: NoArgs| async move {
                ctx.notifier().prompts_list_changed();
                "Prompt list change announced"
            }),
    ]
}

/// Asks `request` under `key`: live on a 2025-11-25 session, as an `InputRequiredResult` on
/// 2026-07-28 (answered on the retry).
async fn ask_either(
    ctx: &Context,
    key: &str,
    request: InputRequest,
) -> Result<InputResponse, ToolOutcome> {
    if ctx.has_back_channel() {
        let live = match request {
            InputRequest::Elicit(p) => ServerRequest::Elicit(p),
            InputRequest::CreateMessage(p) => ServerRequest::CreateMessage(p),
            InputRequest::ListRoots(p) => ServerRequest::ListRoots(p),
            InputRequest::Unknown { method, .. } => {
                return Err(Outcome::Complete(CallToolResult::error(format!(
                    "cannot send {method}"
                ))));
            }
        };
        return match ctx.send_request(live).await {
            Ok(ClientResult::Elicit(r)) => Ok(InputResponse::Elicit(r)),
            Ok(ClientResult::CreateMessage(r)) => Ok(InputResponse::CreateMessage(r)),
            Ok(ClientResult::ListRoots(r)) => Ok(InputResponse::ListRoots(r)),
            Ok(_) => Err(Outcome::Complete(CallToolResult::error(
                "the client answered with another result type",
            ))),
            Err(e) => Err(Outcome::Complete(CallToolResult::error(e.to_string()))),
        };
    }
    match ctx.input_responses().and_then(|r| r.get(key)) {
        Some(answer) => Ok(answer.clone()),
        None => Err(ask(vec![(key, request)], None)),
    }
}

fn describe_elicitation(answer: &InputResponse) -> String {
    match answer {
        InputResponse::Elicit(r) => format!(
            "action={}, content={}",
            serde_json::to_value(r.action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            serde_json::to_value(&r.content).unwrap_or(Value::Null)
        ),
        _ => "unexpected answer".into(),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PromptArg {
    /// The prompt to send to the client's LLM.
    prompt: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct MessageArg {
    /// The message to show the user.
    message: String,
}

fn asking_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new("test_sampling")
            .description("Asks the client's LLM to complete the prompt")
            .arguments::<PromptArg>()
            .handler(|ctx, args: PromptArg| async move {
                match ask_either(&ctx, "sampling", sampling(&args.prompt, 100)).await {
                    Ok(InputResponse::CreateMessage(r)) => {
                        let text = text_of(&serde_json::to_value(&r.content).unwrap_or_default());
                        text_result(format!("LLM response: {text}"))
                    }
                    Ok(_) => text_result("LLM response: (unexpected answer)"),
                    Err(outcome) => outcome,
                }
            }),
        ToolDef::new("test_elicitation")
            .description("Asks the user for a response")
            .arguments::<MessageArg>()
            .handler(|ctx, args: MessageArg| async move {
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "Your username"},
                    "email": {"type": "string", "description": "Your email address"}},
                    "required": ["username", "email"]});
                match ask_either(&ctx, "response", form(&args.message, schema)).await {
                    Ok(answer) => text_result(format!(
                        "User response: {}",
                        describe_elicitation(&answer)
                    )),
                    Err(outcome) => outcome,
                }
            }),
        ToolDef::new("test_elicitation_sep1034_defaults")
            .description("Asks with a form whose fields all have defaults (SEP-1034)")
            .handler(|ctx, _: NoArgs| async move {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status",
                        "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}}});
                let request = form("Please review and update the form fields with defaults", schema);
                match ask_either(&ctx, "defaults", request).await {
                    Ok(answer) => text_result(format!(
                        "Elicitation completed: {}",
                        describe_elicitation(&answer)
                    )),
                    Err(outcome) => outcome,
                }
            }),
        ToolDef::new("test_elicitation_sep1330_enums")
            .description("Asks with the five enum schema variants (SEP-1330)")
            .handler(|ctx, _: NoArgs| async move {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "description": "Choose an option",
                        "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "Choose a titled option",
                        "oneOf": [{"const": "value1", "title": "First Option"},
                                  {"const": "value2", "title": "Second Option"},
                                  {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "description": "Choose a legacy option",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Choose multiple options",
                        "minItems": 1, "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Choose multiple titled options",
                        "minItems": 1, "maxItems": 3,
                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                            {"const": "value2", "title": "Second Choice"},
                                            {"const": "value3", "title": "Third Choice"}]}}},
                    "required": []});
                match ask_either(&ctx, "enums", form("Please select options from the enum fields", schema)).await {
                    Ok(answer) => text_result(format!(
                        "Elicitation completed: {}",
                        describe_elicitation(&answer)
                    )),
                    Err(outcome) => outcome,
                }
            }),
    ]
}

/// `test_missing_capability` needs the client's LLM: its resolver asks for sampling, so a
/// client that did not declare `sampling` gets `-32021` from the SDK's capability gate.
fn missing_capability_tool() -> ToolDef {
    let needs_sampling = Resolver::new("needs_sampling", |_input| async move {
        Resolution::<mcp::types::sampling::CreateMessageResult>::sample(wire::<
            CreateMessageRequestParams,
        >(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 10})))
    });
    ToolDef::new("test_missing_capability")
        .description("Requires the client's sampling capability")
        .resolve::<mcp::types::sampling::CreateMessageResult>("sampled", needs_sampling)
        .handler_resolved(|_ctx, _: NoArgs, mut resolved| async move {
            let sampled = resolved.take::<mcp::types::sampling::CreateMessageResult>("sampled")?;
            let text = text_of(&serde_json::to_value(&sampled.content).unwrap_or_default());
            Ok::<_, String>(format!("Sampling capability present: {text}"))
        })
}

/// `test_streaming_elicitation` asks the user through the SDK's resolver: an
/// `InputRequiredResult` on the response stream, never a server-to-client request.
fn streaming_elicitation_tool() -> ToolDef {
    #[derive(Clone, Deserialize, schemars::JsonSchema)]
    struct Answer {
        answer: String,
    }
    let question = Resolver::new("question", |_input| async move {
        Resolution::<Answer>::elicit("What should the tool say?")
    });
    ToolDef::new("test_streaming_elicitation")
        .description("Asks the user a question without a server-to-client request")
        .resolve::<mcp::ElicitationResult<Answer>>("answer", question)
        .handler_resolved(|_ctx, _: NoArgs, mut resolved| async move {
            Ok::<_, String>(
                match resolved.take::<mcp::ElicitationResult<Answer>>("answer")? {
                    mcp::ElicitationResult::Accepted(a) => format!("You said: {}", a.answer),
                    _ => "No answer".to_owned(),
                },
            )
        })
}

fn schema_tools() -> Vec<ToolDef> {
    let schema_2020_12 = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string", "format": "email"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    let header_schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region", "description": "The region"}},
        "required": ["region"]});
    vec![
        ToolDef::new("json_schema_2020_12_tool")
            .description("Has a JSON Schema 2020-12 input schema, served as written")
            .input_schema(wire(schema_2020_12))
            .handler(|_ctx, args: JsonObject| async move {
                format!("Received: {}", Value::Object(args))
            }),
        ToolDef::new("test_x_mcp_header")
            .description("Echoes its region argument, mirrored in the Mcp-Param-Region header")
            .input_schema(wire(header_schema))
            .handler(|_ctx, args: JsonObject| async move {
                let region = args.get("region").and_then(Value::as_str).unwrap_or("");
                format!("Region: {region}")
            }),
    ]
}

// ------------------------------------------------------------------------- hand-built rounds

fn input_required_tools() -> Vec<ToolDef> {
    let name_schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"]});
    let confirm_schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]});
    let ns = name_schema.clone();
    let ns2 = name_schema.clone();
    let cs = confirm_schema.clone();
    let cs2 = confirm_schema.clone();
    vec![
        ToolDef::new("test_input_required_result_elicitation")
            .description("Asks the user's name with an InputRequiredResult")
            .handler(move |ctx, _: NoArgs| {
                let schema = ns.clone();
                async move {
                    match accepted(&ctx, "user_name").and_then(|c| field(c, "name")) {
                        Some(name) => text_result(format!("Hello, {name}!")),
                        None => ask(
                            vec![("user_name", form("What is your name?", schema))],
                            None,
                        ),
                    }
                }
            }),
        ToolDef::new("test_input_required_result_sampling")
            .description("Asks the client's LLM with an InputRequiredResult")
            .handler(|ctx, _: NoArgs| async move {
                match sampled(&ctx, "capital_question") {
                    Some(text) => text_result(format!("The model said: {text}")),
                    None => ask(
                        vec![(
                            "capital_question",
                            sampling("What is the capital of France?", 100),
                        )],
                        None,
                    ),
                }
            }),
        ToolDef::new("test_input_required_result_list_roots")
            .description("Asks for the client's roots with an InputRequiredResult")
            .handler(|ctx, _: NoArgs| async move {
                match root_count(&ctx, "client_roots") {
                    Some(n) => text_result(format!("Found {n} root(s)")),
                    None => ask(vec![("client_roots", roots())], None),
                }
            }),
        ToolDef::new("test_input_required_result_request_state")
            .description("Round-trips requestState")
            .handler(move |ctx, _: NoArgs| {
                let schema = cs.clone();
                async move {
                    let confirmed = accepted(&ctx, "confirm").is_some();
                    match ctx.request_state() {
                        Some("awaiting-confirm") if confirmed => {
                            text_result("state-ok: the requestState came back intact")
                        }
                        _ => ask(
                            vec![("confirm", form("Please confirm", schema))],
                            Some("awaiting-confirm"),
                        ),
                    }
                }
            }),
        ToolDef::new("test_input_required_result_multiple_inputs")
            .description("Asks for an elicitation, a sampling and the roots at once")
            .handler(move |ctx, _: NoArgs| {
                let schema = ns2.clone();
                async move {
                    let name = accepted(&ctx, "user_name").and_then(|c| field(c, "name"));
                    let greeting = sampled(&ctx, "greeting");
                    let roots_found = root_count(&ctx, "client_roots");
                    match (ctx.request_state(), name, greeting, roots_found) {
                        (Some("multiple-inputs"), Some(name), Some(greeting), Some(n)) => {
                            text_result(format!("name={name}, greeting={greeting}, roots={n}"))
                        }
                        _ => ask(
                            vec![
                                ("user_name", form("What is your name?", schema)),
                                ("greeting", sampling("Generate a greeting", 50)),
                                ("client_roots", roots()),
                            ],
                            Some("multiple-inputs"),
                        ),
                    }
                }
            }),
        ToolDef::new("test_input_required_result_multi_round")
            .description("Asks in two rounds; the requestState evolves")
            .handler(|ctx, _: NoArgs| async move {
                let step1 = json!({"type": "object", "properties": {"name": {"type": "string"}},
                    "required": ["name"]});
                let step2 = json!({"type": "object", "properties": {"color": {"type": "string"}},
                    "required": ["color"]});
                let state = ctx.request_state().unwrap_or_default().to_owned();
                if let Some(name) = state.strip_prefix("round-2:") {
                    if let Some(color) = accepted(&ctx, "step2").and_then(|c| field(c, "color")) {
                        return text_result(format!(
                            "Completed after 3 rounds: name={name}, color={color}"
                        ));
                    }
                    return ask(
                        vec![("step2", form("Step 2: What is your favorite color?", step2))],
                        Some(&state),
                    );
                }
                if state == "round-1"
                    && let Some(name) = accepted(&ctx, "step1").and_then(|c| field(c, "name"))
                {
                    return ask(
                        vec![("step2", form("Step 2: What is your favorite color?", step2))],
                        Some(&format!("round-2:{name}")),
                    );
                }
                ask(
                    vec![("step1", form("Step 1: What is your name?", step1))],
                    Some("round-1"),
                )
            }),
        ToolDef::new("test_input_required_result_tampered_state")
            .description("Issues a sealed requestState; a tampered one is rejected by the SDK")
            .handler(move |ctx, _: NoArgs| {
                let schema = cs2.clone();
                async move {
                    match ctx.request_state() {
                        Some("tamper-check") => text_result("The requestState was verified"),
                        _ => ask(
                            vec![("confirm", form("Please confirm", schema))],
                            Some("tamper-check"),
                        ),
                    }
                }
            }),
        ToolDef::new("test_input_required_result_capabilities")
            .description("Asks only for what the client declared")
            .handler(move |ctx, _: NoArgs| {
                let schema = name_schema.clone();
                async move {
                    if ctx.input_responses().is_some_and(|r| !r.is_empty()) {
                        return text_result("Received the declared inputs");
                    }
                    let caps = ctx.client_capabilities();
                    let mut requests = Vec::new();
                    if caps.supports_sampling() {
                        requests.push(("greeting", sampling("Generate a greeting", 50)));
                    }
                    if caps.supports_form_elicitation() {
                        requests.push(("user_name", form("What is your name?", schema)));
                    }
                    if caps.supports_roots() {
                        requests.push(("client_roots", roots()));
                    }
                    if requests.is_empty() {
                        return text_result("The client declared no capability to ask with");
                    }
                    ask(requests, None)
                }
            }),
    ]
}

// ------------------------------------------------------------------------- prompts

fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::new("test_simple_prompt")
            .description("A simple prompt without arguments")
            .handler(|_ctx, _args, _resolved| async move {
                "This is a simple prompt for testing.".to_owned()
            }),
        PromptDef::new("test_prompt_with_arguments")
            .description("A prompt with two required arguments")
            .argument("arg1", Some("First test argument"), true)
            .argument("arg2", Some("Second test argument"), true)
            .complete("arg1", |prefix| {
                ["paris", "park", "party"]
                    .into_iter()
                    .filter(|v| v.starts_with(prefix))
                    .map(str::to_owned)
                    .collect()
            })
            .handler(|_ctx, args, _resolved| async move {
                let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )
            }),
        PromptDef::new("test_prompt_with_embedded_resource")
            .description("A prompt embedding a resource")
            .argument("resourceUri", Some("URI of the resource to embed"), true)
            .handler(|_ctx, args, _resolved| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                vec![
                    wire::<PromptMessage>(json!({"role": "user", "content": {
                        "type": "resource", "resource": {"uri": uri, "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."}}})),
                    PromptMessage::user("Please process the embedded resource above."),
                ]
            }),
        PromptDef::new("test_prompt_with_image")
            .description("A prompt with an image")
            .handler(|_ctx, _args, _resolved| async move {
                vec![
                    wire::<PromptMessage>(json!({"role": "user", "content":
                        {"type": "image", "data": PNG, "mimeType": "image/png"}})),
                    PromptMessage::user("Please analyze the image above."),
                ]
            }),
        PromptDef::new("test_input_required_result_prompt")
            .description("Asks for context with an InputRequiredResult before rendering")
            .handler(|ctx, _args, _resolved| async move {
                let schema = json!({"type": "object", "properties": {"context": {"type": "string"}},
                    "required": ["context"]});
                match accepted(&ctx, "user_context").and_then(|c| field(c, "context")) {
                    Some(context) => Outcome::Complete(GetPromptResult {
                        description: Some("A prompt rendered with the user's context".into()),
                        messages: vec![PromptMessage::user(format!("Use this context: {context}"))],
                        ..Default::default()
                    }),
                    None => Outcome::InputRequired(round(
                        vec![(
                            "user_context",
                            form("What context should the prompt use?", schema),
                        )],
                        None,
                    )),
                }
            }),
    ]
}

// ------------------------------------------------------------------------- tasks (SEP-2663)

/// Sleeps `seconds` or until the call (or its task) is cancelled; `true` when it slept through.
async fn sleep_unless_cancelled(ctx: &Context, seconds: f64) -> bool {
    let duration = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        () = ctx.cancellation().cancelled() => false,
    }
}

fn task_tools() -> Vec<ToolDef> {
    use mcp::tasks::TaskSupport;
    use mcp::{ElicitationResult, ToolReply};

    #[derive(Deserialize, schemars::JsonSchema)]
    struct Greet {
        name: String,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct SlowCompute {
        seconds: f64,
        label: Option<String>,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Filename {
        filename: String,
    }
    #[derive(Clone, Deserialize, schemars::JsonSchema)]
    struct Confirm {
        confirm: bool,
    }
    #[derive(Clone, Deserialize, schemars::JsonSchema)]
    struct Detail {
        name: Option<String>,
        confirm: Option<bool>,
    }
    #[derive(Clone, Deserialize, schemars::JsonSchema)]
    struct UserName {
        name: String,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    let cancelled = || ToolReply::Error(mcp::types::ErrorObject::internal("cancelled"));
    vec![
        ToolDef::new("greet")
            .description("Greets by name; never a task")
            .arguments::<Greet>()
            .handler(|_ctx, a: Greet| async move { format!("Hello, {}!", a.name) }),
        ToolDef::new("slow_compute")
            .description("Sleeps `seconds`, then answers; a task when the request allows one")
            .arguments::<SlowCompute>()
            .task(TaskSupport::Optional)
            .handler(move |ctx: Context, a: SlowCompute| async move {
                if !sleep_unless_cancelled(&ctx, a.seconds).await {
                    return cancelled();
                }
                let label = a.label.unwrap_or_else(|| "slow_compute".into());
                ToolReply::Result(CallToolResult::text(format!(
                    "{label}: computed for {} s",
                    a.seconds
                )))
            }),
        ToolDef::new("failing_job")
            .description("Runs as a task only, and ends with a tool error")
            .arguments::<NoArgs>()
            .task(TaskSupport::Required)
            .handler(move |ctx: Context, _: NoArgs| async move {
                if !sleep_unless_cancelled(&ctx, 1.0).await {
                    return Err("cancelled".to_owned());
                }
                Err::<String, String>("the job failed: exit status 2".to_owned())
            }),
        ToolDef::new("protocol_error_job")
            .description("Runs as a task only, and ends with a JSON-RPC error")
            .arguments::<NoArgs>()
            .task(TaskSupport::Required)
            .handler(move |ctx: Context, _: NoArgs| async move {
                ctx.progress(0.5, Some(1.0), Some("about to fail")).await;
                if !sleep_unless_cancelled(&ctx, 0.3).await {
                    return cancelled();
                }
                ToolReply::Error(mcp::types::ErrorObject::internal(
                    "protocol_error_job failed on purpose",
                ))
            }),
        ToolDef::new("confirm_delete")
            .description("Asks for confirmation from inside its task, then deletes")
            .arguments::<Filename>()
            .task(TaskSupport::Required)
            .handler(move |ctx: Context, a: Filename| async move {
                match ctx
                    .elicit::<Confirm>(format!("Delete {}?", a.filename))
                    .await
                {
                    Ok(ElicitationResult::Accepted(Confirm { confirm: true })) => {
                        ToolReply::Result(CallToolResult::text(format!("deleted {}", a.filename)))
                    }
                    Ok(_) => {
                        ToolReply::Result(CallToolResult::text(format!("kept {}", a.filename)))
                    }
                    Err(e) => ToolReply::Error(e),
                }
            }),
        ToolDef::new("multi_input")
            .description("Asks two questions at once from inside its task")
            .arguments::<NoArgs>()
            .task(TaskSupport::Required)
            .handler(move |ctx: Context, _: NoArgs| async move {
                let (first, second) = tokio::join!(
                    ctx.elicit::<Detail>("First detail?"),
                    ctx.elicit::<Detail>("Second detail?")
                );
                match (first, second) {
                    (Ok(a), Ok(b)) => {
                        let name = |d: ElicitationResult<Detail>| match d {
                            ElicitationResult::Accepted(d) => {
                                format!("{} ({:?})", d.name.unwrap_or_default(), d.confirm)
                            }
                            _ => "no answer".to_owned(),
                        };
                        ToolReply::Result(CallToolResult::text(format!(
                            "both details received: {}, {}",
                            name(a),
                            name(b)
                        )))
                    }
                    (Err(e), _) | (_, Err(e)) => ToolReply::Error(e),
                }
            }),
        ToolDef::new("test_tool_with_task")
            .description("Asks for a name on the tools/call itself, then runs as a task")
            .arguments::<NoArgs>()
            .task(TaskSupport::Required)
            .resolve::<mcp::Accepted<UserName>>(
                "user_name",
                Resolver::new("user_name", |_input| async move {
                    Resolution::<UserName>::elicit("What is your name?")
                }),
            )
            .handler_resolved(move |_ctx: Context, _: NoArgs, mut resolved| async move {
                let name = resolved
                    .take::<mcp::Accepted<UserName>>("user_name")?
                    .0
                    .name;
                Ok::<_, String>(format!("Hello, {name}!"))
            }),
    ]
}

// ------------------------------------------------------------------------- resources

fn server() -> McpServer {
    // The skills extension (SEP-2640) from the example skills beside this file.
    let mut server = McpServer::new("mcp-rs-conformance-server")
        .version(env!("CARGO_PKG_VERSION"))
        .logging(true)
        .skills_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/skills"));
    for tool in content_tools()
        .into_iter()
        .chain(notifying_tools())
        .chain(asking_tools())
        .chain([missing_capability_tool(), streaming_elicitation_tool()])
        .chain(schema_tools())
        .chain(input_required_tools())
        .chain(task_tools())
    {
        server = server.tool(tool);
    }
    for prompt in prompts() {
        server = server.prompt(prompt);
    }
    server
        .resource(
            ResourceDef::new("test://static-text", "Static Text Resource")
                .description("A static text resource")
                .mime_type("text/plain")
                .handler(|_ctx| async move {
                    "This is the content of the static text resource.".to_owned()
                }),
        )
        .resource(
            ResourceDef::new("test://static-binary", "Static Binary Resource")
                .description("A static binary resource (a PNG)")
                .mime_type("image/png")
                .handler(|_ctx| async move {
                    ReadResourceResult {
                        contents: vec![
                            mcp::types::content::ResourceContents::blob(
                                "test://static-binary",
                                PNG,
                            )
                            .with_mime_type("image/png"),
                        ],
                        ..Default::default()
                    }
                }),
        )
        .resource(
            ResourceDef::new("test://watched-resource", "Watched Resource")
                .description("A resource clients may subscribe to")
                .mime_type("text/plain")
                .handler(|_ctx| async move { "Watched resource content".to_owned() }),
        )
        .resource(
            ResourceTemplateDef::new("test://template/{id}/data", "Template Resource")
                .description("A resource template with an id")
                .mime_type("application/json")
                .handler(|_ctx, _uri, vars, _resolved| async move {
                    let id = vars.get("id").cloned().unwrap_or_default();
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string()
                }),
        )
}

fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let mut port = 3001;
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--port" => args.next().ok_or("--port needs a number")?,
            other => match other.strip_prefix("--port=") {
                Some(v) => v.to_owned(),
                None => return Err(format!("unknown argument `{other}`")),
            },
        };
        port = value.parse().map_err(|e| format!("--port {value}: {e}"))?;
    }
    Ok(port)
}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    let port = match port() {
        Ok(port) => port,
        Err(message) => {
            eprintln!("{message}\nusage: conformance-server [--port N]");
            std::process::exit(2);
        }
    };
    // Bound before it is announced, so `--port 0` tells a test the port the system chose
    // and nobody has to pick a free port and hope it stays free.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("conformance-server: serving http://{addr}/mcp");
    mcp::http::endpoint(server())?
        .serve_with_shutdown(listener, "/mcp", std::future::pending())
        .await?;
    Ok(())
}
