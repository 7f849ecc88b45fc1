//! The seed examples written with the macros: the generated input schema, and the behaviour of
//! `delete_folder`, `briefing`, `book_table`, `pay_deposit`/`confirm_deposit` and a template
//! resource that asks, through the in-memory transport on both eras.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp::types::JsonRpcMessage;
use mcp::types::elicitation::ElicitAction;
use mcp::{
    Context, ElicitationResult, McpServer, MemoryConnection, Resolution, Service, State,
    TransportContext,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Files.

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

fn folder_len(path: &str) -> usize {
    match path {
        "/tmp/empty" => 0,
        "/tmp/project" => 2,
        _ => 1,
    }
}

/// Ask only when the folder is not empty.
#[mcp::resolver]
async fn confirm_delete(path: &str) -> Resolution<Confirm> {
    match folder_len(path) {
        0 => Resolution::ready(Confirm { ok: true }),
        n => Resolution::elicit(format!("{path} has {n} file(s). Delete anyway?")),
    }
}

/// Delete a folder, asking for confirmation when it is not empty.
#[mcp::tool]
async fn delete_folder(
    /// The folder to delete.
    path: String,
    #[resolve(confirm_delete)] confirm: ElicitationResult<Confirm>,
) -> String {
    match confirm {
        ElicitationResult::Accepted(Confirm { ok: true }) => format!("deleted {path}"),
        ElicitationResult::Accepted(_) => "kept the folder".into(),
        ElicitationResult::Declined => "declined: folder not deleted".into(),
        ElicitationResult::Cancelled => "cancelled: folder not deleted".into(),
    }
}

/// Delete a folder; a refusal ends the call.
#[mcp::tool(name = "delete_folder_strict", destructive, idempotent = false)]
async fn delete_strict(path: String, #[resolve(confirm_delete)] confirm: Confirm) -> String {
    if confirm.ok {
        format!("deleted {path}")
    } else {
        "kept the folder".into()
    }
}

// ---------------------------------------------------------------------------------------------
// A tool whose schema shows doc comments, optional and defaulted parameters.

/// Book a table at the bistro.
#[mcp::tool(title = "Book a table", read_only = false, open_world)]
async fn reserve(
    /// The day, as YYYY-MM-DD.
    date: String,
    /// How many people.
    #[mcp(default = 2)]
    party_size: u32,
    /// A note for the kitchen.
    note: Option<String>,
    /// The region the request is routed to.
    #[mcp(header = "Region")]
    region: Option<String>,
    #[resolve(ask_audience)] _audience: Audience,
    ctx: &Context,
) -> String {
    let _ = ctx.era();
    format!(
        "{date} for {party_size} {} {}",
        note.unwrap_or_default(),
        region.unwrap_or_default()
    )
}

#[test]
fn the_generated_input_schema_is_exact() {
    let def = mcp::IntoToolDef::into_tool_def(reserve);
    let tool = serde_json::to_value(def.definition()).unwrap();
    assert_eq!(
        tool,
        json!({
            "name": "reserve",
            "title": "Book a table",
            "description": "Book a table at the bistro.",
            "annotations": {"readOnlyHint": false, "openWorldHint": true},
            "inputSchema": {
                "title": "reserveArguments",
                "type": "object",
                "properties": {
                    "date": {"description": "The day, as YYYY-MM-DD.", "type": "string"},
                    "party_size": {"description": "How many people.", "type": "integer", "format": "uint32", "minimum": 0, "default": 2},
                    "note": {"description": "A note for the kitchen.", "type": ["string", "null"]},
                    "region": {"description": "The region the request is routed to.", "type": "string", "x-mcp-header": "Region"}
                },
                "required": ["date"]
            }
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Briefing.

#[derive(Clone, Deserialize, JsonSchema)]
struct Audience {
    audience: String,
}

#[mcp::resolver]
async fn ask_audience() -> Resolution<Audience> {
    Resolution::elicit("Who is the briefing for?")
}

/// Draft a briefing tuned to its audience.
#[mcp::prompt]
async fn briefing(#[resolve(ask_audience)] audience: Audience) -> String {
    format!("Write a briefing for {}.", audience.audience)
}

/// Greets someone.
#[mcp::prompt(name = "greet")]
async fn greeting(
    /// Who to greet.
    who: String,
    mood: Option<String>,
) -> String {
    format!(
        "Hello, {who}{}",
        mood.map(|m| format!(" ({m})")).unwrap_or_default()
    )
}

// ---------------------------------------------------------------------------------------------
// Bistro.

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

fn book(
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
                book(ctx, alt.date, party_size).await
            }
            _ => Ok("No booking made.".into()),
        }
    })
}

/// Book a table at the bistro.
#[mcp::tool]
async fn book_table(date: String, party_size: u32, ctx: Context) -> Result<String, String> {
    book(ctx, date, party_size).await
}

/// Take the deposit that confirms a booking.
#[mcp::tool]
async fn pay_deposit(booking_id: String, ctx: &Context) -> Result<String, String> {
    let action = ctx
        .elicit_url(
            "A 20 EUR deposit confirms your booking.",
            format!("https://pay.example.com/deposit/{booking_id}"),
            format!("deposit-{booking_id}"),
        )
        .await
        .map_err(|e| e.message)?;
    Ok(match action {
        ElicitAction::Accept => "Complete the payment in your browser.".into(),
        _ => "No deposit taken. The booking expires in one hour.".into(),
    })
}

/// Record a payment reported by the payment provider.
#[mcp::tool]
async fn confirm_deposit(booking_id: String, ctx: &Context) -> Result<String, String> {
    ctx.send_elicit_complete(format!("deposit-{booking_id}"))
        .await
        .map_err(|e| e.message)?;
    Ok(format!("Deposit received for booking {booking_id}."))
}

// ---------------------------------------------------------------------------------------------
// Resources.

#[mcp::resolver]
async fn unlock(item: String) -> Resolution<Confirm> {
    Resolution::elicit(format!("Unlock {item}?"))
}

/// Secrets, after confirmation.
#[mcp::resource("vault://{item}", mime_type = "text/plain")]
async fn vault(item: String, #[resolve(unlock)] confirm: Confirm) -> String {
    if confirm.ok {
        format!("the {item} secret")
    } else {
        "locked".into()
    }
}

/// The read-me.
#[mcp::resource("file:///readme", name = "readme")]
async fn readme() -> String {
    "hello".into()
}

fn server() -> Service {
    McpServer::new("Macros")
        .tool(delete_folder)
        .tool(delete_strict)
        .tool(reserve)
        .tool(book_table)
        .tool(pay_deposit)
        .tool(confirm_deposit)
        .prompt(briefing)
        .prompt(greeting)
        .resource(readme)
        .resource(vault)
        .into_service()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// A small client for the tests.

struct Client {
    conn: MemoryConnection,
    id: i64,
}

fn envelope(caps: &Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps})
}

