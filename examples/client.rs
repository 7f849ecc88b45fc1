//! A client whose elicitation callback answers for the user, so the multi-round-trip loop
//! stays invisible: `call_tool` returns the final result.
//!
//! ```sh
//! cargo run --example client                              # starts a Provisioner in-process
//! cargo run --example client -- http://127.0.0.1:8000/mcp # or any Provisioner you started
//! cargo run --example client -- https://mcp.example.com/mcp # https: Mozilla's roots
//! cargo run --example client -- https://127.0.0.1:8443/mcp --ca ca.pem # a private CA
//! ```

use std::collections::BTreeMap;

use mcp::ClientBuilderExt;
use mcp::client::Client;
use mcp::types::elicitation::{ElicitResult, ElicitValue};
use mcp_examples::{cli, provisioner};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let url = args.next();
    let ca = match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => None,
        (Some("--ca"), Some(path), None) => Some(path),
        _ => return Err("usage: client [URL [--ca CA.pem]]".into()),
    };
    let url = match url {
        Some(url) => url,
        None => {
            let server = provisioner::server(mcp::RequestStateSecurity::ephemeral())?;
            cli::serve_in_background(server).await?
        }
    };
    let builder = Client::builder().elicitation(|_info, params| async move {
        println!("server asks: {}", params.message());
        let region = ElicitValue::String("eu-west-1".into());
        Ok(ElicitResult::accept(BTreeMap::from([(
            "region".to_owned(),
            region,
        )])))
    });
    let client = match ca {
        // A server whose certificate a private CA signed: trust that CA too.
        Some(path) => {
            let transport =
                mcp::http::HttpTransport::new(&url)?.add_root_pem(&std::fs::read(path)?)?;
            builder.connect(transport).await?
        }
        None => builder.connect_http(&url).await?,
    };
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await?;
    println!("{}", cli::text(&result));
    Ok(())
}
