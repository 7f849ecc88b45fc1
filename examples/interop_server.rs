//! The interop server: every flow the Python SDK's `Client` is checked against, on one server.
//! `examples/python/interop_server.py` is its Python twin (same names, texts and schemas), so
//! `examples/python/interop_client.py` and `examples/interop_client.rs` expect the same answers
//! from either.
//!
//! - `delete_folder(path)`: a resolver that asks only when the folder is not empty (accept,
//!   keep, decline and cancel each have their own text).
//! - `plan_trip(city)`: two resolvers, `sampling/createMessage` and `roots/list`, asked in the
//!   same round.
//! - prompt `briefing` and template resource `vault://{item}`: a prompt and a resource that ask.
//! - `provision(name)`: the seed documents' Provisioner, its round built by hand (key `region`,
//!   state `provision-v1`); a 2025-11-25 session cannot carry an `InputRequiredResult`, so
//!   there it asks the same question live.
//! - `order()`: three questions, each depending on the answer before, so three rounds.
//! - `show_dashboard()`: linked to the MCP App `ui://interop/dashboard`, whose HTML declares one
//!   connect origin and asks for a border (shown only to clients that declare MCP Apps).
//!
//! Run it with `cargo run -p mcp-examples --example interop-server -- [--stdio | --http ADDR]`.

use mcp::types::InputRequiredResult;
use mcp::types::content::{OneOrMany, SamplingContent, TextContent};
use mcp::types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitValue, ElicitationSchema,
    PrimitiveSchemaDefinition,
};
use mcp::types::mrtr::{InputRequest, InputResponse};
use mcp::types::roots::ListRootsResult;
use mcp::types::sampling::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage};
use mcp::types::tools::CallToolResult;
use mcp::types::version::Era;
use mcp::types::{JsonObject, Role};
use mcp::{
    AppDef, Context, ElicitationResult, McpServer, Outcome, Resolution, ToolDef, ToolOutcome,
};
use mcp_examples::files;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// (a) Files: a resolver that asks only when it must. Unlike the `files` example, and like its
// Python twin, it deletes nothing, so every flow of the matrix finds `/tmp/project` full.

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks for confirmation only when the folder is not empty.
#[mcp::resolver]
async fn confirm_delete(path: &str) -> Resolution<files::Confirm> {
    if path == "/tmp/project" {
        Resolution::elicit(format!("{path} has 2 file(s). Delete anyway?"))
    } else {
        Resolution::ready(files::Confirm { ok: true })
    }
}

/// Delete a folder, asking for confirmation when it is not empty.
#[mcp::tool]
async fn delete_folder(
    /// The folder to delete.
    path: String,
    #[resolve(confirm_delete)] confirm: ElicitationResult<files::Confirm>,
) -> String {
    files::outcome(&path, &confirm)
}

// ---------------------------------------------------------------------------------------------
// (b) Sampling and roots, two independent questions in one round.

/// Ask the client's model for a plan.
#[mcp::resolver]
async fn plan(city: String) -> Resolution<CreateMessageResult> {
    let message = SamplingMessage {
        role: Role::User,
        content: OneOrMany::One(SamplingContent::Text(TextContent::new(format!(
            "Plan a day in {city}"
        )))),
        meta: None,
        extra: JsonObject::new(),
    };
    Resolution::sample(CreateMessageRequestParams::new(vec![message], 100))
}

/// Ask where the client keeps its files.
#[mcp::resolver]
async fn roots() -> Resolution<ListRootsResult> {
    Resolution::list_roots()
}

/// Plan a day trip and say where it is saved.
#[mcp::tool]
async fn plan_trip(
    city: String,
    #[resolve(plan)] plan: CreateMessageResult,
    #[resolve(roots)] roots: ListRootsResult,
) -> Result<String, String> {
    // `city` is here for the `plan` resolver, which reads it by name.
    let _ = city;
    let text = match &plan.content {
        OneOrMany::One(SamplingContent::Text(t)) => t.text.clone(),
        _ => return Err("the model did not answer with text".into()),
    };
    let root = roots.roots.first().ok_or("the client has no roots")?;
    Ok(format!("{text} (saved to {})", root.uri))
}

// ---------------------------------------------------------------------------------------------
// (c) A prompt and a template resource that ask.

// The prompt is `mcp_examples::briefing::briefing`.

/// Ask before opening a secret.
#[mcp::resolver]
async fn unlock(item: String) -> Resolution<Confirm> {
    Resolution::elicit(format!("Unlock {item}?"))
}