impl Client {
    fn new(service: &Service) -> Self {
        Client {
            conn: MemoryConnection::connect(service, TransportContext::default()),
            id: 0,
        }
    }

    async fn send(
        &mut self,
        method: &str,
        params: Value,
        mut answer: impl FnMut(&Value) -> Value,
    ) -> Vec<Value> {
        self.id += 1;
        let id = json!(self.id);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.conn.send_raw(request.to_string());
        let mut out = Vec::new();
        loop {
            let message = tokio::time::timeout(Duration::from_secs(10), self.conn.recv())
                .await
                .unwrap()
                .unwrap()
                .to_value();
            if message.get("method").is_some() && message.get("id").is_some() {
                let mut reply = answer(&message);
                reply["jsonrpc"] = json!("2.0");
                reply["id"] = message["id"].clone();
                self.conn.send(&JsonRpcMessage::from_value(&reply).unwrap());
            }
            let done = message.get("method").is_none() && message["id"] == id;
            out.push(message);
            if done {
                return out;
            }
        }
    }

    /// A 2026-07-28 call driven through its rounds.
    async fn modern(
        &mut self,
        method: &str,
        mut params: Value,
        caps: Value,
        mut answer: impl FnMut(&str, &Value) -> Value,
    ) -> Vec<Value> {
        params["_meta"] = envelope(&caps);
        let mut rounds = Vec::new();
        loop {
            let r = self
                .send(method, params.clone(), |_| {
                    panic!("no server-to-client request on 2026-07-28")
                })
                .await
                .pop()
                .unwrap();
            rounds.push(r.clone());
            if r["result"]["resultType"] != "input_required" {
                return rounds;
            }
            let responses: serde_json::Map<String, Value> = r["result"]["inputRequests"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), answer(k, v)))
                .collect();
            params["inputResponses"] = Value::Object(responses);
            params["requestState"] = r["result"]["requestState"].clone();
        }
    }

    async fn initialize(&mut self, caps: Value) {
        self.send("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}), |_| Value::Null).await;
        self.conn
            .send_raw(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    }
}

fn text(r: &Value) -> &str {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {r}"))
}

fn caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

#[tokio::test]
async fn delete_folder_written_with_macros_behaves_as_the_seed_documents_say() {
    let mut c = Client::new(&server());
    let list = c
        .modern("tools/list", json!({}), json!({}), |_, _| Value::Null)
        .await;
    let tools = list[0]["result"]["tools"].as_array().unwrap();
    let delete = tools.iter().find(|t| t["name"] == "delete_folder").unwrap();
    assert_eq!(
        delete["description"],
        "Delete a folder, asking for confirmation when it is not empty."
    );
    assert_eq!(
        delete["inputSchema"]["properties"],
        json!({"path": {"description": "The folder to delete.", "type": "string"}})
    );
    let strict = tools
        .iter()
        .find(|t| t["name"] == "delete_folder_strict")
        .unwrap();
    assert_eq!(
        strict["annotations"],
        json!({"destructiveHint": true, "idempotentHint": false})
    );

    let empty = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/empty"}}),
            caps(),
            |_, _| panic!("asked"),
        )
        .await;
    assert_eq!(text(&empty[0]), "deleted /tmp/empty");
    for (answer, expected) in [
        (
            json!({"action": "accept", "content": {"ok": true}}),
            "deleted /tmp/project",
        ),
        (
            json!({"action": "accept", "content": {"ok": false}}),
            "kept the folder",
        ),
        (json!({"action": "decline"}), "declined: folder not deleted"),
        (json!({"action": "cancel"}), "cancelled: folder not deleted"),
    ] {
        let rounds = c
            .modern(
                "tools/call",
                json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
                caps(),
                |key, request| {
                    assert_eq!(key, "confirm_delete");
                    assert_eq!(
                        request["params"]["message"],
                        "/tmp/project has 2 file(s). Delete anyway?"
                    );
                    answer.clone()
                },
            )
            .await;
        assert_eq!(rounds.len(), 2);
        assert_eq!(text(&rounds[1]), expected);
    }
    let refused = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder_strict", "arguments": {"path": "/tmp/project"}}),
            caps(),
            |_, _| json!({"action": "decline"}),
        )
        .await;
    assert_eq!(refused[1]["result"]["isError"], true);
    assert_eq!(
        text(&refused[1]),
        "Error executing tool delete_folder_strict: Resolver for parameter 'confirm' could not resolve: elicitation was decline"
    );

    let mut legacy = Client::new(&server());
    legacy.initialize(caps()).await;
    let messages = legacy
        .send(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
            |request| {
                assert_eq!(request["method"], "elicitation/create");
                json!({"result": {"action": "accept", "content": {"ok": true}}})
            },
        )
        .await;
    assert_eq!(text(messages.last().unwrap()), "deleted /tmp/project");
}

