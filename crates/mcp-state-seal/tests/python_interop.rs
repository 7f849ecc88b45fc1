//! Interop with the Python SDK (`mcp` 2.3.0) in both directions: its codec and
//! its sealing boundary read what this crate seals, and this crate reads what
//! they seal; its canonical JSON agrees with ours on numbers and strings.
//!
//! Set `MCP_INTEROP_PYTHON` to a Python with `mcp==2.3.0` installed, e.g.
//! `python3 -m venv target/py && target/py/bin/pip install mcp==2.3.0`, then
//! `MCP_INTEROP_PYTHON=target/py/bin/python cargo test -p keel-mcp-state-seal --test python_interop`.
//! Without it the tests are skipped, unless `MCP_REQUIRE_INTEROP=1`, which makes
//! a missing interpreter a failure (for CI).

use std::io::Write as _;
use std::process::{Command, Stdio};

use mcp_state_seal::{
    ArgsDigest, Codec, KeyRing, Principal, RequestBinding, RequestStateSecurity, canonical_json,
    canonical_json_text,
};
use serde_json::{Value, json};

const KEY: &str = "pyinterop-demo-key-not-secret-0123456789";
const OLD_KEY: &str = "0123456789abcdef0123456789abcdef";

/// Runs a list of operations through the Python SDK and returns one result each.
/// The script only calls the SDK; every comparison happens on the Rust side.
const SCRIPT: &str = r#"
import json, sys
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import (
    AESGCMRequestStateCodec, RequestStateBoundary, RequestStateSecurity, InvalidRequestState,
)
import mcp.server.request_state as rs

def boundary(op):
    principal = op.get("principal")
    security = RequestStateSecurity(keys=op["keys"], audience=op.get("audience"),
                                    bind_principal=lambda ctx: principal)
    return RequestStateBoundary(security, default_audience=op.get("default_audience"))

def context(op, state=None):
    params = json.loads(op["params"])
    if state is not None:
        params["requestState"] = state
    return ServerRequestContext(session=None, lifespan_context=None,
                                protocol_version="2026-07-28", method=op["method"], params=params)

def run(op):
    kind = op["op"]
    if kind == "codec_unseal":
        return {"plaintext": AESGCMRequestStateCodec(op["keys"]).unseal(op["token"]).decode()}
    if kind == "codec_seal":
        return {"token": AESGCMRequestStateCodec(op["keys"]).seal(op["plaintext"].encode())}
    if kind == "boundary_unseal":
        state, _ = boundary(op)._unseal(context(op, op["token"]))
        return {"state": state}
    if kind == "boundary_seal":
        return {"token": boundary(op)._seal(context(op), op["state"])}
    if kind == "identity":
        target, digest = rs._request_identity(op["method"], json.loads(op["params"]))
        return {"t": target, "a": digest}
    if kind == "canon":
        return {"text": rs.compact_json(json.loads(op["text"]), sort_keys=True)}
    if kind == "principal_claim":
        return {"claim": rs._principal_claim(op["principal"])}
    raise ValueError(kind)

results = []
for op in json.load(sys.stdin):
    try:
        results.append(run(op))
    except Exception as exc:
        results.append({"error": type(exc).__name__})
json.dump(results, sys.stdout)
"#;

/// The Python interpreter to use, or `None` to skip.
fn python() -> Option<String> {
    match std::env::var("MCP_INTEROP_PYTHON") {
        Ok(path) if !path.is_empty() => Some(path),
        _ => {
            // Under CI (`CI` set, as every CI service sets it) or `MCP_REQUIRE_INTEROP=1`, a
            // missing interpreter fails: a skip there would pass without testing anything.
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(
                std::env::var("MCP_REQUIRE_INTEROP").as_deref() != Ok("1") && !ci,
                "MCP_INTEROP_PYTHON is not set (and CI or MCP_REQUIRE_INTEROP=1 requires these \
                 tests): point it at a Python with mcp==2.3.0 installed; `cargo xtask test` \
                 makes one in target/py"
            );
            // Straight to the process's stderr: the test harness captures `eprintln!`
            // of passing tests, and a skip should be seen.
            let _ = writeln!(
                std::io::stderr(),
                "skipping Python interop: set MCP_INTEROP_PYTHON to a Python with mcp==2.3.0 \
                 (python3 -m venv target/py && target/py/bin/pip install mcp==2.3.0)"
            );
            None
        }
    }
}

