//! The RFC 7638 thumbprint of a public JWK: how a DPoP-bound access token names its key
//! (`cnf.jkt`). The client computes it for the key it signs proofs with, the server for the
//! key a proof carries, so both live here, beside the other primitives built on `ring`.

use serde_json::Value;

/// The RFC 7638 thumbprint of a public JWK: SHA-256 over its required members (by key type:
/// `EC` `crv`,`kty`,`x`,`y`; `RSA` `e`,`kty`,`n`; `OKP` `crv`,`kty`,`x`), in that order, as
/// compact JSON; base64url without padding. `None` for another key type or a required member
/// that is missing or not a string.
pub fn jwk_thumbprint(jwk: &Value) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return None,
    };
    // The members are listed in the sorted order RFC 7638 asks for; values are JSON strings.
    let mut canonical = String::from("{");
    for (i, name) in members.iter().enumerate() {
        let value = jwk.get(*name)?.as_str()?;
        if i > 0 {
            canonical.push(',');
        }
        canonical.push_str(&format!("\"{name}\":{}", Value::String(value.to_owned())));
    }
    canonical.push('}');
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
    let mut out = String::new();
    crate::b64url::encode_into(digest.as_ref(), &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_rfc_7638_example() {
        // RFC 7638 §3.1; members outside the required set (`alg`, `kid`) do not count.
        let jwk = json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        });
        assert_eq!(
            jwk_thumbprint(&jwk).as_deref(),
            Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        );
    }

    #[test]
    fn unknown_key_types_and_missing_members_have_none() {
        assert_eq!(jwk_thumbprint(&json!({"kty": "oct", "k": "x"})), None);
        assert_eq!(
            jwk_thumbprint(&json!({"kty": "EC", "crv": "P-256", "x": "a"})),
            None
        );
        assert_eq!(
            jwk_thumbprint(&json!({"kty": "RSA", "e": 3, "n": "a"})),
            None
        );
        assert_eq!(jwk_thumbprint(&json!({"e": "AQAB", "n": "a"})), None);
    }
}
