//! TLS end to end: a real rustls server (`serve_tls_with_shutdown`) with certificates from a
//! test CA made here (rcgen), and the client transport verifying them. A valid chain
//! connects; a wrong host name, an expired certificate and a self-signed one are refused with
//! an error that names the cause.
#![cfg(feature = "tls")]

use mcp_client::{Client, Transport};
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::{HttpTransport, McpHttpService, server_config};
use mcp_types::JsonObject;
use mcp_types::{JsonRpcMessage, JsonRpcRequest};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use serde_json::json;
use tokio::net::TcpListener;

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

/// A leaf certificate for `sans`, signed by `ca` (or by itself), valid now unless `expired`.
fn leaf(sans: Vec<SanType>, ca: Option<&Ca>, expired: bool) -> (String, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = sans;
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = match ca {
        Some(ca) => params.signed_by(&key, &ca.cert, &ca.key).unwrap(),
        None => params.self_signed(&key).unwrap(),
    };
    (cert.pem(), key.serialize_pem())
}

fn loopback() -> Vec<SanType> {
    vec![SanType::IpAddress("127.0.0.1".parse().unwrap())]
}

/// Serves a small server over TLS with `cert`/`key`; returns its https:// URL.
async fn start(cert: &str, key: &str) -> (String, tokio::sync::oneshot::Sender<()>) {
    let config = server_config(cert.as_bytes(), key.as_bytes()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let hello = ToolDef::new("hello").handler(|_ctx, _args: JsonObject| async move {
        Ok::<_, String>("hello, caf\u{e9} over TLS".to_owned())
    });
    let service = McpServer::new("tls-test")
        .tool(hello)
        .into_service()
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(McpHttpService::new(service).serve_tls_with_shutdown(
        listener,
        "/mcp",
        config,
        async {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

/// What a ping through a transport trusting `ca_pem` gets: the error message when refused.
async fn ping(url: &str, ca_pem: &str) -> Result<(), String> {
    let transport = HttpTransport::new(url)
        .unwrap()
        .add_root_pem(ca_pem.as_bytes())
        .unwrap();
    let request = JsonRpcRequest::new(1, "ping", &json!({})).unwrap();
    transport
        .send(JsonRpcMessage::Request(request))
        .await
        .unwrap();
    match transport.receive().await.unwrap() {
        JsonRpcMessage::Error(e) => Err(e.error.message),
        _ => Ok(()),
    }
}

#[tokio::test]
async fn a_valid_chain_connects_and_the_client_talks_mcp() {
    let ca = ca("mcp-rs test CA");
    let (cert, key) = leaf(loopback(), Some(&ca), false);
    let (url, _stop) = start(&cert, &key).await;
    let transport = HttpTransport::new(&url)
        .unwrap()
        .add_root_pem(ca.cert.pem().as_bytes())
        .unwrap();
    let client = Client::builder().connect(transport).await.unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let result = client.call_tool("hello", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("hello, café over TLS"));
}

#[tokio::test]
async fn a_certificate_for_another_host_is_refused() {
    let ca = ca("mcp-rs test CA");
    let (cert, key) = leaf(
        vec![SanType::DnsName("example.com".try_into().unwrap())],
        Some(&ca),
        false,
    );
    let (url, _stop) = start(&cert, &key).await;
    let e = ping(&url, &ca.cert.pem()).await.unwrap_err();
    assert!(
        e.starts_with("HTTP request failed: client error (Connect)"),
        "{e}"
    );
    assert!(
        e.contains("invalid peer certificate: certificate not valid for name \"127.0.0.1\""),
        "{e}"
    );
}

#[tokio::test]
async fn an_expired_certificate_is_refused() {
    let ca = ca("mcp-rs test CA");
    let (cert, key) = leaf(loopback(), Some(&ca), true);
    let (url, _stop) = start(&cert, &key).await;
    let e = ping(&url, &ca.cert.pem()).await.unwrap_err();
    assert!(
        e.contains("invalid peer certificate: certificate expired"),
        "{e}"
    );
}

#[tokio::test]
async fn a_self_signed_certificate_is_refused() {
    let trusted = ca("mcp-rs test CA");
    let (cert, key) = leaf(loopback(), None, false);
    let (url, _stop) = start(&cert, &key).await;
    let e = ping(&url, &trusted.cert.pem()).await.unwrap_err();
    assert!(e.contains("invalid peer certificate: UnknownIssuer"), "{e}");
}

#[tokio::test]
async fn without_the_test_ca_mozillas_roots_refuse_the_server() {
    let ca = ca("mcp-rs test CA");
    let (cert, key) = leaf(loopback(), Some(&ca), false);
    let (url, _stop) = start(&cert, &key).await;
    let transport = HttpTransport::new(&url).unwrap();
    let request = JsonRpcRequest::new(1, "ping", &json!({})).unwrap();
    transport
        .send(JsonRpcMessage::Request(request))
        .await
        .unwrap();
    let JsonRpcMessage::Error(e) = transport.receive().await.unwrap() else {
        panic!("a server signed by an unknown CA was trusted")
    };
    assert!(
        e.error
            .message
            .contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        e.error.message
    );
}

/// Review W7: the TLS server has the plain server's connection cap, taken before the
/// handshake (a connection that stalls in its handshake holds the only place, and the next
/// is closed at once instead of getting a handshake task of its own), and its drain: once
/// told to stop it ends within the test's bound although a connection is still open.
#[tokio::test]
async fn tls_connections_are_capped_before_the_handshake_and_shutdown_drains() {
    use tokio::io::AsyncReadExt;
    let ca = ca("test CA");
    let (cert, key) = leaf(loopback(), Some(&ca), false);
    let config = server_config(cert.as_bytes(), key.as_bytes()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = McpServer::new("tls-cap").into_service().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(
        McpHttpService::new(service)
            .max_connections(1)
            .drain_grace(std::time::Duration::from_millis(200))
            .serve_tls_with_shutdown(listener, "/mcp", config, async {
                let _ = stopped.await;
            }),
    );
    // Holds the only place: connected, never says hello.
    let _staller = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let mut refused = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(std::time::Duration::from_secs(2), refused.read(&mut buf))
        .await
        .expect("a connection past the cap was kept open (waiting for a handshake)");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let _ = stop.send(());
    tokio::time::timeout(std::time::Duration::from_secs(5), served)
        .await
        .expect("the TLS server did not drain in time")
        .unwrap()
        .unwrap();
}
