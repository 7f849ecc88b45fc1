//! `unseal` and its claims checks: a state sealed here unseals to itself for the same binding
//! and to the one fixed error for any other binding; any other token (arbitrary text, or the
//! sealed token with one byte changed) is refused with that same fixed error.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_state_seal::{RequestBinding, RequestStateSecurity, SealingBoundary};

const FIXED: &str = "Invalid or expired requestState";

fn boundary() -> &'static SealingBoundary {
    static BOUNDARY: OnceLock<SealingBoundary> = OnceLock::new();
    BOUNDARY.get_or_init(|| {
        RequestStateSecurity::keys(["0123456789abcdef0123456789abcdef"])
            .unwrap()
            .bind(Some("fuzz"))
            .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let boundary = boundary();
    let binding = RequestBinding::new("tools/call", "provision", None);
    // Arbitrary text as a token.
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = boundary.unseal(&binding, text, None) {
            assert_eq!(e.to_string(), FIXED);
        } else {
            panic!("an arbitrary token was accepted: {text:?}");
        }
    }
    // A real token: it round-trips, and every change of one byte is the fixed error.
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let state = String::from_utf8_lossy(rest);
    let token = boundary.seal(&binding, &state, None).unwrap();
    assert_eq!(boundary.unseal(&binding, &token, None).unwrap(), state);
    let other = RequestBinding::new("tools/call", "other", None);
    assert_eq!(
        boundary
            .unseal(&other, &token, None)
            .unwrap_err()
            .to_string(),
        FIXED
    );
    let mut tampered = token.clone().into_bytes();
    let at = usize::from(pick) % tampered.len();
    tampered[at] ^= 1 + (pick >> 5);
    if let Ok(tampered) = String::from_utf8(tampered) {
        let e = boundary.unseal(&binding, &tampered, None).unwrap_err();
        assert_eq!(e.to_string(), FIXED);
    }
});
