//! The claims envelope sealed around the caller's state, written and checked
//! exactly as the Python SDK does:
//! `{"v":1,"iat":…,"exp":…,"m":…,"t":…,"a":…,"s":…,"aud":…,"p":…}`, compact ASCII JSON.

use crate::binding::RequestBinding;
use crate::error::RejectReason;
use crate::jsontext::{self, JsonStr, Node};
use crate::principal::{CLAIM_LEN, Principal};
use crate::pywrite::{write_float, write_str};

/// How far in the future `iat` may be, for clock skew between instances.
pub(crate) const FUTURE_SKEW_SECS: f64 = 60.0;

/// Everything one sealed envelope says, besides the state itself.
pub(crate) struct Stamp<'b> {
    pub(crate) iat: f64,
    pub(crate) exp: f64,
    pub(crate) binding: &'b RequestBinding<'b>,
    pub(crate) audience: Option<&'b str>,
    pub(crate) principal_claim: Option<[u8; CLAIM_LEN]>,
    /// A unique token id (lowercase hex), only when the replay guard is on: the Python SDK
    /// neither writes nor reads it.
    pub(crate) jti: Option<&'b str>,
}

impl Stamp<'_> {
    /// An upper bound of the envelope's length when `state` needs no escapes, to
    /// size the buffer once.
    pub(crate) fn len_hint(&self, state: &str) -> usize {
        96 + self.binding.method().len()
            + self.binding.target().len()
            + state.len()
            + self.audience.map_or(0, |a| a.len() + 9)
            + CLAIM_LEN
            + self.jti.map_or(0, |j| j.len() + 7)
    }

    /// Appends the envelope, in Python's key order and byte format.
    pub(crate) fn write(&self, out: &mut Vec<u8>, state: &str) {
        out.extend_from_slice(br#"{"v":1,"iat":"#);
        write_float(out, self.iat);
        out.extend_from_slice(br#","exp":"#);
        write_float(out, self.exp);
        out.extend_from_slice(br#","m":"#);
        write_str(out, self.binding.method());
        out.extend_from_slice(br#","t":"#);
        write_str(out, self.binding.target());
        out.extend_from_slice(br#","a":""#);
        out.extend_from_slice(self.binding.args_digest().as_str().as_bytes());
        out.extend_from_slice(br#"","s":"#);
        write_str(out, state);
        if let Some(audience) = self.audience {
            out.extend_from_slice(br#","aud":"#);
            write_str(out, audience);
        }
        if let Some(claim) = &self.principal_claim {
            out.extend_from_slice(br#","p":""#);
            out.extend_from_slice(claim);
            out.push(b'"');
        }
        if let Some(jti) = self.jti {
            out.extend_from_slice(br#","j":"#);
            write_str(out, jti);
        }
        out.push(b'}');
    }
}

/// What the verifier compares the claims against.
pub(crate) struct Expectation<'b> {
    pub(crate) now: f64,
    pub(crate) binding: &'b RequestBinding<'b>,
    pub(crate) audience: Option<&'b str>,
    pub(crate) principal: Option<&'b Principal>,
    /// The longest `exp - iat` accepted: this server's TTL (and a second for rounding).
    pub(crate) max_lifetime: f64,
}

/// What a verified envelope holds besides the binding it matched.
pub(crate) struct Verified {
    pub(crate) state: String,
    pub(crate) exp: f64,
    pub(crate) jti: Option<String>,
}

/// Checks an unsealed envelope in the Python SDK's order and returns the state.
pub(crate) fn verify(plaintext: &[u8], expect: &Expectation<'_>) -> Result<Verified, RejectReason> {
    use RejectReason::{
        Audience, Expired, FromTheFuture, Lifetime, MalformedClaims, Principal, PrincipalDrift,
        RequestBinding,
    };

    let text = std::str::from_utf8(plaintext).map_err(|_| MalformedClaims)?;
    let Ok(Node::Object(members)) = jsontext::parse(text) else {
        return Err(MalformedClaims);
    };
    let mut claims = Claims::default();
    for (key, value) in &members {
        claims.set(key, value);
    }
    let (Some(v), Some(iat), Some(exp), Some(s)) = (claims.v, claims.iat, claims.exp, claims.s)
    else {
        return Err(MalformedClaims);
    };
    let Node::Str(s) = s else {
        return Err(MalformedClaims);
    };
    if !is_one(v) {
        return Err(MalformedClaims);
    }
    // Stated positively, so that a claim that is not a number fails.
    let Some(iat) = number(iat).filter(|iat| *iat <= expect.now + FUTURE_SKEW_SECS) else {
        return Err(FromTheFuture);
    };
    let Some(exp) = number(exp).filter(|exp| expect.now < *exp) else {
        return Err(Expired);
    };
    let binding = expect.binding;
    if !str_eq(claims.m, binding.method())
        || !str_eq(claims.t, binding.target())
        || !str_eq(claims.a, binding.args_digest().as_str())
    {
        return Err(RequestBinding);
    }
    let audience_ok = match (present(claims.aud), expect.audience) {
        (None, None) => true,
        (Some(claim), Some(audience)) => str_eq(Some(claim), audience),
        _ => false,
    };
    if !audience_ok {
        return Err(Audience);
    }
    match (present(claims.p), expect.principal) {
        (None, None) => {}
        (Some(_), None) | (None, Some(_)) => return Err(PrincipalDrift),
        (Some(claim), Some(principal)) => {
            let matches = match claim {
                Node::Str(c) => match c.as_plain() {
                    Some(plain) => principal.matches_claim(plain),
                    None => c.decode().is_some_and(|c| principal.matches_claim(&c)),
                },
                _ => false,
            };
            if !matches {
                return Err(Principal);
            }
        }
    }
    // Checked after the Python SDK's own checks, so their order (and reasons) is unchanged:
    // a token minted under a longer TTL (another fleet member, an old config) is not
    // accepted beyond this server's own window.
    // Stated positively, so that a NaN lifetime fails.
    let within = (exp - iat)
        .partial_cmp(&expect.max_lifetime)
        .is_some_and(|o| o.is_le());
    if !within {
        return Err(Lifetime);
    }
    let jti = match present(claims.j) {
        None => None,
        Some(Node::Str(j)) => Some(j.decode().ok_or(MalformedClaims)?),
        Some(_) => return Err(MalformedClaims),
    };
    // A state holding an escaped lone surrogate (possible from Python) has no Rust
    // string form; refusing it is the only closed option.
    let state = s.decode().ok_or(MalformedClaims)?;
    Ok(Verified { state, exp, jti })
}

/// The claims found in the envelope; a repeated key keeps its last value, as
/// Python's `json.loads` does.
#[derive(Default)]
struct Claims<'n, 'a> {
    v: Option<&'n Node<'a>>,
    iat: Option<&'n Node<'a>>,
    exp: Option<&'n Node<'a>>,
    m: Option<&'n Node<'a>>,
    t: Option<&'n Node<'a>>,
    a: Option<&'n Node<'a>>,
    s: Option<&'n Node<'a>>,
    aud: Option<&'n Node<'a>>,
    p: Option<&'n Node<'a>>,
    j: Option<&'n Node<'a>>,
}

impl<'n, 'a> Claims<'n, 'a> {
    fn set(&mut self, key: &JsonStr<'a>, value: &'n Node<'a>) {
        let decoded;
        let name = match key.as_plain() {
            Some(plain) => plain,
            None => {
                decoded = key.decode();
                match &decoded {
                    Some(name) => name.as_str(),
                    None => return,
                }
            }
        };
        let slot = match name {
            "v" => &mut self.v,
            "iat" => &mut self.iat,
            "exp" => &mut self.exp,
            "m" => &mut self.m,
            "t" => &mut self.t,
            "a" => &mut self.a,
            "s" => &mut self.s,
            "aud" => &mut self.aud,
            "p" => &mut self.p,
            "j" => &mut self.j,
            _ => return,
        };
        *slot = Some(value);
    }
}

/// Python's `v == 1`: true for `1`, `1.0` and `true`.
fn is_one(node: &Node<'_>) -> bool {
    match node {
        Node::Int(lexeme) => *lexeme == "1",
        Node::Float(x) => *x == 1.0,
        Node::Bool(b) => *b,
        _ => false,
    }
}

/// Python's `isinstance(x, int | float)` (booleans included) as a float.
fn number(node: &Node<'_>) -> Option<f64> {
    match node {
        Node::Int(lexeme) => lexeme.parse().ok(),
        Node::Float(x) => Some(*x),
        Node::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// Python's `claims.get(key)`: an explicit `null` reads as absent.
fn present<'n, 'a>(node: Option<&'n Node<'a>>) -> Option<&'n Node<'a>> {
    node.filter(|n| !matches!(n, Node::Null))
}

fn str_eq(node: Option<&Node<'_>>, want: &str) -> bool {
    matches!(node, Some(Node::Str(s)) if s.eq_str(want))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VECTOR_PLAINTEXT: &str = r#"{"v":1,"iat":1782345600.5,"exp":1782346200.5,"m":"tools/call","t":"book_table","a":"mSmFTmBaoC2yxh031hriRg","s":"pick-region-v1","aud":"pyinterop-demo"}"#;

    fn book_table() -> RequestBinding<'static> {
        RequestBinding::new(
            "tools/call",
            "book_table",
            Some(&json!({"date": "2026-08-01", "party": 2})),
        )
    }

    #[test]
    fn the_envelope_is_byte_identical_to_pythons() {
        let binding = book_table();
        let stamp = Stamp {
            iat: 1782345600.5,
            exp: 1782345600.5 + 600.0,
            binding: &binding,
            audience: Some("pyinterop-demo"),
            principal_claim: None,
            jti: None,
        };
        let mut out = Vec::new();
        stamp.write(&mut out, "pick-region-v1");
        assert_eq!(std::str::from_utf8(&out).unwrap(), VECTOR_PLAINTEXT);
        assert!(out.len() <= stamp.len_hint("pick-region-v1"));
    }

    fn check(plaintext: &str, now: f64) -> Result<String, RejectReason> {
        check_within(plaintext, now, 601.0)
    }

    fn check_within(plaintext: &str, now: f64, max_lifetime: f64) -> Result<String, RejectReason> {
        let binding = book_table();
        verify(
            plaintext.as_bytes(),
            &Expectation {
                now,
                binding: &binding,
                audience: Some("pyinterop-demo"),
                principal: None,
                max_lifetime,
            },
        )
        .map(|v| v.state)
    }

    #[test]
    fn a_token_minted_under_a_longer_ttl_is_refused() {
        // The vector was minted with a 600 s TTL; a server whose own TTL is 300 s refuses it
        // even inside its window.
        let iat = 1782345600.5;
        assert_eq!(
            check_within(VECTOR_PLAINTEXT, iat + 10.0, 301.0),
            Err(RejectReason::Lifetime)
        );
        assert_eq!(
            check_within(VECTOR_PLAINTEXT, iat + 10.0, 601.0).as_deref(),
            Ok("pick-region-v1")
        );
    }

    #[test]
    fn the_recorded_envelope_verifies_inside_its_window_only() {
        let iat = 1782345600.5;
        assert_eq!(
            check(VECTOR_PLAINTEXT, iat).as_deref(),
            Ok("pick-region-v1")
        );
        assert_eq!(
            check(VECTOR_PLAINTEXT, iat + 599.9).as_deref(),
            Ok("pick-region-v1")
        );
        assert_eq!(
            check(VECTOR_PLAINTEXT, iat + 600.0),
            Err(RejectReason::Expired)
        );
        assert_eq!(
            check(VECTOR_PLAINTEXT, iat - 60.0).as_deref(),
            Ok("pick-region-v1")
        );
        assert_eq!(
            check(VECTOR_PLAINTEXT, iat - 60.5),
            Err(RejectReason::FromTheFuture)
        );
    }

    #[test]
    fn malformed_envelopes_are_rejected() {
        let now = 1782345600.5;
        let cases = [
            ("[]", RejectReason::MalformedClaims),
            ("not json", RejectReason::MalformedClaims),
            (
                r#"{"v":1,"iat":0,"exp":9e99}"#,
                RejectReason::MalformedClaims,
            ),
            (
                r#"{"v":2,"iat":0,"exp":9e99,"s":""}"#,
                RejectReason::MalformedClaims,
            ),
            (
                r#"{"v":1,"iat":0,"exp":9e99,"s":7}"#,
                RejectReason::MalformedClaims,
            ),
            (
                r#"{"v":1,"iat":"0","exp":9e99,"s":""}"#,
                RejectReason::FromTheFuture,
            ),
            (
                r#"{"v":1,"iat":0,"exp":null,"s":""}"#,
                RejectReason::Expired,
            ),
            (
                r#"{"v":1,"iat":0,"exp":9e99,"s":""}"#,
                RejectReason::RequestBinding,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(check(text, now), Err(want), "{text}");
        }
    }

    #[test]
    fn escaped_keys_and_duplicates_read_as_python_reads_them() {
        let text = r#"{"v":1,"iat":1782345600.5,"exp":1782346200.5,"m":"tools/call","t":"other","t":"book_table","a":"mSmFTmBaoC2yxh031hriRg","\u0073":"caf\u00e9","aud":"pyinterop-demo","p":null}"#;
        assert_eq!(check(text, 1782345600.5).as_deref(), Ok("café"));
    }
}