#[tokio::test]
async fn briefing_and_greet_prompts_written_with_macros() {
    let mut c = Client::new(&server());
    let rounds = c
        .modern(
            "prompts/get",
            json!({"name": "briefing"}),
            caps(),
            |key, _| {
                assert_eq!(key, "ask_audience");
                json!({"action": "accept", "content": {"audience": "the board"}})
            },
        )
        .await;
    assert_eq!(
        rounds[1]["result"]["messages"][0]["content"]["text"],
        "Write a briefing for the board."
    );
    let list = c
        .modern("prompts/list", json!({}), json!({}), |_, _| Value::Null)
        .await;
    let greet = list[0]["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greet")
        .unwrap()
        .clone();
    assert_eq!(
        greet["arguments"],
        json!([
            {"name": "who", "description": "Who to greet.", "required": true},
            {"name": "mood", "required": false}
        ])
    );
    let r = c
        .modern(
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "Ada", "mood": "glad"}}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(
        r[0]["result"]["messages"][0]["content"]["text"],
        "Hello, Ada (glad)"
    );
}

#[tokio::test]
async fn book_table_and_deposits_written_with_macros() {
    let mut c = Client::new(&server());
    c.initialize(caps()).await;
    let messages = c
        .send("tools/call", json!({"name": "book_table", "arguments": {"date": "2025-12-25", "party_size": 2}}), |request| {
            assert_eq!(request["params"]["message"], "No tables for 2 on 2025-12-25. Would you like to try another date?");
            json!({"result": {"action": "accept", "content": {"accept_alternative": true, "date": "2025-12-27"}}})
        })
        .await;
    assert_eq!(
        text(messages.last().unwrap()),
        "Booked a table for 2 on 2025-12-27."
    );
    let messages = c
        .send(
            "tools/call",
            json!({"name": "pay_deposit", "arguments": {"booking_id": "b1"}}),
            |request| {
                assert_eq!(
                    request["params"]["url"],
                    "https://pay.example.com/deposit/b1"
                );
                json!({"result": {"action": "accept"}})
            },
        )
        .await;
    assert_eq!(
        text(messages.last().unwrap()),
        "Complete the payment in your browser."
    );
    let messages = c
        .send(
            "tools/call",
            json!({"name": "confirm_deposit", "arguments": {"booking_id": "b1"}}),
            |_| Value::Null,
        )
        .await;
    assert_eq!(messages[0]["method"], "notifications/elicitation/complete");
    assert_eq!(text(&messages[1]), "Deposit received for booking b1.");
}

