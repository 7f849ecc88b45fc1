//! Only the exact text `seal` produced verifies. Every single-bit flip, every
//! character substitution, truncation and extension, kid and nonce swaps,
//! non-canonical encodings, transplanted kids and other format prefixes are
//! enumerated exhaustively and must all fail, at the codec and at the policy.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_state_seal::{
    Codec, InvalidRequestState, KeyRing, RejectReason, RequestBinding, RequestStateSecurity,
    SealingBoundary,
};

const KEY_A: &str = "0123456789abcdef0123456789abcdef";
const KEY_B: &str = "pyinterop-demo-key-not-secret-0123456789";
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const STATE: &str = "round-2: {\"asked\":[\"confirm\"]}";

fn ring(keys: &[&str]) -> KeyRing {
    KeyRing::new(keys).unwrap()
}

fn boundary() -> SealingBoundary {
    RequestStateSecurity::keys([KEY_A])
        .unwrap()
        .bind(Some("fleet"))
        .unwrap()
}

fn binding() -> RequestBinding<'static> {
    RequestBinding::new("tools/call", "provision", None)
}

fn body(token: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD
        .decode(token.strip_prefix("v1.").unwrap())
        .unwrap()
}

fn token_of(body: &[u8]) -> String {
    format!("v1.{}", URL_SAFE_NO_PAD.encode(body))
}

/// The token must fail at the codec and, sealed with claims, at the policy.
#[track_caller]
fn assert_rejected(codec_result: Result<Vec<u8>, InvalidRequestState>, what: &str) {
    let err = codec_result.expect_err(what);
    assert_eq!(err.to_string(), "Invalid or expired requestState", "{what}");
}

#[test]
fn the_untouched_tokens_verify() {
    let ring = ring(&[KEY_A]);
    let token = ring.seal(b"payload").unwrap();
    assert_eq!(ring.unseal(&token).unwrap(), b"payload");
    let b = boundary();
    let sealed = b.seal(&binding(), STATE, None).unwrap();
    assert_eq!(b.unseal(&binding(), &sealed, None).unwrap(), STATE);
}

#[test]
fn every_single_bit_flip_of_the_body_is_rejected() {
    let ring = ring(&[KEY_A]);
    let b = boundary();
    for token in [
        ring.seal(b"payload").unwrap(),
        b.seal(&binding(), STATE, None).unwrap(),
    ] {
        let original = body(&token);
        for bit in 0..original.len() * 8 {
            let mut flipped = original.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let tampered = token_of(&flipped);
            let want = if bit < 32 {
                RejectReason::UnknownKey
            } else {
                RejectReason::Unauthentic
            };
            let err = ring.unseal(&tampered).unwrap_err();
            assert_eq!(err.reason(), want, "bit {bit}");
            assert!(b.unseal(&binding(), &tampered, None).is_err(), "bit {bit}");
        }
    }
}

#[test]
fn every_single_character_substitution_is_rejected() {
    let b = boundary();
    let token = b.seal(&binding(), STATE, None).unwrap();
    let mut tried = 0;
    for pos in 0..token.len() {
        let mut candidates: Vec<u8> = ALPHABET.to_vec();
        candidates.extend_from_slice(b"=+/. \n%");
        for &c in &candidates {
            if token.as_bytes()[pos] == c {
                continue;
            }
            let mut bytes = token.clone().into_bytes();
            bytes[pos] = c;
            let tampered = String::from_utf8(bytes).unwrap();
            tried += 1;
            let err = b.unseal(&binding(), &tampered, None).unwrap_err();
            assert_eq!(err.to_string(), "Invalid or expired requestState");
        }
    }
    assert!(tried > 60 * token.len());
}

#[test]
fn every_truncation_and_extension_is_rejected() {
    let ring = ring(&[KEY_A]);
    let b = boundary();
    for token in [
        ring.seal(b"").unwrap(),
        ring.seal(b"x").unwrap(),
        b.seal(&binding(), STATE, None).unwrap(),
    ] {
        for len in 0..token.len() {
            assert_rejected(ring.unseal(&token[..len]), &format!("prefix {len}"));
            assert!(b.unseal(&binding(), &token[..len], None).is_err());
        }
        for &c in ALPHABET.iter().chain(b"=. \n") {
            let longer = format!("{token}{}", char::from(c));
            assert_rejected(ring.unseal(&longer), &longer);
            assert!(b.unseal(&binding(), &longer, None).is_err());
        }
        assert_rejected(ring.unseal(&format!("{token}{token}")), "doubled");
        assert_rejected(ring.unseal(&format!(" {token}")), "leading space");
    }
}

