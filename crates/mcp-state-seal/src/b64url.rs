//! Unpadded base64url that accepts exactly one spelling of every byte string.
//! A token's text is what gets compared and logged, so two texts for one body
//! would let a client mint look-alike tokens; only the text `seal` wrote decodes.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// URL-safe alphabet, no padding written, padding refused, and non-zero bits in
/// the last character refused.
pub(crate) const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// Appends the encoding of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    ENGINE.encode_string(bytes, out);
}

/// Decodes `text` into `out` (cleared first), accepting only the canonical
/// encoding: `encode(decode(text)) == text`.
pub(crate) fn decode_canonical(text: &str, out: &mut Vec<u8>) -> Result<(), ()> {
    out.clear();
    out.reserve(text.len() / 4 * 3 + 3);
    ENGINE.decode_vec(text, out).map_err(|_| ())?;
    // The strict engine above already rejects every other spelling (padding,
    // foreign characters, an impossible length, stray low bits). Re-encoding is the
    // definition of canonical, so check it too; only the last group of up to three
    // bytes can encode differently, so re-encode that group alone rather than all
    // of a multi-kilobyte token.
    let tail_bytes = match out.len() % 3 {
        0 => 3.min(out.len()),
        r => r,
    };
    let tail_chars = match tail_bytes {
        0 => 0,
        n => n + 1,
    };
    if base64::encoded_len(out.len(), false) != Some(text.len()) || text.len() < tail_chars {
        return Err(());
    }
    let mut group = [0u8; 4];
    let written = ENGINE
        .encode_slice(&out[out.len() - tail_bytes..], &mut group)
        .map_err(|_| ())?;
    if group[..written] != text.as_bytes()[text.len() - tail_chars..] {
        return Err(());
    }
    Ok(())
}

/// Decodes a short canonical value onto the stack (principal claims).
pub(crate) fn decode_canonical_small<const N: usize>(text: &str) -> Option<[u8; N]> {
    if base64::encoded_len(N, false) != Some(text.len()) {
        return None;
    }
    let mut out = [0u8; N];
    let n = ENGINE.decode_slice(text, &mut out).ok()?;
    (n == N).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(bytes: &[u8]) -> String {
        let mut s = String::new();
        encode_into(bytes, &mut s);
        s
    }

    #[test]
    fn encoding_appends_after_what_the_text_holds() {
        let mut text = String::from("v1.");
        encode_into(&[0xfb, 0xff, 0x00, 0x10], &mut text);
        assert_eq!(text, "v1.-_8AEA");
        encode_into(&[], &mut text);
        assert_eq!(text, "v1.-_8AEA");
    }

    #[test]
    fn every_length_round_trips() {
        let data: Vec<u8> = (0..64u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(250))
            .collect();
        let mut out = Vec::new();
        for n in 0..data.len() {
            let text = encode(&data[..n]);
            decode_canonical(&text, &mut out).unwrap();
            assert_eq!(out, &data[..n]);
        }
    }

    /// Base64url without padding, one bit at a time: slow and obviously right (RFC 4648 §5).
    fn reference(bytes: &[u8]) -> String {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bits: Vec<u8> = bytes
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
            .collect();
        bits.chunks(6)
            .map(|six| {
                let value = (0..6).fold(0usize, |v, i| {
                    (v << 1) | usize::from(*six.get(i).unwrap_or(&0))
                });
                char::from(alphabet[value])
            })
            .collect()
    }

    #[test]
    fn random_bytes_encode_as_the_rfc_says_and_round_trip() {
        // A new search each run; the seed is printed, and MCP_B64URL_SEED repeats one.
        let seed = std::env::var("MCP_B64URL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        println!("MCP_B64URL_SEED={seed}");
        let mut state = seed;
        let mut next = move || {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let mut out = Vec::new();
        for _ in 0..2_000 {
            let len = (next() % 300) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let text = encode(&bytes);
            assert_eq!(text, reference(&bytes), "seed {seed}, {bytes:?}");
            decode_canonical(&text, &mut out).unwrap();
            assert_eq!(out, bytes, "seed {seed}");
        }
    }

    #[test]
    fn other_spellings_are_refused() {
        let mut out = Vec::new();
        // "QQ" is the canonical encoding of "A"; "QR" decodes to "A" with stray bits.
        assert!(decode_canonical("QQ", &mut out).is_ok());
        assert!(decode_canonical("QR", &mut out).is_err());
        for bad in ["QQ==", "QQ=", "Q", "QQ\n", " QQ", "Q+Q/", "QUJD\u{e9}"] {
            assert!(decode_canonical(bad, &mut out).is_err(), "{bad:?}");
        }
        // Every non-canonical final character of a 1- and 2-byte tail.
        for text in ["QUJDRA", "QUJDREU"] {
            let last = text.len() - 1;
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            for &c in alphabet {
                let mut t = text.as_bytes().to_vec();
                t[last] = c;
                let t = String::from_utf8(t).unwrap();
                let ok = decode_canonical(&t, &mut out).is_ok();
                assert_eq!(ok, ok && encode(&out) == t, "{t}");
            }
        }
    }

    #[test]
    fn small_values_decode_to_the_stack() {
        let text = encode(&[7u8; 24]);
        assert_eq!(decode_canonical_small::<24>(&text), Some([7u8; 24]));
        assert_eq!(decode_canonical_small::<24>(&text[1..]), None);
        assert_eq!(decode_canonical_small::<16>(&text), None);
    }
}