#[tokio::test]
async fn resources_written_with_macros() {
    let mut c = Client::new(&server());
    let rounds = c
        .modern(
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
    let read = c
        .modern(
            "resources/read",
            json!({"uri": "file:///readme"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(
        read[0]["result"]["contents"],
        json!([{"uri": "file:///readme", "text": "hello"}])
    );
    let list = c
        .modern("resources/list", json!({}), json!({}), |_, _| Value::Null)
        .await;
    assert_eq!(
        list[0]["result"]["resources"],
        json!([{"uri": "file:///readme", "name": "readme", "description": "The read-me."}])
    );
}

#[test]
fn the_tool_body_stays_callable() {
    let out = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { delete_folder("/x".into(), ElicitationResult::Declined).await });
    assert_eq!(out, "declined: folder not deleted");
}

// ---------------------------------------------------------------------------------------------
// Methods on the server's own state.

struct Files {
    folders: std::sync::Mutex<BTreeMap<String, Vec<String>>>,
}

#[mcp::tools]
impl Files {
    /// Delete a folder, asking for confirmation when it is not empty.
    #[tool]
    async fn delete_folder(
        &self,
        path: String,
        #[resolve(confirm_delete)] confirm: ElicitationResult<Confirm>,
    ) -> String {
        match confirm {
            ElicitationResult::Accepted(Confirm { ok: true }) => {
                self.folders.lock().unwrap().remove(&path);
                format!("deleted {path}")
            }
            _ => "kept the folder".into(),
        }
    }

    /// The folders left.
    #[tool(read_only)]
    async fn list_folders(&self) -> String {
        self.folders
            .lock()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }

    /// What is in the store.
    #[prompt(name = "inventory")]
    async fn inventory(&self, prefix: Option<String>) -> String {
        format!(
            "{} folder(s){}",
            self.folders.lock().unwrap().len(),
            prefix.unwrap_or_default()
        )
    }

    /// One folder's files.
    #[resource("files://{name}")]
    async fn folder(&self, name: String) -> String {
        self.folders
            .lock()
            .unwrap()
            .get(&name)
            .map(|f| f.join(","))
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn methods_share_the_servers_state() {
    let files = Files {
        folders: std::sync::Mutex::new(BTreeMap::from([
            ("/tmp/empty".to_owned(), vec![]),
            (
                "/tmp/project".to_owned(),
                vec!["main.py".to_owned(), "README.md".to_owned()],
            ),
        ])),
    };
    let service = McpServer::new("Files")
        .register(files)
        .into_service()
        .unwrap();
    let mut c = Client::new(&service);
    let rounds = c
        .modern(
            "tools/call",
            json!({"name": "delete_folder", "arguments": {"path": "/tmp/project"}}),
            caps(),
            |_, _| json!({"action": "accept", "content": {"ok": true}}),
        )
        .await;
    assert_eq!(text(&rounds[1]), "deleted /tmp/project");
    let left = c
        .modern(
            "tools/call",
            json!({"name": "list_folders"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(text(&left[0]), "/tmp/empty");
    let list = c
        .modern("tools/list", json!({}), json!({}), |_, _| Value::Null)
        .await;
    assert_eq!(
        list[0]["result"]["tools"][1]["annotations"],
        json!({"readOnlyHint": true})
    );
    let prompt = c
        .modern(
            "prompts/get",
            json!({"name": "inventory", "arguments": {"prefix": "!"}}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(
        prompt[0]["result"]["messages"][0]["content"]["text"],
        "1 folder(s)!"
    );
    let read = c
        .modern(
            "resources/read",
            json!({"uri": "files://tmp"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(read[0]["result"]["contents"][0]["text"], "");
}

// ---------------------------------------------------------------------------------------------
// Application state: one store given to the server, reached by a tool, its resolver, a
// prompt, a static resource and a template, with no global.

#[derive(Default)]
struct Notes {
    by_id: std::sync::Mutex<BTreeMap<u32, String>>,
}

impl Notes {
    fn get(&self, id: &str) -> Option<String> {
        let id: u32 = id.parse().ok()?;
        self.by_id.lock().unwrap().get(&id).cloned()
    }
}

/// The audit trail a second state type holds.
#[derive(Default)]
struct Trail(std::sync::Mutex<Vec<String>>);

#[mcp::resolver]
async fn confirm_forget(id: &str, notes: State<Notes>) -> Resolution<Confirm> {
    match notes.get(id) {
        None => Resolution::reject(format!("no note {id}")),
        Some(text) => Resolution::elicit(format!("Forget \"{text}\"?")),
    }
}

/// Forget a note, after asking.
#[mcp::tool(destructive)]
async fn forget(
    id: String,
    notes: State<Notes>,
    trail: mcp::State<Trail>,
    #[resolve(confirm_forget)] confirm: ElicitationResult<Confirm>,
) -> String {
    if !matches!(confirm, ElicitationResult::Accepted(Confirm { ok: true })) {
        return format!("kept {id}");
    }
    let Ok(key) = id.parse::<u32>() else {
        return format!("no note {id}");
    };
    notes.by_id.lock().unwrap().remove(&key);
    trail.0.lock().unwrap().push(format!("forgot {id}"));
    format!("forgot {id}")
}

/// Summarize the notes.
#[mcp::prompt]
async fn summarize(notes: State<Notes>) -> String {
    format!("Summarize {} note(s).", notes.by_id.lock().unwrap().len())
}

/// What was done.
#[mcp::resource("notes://trail")]
async fn trail(trail: State<Trail>) -> String {
    trail.0.lock().unwrap().join("; ")
}

/// One note.
#[mcp::resource("notes://{id}")]
async fn note(id: String, notes: State<Notes>) -> Result<String, String> {
    notes.get(&id).ok_or_else(|| format!("no note {id}"))
}

fn notes_server() -> McpServer {
    McpServer::new("Notes")
        .tool(forget)
        .prompt(summarize)
        .resource(trail)
        .resource(note)
}

fn with_notes() -> Service {
    let notes = Notes::default();
    notes
        .by_id
        .lock()
        .unwrap()
        .extend([(1, "milk".to_owned()), (2, "eggs".to_owned())]);
    notes_server()
        .with_state(notes)
        .with_state(Trail::default())
        .into_service()
        .unwrap()
}

#[tokio::test]
async fn state_reaches_tools_resolvers_prompts_and_resources_in_both_eras() {
    let service = with_notes();
    let mut c = Client::new(&service);
    let rounds = c
        .modern(
            "tools/call",
            json!({"name": "forget", "arguments": {"id": "1"}}),
            caps(),
            |key, request| {
                assert_eq!(key, "confirm_forget");
                assert_eq!(request["params"]["message"], "Forget \"milk\"?");
                json!({"action": "accept", "content": {"ok": true}})
            },
        )
        .await;
    assert_eq!(rounds.len(), 2);
    assert_eq!(text(&rounds[1]), "forgot 1");

    // The resolver reads the same store: the note is gone now.
    let gone = c
        .modern(
            "tools/call",
            json!({"name": "forget", "arguments": {"id": "1"}}),
            caps(),
            |_, _| panic!("no question for a note that is gone"),
        )
        .await;
    assert_eq!(gone[0]["result"]["isError"], true, "{}", gone[0]);
    assert!(text(&gone[0]).ends_with("no note 1"), "{}", gone[0]);

    let prompt = c
        .modern(
            "prompts/get",
            json!({"name": "summarize"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(
        prompt[0]["result"]["messages"][0]["content"]["text"],
        "Summarize 1 note(s)."
    );
    let read = c
        .modern(
            "resources/read",
            json!({"uri": "notes://2"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(read[0]["result"]["contents"][0]["text"], "eggs");

    // 2025-11-25: the same store, the question asked live.
    let mut legacy = Client::new(&service);
    legacy.initialize(caps()).await;
    let messages = legacy
        .send(
            "tools/call",
            json!({"name": "forget", "arguments": {"id": "2"}}),
            |request| {
                assert_eq!(request["params"]["message"], "Forget \"eggs\"?");
                json!({"result": {"action": "accept", "content": {"ok": true}}})
            },
        )
        .await;
    assert_eq!(text(messages.last().unwrap()), "forgot 2");
    let trail = legacy
        .send("resources/read", json!({"uri": "notes://trail"}), |_| {
            Value::Null
        })
        .await;
    assert_eq!(
        trail.last().unwrap()["result"]["contents"][0]["text"],
        "forgot 1; forgot 2"
    );
}

#[test]
fn a_state_taken_and_not_given_fails_the_build_naming_what_takes_it() {
    let none = notes_server().build().unwrap_err().to_string();
    assert_eq!(
        none,
        "tool 'forget' takes State<macros::Notes>, and the server has none: add \
         .with_state(…) with a macros::Notes to McpServer::new(\"Notes\")"
    );
    let only_notes = notes_server()
        .with_state(Notes::default())
        .build()
        .unwrap_err()
        .to_string();
    assert_eq!(
        only_notes,
        "tool 'forget' takes State<macros::Trail>, and the server has only macros::Notes: add \
         .with_state(…) with a macros::Trail to McpServer::new(\"Notes\")"
    );
    // A resolver's own need is named through its tool.
    let ask = McpServer::new("Ask")
        .with_state(Trail::default())
        .tool(
            mcp::ToolDef::new("ask")
                .resolver(<confirm_forget as mcp::__private::derive::ResolverFn>::resolver())
                .handler(|_, _: Value| async { String::new() }),
        )
        .build()
        .unwrap_err()
        .to_string();
    assert_eq!(
        ask,
        "tool 'ask' (through its resolver 'confirm_forget') takes State<macros::Notes>, and the \
         server has only macros::Trail: add .with_state(…) with a macros::Notes to \
         McpServer::new(\"Ask\")"
    );
}

#[tokio::test]
async fn a_hand_built_tool_reads_state_from_its_context() {
    let count = mcp::ToolDef::new("count")
        .requires_state::<std::sync::atomic::AtomicU32>()
        .handler(|ctx: Context, _: Value| async move {
            let n = ctx.state::<std::sync::atomic::AtomicU32>().unwrap();
            let was = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert!(ctx.state::<Notes>().is_none());
            (was + 1).to_string()
        });
    let service = McpServer::new("Count")
        .with_state(std::sync::atomic::AtomicU32::new(41))
        .tool(count)
        .into_service()
        .unwrap();
    let mut c = Client::new(&service);
    let r = c
        .modern("tools/call", json!({"name": "count"}), json!({}), |_, _| {
            Value::Null
        })
        .await;
    assert_eq!(text(&r[0]), "42");
}

// ---------------------------------------------------------------------------------------------
// `Json<T>` infers the tool's `outputSchema`.

#[derive(serde::Serialize, JsonSchema)]
struct Note {
    id: u32,
    text: String,
}

#[derive(serde::Serialize, JsonSchema)]
struct Other {
    n: i64,
}

/// Serializable, with no schema: such a tool still compiles, and lists none.
#[derive(serde::Serialize)]
struct Bare {
    x: bool,
}

#[mcp::tool]
async fn a_note() -> mcp::Json<Note> {
    mcp::Json(Note {
        id: 1,
        text: "milk".into(),
    })
}

#[mcp::tool]
async fn maybe_note(fail: bool) -> Result<mcp::Json<Note>, String> {
    if fail {
        return Err("no note".into());
    }
    Ok(mcp::Json(Note {
        id: 2,
        text: "eggs".into(),
    }))
}

#[mcp::tool(output = Other)]
async fn overridden() -> mcp::Json<Other> {
    mcp::Json(Other { n: 3 })
}

#[mcp::tool]
async fn many_notes() -> mcp::Json<Vec<Note>> {
    mcp::Json(Vec::new())
}

#[mcp::tool]
async fn bare() -> mcp::Json<Bare> {
    mcp::Json(Bare { x: true })
}

#[tokio::test]
async fn a_json_return_lists_its_output_schema() {
    let service = McpServer::new("Out")
        .tool(a_note)
        .tool(maybe_note)
        .tool(overridden)
        .tool(many_notes)
        .tool(bare)
        .into_service()
        .unwrap();
    let mut c = Client::new(&service);
    let list = c
        .modern("tools/list", json!({}), json!({}), |_, _| Value::Null)
        .await;
    let tools = list[0]["result"]["tools"].as_array().unwrap().clone();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
            .get("outputSchema")
            .cloned()
    };
    let note = json!({
        "title": "Note",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "format": "uint32", "minimum": 0},
            "text": {"type": "string"}
        },
        "required": ["id", "text"]
    });
    assert_eq!(schema("a_note"), Some(note.clone()));
    assert_eq!(schema("maybe_note"), Some(note));
    assert_eq!(schema("overridden").unwrap()["title"], "Other");
    // An output schema describes an object: a list gets none.
    assert_eq!(schema("many_notes"), None);
    assert_eq!(schema("bare"), None);
    let call = c
        .modern(
            "tools/call",
            json!({"name": "a_note"}),
            json!({}),
            |_, _| Value::Null,
        )
        .await;
    assert_eq!(
        call[0]["result"]["structuredContent"],
        json!({"id": 1, "text": "milk"})
    );
}

// ---------------------------------------------------------------------------------------------
// Template variables of any `FromStr` type, and "not found" from resources.

#[mcp::resolver]
async fn confirm_read(n: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Read item {n}?"))
}

/// An item by number, after asking.
#[mcp::resource("items://{n}")]
async fn item(n: u32, #[resolve(confirm_read)] confirm: Confirm) -> Result<String, mcp::NotFound> {
    if !confirm.ok || n > 100 {
        return Err(mcp::NotFound);
    }
    Ok(format!("item {}", n + 1))
}

/// A static resource that is gone.
#[mcp::resource("items://gone")]
async fn gone() -> Result<String, mcp::NotFound> {
    Err(mcp::NotFound)
}

/// A static resource that fails.
#[mcp::resource("items://broken")]
async fn broken() -> Result<String, String> {
    Err("the disk is full".into())
}

#[tokio::test]
async fn template_variables_parse_and_missing_resources_answer_not_found_in_each_era() {
    let service = McpServer::new("Items")
        .resource(item)
        .resource(gone)
        .resource(broken)
        .into_service()
        .unwrap();
    let mut c = Client::new(&service);
    let read = |uri: &str| json!({"uri": uri});
    let ok = c
        .modern("resources/read", read("items://7"), caps(), |key, _| {
            assert_eq!(key, "confirm_read");
            json!({"action": "accept", "content": {"ok": true}})
        })
        .await;
    assert_eq!(ok[1]["result"]["contents"][0]["text"], "item 8");
    let not_found =
        |uri: &str| json!({"code": -32602, "message": "Resource not found", "data": {"uri": uri}});
    // A variable that does not parse: not found, before the resolver asks anything.
    for uri in ["items://abc", "items://-1", "items://gone"] {
        let r = c
            .modern("resources/read", read(uri), caps(), |_, _| {
                panic!("asked for {uri}")
            })
            .await;
        assert_eq!(r[0]["error"], not_found(uri), "{uri}");
    }
    // `Err(NotFound)` from the body, after the question.
    let big = c
        .modern(
            "resources/read",
            read("items://101"),
            caps(),
            |_, _| json!({"action": "accept", "content": {"ok": true}}),
        )
        .await;
    assert_eq!(big[1]["error"], not_found("items://101"));
    let failed = c
        .modern("resources/read", read("items://broken"), caps(), |_, _| {
            Value::Null
        })
        .await;
    assert_eq!(failed[0]["error"]["code"], -32603);
    assert_eq!(failed[0]["error"]["message"], "the disk is full");

    let mut legacy = Client::new(&service);
    legacy.initialize(caps()).await;
    for uri in ["items://abc", "items://gone"] {
        let r = legacy
            .send("resources/read", read(uri), |_| panic!("asked"))
            .await;
        assert_eq!(
            r.last().unwrap()["error"],
            json!({"code": -32002, "message": "Resource not found", "data": {"uri": uri}}),
            "{uri}"
        );
    }
    let r = legacy
        .send(
            "resources/read",
            read("items://3"),
            |_| json!({"result": {"action": "accept", "content": {"ok": true}}}),
        )
        .await;
    assert_eq!(r.last().unwrap()["result"]["contents"][0]["text"], "item 4");
}