#[test]
fn swapping_kid_or_nonce_between_tokens_is_rejected() {
    let ring = ring(&[KEY_A, KEY_B]);
    let first = body(&ring.seal(b"first payload").unwrap());
    let second = body(&ring.seal(b"second payload").unwrap());
    assert_ne!(first[4..16], second[4..16], "nonces are fresh per seal");
    for range in [0..4, 4..16, 0..16, 16..first.len()] {
        let mut mixed = first.clone();
        mixed[range.clone()].copy_from_slice(&second[range.clone()]);
        if mixed == first {
            // Same kid in both: swapping it changes nothing, as it should.
            assert_eq!(range, 0..4);
            continue;
        }
        assert_rejected(ring.unseal(&token_of(&mixed)), &format!("{range:?}"));
    }
}

#[test]
fn a_kid_transplanted_from_another_key_is_rejected() {
    let a = ring(&[KEY_A]);
    let b = ring(&[KEY_B]);
    let both = ring(&[KEY_A, KEY_B]);
    let kid_b = body(&b.seal(b"x").unwrap())[..4].to_vec();
    let mut transplanted = body(&a.seal(b"payload").unwrap());
    transplanted[..4].copy_from_slice(&kid_b);
    let token = token_of(&transplanted);
    assert_eq!(
        both.unseal(&token).unwrap_err().reason(),
        RejectReason::Unauthentic
    );
    assert_eq!(
        a.unseal(&token).unwrap_err().reason(),
        RejectReason::UnknownKey
    );
}

#[test]
fn non_canonical_encodings_are_rejected() {
    let ring = ring(&[KEY_A]);
    // Plaintext lengths giving every body length modulo 3.
    for plaintext in [&b"a"[..], b"ab", b"abc"] {
        let token = ring.seal(plaintext).unwrap();
        let text = token.strip_prefix("v1.").unwrap();
        let last = text.len() - 1;
        let last_value = ALPHABET
            .iter()
            .position(|&c| c == text.as_bytes()[last])
            .unwrap();
        let unused_bits = match body(&token).len() % 3 {
            1 => 4,
            2 => 2,
            _ => 0,
        };
        // Same decoded bytes, other spelling: stray bits in the last character.
        for stray in 1..(1 << unused_bits) {
            let mut bytes = token.clone().into_bytes();
            bytes[3 + last] = ALPHABET[last_value | stray];
            let spelled = String::from_utf8(bytes).unwrap();
            let lenient = base64::engine::GeneralPurpose::new(
                &base64::alphabet::URL_SAFE,
                base64::engine::GeneralPurposeConfig::new()
                    .with_decode_allow_trailing_bits(true)
                    .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
            );
            assert_eq!(
                lenient.decode(&spelled[3..]).unwrap(),
                body(&token),
                "the variant decodes to the same bytes"
            );
            assert_eq!(
                ring.unseal(&spelled).unwrap_err().reason(),
                RejectReason::MalformedToken
            );
        }
        // Padding, standard alphabet, whitespace.
        let padded = format!("{token}{}", "=".repeat((4 - text.len() % 4) % 4));
        if padded != token {
            assert_rejected(ring.unseal(&padded), "padded");
        }
        let standard = token.replace('-', "+").replace('_', "/");
        if standard != token {
            assert_rejected(ring.unseal(&standard), "standard alphabet");
        }
        let wrapped = format!("{}\n{}", &token[..20], &token[20..]);
        assert_rejected(ring.unseal(&wrapped), "line break");
    }
}

#[test]
fn other_format_prefixes_are_rejected() {
    let ring = ring(&[KEY_A]);
    let token = ring.seal(b"payload").unwrap();
    let rest = token.strip_prefix("v1.").unwrap();
    for prefix in [
        "", "v1", "v2.", "V1.", "v0.", "v1..", "v11.", "w1.", "1.", "v1:",
    ] {
        let other = format!("{prefix}{rest}");
        assert_eq!(
            ring.unseal(&other).unwrap_err().reason(),
            RejectReason::MalformedToken,
            "{other}"
        );
    }
}

#[test]
fn short_bodies_are_rejected_before_decryption() {
    let ring = ring(&[KEY_A]);
    let kid = body(&ring.seal(b"x").unwrap())[..4].to_vec();
    for len in 4..32 {
        let mut short = kid.clone();
        short.resize(len, 0);
        assert_eq!(
            ring.unseal(&token_of(&short)).unwrap_err().reason(),
            RejectReason::MalformedToken,
            "{len} bytes"
        );
    }
    let mut empty_plaintext = kid;
    empty_plaintext.resize(32, 0);
    assert_eq!(
        ring.unseal(&token_of(&empty_plaintext))
            .unwrap_err()
            .reason(),
        RejectReason::Unauthentic
    );
}