fn run_python(python: &str, ops: &[Value]) -> Vec<Value> {
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {python}: {e}"));
    let input = serde_json::to_vec(ops).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(results.len(), ops.len());
    results
}

fn field<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}"))
}

#[test]
fn python_codec_reads_rust_tokens_and_rust_reads_python_tokens() {
    let Some(python) = python() else { return };
    let ring = KeyRing::new([KEY, OLD_KEY]).unwrap();
    let plaintexts = [
        "",
        "x",
        "hello, Python",
        "ascii \" \\ / {json}",
        &"z".repeat(5000),
    ];
    let mut ops = Vec::new();
    for p in plaintexts {
        ops.push(
            json!({"op": "codec_unseal", "keys": [KEY], "token": ring.seal(p.as_bytes()).unwrap()}),
        );
    }
    for p in plaintexts {
        ops.push(json!({"op": "codec_seal", "keys": [KEY, OLD_KEY], "plaintext": p}));
    }
    // The ring order matters to Python too: a token under the second key verifies.
    let old = KeyRing::new([OLD_KEY]).unwrap().seal(b"old").unwrap();
    ops.push(json!({"op": "codec_unseal", "keys": [KEY, OLD_KEY], "token": old}));
    ops.push(json!({"op": "codec_unseal", "keys": [KEY], "token": old}));
    let results = run_python(&python, &ops);
    let n = plaintexts.len();
    for (i, p) in plaintexts.iter().enumerate() {
        assert_eq!(field(&results[i], "plaintext"), *p);
        let token = field(&results[n + i], "token");
        assert!(token.starts_with("v1.HVbQx"), "sealed under {KEY}: {token}");
        assert_eq!(ring.unseal(token).unwrap(), p.as_bytes());
    }
    assert_eq!(field(&results[2 * n], "plaintext"), "old");
    assert_eq!(field(&results[2 * n + 1], "error"), "InvalidRequestState");
}

