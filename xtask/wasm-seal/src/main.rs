//! Seals one `requestState` inside WebAssembly (`wasm32-wasip1`, run by Node's WASI), so that
//! `cargo xtask portable` can unseal it natively: the token format, the key derivation, the
//! randomness and the clock work the same on both sides.
//!
//! Usage: `wasm-seal KEY AUDIENCE TOOL STATE`; prints the token on stdout.

use mcp_state_seal::{RequestBinding, RequestStateSecurity};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [key, audience, tool, state] = args.as_slice() else {
        return Err("usage: wasm-seal KEY AUDIENCE TOOL STATE".into());
    };
    let boundary = RequestStateSecurity::keys([key.as_str()])?
        .audience(audience.as_str())
        .bind(None)?;
    let binding = RequestBinding::new("tools/call", tool, None);
    println!("{}", boundary.seal(&binding, state, None)?);
    Ok(())
}
