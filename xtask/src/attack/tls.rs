//! Review W7 against `protected --tls`: connections that stall in the middle of their
//! ClientHello, and connections that finish their handshake and then say nothing, while bob
//! calls `tools/list` over TLS on a connection he opened first.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use serde_json::Value;

use super::{Scale, Tally, keepalive_client, tools_list_with};

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A client configuration trusting only the certificate authority the server wrote to `ca`.
fn client_config(ca: &Path) -> Result<Arc<ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
    for cert in certs {
        let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A TLS connection to 127.0.0.1:`port` whose handshake has completed.
fn connect_tls(port: u16, config: &Arc<ClientConfig>) -> Result<BufReader<Tls>, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
    let conn = ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
    let mut stream = StreamOwned::new(conn, tcp);
    while stream.conn.is_handshaking() {
        stream
            .conn
            .complete_io(&mut stream.sock)
            .map_err(|e| format!("handshake: {e}"))?;
    }
    Ok(BufReader::new(stream))
}

/// The legitimate client: bob's `tools/list` every 20 ms on one keep-alive TLS connection,
/// reconnecting (and counting a failure) when it fails.
pub(super) fn legit(port: u16, secs: u64, ca: &Path) -> Result<Value, String> {
    let config = client_config(ca)?;
    let bob = [("authorization", "Bearer bob-token")];
    Ok(keepalive_client(
        secs,
        || connect_tls(port, &config).ok(),
        |id| tools_list_with(port, id, false, &bob),
    ))
}

/// Whether the server has closed `stream` (read without blocking, past anything it sent
/// first, such as a TLS alert).
fn closed(stream: &TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut buf = [0u8; 4096];
    loop {
        match (&*stream).read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }
}

/// 500 connections (200 quick) finish their handshake and then send nothing; 4,000 (2,000
/// quick) send the first 9 bytes of a ClientHello and stall. Answers how many of each the
/// server closed at once, and how many once `run` (at least 11 s) has passed after the last
/// was opened.
pub(super) fn flood(scale: Scale, port: u16, run: Duration, ca: &Path) -> Result<Value, String> {
    let config = client_config(ca)?;
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut idle = Vec::new();
    for _ in 0..scale.many(500, 200) {
        match connect_tls(port, &config) {
            Ok(stream) => idle.push(stream),
            Err(e) => tally.add(format!("handshake refused ({e})")),
        }
    }
    // A TLS record header announcing a 512-byte handshake, and the start of that handshake.
    let partial = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc];
    // Each stalled connection, when it was opened, and how long after that the server closed it.
    let mut stalled: Vec<(TcpStream, Instant, Option<Duration>)> = Vec::new();
    let watch = |stalled: &mut Vec<(TcpStream, Instant, Option<Duration>)>| {
        for (stream, opened, closed_after) in stalled.iter_mut() {
            if closed_after.is_none() && closed(stream) {
                *closed_after = Some(opened.elapsed());
            }
        }
    };
    for i in 0..scale.many(4_000, 2_000) {
        // Paced, so the listen backlog does not overflow and every connection is accepted.
        if i % 200 == 199 {
            watch(&mut stalled);
            thread::sleep(Duration::from_millis(100));
        }
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                let _ = s.write_all(&partial);
                stalled.push((s, Instant::now(), None));
            }
            Err(_) => tally.add("stalled: connect failed".into()),
        }
    }
    // Past the 10 s handshake (and header) deadline of the last connection opened.
    let until = Instant::now()
        + run
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(11));
    while Instant::now() < until {
        watch(&mut stalled);
        thread::sleep(Duration::from_millis(250));
    }
    let after = |s: &(TcpStream, Instant, Option<Duration>)| s.2;
    let at_once = stalled
        .iter()
        .filter(|s| after(s).is_some_and(|d| d < Duration::from_secs(2)))
        .count();
    let at_deadline = stalled
        .iter()
        .filter(|s| after(s).is_some_and(|d| d >= Duration::from_secs(2)))
        .count();
    let held = stalled.len() - at_once - at_deadline;
    let idle_closed = idle.iter().filter(|s| closed(&s.get_ref().sock)).count();
    let secs = started.elapsed().as_secs();
    let refused = tally.summary();
    Ok(serde_json::json!({"refusal": format!(
        "{} idle after their handshake: {idle_closed} closed within {secs} s; {} stalled ClientHellos: {at_once} closed within 2 s of opening (past the connection cap), {at_deadline} at the handshake deadline, {held} still open after {secs} s{}",
        idle.len(),
        stalled.len(),
        if refused.is_empty() { String::new() } else { format!("; {refused}") }
    )}))
}
