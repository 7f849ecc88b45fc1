//! The Bistro's booking app in a real browser: the example server and a test host page
//! (`examples/apps/host/`) are served on loopback, the host page on `127.0.0.1` and its sandbox
//! proxy on `localhost` (two origins); headless Chromium (Debian's, `/usr/bin/chromium`, or
//! `$CHROMIUM`) driven by `playwright-core` loads the app under its CSP, lets it initialise,
//! books a table through the host against our server, and saves a screenshot as
//! `target/tmp/bistro-app.png`. `cargo xtask setup test` installs Chromium and npm; `cargo
//! xtask test` hands the test a Node 20 or newer in `MCP_NODE`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use mcp_examples::bistro_app;
use serde_json::{Value, json};
use tokio::process::Command;

const HOST: &str = include_str!("../apps/host/host.html");
const SANDBOX: &str = include_str!("../apps/host/sandbox.html");

fn host_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("apps/host")
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "{} is missing: `apt-get install -y chromium` (`cargo xtask setup test` does), or set CHROMIUM",
        path.display()
    );
    path
}

/// The Node that runs playwright-core (20 or newer): `$MCP_NODE` (`cargo xtask test` sets it,
/// installing one when the machine's is older), else `node`.
fn node() -> PathBuf {
    std::env::var_os("MCP_NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from)
}

/// `npm ci` in `examples/apps/host` unless `node_modules` was made from this very lockfile.
async fn ensure_playwright() {
    let dir = host_dir();
    let lock = std::fs::read(dir.join("package-lock.json")).expect("the lockfile is committed");
    let marker = dir.join("node_modules/.mcp-rs-browser-lock.json");
    if std::fs::read(&marker).is_ok_and(|m| m == lock) {
        return;
    }
    let status = tokio::time::timeout(
        Duration::from_secs(300),
        Command::new("npm")
            .current_dir(&dir)
            .args(["ci", "--no-audit", "--no-fund"])
            .kill_on_drop(true)
            .status(),
    )
    .await
    .expect("npm ci finishes within 300 s")
    .expect("npm runs (`apt-get install -y npm`; `cargo xtask setup test` does)");
    assert!(status.success(), "npm ci failed in {}", dir.display());
    std::fs::write(&marker, lock).expect("the marker is written");
}

/// The example server at `/mcp`, the host page and the sandbox, on one loopback port.
async fn serve() -> u16 {
    let endpoint = mcp::http::endpoint(bistro_app::server()).expect("the example server builds");
    let router = Router::new()
        .route_service("/mcp", endpoint)
        .route("/host.html", get(|| async { Html(HOST) }))
        .route("/sandbox.html", get(|| async { Html(SANDBOX) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("the bound address").port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_booking_app_books_a_table_through_a_host_in_chromium() {
    let chromium = chromium();
    ensure_playwright().await;
    let port = serve().await;
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bistro-app.png");
    let _ = std::fs::remove_file(&screenshot);

    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(node())
            .current_dir(host_dir())
            .arg("drive.mjs")
            .arg(format!("http://127.0.0.1:{port}/host.html"))
            .arg(&screenshot)
            .env("CHROMIUM", &chromium)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the browser run finishes within 120 s")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "drive.mjs failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    let run: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("drive.mjs printed no JSON line ({e}):\n{stdout}\n{stderr}"));

    // The app shows the booking the server made, through the host.
    assert_eq!(
        run["result"], "Booked a table for 4 on 2026-12-24.",
        "{run:#}"
    );
    assert_eq!(run["status"], "Booked through the host.");
    // The app declares the one display mode it lays itself out for, and tells the host its
    // size: once ready, and again when the booking's result made it taller.
    assert_eq!(
        run["appCapabilities"],
        json!({"availableDisplayModes": ["inline"]}),
        "{run:#}"
    );
    let sizes = run["sizes"].as_array().expect("the host records sizes");
    assert!(sizes.len() >= 2, "{run:#}");
    for size in sizes {
        assert!(size["width"].as_u64().is_some_and(|w| w > 0), "{run:#}");
        assert!(size["height"].as_u64().is_some_and(|h| h > 0), "{run:#}");
    }
    let first = sizes[0]["height"].as_u64().unwrap_or_default();
    let last = sizes[sizes.len() - 1]["height"]
        .as_u64()
        .unwrap_or_default();
    assert!(
        last > first,
        "the result shown made the app taller: {run:#}"
    );
    assert_eq!(run["errors"], json!([]), "{run:#}");
    let calls = run["calls"].as_array().expect("the host records calls");
    assert_eq!(calls.len(), 1, "{run:#}");
    assert_eq!(calls[0]["name"], "book_table");
    assert_eq!(
        calls[0]["arguments"],
        json!({"date": "2026-12-24", "party_size": 4})
    );
    assert_eq!(
        calls[0]["result"]["content"],
        json!([{"type": "text", "text": "Booked a table for 4 on 2026-12-24."}])
    );

    // It ran under the CSP its (empty) metadata asks for: no network, not even the host.
    let policy = run["csp"]["policy"].as_str().unwrap_or_default();
    assert!(policy.starts_with("default-src 'none'"), "{policy}");
    assert!(policy.contains("connect-src 'none'"), "{policy}");
    assert_eq!(run["csp"]["fetched"], "refused", "{run:#}");
    assert_eq!(run["csp"]["violations"], json!(["connect-src"]), "{run:#}");

    let png = std::fs::read(&screenshot).expect("the screenshot is saved");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(
        png.len() > 10_000,
        "a {} byte screenshot shows nothing",
        png.len()
    );
    eprintln!("screenshot: {}", screenshot.display());
}
