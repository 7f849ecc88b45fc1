//! Seal + unseal of a `requestState` through the full policy (claims, request
//! binding, audience, base64url token) next to a bare ring AES-256-GCM seal +
//! open of the same state bytes. Each group is one state size, so the ratio of
//! `policy` to `bare_aes_gcm` reads straight off the report; `keyring_codec`
//! (token format without claims) and `token_base64_only` show where the
//! difference goes.

use std::hint::black_box;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use criterion::Criterion;
use mcp_state_seal::{Codec, KeyRing, RequestBinding, RequestStateSecurity};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

const KEY: &str = "bench-key-0123456789abcdef-0123456789abcdef";

fn state_of(len: usize) -> String {
    // Printable ASCII with quotes and backslashes now and then, like a JSON state.
    (0..len)
        .map(|i| match i % 61 {
            0 => '"',
            30 => '\\',
            n => char::from(b' ' + (n as u8 % 94)),
        })
        .collect()
}

fn seal_unseal(c: &mut Criterion) {
    let boundary = RequestStateSecurity::keys([KEY])
        .unwrap()
        .bind(Some("bench-server"))
        .unwrap();
    let args = serde_json::json!({"date": "2026-08-01", "party": 2});
    let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
    let ring = KeyRing::new([KEY]).unwrap();
    let bare_key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).unwrap());

    for (label, len) in [("256B", 256), ("4KiB", 4096)] {
        let state = state_of(len);
        let mut group = c.benchmark_group(format!("seal+unseal/{label}"));
        group
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_secs(1));

        group.bench_function("policy", |b| {
            b.iter(|| {
                let token = boundary.seal(&binding, black_box(&state), None).unwrap();
                boundary.unseal(&binding, black_box(&token), None).unwrap()
            })
        });

        group.bench_function("keyring_codec", |b| {
            b.iter(|| {
                let token = ring.seal(black_box(state.as_bytes())).unwrap();
                ring.unseal(black_box(&token)).unwrap()
            })
        });

        // What the token format adds to the bare cipher on its own: base64url of a
        // body this size (kid, nonce, ciphertext, tag) and back.
        let body = vec![0x5au8; 16 + len + 16];
        let mut text = String::new();
        let mut decoded = Vec::new();
        group.bench_function("token_base64_only", |b| {
            b.iter(|| {
                text.clear();
                URL_SAFE_NO_PAD.encode_string(black_box(&body), &mut text);
                decoded.clear();
                URL_SAFE_NO_PAD
                    .decode_vec(black_box(&text), &mut decoded)
                    .unwrap();
                decoded.len()
            })
        });

        let mut buf = Vec::with_capacity(len + 16);
        let mut counter = 0u64;
        group.bench_function("bare_aes_gcm", |b| {
            b.iter(|| {
                counter += 1;
                let mut nonce = [0u8; 12];
                nonce[..8].copy_from_slice(&counter.to_le_bytes());
                buf.clear();
                buf.extend_from_slice(black_box(state.as_bytes()));
                let tag = bare_key
                    .seal_in_place_separate_tag(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(b"v1.kidx"),
                        &mut buf,
                    )
                    .unwrap();
                buf.extend_from_slice(tag.as_ref());
                let plain = bare_key
                    .open_in_place(
                        Nonce::assume_unique_for_key(nonce),
                        Aad::from(b"v1.kidx"),
                        black_box(&mut buf),
                    )
                    .unwrap();
                plain.len()
            })
        });
        group.finish();
    }
}

// Written out rather than with `criterion_group!`, whose generated function is
// public and undocumented (the workspace denies missing docs under clippy).
fn main() {
    let mut c = Criterion::default().configure_from_args();
    seal_unseal(&mut c);
    c.final_summary();
}
