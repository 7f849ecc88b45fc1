//! Review W8 against three `protected` instances: A and B share their DPoP replay store
//! through a redis-server (a fleet behind one public URL), C remembers proofs in its own
//! memory. A proof of alice's, captured on its way to A, is replayed at B with another body;
//! another, captured on its way to C, is replayed after bob floods C with 5,000 proofs of his
//! own keys (more than the 4,096 proofs the cache held before the fix). Alice keeps working
//! beside the attack with fresh proofs at all three.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use super::{
    Attack, HARD_RSS_KIB, MODERN_META, Outcome, Scale, connect, free_port, kib, last_json,
    legit_of, legit_summary, on_threads, post, read_response, start_http, watchdog, worker,
};

/// The public URL instances A and B serve behind their load balancer.
const FLEET: &str = "https://mcp.example.com/mcp";
/// The URL instance C serves alone.
const SOLO: &str = "https://solo.example.com/mcp";

/// A P-256 key that signs DPoP proofs.
struct Key {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Key {
    fn new() -> Result<Self, String> {
        let rng = SystemRandom::new();
        let alg = &ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|e| e.to_string())?;
        let pair =
            EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).map_err(|e| e.to_string())?;
        Ok(Key { pair, rng })
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256",
               "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
               "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
    }

    /// The RFC 7638 thumbprint: SHA-256 of the required members in lexical order.
    fn jkt(&self) -> String {
        let jwk = self.jwk();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap_or_default(),
            jwk["y"].as_str().unwrap_or_default()
        );
        URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            canonical.as_bytes(),
        ))
    }

    /// A demo token of `user` bound to this key (see the `protected` example).
    fn token(&self, user: &str) -> String {
        format!("dpop-{user}.{}", self.jkt())
    }

    /// A fresh proof for a POST to `htu` presenting `token`.
    fn proof(&self, htu: &str, token: &str) -> Result<String, String> {
        let mut jti = [0u8; 16];
        self.rng.fill(&mut jti).map_err(|e| e.to_string())?;
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs();
        let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            token.as_bytes(),
        ));
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()});
        let claims = json!({"jti": URL_SAFE_NO_PAD.encode(jti), "htm": "POST", "htu": htu,
                            "iat": iat, "ath": ath});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.rng, input.as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

fn tools_list_body(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{MODERN_META}}}}}"#)
}

