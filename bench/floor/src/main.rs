//! The floor of the HTTP benchmark: what answering a 2026-07-28 `tools/call` of `echo` costs
//! with hyper 1 and serde_json and nothing else. It parses the body, echoes
//! `params.arguments.text` under the request's id, and validates nothing (no headers, no
//! `_meta`, no method, no tool name). A `GET` opens an SSE stream that never sends: what
//! holding an open stream costs hyper and tokio alone, the floor of the memory per stream.
//!
//!     floor --http PORT     http://127.0.0.1:PORT/ (any path)
//!     floor --stdio         one JSON-RPC message per line on stdin, the reply on stdout

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The echo reply to one request body, as bytes.
fn reply(body: &[u8]) -> Vec<u8> {
    let message: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
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
    serde_json::to_vec(&reply).unwrap_or_default()
}

/// An SSE body that stays open and never sends: hyper holds it until the client goes away.
struct Open;

impl Body for Open {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Pending
    }
}

type Answer = Response<Either<Full<Bytes>, Open>>;

async fn answer(request: Request<Incoming>) -> Result<Answer, Infallible> {
    if request.method() == Method::GET {
        let stream = Response::builder()
            .header("content-type", "text/event-stream")
            .body(Either::Right(Open))
            .unwrap_or_else(|_| Response::new(Either::Right(Open)));
        return Ok(stream);
    }
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let bytes = reply(&body);
    let response = Response::builder()
        .header("content-type", "application/json")
        .body(Either::Left(Full::new(Bytes::from(bytes))))
        .unwrap_or_else(|_| Response::new(Either::Left(Full::new(Bytes::new()))));
    Ok(response)
}

/// stdio: the same runtime as the HTTP floor, stdin and stdout as pipes on its reactor (as a
/// client that spawns a server gives them), a line in, a line out.
#[tokio::main]
async fn stdio() -> std::io::Result<()> {
    use std::os::fd::AsFd;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::unix::pipe;
    let input = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let output = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let mut lines = BufReader::new(pipe::Receiver::from_file(input)?).lines();
    let mut output = pipe::Sender::from_file(output)?;
    while let Some(line) = lines.next_line().await? {
        let mut out = reply(line.as_bytes());
        out.push(b'\n');
        output.write_all(&out).await?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, port] if flag == "--http" => http(port.parse()?),
        [flag] if flag == "--stdio" => Ok(stdio()?),
        _ => Err("usage: floor --http PORT | floor --stdio".into()),
    }
}

#[tokio::main]
async fn http(port: u16) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
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
