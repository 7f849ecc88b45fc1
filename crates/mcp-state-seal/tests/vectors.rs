//! The Python SDK's recorded vectors (`fixtures/captures/request_state_vectors.jsonl`)
//! reproduce bit for bit: key fingerprints, sealed tokens, argument, question and
//! principal digests.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_state_seal::{
    ArgsDigest, Codec, KeyRing, Principal, QuestionDigest, RejectReason, RequestBinding,
    RequestStateSecurity, canonical_json, canonical_json_text,
};
use serde_json::Value;

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/captures/request_state_vectors.jsonl"
);

/// Each line as raw text and as a parsed value.
fn vectors(kind: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(VECTORS)
        .unwrap_or_else(|e| panic!("cannot read the recorded vectors at {VECTORS}: {e}"));
    let found: Vec<(String, Value)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| (l.to_owned(), serde_json::from_str::<Value>(l).unwrap()))
        .filter(|(_, v)| v["kind"] == kind)
        .collect();
    assert!(!found.is_empty(), "no {kind} vectors");
    found
}

fn s<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn secrets() -> Vec<String> {
    vectors("key")
        .iter()
        .map(|(_, v)| s(v, "secret_utf8").to_owned())
        .collect()
}

/// The raw text of the value of `"key":` at the first place it occurs after
/// `after`: enough of a scanner to get `params.arguments` out of a vector line
/// without passing it through `serde_json::Value`, which would round its big integer.
fn raw_member<'t>(line: &'t str, after: &str, key: &str) -> Option<&'t str> {
    let from = line.find(after)? + after.len();
    let needle = format!("\"{key}\":");
    let start = from + line[from..].find(&needle)? + needle.len();
    let rest = line[start..].trim_start();
    let offset = line.len() - rest.len();
    let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
    for (i, c) in rest.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&line[offset..offset + i + 1]);
                }
            }
            ',' if depth == 0 => return Some(line[offset..offset + i].trim_end()),
            _ => {}
        }
    }
    None
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn key_fingerprints_match_the_vectors() {
    for (_, v) in vectors("key") {
        let ring = KeyRing::new([s(&v, "secret_utf8")]).unwrap();
        assert_eq!(hex(&ring.kids().next().unwrap()), s(&v, "kid_hex"));
        // Bytes and text are the same key.
        let bytes = KeyRing::new([s(&v, "secret_utf8").as_bytes().to_vec()]).unwrap();
        assert_eq!(
            bytes.kids().collect::<Vec<_>>(),
            ring.kids().collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_recorded_token_unseals_to_its_plaintext() {
    let secrets = secrets();
    let both = KeyRing::new(&secrets).unwrap();
    for (_, v) in vectors("token") {
        let index = usize::try_from(v["sealed_with_secret_index"].as_u64().unwrap()).unwrap();
        let token = s(&v, "token");
        let plaintext = s(&v, "plaintext").as_bytes();
        let own = KeyRing::new([&secrets[index]]).unwrap();
        assert_eq!(own.unseal(token).unwrap(), plaintext);
        assert_eq!(both.unseal(token).unwrap(), plaintext);
        let other = KeyRing::new([&secrets[1 - index]]).unwrap();
        assert_eq!(
            other.unseal(token).unwrap_err().reason(),
            RejectReason::UnknownKey
        );
    }
}

#[test]
fn every_recorded_token_passes_the_full_policy_in_its_window() {
    let secrets = secrets();
    let boundary = RequestStateSecurity::keys(&secrets)
        .unwrap()
        .audience("pyinterop-demo")
        .bind(None)
        .unwrap();
    let args = serde_json::json!({"date": "2026-08-01", "party": 2});
    let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
    let iat = UNIX_EPOCH + Duration::from_millis(1_782_345_600_500);
    for (_, v) in vectors("token") {
        let token = s(&v, "token");
        assert_eq!(
            boundary.unseal_at(iat, &binding, token, None).unwrap(),
            "pick-region-v1"
        );
        let expired = iat + Duration::from_secs(600);
        assert_eq!(
            boundary
                .unseal_at(expired, &binding, token, None)
                .unwrap_err()
                .reason(),
            RejectReason::Expired
        );
        // Sealed today, the vector has long expired.
        let now_err = boundary.unseal(&binding, token, None);
        if SystemTime::now() > expired {
            assert_eq!(now_err.unwrap_err().reason(), RejectReason::Expired);
        }
        let other_audience = RequestStateSecurity::keys(&secrets)
            .unwrap()
            .bind(Some("another-server"))
            .unwrap();
        assert_eq!(
            other_audience
                .unseal_at(iat, &binding, token, None)
                .unwrap_err()
                .reason(),
            RejectReason::Audience
        );
    }
}

#[test]
fn a_rust_envelope_is_byte_identical_to_the_recorded_one() {
    // Seal with the recorded iat, unseal at the codec level, compare plaintexts.
    let secrets = secrets();
    let (_, v) = &vectors("token")[0];
    let ring = RequestStateSecurity::keys([&secrets[0]])
        .unwrap()
        .audience("pyinterop-demo")
        .bind(None)
        .unwrap();
    let args = serde_json::json!({"party": 2, "date": "2026-08-01"});
    let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
    let iat = UNIX_EPOCH + Duration::from_millis(1_782_345_600_500);
    let token = ring.seal_at(iat, &binding, "pick-region-v1", None).unwrap();
    let plaintext = KeyRing::new([&secrets[0]]).unwrap().unseal(&token).unwrap();
    assert_eq!(String::from_utf8(plaintext).unwrap(), s(v, "plaintext"));
}

#[test]
fn every_args_vector_reproduces_through_the_raw_text_path() {
    for (line, v) in vectors("args") {
        let raw = raw_member(&line, "\"params\":", "arguments");
        assert_eq!(
            raw.is_some(),
            v["params"].get("arguments").is_some(),
            "{line}"
        );
        let digest = ArgsDigest::of_json_text(raw).unwrap();
        assert_eq!(digest, s(&v, "a"), "{line}");
        let canon = match raw {
            Some(raw) => canonical_json_text(raw).unwrap(),
            None => "{}".to_owned(),
        };
        assert_eq!(canon, s(&v, "canonical_json"), "{line}");

        let binding = RequestBinding::from_raw_arguments(s(&v, "method"), s(&v, "t"), raw).unwrap();
        assert_eq!(binding.args_digest(), s(&v, "a"));
    }
}

#[test]
fn every_args_vector_but_the_big_integer_reproduces_through_values() {
    let mut big = 0;
    for (line, v) in vectors("args") {
        let params = &v["params"];
        let binding = RequestBinding::from_params(s(&v, "method"), Some(params));
        assert_eq!(binding.target(), s(&v, "t"), "{line}");
        let arguments = params.get("arguments");
        if line.contains("100000000000000000000") {
            // serde_json holds 1e20 as a float, which Python would write as 1e+20.
            big += 1;
            assert_ne!(binding.args_digest(), s(&v, "a"));
            assert!(canonical_json(arguments.unwrap()).contains("1e+20"));
            continue;
        }
        assert_eq!(binding.args_digest(), s(&v, "a"), "{line}");
        if let Some(arguments) = arguments.filter(|a| a.as_object().is_some_and(|o| !o.is_empty()))
        {
            assert_eq!(canonical_json(arguments), s(&v, "canonical_json"));
        }
    }
    assert_eq!(big, 1);
}

#[test]
fn the_question_vector_reproduces() {
    for (_, v) in vectors("question") {
        let rendered = s(&v, "rendered_params");
        assert_eq!(
            QuestionDigest::of_json_text(rendered).unwrap(),
            s(&v, "digest")
        );
        // Layout does not matter, only the JSON: a spaced-out copy digests the same
        // (the vector's strings hold no ',' or ':').
        let spaced = rendered.replace(',', ", ").replace(':', " : ");
        assert_eq!(
            QuestionDigest::of_json_text(&spaced).unwrap(),
            s(&v, "digest")
        );
        // Key order does matter: serde_json::Value sorts keys, and gets another digest.
        let value: Value = serde_json::from_str(rendered).unwrap();
        assert_ne!(QuestionDigest::of(&value).unwrap(), s(&v, "digest"));
    }
    // The resolver state vector records the same digest for the question it asked.
    let (_, state) = &vectors("state")[0];
    let inner: Value = serde_json::from_str(s(state, "inner_state")).unwrap();
    let (_, question) = &vectors("question")[0];
    assert_eq!(inner["asked"]["__main__:ask_confirm"], question["digest"]);
}

#[test]
fn every_principal_vector_verifies_for_its_principal_only() {
    for (_, v) in vectors("principal") {
        let parts: Vec<Option<String>> = serde_json::from_str(s(&v, "principal")).unwrap();
        let principal = Principal {
            client_id: parts[0].clone().unwrap(),
            issuer: parts[1].clone(),
            subject: parts[2].clone(),
        };
        assert_eq!(principal.to_json(), s(&v, "principal"));
        let claim = s(&v, "p_claim");
        assert!(principal.matches_claim(claim));
        let mut other = principal.clone();
        other.subject = Some("mallory".into());
        assert!(!other.matches_claim(claim));
        let mut other = principal.clone();
        other.client_id.push('x');
        assert!(!other.matches_claim(claim));
    }
}
