//! Seal a `requestState`, then try what an attacker would: tamper with it,
//! replay it on another tool or with other arguments, replay it after it expired.
//! Every attempt gets the same answer; only the server log learns why.
//!
//! `cargo run -p keel-mcp-state-seal --example seal_demo`

use std::time::{Duration, SystemTime};

use mcp_state_seal::{
    INVALID_REQUEST_STATE_CODE, InvalidRequestState, RequestBinding, RequestStateSecurity,
};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A fleet shares keys (here a demo key; generate real ones with `openssl rand -hex 32`).
    let boundary = RequestStateSecurity::keys(["demo-key-not-secret-0123456789abcdef"])?
        .ttl(Duration::from_secs(600))
        .bind(Some("table-service"))?;

    let args = json!({"date": "2026-08-01", "party": 2});
    let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
    let now = SystemTime::now();
    let token = boundary.seal_at(now, &binding, "asked: which region?", None)?;
    println!("sealed requestState ({} chars):\n  {token}\n", token.len());

    let same = boundary.unseal_at(now, &binding, &token, None)?;
    println!("echoed back unchanged      -> handler sees {same:?}");

    let mut tampered = token.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered)?;
    report(
        "one character changed",
        boundary.unseal_at(now, &binding, &tampered, None),
    );

    let other_tool = RequestBinding::new("tools/call", "cancel_table", Some(&args));
    report(
        "replayed on another tool",
        boundary.unseal_at(now, &other_tool, &token, None),
    );

    let bigger_party = json!({"date": "2026-08-01", "party": 12});
    let other_args = RequestBinding::new("tools/call", "book_table", Some(&bigger_party));
    report(
        "replayed with other args",
        boundary.unseal_at(now, &other_args, &token, None),
    );

    let later = now + Duration::from_secs(601);
    report(
        "replayed after the TTL",
        boundary.unseal_at(later, &binding, &token, None),
    );

    let elsewhere = RequestStateSecurity::keys(["demo-key-not-secret-0123456789abcdef"])?
        .bind(Some("billing-service"))?;
    report(
        "sent to another service",
        elsewhere.unseal_at(now, &binding, &token, None),
    );
    Ok(())
}

fn report(attempt: &str, result: Result<String, InvalidRequestState>) {
    match result {
        Ok(state) => println!("{attempt:<26} -> accepted?! {state:?}"),
        Err(err) => println!(
            "{attempt:<26} -> error {INVALID_REQUEST_STATE_CODE} \"{err}\"   (log: {})",
            err.reason()
        ),
    }
}
