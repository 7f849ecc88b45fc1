//! `mcp-term` and MCP Apps, against the `bistro_app` example (stdio on both eras, and HTTP): without
//! `--save-ui` it declares nothing and sees no app; with it, `tools` names the app, `call` says
//! where the app is, writes its HTML and prints the text result as before.

use std::path::Path;
use std::process::{Command, Stdio};

mod out;
mod support;

use out::Out;
use support::{Http, example};

fn term(args: &[&str]) -> Out {
    let server = example("bistro_app");
    term_at(args, &["--", server.to_str().unwrap()])
}

fn term_at(args: &[&str], target: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-term"))
        .args(args)
        .args(target)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("mcp-term runs");
    Out::from(out)
}

const HTML: &str = include_str!("../../../examples/apps/booking.html");

#[test]
fn save_ui_writes_the_app_and_the_call_prints_its_text_on_both_eras() {
    for era in ["2026-07-28", "2025-11-25"] {
        let dir = std::env::temp_dir().join(format!("mcp-term-apps-{}-{era}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let dir_arg = dir.to_str().unwrap();

        let listed = term(&["tools", "--era", era, "--save-ui", dir_arg]);
        assert_eq!(listed.code, 0, "{}", listed.stderr);
        assert_eq!(
            listed.stdout,
            "book_table  Book a table at the bistro.  [app: ui://bistro/booking]\n"
        );

        let called = term(&[
            "call",
            "book_table",
            "date=2026-12-24",
            "party_size=4",
            "--era",
            era,
            "--save-ui",
            dir_arg,
        ]);
        assert_eq!(called.code, 0, "{}", called.stderr);
        assert_eq!(called.stdout, "Booked a table for 4 on 2026-12-24.\n");
        let saved = dir.join("bistro-booking.html");
        assert!(
            called.stderr.contains(&format!(
                "book_table has an app: ui://bistro/booking, saved as {}\n",
                saved.display()
            )),
            "{}",
            called.stderr
        );
        // The app as served, after the policy it runs under in a browser (review X14).
        let written = std::fs::read_to_string(&saved).unwrap();
        let (policy, html) = written.split_once('\n').unwrap();
        assert_eq!(html, HTML);
        assert!(
            policy.starts_with(
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            ) && policy.contains("connect-src 'none';")
                && policy.ends_with("form-action 'none'\">"),
            "{policy}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn without_save_ui_nothing_is_declared_and_no_app_is_shown() {
    let listed = term(&["tools"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(listed.stdout, "book_table  Book a table at the bistro.\n");
    let called = term(&["call", "book_table", "date=2026-12-24", "party_size=4"]);
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert_eq!(called.stdout, "Booked a table for 4 on 2026-12-24.\n");
    assert!(!called.stderr.contains("app"), "{}", called.stderr);
    assert!(!Path::new("bistro-booking.html").exists());
}

#[test]
fn over_http_the_tool_names_its_app() {
    let server = Http::start("bistro_app", &["--http", "127.0.0.1:0"]);
    let dir = std::env::temp_dir().join(format!("mcp-term-apps-http-{}", std::process::id()));
    let listed = term_at(
        &["tools", "--save-ui", dir.to_str().unwrap()],
        &[server.url.as_str()],
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        listed.stdout,
        "book_table  Book a table at the bistro.  [app: ui://bistro/booking]\n"
    );
    let plain = term_at(&["tools"], &[server.url.as_str()]);
    assert_eq!(plain.stdout, "book_table  Book a table at the bistro.\n");
}