/// Secrets, after confirmation.
#[mcp::resource("vault://{item}", name = "vault", mime_type = "text/plain")]
async fn vault(item: String, #[resolve(unlock)] confirm: Confirm) -> String {
    if confirm.ok {
        format!("the {item} secret")
    } else {
        "locked".into()
    }
}

// ---------------------------------------------------------------------------------------------
// (d) The Provisioner: a round built by hand.

const ASK_REGION: &str = "Which region should the database live in?";

#[derive(Deserialize, JsonSchema)]
struct Provision {
    name: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Region {
    region: String,
}

fn provisioned(name: &str, region: &str) -> ToolOutcome {
    Outcome::Complete(CallToolResult::text(format!(
        "Provisioned '{name}' in {region}."
    )))
}

async fn provision(ctx: Context, args: Provision) -> Result<ToolOutcome, String> {
    if ctx.era() == Era::Legacy {
        // No InputRequiredResult on a 2025-11-25 session: ask the same question live.
        return match ctx.elicit::<Region>(ASK_REGION).await {
            Ok(ElicitationResult::Accepted(Region { region })) => {
                Ok(provisioned(&args.name, &region))
            }
            Ok(_) => Err("no region given".into()),
            Err(e) => Err(e.message),
        };
    }
    let answer = ctx
        .input_responses()
        .and_then(|responses| responses.get("region"))
        .and_then(|response| match response {
            InputResponse::Elicit(e) if e.action == ElicitAction::Accept => {
                e.content.as_ref()?.get("region").cloned()
            }
            _ => None,
        });
    if let Some(ElicitValue::String(region)) = answer {
        return Ok(provisioned(&args.name, &region));
    }
    let properties = BTreeMap::from([(
        "region".to_owned(),
        PrimitiveSchemaDefinition::of_type("string"),
    )]);
    let ask = ElicitRequestParams::Form(ElicitRequestFormParams {
        mode: Some("form".into()),
        message: ASK_REGION.into(),
        requested_schema: ElicitationSchema::new(properties, vec!["region".into()]),
        task: None,
        meta: None,
        extra: JsonObject::new(),
    });
    let requests = BTreeMap::from([("region".to_owned(), InputRequest::Elicit(ask))]);
    Ok(Outcome::InputRequired(InputRequiredResult::new(
        requests,
        Some("provision-v1".into()),
    )))
}

// ---------------------------------------------------------------------------------------------
// (e) Three questions, each needing the answer before it: three rounds.

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Color {
    color: String,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Size {
    size: i64,
}

/// First question.
#[mcp::resolver]
async fn ask_name() -> Resolution<Name> {
    Resolution::elicit("Your name?")
}

/// Second question, worded with the first answer.
#[mcp::resolver]
async fn ask_color(#[resolve(ask_name)] name: Name) -> Resolution<Color> {
    Resolution::elicit(format!("{}, your favourite colour?", name.name))
}

/// Third question, worded with the second answer.
#[mcp::resolver]
async fn ask_size(#[resolve(ask_color)] color: Color) -> Resolution<Size> {
    Resolution::elicit(format!("How big, in {}?", color.color))
}

/// Order something, after three questions.
#[mcp::tool]
async fn order(
    #[resolve(ask_name)] name: Name,
    #[resolve(ask_color)] color: Color,
    #[resolve(ask_size)] size: Size,
) -> String {
    format!(
        "{} ordered size {} in {}.",
        name.name, size.size, color.color
    )
}

/// The dashboard app's URI and HTML, the same as the Python twin's.
const DASHBOARD_URI: &str = "ui://interop/dashboard";
const DASHBOARD_HTML: &str =
    "<!doctype html><html><body><h1>Orders</h1><p>3 open orders</p></body></html>";

/// Show the orders dashboard.
#[mcp::tool(ui = "ui://interop/dashboard")]
async fn show_dashboard() -> String {
    "Dashboard: 3 open orders.".to_owned()
}

fn server() -> McpServer {
    let provision = ToolDef::new("provision")
        .description("Provision a database. Asks which region to put it in.")
        .arguments::<Provision>()
        .handler(provision);
    McpServer::new("interop")
        .version(env!("CARGO_PKG_VERSION"))
        .tool(delete_folder)
        .tool(plan_trip)
        .tool(provision)
        .tool(order)
        .tool(show_dashboard)
        .app(
            AppDef::new(DASHBOARD_URI, "dashboard")
                .html(DASHBOARD_HTML)
                .connect_domain("https://api.example.com")
                .prefers_border(true),
        )
        .prompt(mcp_examples::briefing::briefing)
        .resource(vault)
}

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    mcp_examples::cli::run(server()).await
}
