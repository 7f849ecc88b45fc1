//! The server the service and HTTP targets drive: a tool with a resolver that elicits, a
//! prompt with a completion, and a resource template with a resolver (so requests reach URI
//! template matching and elicitation-schema checking of answers).

use std::collections::BTreeMap;

use mcp_server_core::Service;
use mcp_server_core::registry::{
    Accepted, McpServer, PromptDef, Resolution, Resolver, ResourceTemplateDef, ToolDef,
};
use mcp_types::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Deserialize, JsonSchema)]
pub struct Region {
    pub region: String,
    pub replicas: Option<u8>,
}

#[derive(Clone, Deserialize, JsonSchema)]
pub struct Confirm {
    pub ok: bool,
}

pub fn service() -> Service {
    let ask = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region?")
    });
    let tool = ToolDef::new("provision")
        .resolve::<Accepted<Region>>("region", ask)
        .handler_resolved(|_ctx, _args: JsonObject, mut r| async move {
            let Accepted(Region { region, .. }) = r.take::<Accepted<Region>>("region")?;
            Ok::<_, String>(format!("in {region}"))
        });
    let prompt = PromptDef::new("greet")
        .argument("who", Some("Who to greet"), true)
        .complete("who", |prefix| {
            ["Ada", "Alan"]
                .iter()
                .filter(|n| n.starts_with(prefix))
                .map(|s| s.to_string())
                .collect()
        })
        .handler(|_c, args: BTreeMap<String, String>, _r| async move {
            format!("Hello, {}!", args.get("who").cloned().unwrap_or_default())
        });
    let unlock = Resolver::new("unlock", |_input| async move {
        Resolution::<Confirm>::elicit("Unlock?")
    });
    let vault = ResourceTemplateDef::new("vault://{item}/{+rest}", "vault")
        .mime_type("text/plain")
        .resolve::<Accepted<Confirm>>("confirm", unlock)
        .handler(
            |_ctx, _uri, vars: BTreeMap<String, String>, mut resolved| async move {
                let Accepted(c) = resolved.take::<Accepted<Confirm>>("confirm")?;
                Ok::<_, String>(format!("{} {:?}", c.ok, vars))
            },
        );
    McpServer::new("fuzz")
        .tool(tool)
        .prompt(prompt)
        .resource_template(vault)
        .into_service()
        .expect("the fuzz server builds")
}

/// A current-thread runtime whose clock jumps ahead when idle: handler deadlines and stream
/// timeouts pass at once.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime")
    })
}

/// The server, built once per process.
pub fn shared_service() -> &'static Service {
    static SERVICE: std::sync::OnceLock<Service> = std::sync::OnceLock::new();
    SERVICE.get_or_init(service)
}
