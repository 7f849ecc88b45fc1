//! The floor of the HTTP benchmark: what answering a 2026-07-28 `tools/call` of `echo` costs
//! with hyper 1 and serde_json and nothing else. It parses the body, echoes
//! `params.arguments.text` under the request's id, and validates nothing (no headers, no
//! `_meta`, no method, no tool name).
//!
//!     floor --http PORT     http://127.0.0.1:PORT/ (any path)

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = message["params"]["arguments"]["text"].clone();
    let reply = json!({
        "jsonrpc": "2.0",
        "id": message["id"],
        "result": {
            "content": [{"type": "text", "text": text}],
            "isError": false,
            "resultType": "complete"
        }
    });
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    let response = Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())));
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port: u16 = match args.as_slice() {
        [flag, port] if flag == "--http" => port.parse()?,
        _ => return Err("usage: floor --http PORT".into()),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(answer))
                .await;
        });
    }
}