#[test]
fn python_boundary_reads_rust_state_and_rust_reads_python_state() {
    let Some(python) = python() else { return };
    let principal = Principal::new("client-a")
        .issuer("https://issuer.example")
        .subject("alice");
    let cases = [
        (
            "tools/call",
            "book_table",
            r#"{"name":"book_table","arguments":{"date":"2026-08-01","party":2}}"#,
        ),
        (
            "tools/call",
            "x",
            r#"{"name":"x","arguments":{"big":100000000000000000000,"f":1e-07,"u":"café 😀"}}"#,
        ),
        (
            "prompts/get",
            "greet",
            r#"{"name":"greet","arguments":{"who":"Ada"}}"#,
        ),
        (
            "resources/read",
            "demo://docs/readme",
            r#"{"uri":"demo://docs/readme"}"#,
        ),
        ("tools/call", "noargs", r#"{"name":"noargs"}"#),
    ];
    let states = ["pick-region-v1", "état \"quoted\" 😀\n"];
    let rust = RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind(Some("pyinterop-demo"))
        .unwrap();
    let mut ops = Vec::new();
    let mut expected = Vec::new();
    for (method, target, params) in cases {
        let binding = binding_of(method, target, params);
        for state in states {
            for p in [None, Some(&principal)] {
                let p_json = p.map(Principal::to_json);
                let token = rust.seal(&binding, state, p).unwrap();
                ops.push(json!({"op": "boundary_unseal", "keys": [KEY], "default_audience": "pyinterop-demo",
                    "method": method, "params": params, "principal": p_json, "token": token}));
                expected.push(Some(state));
                ops.push(json!({"op": "boundary_seal", "keys": [KEY], "default_audience": "pyinterop-demo",
                    "method": method, "params": params, "principal": p_json, "state": state}));
                expected.push(None);
            }
        }
    }
    // Python refuses a Rust token for another audience, and one replayed on another tool.
    let binding = binding_of("tools/call", "a", r#"{"name":"a"}"#);
    let token = rust.seal(&binding, "s", None).unwrap();
    ops.push(
        json!({"op": "boundary_unseal", "keys": [KEY], "default_audience": "other",
        "method": "tools/call", "params": r#"{"name":"a"}"#, "token": token}),
    );
    ops.push(
        json!({"op": "boundary_unseal", "keys": [KEY], "default_audience": "pyinterop-demo",
        "method": "tools/call", "params": r#"{"name":"b"}"#, "token": token}),
    );

    let results = run_python(&python, &ops);
    let mut i = 0;
    for (method, target, params) in cases {
        let binding = binding_of(method, target, params);
        for state in states {
            for p in [None, Some(&principal)] {
                assert_eq!(expected[i], Some(state));
                assert_eq!(field(&results[i], "state"), state, "{method} {params}");
                let token = field(&results[i + 1], "token");
                assert_eq!(
                    rust.unseal(&binding, token, p).unwrap(),
                    state,
                    "{method} {params}"
                );
                // The Python token is bound like ours: another principal fails here too.
                let other = Principal::new("client-b");
                assert!(rust.unseal(&binding, token, Some(&other)).is_err());
                i += 2;
            }
        }
    }
    assert_eq!(field(&results[i], "error"), "MCPError");
    assert_eq!(field(&results[i + 1], "error"), "MCPError");
}

fn binding_of<'a>(method: &'a str, target: &'a str, params: &'a str) -> RequestBinding<'a> {
    // The arguments go through the exact text path; resources/read binds none.
    let arguments = if method == "resources/read" {
        None
    } else {
        raw_arguments(params)
    };
    RequestBinding::from_raw_arguments(method, target, arguments).unwrap()
}

/// The raw text of `"arguments":{…}` in a compact params object (the test inputs
/// put it last).
fn raw_arguments(params: &str) -> Option<&str> {
    let start = params.find(r#""arguments":"#)? + r#""arguments":"#.len();
    Some(&params[start..params.len() - 1])
}

#[test]
fn python_and_rust_digest_the_same_arguments() {
    let Some(python) = python() else { return };
    let texts = [
        r#"{"name":"x","arguments":{"b":{"z":1,"a":[3,1]},"a":1.0,"u":"café 😀"}}"#,
        r#"{"name":"x","arguments":{"big":-100000000000000000000000,"neg":-0,"e":1E400,"z":0.0}}"#,
        r#"{"name":"x","arguments":{"dup":1,"dup":2,"\u00e9":"\ud83d\ude00","lone":"\udc00"}}"#,
        r#"{"name":"x","arguments":{"ｱ":1,"😀":2,"~":3,"\u007f":4,"ctl\u0001":"\b\f\n\r\t/"}}"#,
        r#"{"name":"x","arguments":[]}"#,
        r#"{"name":"x","arguments":0}"#,
        r#"{"name":"x","arguments":[0]}"#,
        r#"{"name":"x","arguments":"text"}"#,
    ];
    let ops: Vec<Value> = texts
        .iter()
        .map(|t| json!({"op": "identity", "method": "tools/call", "params": t}))
        .collect();
    let results = run_python(&python, &ops);
    for (text, result) in texts.iter().zip(&results) {
        let ours = ArgsDigest::of_json_text(raw_arguments(text)).unwrap();
        assert_eq!(ours, field(result, "a"), "{text}");
    }
}

/// Floats are where two JSON writers disagree first; compare many of them.
#[test]
fn python_and_rust_write_the_same_canonical_json() {
    let Some(python) = python() else { return };
    let mut numbers = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while numbers.len() < 3000 {
        // A fixed-seed xorshift walk over bit patterns: every exponent range.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = f64::from_bits(x);
        if f.is_finite() {
            numbers.push(format!("{f:e}"));
        }
    }
    for exp in -330..=310 {
        numbers.push(format!("1e{exp}"));
        numbers.push(format!("1.5e{exp}"));
        numbers.push(format!("123456789.123e{exp}"));
    }
    for n in [
        "0.1",
        "0.2",
        "0.30000000000000004",
        "100",
        "-0.0",
        "1e16",
        "9007199254740993",
        "123456789012345678901234567890",
    ] {
        numbers.push(n.to_owned());
    }
    let text = format!("[{}]", numbers.join(","));
    let strings: String = (0u32..0x3000)
        .step_by(7)
        .chain([0x1f600, 0x10ffff, 0x7f, 0x2028])
        .filter_map(char::from_u32)
        .collect();
    let string_doc = serde_json::to_string(&json!({"s": strings, "k": {"b": 1, "a": 2}})).unwrap();
    let ops = vec![
        json!({"op": "canon", "text": text}),
        json!({"op": "canon", "text": string_doc}),
    ];
    let results = run_python(&python, &ops);
    let python_numbers = field(&results[0], "text");
    assert_eq!(canonical_json_text(&text).unwrap(), python_numbers);
    // The Value path agrees wherever serde_json holds the number exactly (it
    // refuses what overflows a double, where Python writes Infinity).
    // Numbers hold no commas, so Python's array splits into its elements.
    let theirs: Vec<&str> = python_numbers
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .collect();
    assert_eq!(theirs.len(), numbers.len());
    let mut differing = Vec::new();
    let mut serde_json_off_by_an_ulp = 0;
    for (lexeme, theirs) in numbers.iter().zip(&theirs) {
        if !lexeme.parse::<f64>().is_ok_and(f64::is_finite) {
            assert!(theirs.ends_with("Infinity"), "{lexeme}: {theirs}");
            continue;
        }
        // serde_json's own float parser (without its `float_roundtrip` feature) may
        // land one ulp off the correctly rounded double that Python reads, so the
        // Value is built from Rust's correctly rounded parse; the wire path is
        // `from_raw_arguments`, which does not have this problem.
        let value: Value = if lexeme.contains(['.', 'e', 'E']) {
            Value::from(lexeme.parse::<f64>().unwrap())
        } else {
            serde_json::from_str(lexeme).unwrap()
        };
        if canonical_json(&value) != *theirs {
            differing.push(lexeme.as_str());
        }
        let lossy: Value = serde_json::from_str(lexeme).unwrap();
        if lossy != value {
            serde_json_off_by_an_ulp += 1;
        }
    }
    eprintln!(
        "serde_json parsed {serde_json_off_by_an_ulp} of {} numbers differently from Python",
        numbers.len()
    );
    assert_eq!(
        differing,
        ["123456789012345678901234567890"],
        "only the integer beyond 64 bits differs"
    );
    assert_eq!(
        canonical_json_text(&string_doc).unwrap(),
        field(&results[1], "text")
    );
}

#[test]
fn python_principal_claims_verify_here() {
    let Some(python) = python() else { return };
    let principals = [
        Principal::new("client-a")
            .issuer("https://issuer.example")
            .subject("alice"),
        Principal::new("client-a"),
        Principal::new("clé").subject("😀"),
    ];
    let ops: Vec<Value> = principals
        .iter()
        .map(|p| json!({"op": "principal_claim", "principal": p.to_json()}))
        .collect();
    let results = run_python(&python, &ops);
    for (p, result) in principals.iter().zip(&results) {
        let claim = field(result, "claim");
        assert!(p.matches_claim(claim), "{p:?}");
        assert!(!Principal::new("client-z").matches_claim(claim));
    }
}