const DEPLOY_BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{"service":"billing"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;

/// Sends `body` to the instance at `port` with `token` and `proof`; answers the status and,
/// for a refusal, the reason the server gave in `WWW-Authenticate`.
fn send(port: u16, token: &str, proof: &str, body: &str) -> String {
    let method = if body.contains(r#""method":"tools/call""#) {
        "tools/call"
    } else {
        "tools/list"
    };
    let authorization = format!("DPoP {token}");
    let mut headers = vec![
        ("authorization", authorization.as_str()),
        ("dpop", proof),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if method == "tools/call" {
        headers.push(("mcp-name", "deploy"));
    }
    let request = post(port, &headers, body, true);
    match connect(port).and_then(|mut c| {
        c.get_mut().write_all(&request).map_err(|e| e.to_string())?;
        read_response(&mut c)
    }) {
        Ok((status, headers, _)) => {
            let reason = headers
                .iter()
                .find(|(n, _)| n == "www-authenticate")
                .and_then(|(_, v)| v.split("error_description=\"").nth(1))
                .and_then(|v| v.split('"').next());
            match reason {
                Some(reason) => format!("{status} ({reason})"),
                None => status.to_string(),
            }
        }
        Err(e) => e,
    }
}

fn ports(text: &str) -> Result<[u16; 3], String> {
    let ports: Vec<u16> = text.split(',').filter_map(|p| p.parse().ok()).collect();
    ports
        .try_into()
        .map_err(|_| format!("three ports expected, got `{text}`"))
}

/// The legitimate client: alice, with a key of her own, calls `tools/list` every 20 ms at A,
/// B and C in turn, each request with a fresh proof.
pub(super) fn legit(ports_text: &str, secs: u64) -> Result<Value, String> {
    let ports = ports(ports_text)?;
    let key = Key::new()?;
    let token = key.token("alice");
    let deadline = Instant::now() + Duration::from_secs(secs) + Duration::from_millis(600);
    let mut latencies = Vec::new();
    let (mut ok, mut total) = (0u64, 0u64);
    while Instant::now() < deadline {
        let n = total as usize % 3;
        total += 1;
        let start = Instant::now();
        let htu = if n == 2 { SOLO } else { FLEET };
        let answer = send(
            ports[n],
            &token,
            &key.proof(htu, &token)?,
            &tools_list_body(total),
        );
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        if answer == "200" {
            ok += 1;
        }
        thread::sleep(Duration::from_millis(20));
    }
    Ok(legit_summary(ok, total, latencies))
}

/// The attacker's run: the two replays, and bob's flood between the capture and the second.
pub(super) fn attack(scale: Scale, ports_text: &str) -> Result<Value, String> {
    let [a, b, c] = ports(ports_text)?;
    let victim = Key::new()?;
    let token = victim.token("alice");
    let captured = victim.proof(FLEET, &token)?;
    let at_a = send(a, &token, &captured, &tools_list_body(1));
    let at_b = send(b, &token, &captured, DEPLOY_BODY);

    let captured_solo = victim.proof(SOLO, &token)?;
    let at_c = send(c, &token, &captured_solo, &tools_list_body(2));
    let (key_count, per_key) = (5, scale.many(1_000, 900));
    let keys: Vec<Key> = (0..key_count)
        .map(|_| Key::new())
        .collect::<Result<_, _>>()?;
    let keys = Arc::new(keys);
    let flood = on_threads(key_count * per_key, move |i| {
        let key = &keys[i % key_count];
        let token = key.token("bob");
        match key.proof(SOLO, &token) {
            Ok(proof) => send(c, &token, &proof, &tools_list_body(i as u64)),
            Err(e) => e,
        }
    });
    let replayed = send(c, &token, &captured_solo, DEPLOY_BODY);
    Ok(json!({"refusal": format!(
        "alice's proof at A: {at_a}, replayed at B: {at_b}; alice's proof at C: {at_c}, then bob's {} proofs of {key_count} keys ({}), then replayed at C: {replayed}",
        key_count * per_key,
        flood.summary()
    )}))
}

/// Starts redis-server and the three instances, runs alice and the attacker beside them,
/// and reports the largest peak RSS of the three.
pub(super) fn run(attack: Attack, scale: Scale, bin_dir: &Path) -> Result<Outcome, String> {
    let redis = crate::redis::Redis::start()?;
    let redis_url = redis.url();
    let bin = bin_dir.join("protected");
    let ports = [free_port()?, free_port()?, free_port()?];
    let shared = ["--replay-redis", redis_url.as_str(), "--resource", FLEET];
    let servers = [
        start_http(&bin, ports[0], &shared)?,
        start_http(&bin, ports[1], &shared)?,
        start_http(&bin, ports[2], &["--resource", SOLO])?,
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let dogs: Vec<_> = servers
        .iter()
        .map(|s| watchdog(s.child.id(), stop.clone()))
        .collect();
    let ports_arg = ports.map(|p| p.to_string()).join(",");
    let secs = scale.secs().to_string();
    let legit = worker(&["legit-dpop", &ports_arg, &secs])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    thread::sleep(Duration::from_millis(300));
    let attacker = worker(&[attack.name, scale.arg(), &ports_arg])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    let legit = legit.wait_with_output().map_err(|e| e.to_string())?;
    let last = servers
        .iter()
        .map(|s| kib(s.child.id(), "VmHWM:").unwrap_or(0))
        .max()
        .unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    let (mut killed, mut peak_kib) = (false, last);
    for dog in dogs {
        let (k, seen) = dog.join().unwrap_or((false, 0));
        killed |= k;
        peak_kib = peak_kib.max(seen);
    }
    drop(servers);
    let summary = last_json(&attacker.stdout)?;
    let mut refusal = summary["refusal"].as_str().unwrap_or("").to_owned();
    if killed {
        refusal = format!("server killed past {} GiB; {refusal}", HARD_RSS_KIB >> 20);
        peak_kib = HARD_RSS_KIB;
    }
    Ok(Outcome {
        name: attack.name.to_owned(),
        peak_mib: peak_kib as f64 / 1024.0,
        legit: legit_of(&last_json(&legit.stdout)?),
        refusal,
        violation: None,
    })
}
