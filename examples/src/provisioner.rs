//! Provisioner: the low-level `Server` with a hand-built round.
//!
//! The first `tools/call` of `provision` returns an `InputRequiredResult` asking for a region,
//! with the state `provision-v1`; the retry carries the answer under the same key and the
//! state echoed back (sealed on the wire, plaintext here). Anything else asks again.

use std::collections::BTreeMap;

use mcp::types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitValue, ElicitationSchema,
    PrimitiveSchemaDefinition,
};
use mcp::types::mrtr::{InputRequest, InputResponse};
use mcp::types::tools::{CallToolResult, ListToolsResult, Tool};
use mcp::types::{InputRequiredResult, JsonObject};
use mcp::{Outcome, RequestStateSecurity, Server};
use serde_json::json;

/// The state the first round hands out and the retry must bring back.
pub const STATE: &str = "provision-v1";

fn region_question() -> InputRequest {
    let properties = BTreeMap::from([(
        "region".to_owned(),
        PrimitiveSchemaDefinition::of_type("string"),
    )]);
    InputRequest::Elicit(ElicitRequestParams::Form(ElicitRequestFormParams {
        mode: Some("form".into()),
        message: "Which region should the database live in?".into(),
        requested_schema: ElicitationSchema::new(properties, vec!["region".into()]),
        task: None,
        meta: None,
        extra: JsonObject::new(),
    }))
}

fn provision_tool() -> Tool {
    serde_json::from_value(json!({
        "name": "provision",
        "description": "Provision a database. Asks which region to put it in.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The database's name."}},
            "required": ["name"]
        }
    }))
    .expect("the provision tool definition is valid")
}

/// The Provisioner server, sealing its state with `security`.
pub fn server(security: RequestStateSecurity) -> Result<Server, mcp::seal::ConfigError> {
    Server::new("Provisioner")
        .on_list_tools(|_ctx, _params| async {
            Ok(ListToolsResult {
                tools: vec![provision_tool()],
                ..Default::default()
            })
        })
        .on_call_tool(|ctx, params| async move {
            if params.name != "provision" {
                return Ok(Outcome::Complete(CallToolResult::error(format!(
                    "Unknown tool: {}",
                    params.name
                ))));
            }
            let name = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or("db")
                .to_owned();
            let region = match ctx.input_responses().and_then(|r| r.get("region")) {
                Some(InputResponse::Elicit(answer)) if answer.action == ElicitAction::Accept => {
                    answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get("region"))
                        .cloned()
                }
                _ => None,
            };
            match (region, ctx.request_state()) {
                (Some(ElicitValue::String(region)), Some(STATE)) => Ok(Outcome::Complete(
                    CallToolResult::text(format!("Provisioned '{name}' in {region}.")),
                )),
                _ => Ok(Outcome::InputRequired(InputRequiredResult::new(
                    BTreeMap::from([("region".to_owned(), region_question())]),
                    Some(STATE.into()),
                ))),
            }
        })
        .request_state_security(security)
}
