//! Test support: a scripted client over the in-memory transport, and the seed documents'
//! Provisioner, a low-level server with a hand-built round.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use mcp_server_core::{MemoryConnection, Server, Service, TransportContext};
use mcp_types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitValue, ElicitationSchema,
    PrimitiveSchemaDefinition,
};
use mcp_types::mrtr::{InputRequest, InputResponse, Outcome};
use mcp_types::tools::{CallToolResult, ListToolsResult, Tool};
use mcp_types::{InputRequiredResult, JsonObject, JsonRpcMessage};
use serde_json::{Value, json};

/// The 2026-07-28 envelope with the given client capabilities.
pub fn envelope(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "0.0.1"}
    })
}

/// Params with the envelope merged in.
pub fn with_meta(mut params: Value, caps: Value) -> Value {
    params["_meta"] = envelope(caps);
    params
}

/// A scripted client on the in-memory transport.
pub struct TestClient {
    pub conn: MemoryConnection,
    next_id: i64,
}

impl TestClient {
    pub fn new(service: &Service) -> Self {
        Self::with_transport(service, TransportContext::default())
    }

    pub fn with_transport(service: &Service, transport: TransportContext) -> Self {
        TestClient {
            conn: MemoryConnection::connect(service, transport),
            next_id: 0,
        }
    }

    pub fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends raw text and returns every message up to the response with `id` (inclusive).
    pub async fn exchange_raw(&mut self, text: &str, id: &Value) -> Vec<Value> {
        assert!(self.conn.send_raw(text.as_bytes().to_vec()));
        self.collect_until(id, |_| None).await
    }

    /// Reads messages until the response to `id`, answering server-to-client requests with
    /// `answer` (whose `None` leaves them unanswered).
    pub async fn collect_until(
        &mut self,
        id: &Value,
        mut answer: impl FnMut(&Value) -> Option<Value>,
    ) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message =
                tokio::time::timeout(std::time::Duration::from_secs(10), self.conn.recv())
                    .await
                    .expect("the server did not answer within 10 s")
                    .expect("the connection closed")
                    .to_value();
            let is_response = message.get("method").is_none() && message.get("id") == Some(id);
            let is_request = message.get("method").is_some() && message.get("id").is_some();
            if is_request && let Some(reply) = answer(&message) {
                let mut reply = reply;
                reply["jsonrpc"] = json!("2.0");
                reply["id"] = message["id"].clone();
                self.conn.send_raw(reply.to_string().into_bytes());
            }
            seen.push(message);
            if is_response {
                return seen;
            }
        }
    }

    /// Sends a request and returns the messages up to and including its response.
    pub async fn exchange(&mut self, method: &str, params: Value) -> Vec<Value> {
        self.exchange_with(method, params, |_| None).await
    }

    pub async fn exchange_with(
        &mut self,
        method: &str,
        params: Value,
        answer: impl FnMut(&Value) -> Option<Value>,
    ) -> Vec<Value> {
        let id = json!(self.next_id());
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        assert!(self.conn.send_raw(request.to_string().into_bytes()));
        self.collect_until(&id, answer).await
    }

    /// Sends a request and returns only its response.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.exchange(method, params).await.pop().unwrap()
    }

    /// A 2026-07-28 request with the envelope.
    pub async fn modern(&mut self, method: &str, params: Value, caps: Value) -> Value {
        self.request(method, with_meta(params, caps)).await
    }

    pub fn notify(&self, method: &str, params: Value) {
        let n = json!({"jsonrpc": "2.0", "method": method, "params": params});
        assert!(self.conn.send_raw(n.to_string().into_bytes()));
    }

    /// The legacy handshake.
    pub async fn initialize(&mut self, version: &str, caps: Value) -> Value {
        let result = self
            .request("initialize", json!({"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "legacy", "version": "1"}}))
            .await;
        self.notify("notifications/initialized", json!({}));
        result
    }
}

/// The seed documents' Provisioner: tool `provision(name)` asks for a region with a hand-built
/// round (`requestState = "provision-v1"`) and provisions on an accepted answer.
pub fn provisioner(name: &str, version: &str) -> Server {
    Server::new(name)
        .version(version)
        .on_list_tools(|_ctx, _params| async {
            Ok(ListToolsResult {
                tools: vec![Tool {
                    name: "provision".into(),
                    title: None,
                    description: Some("Provision a database.".into()),
                    input_schema: serde_json::from_value(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})).unwrap(),
                    output_schema: None,
                    annotations: None,
                    icons: None,
                    execution: None,
                    meta: None,
                    extra: JsonObject::new(),
                }],
                ..Default::default()
            })
        })
        .on_call_tool(|ctx, params| async move {
            if params.name != "provision" {
                return Err(mcp_types::ErrorObject::invalid_params(format!("Unknown tool: {}", params.name)));
            }
            let db = params.arguments.as_ref().and_then(|a| a.get("name")).and_then(Value::as_str).unwrap_or("db").to_owned();
            let answer = ctx.input_responses().and_then(|r| r.get("region")).and_then(|r| match r {
                InputResponse::Elicit(e) if e.action == ElicitAction::Accept => e.content.as_ref()?.get("region").cloned(),
                _ => None,
            });
            match (answer, ctx.request_state()) {
                (Some(ElicitValue::String(region)), Some(state)) => Ok(Outcome::Complete(CallToolResult {
                    is_error: Some(false),
                    ..CallToolResult::text(format!("Provisioned '{db}' in {region} (state='{state}')"))
                })),
                _ => {
                    let mut properties = BTreeMap::new();
                    properties.insert("region".into(), PrimitiveSchemaDefinition::of_type("string"));
                    let ask = ElicitRequestParams::Form(ElicitRequestFormParams {
                        mode: Some("form".into()),
                        message: "Which region should the database live in?".into(),
                        requested_schema: ElicitationSchema::new(properties, vec!["region".into()]),
                        task: None,
                        meta: None,
                        extra: JsonObject::new(),
                    });
                    let requests = BTreeMap::from([("region".to_owned(), InputRequest::Elicit(ask))]);
                    Ok(Outcome::InputRequired(InputRequiredResult::new(requests, Some("provision-v1".into()))))
                }
            }
        })
}

/// Converts messages to values (for assertions).
pub fn values(messages: Vec<JsonRpcMessage>) -> Vec<Value> {
    messages.iter().map(JsonRpcMessage::to_value).collect()
}
