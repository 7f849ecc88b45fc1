//! `mcp-term` against the example servers, in separate processes, both eras, with no terminal:
//! answers come from `--answer` and `--answers` files, and an unanswered question exits 10.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod support;

use support::{Http, example};

fn stdio(name: &str) -> Vec<String> {
    vec!["--".into(), example(name).display().to_string()]
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    /// The one JSON error line every failing run ends stderr with.
    fn error(&self) -> Value {
        let last = self.stderr.lines().last().unwrap_or("");
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("the last stderr line is not JSON ({e}): {}", self.stderr))
    }
}

fn term(args: &[&str], tail: &[String], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-term"));
    cmd.args(args)
        .args(tail)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mcp-term starts");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().expect("mcp-term ends");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn temp(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-term-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn files_in_both_eras_with_an_answers_file() {
    let yes = temp("yes.json", r#"{"ok": true}"#);
    let yes = yes.to_str().unwrap();
    for era in ["2026-07-28", "2025-11-25"] {
        let out = term(
            &[
                "call",
                "delete_folder",
                "path=/tmp/project",
                "--era",
                era,
                "--answers",
                yes,
            ],
            &stdio("files"),
            None,
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "deleted /tmp/project\n"),
            "{era}: {}",
            out.stderr
        );
        let out = term(
            &[
                "call",
                "delete_folder",
                "path=/tmp/project",
                "--era",
                era,
                "--answer",
                "ok=no",
            ],
            &stdio("files"),
            None,
        );
        assert_eq!(out.stdout, "kept the folder\n", "{era}: {}", out.stderr);
        let out = term(
            &[
                "call",
                "delete_folder",
                "path=/tmp/project",
                "--era",
                era,
                "--elicit",
                "decline",
            ],
            &stdio("files"),
            None,
        );
        assert_eq!(
            out.stdout, "declined: folder not deleted\n",
            "{era}: {}",
            out.stderr
        );
        let out = term(
            &[
                "call",
                "delete_folder",
                "path=/tmp/project",
                "--era",
                era,
                "--elicit",
                "cancel",
            ],
            &stdio("files"),
            None,
        );
        assert_eq!(
            out.stdout, "cancelled: folder not deleted\n",
            "{era}: {}",
            out.stderr
        );
    }
    let per_key = temp(
        "per-key.json",
        r#"{"confirm_delete": {"action": "decline"}}"#,
    );
    let out = term(
        &[
            "call",
            "delete_folder",
            "path=/tmp/project",
            "--answers",
            per_key.to_str().unwrap(),
        ],
        &stdio("files"),
        None,
    );
    assert_eq!(
        out.stdout, "declined: folder not deleted\n",
        "{}",
        out.stderr
    );
}

#[test]
fn an_invalid_answer_is_refused_with_the_reason() {
    let out = term(
        &[
            "call",
            "delete_folder",
            "path=/tmp/project",
            "--answer",
            "ok=perhaps",
        ],
        &stdio("files"),
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        "--answer ok: answer yes or no"
    );
}

#[test]
fn without_a_terminal_an_unanswered_question_prints_the_round_and_exits_10() {
    let out = term(
        &["call", "delete_folder", "path=/tmp/project"],
        &stdio("files"),
        None,
    );
    assert_eq!(out.code, 10, "{}", out.stderr);
    let pending = out.json();
    assert_eq!(pending["kind"], "mcp-term/pending");
    assert_eq!(pending["protocolVersion"], "2026-07-28");
    assert_eq!(
        pending["call"],
        json!({"method": "tools/call", "name": "delete_folder", "arguments": {"path": "/tmp/project"}})
    );
    assert_eq!(pending["unanswered"], json!(["confirm_delete"]));
    let round = &pending["inputRequired"];
    assert_eq!(round["resultType"], "input_required");
    assert_eq!(
        round["inputRequests"]["confirm_delete"]["method"],
        "elicitation/create"
    );
    assert!(
        round["requestState"]
            .as_str()
            .is_some_and(|s| s.starts_with("v1.")),
        "{round}"
    );
    assert_eq!(out.error()["error"]["code"], 10);
    assert_eq!(out.error()["error"]["kind"], "input_required");

    let legacy = term(
        &[
            "call",
            "delete_folder",
            "path=/tmp/project",
            "--era",
            "2025-11-25",
        ],
        &stdio("files"),
        None,
    );
    assert_eq!(legacy.code, 10, "{}", legacy.stderr);
    assert_eq!(legacy.json()["kind"], "mcp-term/pending-live");
    assert_eq!(legacy.json()["request"]["method"], "elicitation/create");
}

#[test]
fn resume_finishes_the_round_in_a_new_process_with_the_state_verbatim() {
    let server = Http::start("files", &["--http", "127.0.0.1:0"]);
    let first = term(
        &["call", "delete_folder", "path=/tmp/project", &server.url],
        &[],
        None,
    );
    assert_eq!(first.code, 10, "{}", first.stderr);
    let pending = temp("pending.json", &first.stdout);
    let answers = temp("resume-answers.json", r#"{"ok": true}"#);
    let out = term(
        &[
            "resume",
            pending.to_str().unwrap(),
            "--answers",
            answers.to_str().unwrap(),
            "--trace-rounds",
        ],
        &[],
        None,
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "deleted /tmp/project\n"),
        "{}",
        out.stderr
    );
    let state = first.json()["inputRequired"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let trace = out.stderr.lines().next().unwrap();
    assert!(
        trace.starts_with("round 1: keys [confirm_delete] methods [elicitation/create] state "),
        "{trace}"
    );
    assert!(
        trace.contains(&format!("{} bytes sha256 ", state.len())),
        "{trace}"
    );
    assert!(
        !out.stderr.contains(&state),
        "the state's contents are never printed"
    );

    // A state changed by one byte is refused by the server, so the bytes went back exactly.
    let mut tampered = first.json();
    let mut bad = state.clone();
    bad.pop();
    bad.push(if state.ends_with('A') { 'B' } else { 'A' });
    tampered["inputRequired"]["requestState"] = Value::String(bad);
    let tampered = temp("tampered.json", &tampered.to_string());
    let out = term(
        &[
            "resume",
            tampered.to_str().unwrap(),
            "--answers",
            answers.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert_eq!(out.code, 5, "{}", out.stderr);
}

#[test]
fn resume_never_runs_a_command_the_command_line_did_not_name() {
    let first = term(
        &["call", "delete_folder", "path=/tmp/project"],
        &stdio("files"),
        None,
    );
    assert_eq!(first.code, 10, "{}", first.stderr);
    assert!(
        first.stderr.contains(
            "(save the JSON above and finish with: mcp-term resume FILE --answers ANSWERS.json -- CMD ARGS)"
        ),
        "{}",
        first.stderr
    );
    let files = example("files").display().to_string();
    assert_eq!(first.json()["target"], json!({"stdio": [files]}));
    let answers = temp("resume-cmd-answers.json", r#"{"ok": true}"#);
    let answers = answers.to_str().unwrap();

    // A file handed over with someone else's command: refused, and nothing runs.
    let marker = std::env::temp_dir().join(format!("mcp-term-resume-ran-{}", std::process::id()));
    let mut planted = first.json();
    planted["target"] = json!({"stdio": ["sh", "-c", format!("touch {}", marker.display())]});
    let planted = temp("planted.json", &planted.to_string());
    let planted = planted.to_str().unwrap();
    let out = term(&["resume", planted, "--answers", answers], &[], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.error()["error"]["kind"], "untrusted");
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "mcp-term: the pending file {planted} names a command to start the server: [\"sh\", \"-c\", \"touch {}\"]; mcp-term does not run a command taken from a pending file: name the server again on the command line (mcp-term resume {planted} -- CMD ARGS, a URL or @name), or confirm on a terminal",
            marker.display()
        )
    );
    assert!(!marker.exists(), "the planted command never ran");
    assert_eq!(out.stdout, "");

    // The file's own command is no different: a pending file is data.
    let own = temp("own-command.json", &first.stdout);
    let own = own.to_str().unwrap();
    let out = term(&["resume", own, "--answers", answers], &[], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.error()["error"]["kind"], "untrusted");

    // A person at the terminal (--tty) may say no, or yes.
    let out = term(
        &["resume", planted, "--answers", answers, "--tty"],
        &[],
        Some("n\n"),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&format!(
            "── the pending file {planted} names a command to start the server ──\n  \
             it would run the command [\"sh\", \"-c\", \"touch {}\"]\n  \
             a pending file can come from anyone: run only a command you recognise\n  \
             run it? [y]es, [n]o? mcp-term: the pending file {planted} names a command",
            marker.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("; not run (you said no): name the server again on the command line")
    );
    assert!(!marker.exists());
    // It ran: a stdio server started anew has new keys and refuses the old state.
    let refused_state = "the server answered with error -32602: Invalid or expired requestState";
    let out = term(
        &["resume", own, "--answers", answers, "--tty"],
        &[],
        Some("y\n"),
    );
    assert_eq!(
        (out.code, out.error()["error"]["message"].as_str()),
        (5, Some(refused_state)),
        "{}",
        out.stderr
    );

    // Named again on the command line, the server is started as the command line says.
    let out = term(
        &["resume", own, "--answers", answers],
        &stdio("files"),
        None,
    );
    assert_eq!(
        (out.code, out.error()["error"]["message"].as_str()),
        (5, Some(refused_state)),
        "{}",
        out.stderr
    );
}

#[test]
fn bistro_answers_per_round_and_url_consent() {
    let rounds = temp(
        "rounds.json",
        r#"{"rounds": [{"accept_alternative": true, "date": "2025-12-25"}, {"accept_alternative": true, "date": "2025-12-28"}]}"#,
    );
    let args = [
        "call",
        "book_table",
        "date=2025-12-25",
        "party_size=2",
        "--era",
        "2025-11-25",
        "--trace-rounds",
    ];
    let out = term(
        &[&args[..], &["--answers", rounds.to_str().unwrap()]].concat(),
        &stdio("bistro"),
        None,
    );
    assert_eq!(
        out.stdout, "Booked a table for 2 on 2025-12-28.\n",
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr
            .matches("methods [elicitation/create] no state")
            .count(),
        2,
        "{}",
        out.stderr
    );
    let capped = term(
        &[
            &args[..],
            &["--answers", rounds.to_str().unwrap(), "--max-rounds", "1"],
        ]
        .concat(),
        &stdio("bistro"),
        None,
    );
    assert_eq!(capped.code, 12, "{}", capped.stderr);
    // The default date is pre-filled: only the required choice is answered.
    let out = term(
        &[&args[..], &["--answer", "accept_alternative=yes"]].concat(),
        &stdio("bistro"),
        None,
    );
    assert_eq!(
        out.stdout, "Booked a table for 2 on 2025-12-26.\n",
        "{}",
        out.stderr
    );

    let pay = [
        "call",
        "pay_deposit",
        "booking_id=B-1",
        "--era",
        "2025-11-25",
    ];
    let accept = temp("url-accept.json", r#"{"_url": "accept"}"#);
    let out = term(
        &[&pay[..], &["--answers", accept.to_str().unwrap()]].concat(),
        &stdio("bistro"),
        None,
    );
    assert_eq!(
        out.stdout, "Complete the payment in your browser.\n",
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("open this URL yourself: https://pay.example.com/deposit/B-1"),
        "{}",
        out.stderr
    );
    let out = term(&pay, &stdio("bistro"), None);
    assert_eq!(out.code, 10, "a URL needs consent: {}", out.stderr);
    let out = term(
        &[&pay[..], &["--elicit", "decline"]].concat(),
        &stdio("bistro"),
        None,
    );
    assert_eq!(
        out.stdout,
        "No deposit taken. The booking expires in one hour.\n"
    );
}

#[test]
fn provisioner_rounds_are_traced_and_in_the_json_output() {
    let out = term(
        &[
            "call",
            "provision",
            "name=orders",
            "--answer",
            "region=eu-west-1",
            "--format",
            "json",
        ],
        &stdio("provisioner"),
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(
        v["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu-west-1."
    );
    assert_eq!(v["rounds"].as_array().unwrap().len(), 1);
    assert_eq!(v["rounds"][0]["keys"], json!(["region"]));
    assert_eq!(v["rounds"][0]["methods"], json!(["elicitation/create"]));
    assert_eq!(v["rounds"][0]["stateSha256"].as_str().unwrap().len(), 64);
    assert!(!out.stdout.contains("provision-v1"));
    let nd = term(
        &[
            "call",
            "provision",
            "name=orders",
            "--answer",
            "region=eu",
            "--format",
            "ndjson",
        ],
        &stdio("provisioner"),
        None,
    );
    let lines: Vec<Value> = nd
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", nd.stdout);
    assert_eq!(lines[0]["event"], "round");
    assert_eq!(lines[1]["event"], "result");
}

#[test]
fn names_are_checked_with_suggestions() {
    let out = term(
        &["call", "delete_fodler", "path=/tmp/x"],
        &stdio("files"),
        None,
    );
    assert_eq!(out.code, 6);
    assert_eq!(
        out.error()["error"]["message"],
        "the server has no tool \"delete_fodler\"; did you mean delete_folder?"
    );
    let out = term(
        &["call", "delete_folder", "pth=/tmp/x"],
        &stdio("files"),
        None,
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.error()["error"]["message"],
        "the tool has no argument \"pth\"; did you mean path?"
    );
    let out = term(
        &[
            "call",
            "provision",
            "--args",
            r#"{"name": "db"}"#,
            "--answer",
            "region=us",
        ],
        &stdio("provisioner"),
        None,
    );
    assert_eq!(out.stdout, "Provisioned 'db' in us.\n", "{}", out.stderr);
    let out = term(
        &["call", "provision", "--args", "-", "--answer", "region=us"],
        &stdio("provisioner"),
        Some(r#"{"name": "piped"}"#),
    );
    assert_eq!(out.stdout, "Provisioned 'piped' in us.\n", "{}", out.stderr);
}

#[test]
fn at_name_comes_from_a_config_file_with_variables() {
    let config = temp(
        "mcp.json",
        r#"{"mcpServers": {"files": {"command": "${FILES_BIN}", "args": ["--stdio"]}, "web": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    );
    let bin = example("files").display().to_string();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-term"))
            .args(args)
            .args(["--config", config.to_str().unwrap()])
            .env("FILES_BIN", &bin)
            .env("HOME", std::env::temp_dir())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, stdout, stderr) = run(&["call", "delete_folder", "path=/tmp/empty", "@files"]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "deleted /tmp/empty\n"),
        "{stderr}"
    );
    let (code, stdout, _) = run(&["servers"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("@files  stdio  "), "{stdout}");
    assert!(stdout.contains("@web  http  "), "{stdout}");
    let (code, _, stderr) = run(&["tools", "@fils"]);
    assert_eq!(code, 6);
    assert!(stderr.contains("did you mean @files?"), "{stderr}");
    let (code, _, stderr) = run(&["tools", "@web"]);
    assert_eq!(code, 4, "nothing listens on port 1: {stderr}");
}

/// A working directory and a home of their own, for `@name` tests.
fn workspace(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mcp-term-ws-{}-{name}", std::process::id()));
    let home = dir.join("home");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    (ws, home)
}

/// `mcp-term` run in `ws` with `home` as `$HOME`.
fn term_in(ws: &Path, home: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-term"))
        .args(args)
        .current_dir(ws)
        .env("HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-term starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("mcp-term ends");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[test]
fn a_workspace_config_never_shadows_the_users_own_entry() {
    let (ws, home) = workspace("shadow");
    let ran = ws.join("ran");
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {"files": {"command": "sh", "args": ["-c", format!("touch {}", ran.display())]}}})
            .to_string(),
    )
    .unwrap();
    let bin = example("files").display().to_string();
    std::fs::write(
        home.join(".claude.json"),
        json!({"mcpServers": {"files": {"command": bin}}}).to_string(),
    )
    .unwrap();
    let out = term_in(
        &ws,
        &home,
        &["call", "delete_folder", "path=/tmp/empty", "@files"],
        &[],
        "",
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "deleted /tmp/empty\n"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr,
        format!(
            "mcp-term: @files: using {} (user); also defined in {} (workspace), not used (--config comes first, then your own files, then the workspace's)\n",
            home.join(".claude.json").display(),
            ws.join(".mcp.json").display()
        )
    );
    assert!(!ran.exists(), "the workspace's command never ran");
    let out = term_in(&ws, &home, &["servers"], &[], "");
    assert_eq!(
        out.stdout,
        format!(
            "@files  stdio  {}  user\n@files  stdio  {}  workspace (shadowed)\n",
            home.join(".claude.json").display(),
            ws.join(".mcp.json").display()
        )
    );
}

#[test]
fn a_workspace_entry_runs_a_command_or_reads_the_environment_only_with_consent() {
    let (ws, home) = workspace("consent");
    let ran = ws.join("ran");
    let bin = example("files").display().to_string();
    let config = ws.join(".mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "files": {"command": bin},
            "evil": {"command": "sh", "args": ["-c", format!("touch {}", ran.display())]},
            "leak": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${SECRET_TOKEN}"}},
            "plain": {"url": "http://127.0.0.1:1/mcp"}}})
        .to_string(),
    )
    .unwrap();
    let secret = [("SECRET_TOKEN", "hunter2")];
    let refusal = |would: &str| {
        format!(
            "{} comes from the workspace file {} and would {would}; a file in the working directory comes with whatever was put there (a cloned repository can ship one), so mcp-term does not do that without consent: confirm on a terminal, or pass --trust-workspace",
            "@NAME",
            config.display()
        )
    };

    // Without a terminal: refused, with the flag that allows it, before anything runs.
    let out = term_in(&ws, &home, &["tools", "@evil"], &secret, "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    let message = refusal(&format!(
        "run the command [\"sh\", \"-c\", \"touch {}\"]",
        ran.display()
    ))
    .replace("@NAME", "@evil");
    assert_eq!(
        out.stderr.lines().next(),
        Some(&*format!("mcp-term: {message}"))
    );
    assert_eq!(out.error()["error"]["kind"], "untrusted");
    assert!(!ran.exists(), "the workspace's command never ran");
    // Reading the environment is refused before anything connects (port 1 would be exit 4),
    // and the value is never printed.
    let out = term_in(&ws, &home, &["tools", "@leak"], &secret, "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        refusal("read the environment variable(s) SECRET_TOKEN").replace("@NAME", "@leak")
    );
    assert!(!out.stderr.contains("hunter2"));
    // An HTTP entry that reads nothing is used, and said to come from the workspace.
    let out = term_in(&ws, &home, &["tools", "@plain"], &secret, "");
    assert_eq!(out.code, 4, "nothing listens on port 1: {}", out.stderr);
    assert_eq!(
        out.stderr.lines().next(),
        Some(&*format!(
            "mcp-term: @plain comes from the workspace file {}",
            config.display()
        ))
    );

    // --trust-workspace allows it, and says so.
    let call = ["call", "delete_folder", "path=/tmp/empty", "@files"];
    let out = term_in(
        &ws,
        &home,
        &[&call[..], &["--trust-workspace"]].concat(),
        &[],
        "",
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "deleted /tmp/empty\n"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr,
        format!(
            "mcp-term: @files comes from the workspace file {} (trusted with --trust-workspace)\n",
            config.display()
        )
    );

    // With a person to ask (--tty): no is a refusal, yes goes on.
    let out = term_in(&ws, &home, &[&call[..], &["--tty"]].concat(), &[], "n\n");
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&format!(
            "── @files is defined by a workspace file: {} ──\n  \
             a file in the working directory comes with whatever was put there (a cloned repository can ship one)\n  \
             it would run the command [\"{bin}\"]\n  \
             use it this once? [y]es, [n]o? mcp-term: @files comes from the workspace file {}: not used (you said no)\n",
            config.display(),
            config.display()
        )),
        "{}",
        out.stderr
    );
    let out = term_in(&ws, &home, &[&call[..], &["--tty"]].concat(), &[], "y\n");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "deleted /tmp/empty\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn info_shows_the_era_and_exactly_what_was_advertised() {
    let out = term(&["info", "--format", "json"], &stdio("files"), None);
    let v = out.json();
    assert_eq!(v["protocolVersion"], "2026-07-28");
    assert_eq!(v["serverInfo"]["name"], "Files");
    assert_eq!(
        v["clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    let out = term(
        &["info", "--format", "json", "--no-tasks"],
        &stdio("files"),
        None,
    );
    assert_eq!(
        out.json()["clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}})
    );
    let root = std::env::temp_dir();
    let out = term(
        &[
            "info",
            "--format",
            "json",
            "--era",
            "2025-11-25",
            "--elicit-modes",
            "form",
            "--sampling",
            "decline",
            "--root",
            root.to_str().unwrap(),
        ],
        &stdio("files"),
        None,
    );
    let v = out.json();
    assert_eq!(v["protocolVersion"], "2025-11-25");
    assert_eq!(
        v["clientCapabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}, "roots": {}, "sampling": {}})
    );
    let out = term(
        &[
            "info",
            "--format",
            "json",
            "--elicit-modes",
            "none",
            "--no-tasks",
        ],
        &stdio("files"),
        None,
    );
    assert_eq!(out.json()["clientCapabilities"], json!({}));
    let out = term(
        &[
            "call",
            "delete_folder",
            "path=/tmp/project",
            "--elicit-modes",
            "none",
        ],
        &stdio("files"),
        None,
    );
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(
        out.error()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("-32021"),
        "{}",
        out.stderr
    );
}

#[test]
fn sampling_and_roots_answer_rounds_in_both_eras() {
    let server = Http::start("conformance-server", &["--port", "0"]);
    let root = std::env::temp_dir();
    let out = term(
        &[
            "call",
            "test_input_required_result_multiple_inputs",
            &server.url,
            "--era",
            "2026-07-28",
            "--answer",
            "name=Ada",
            "--sampling",
            "fixed:Hello",
            "--root",
            root.to_str().unwrap(),
            "--trace-rounds",
        ],
        &[],
        None,
    );
    assert_eq!(
        out.stdout, "name=Ada, greeting=Hello, roots=1\n",
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("keys [client_roots, greeting, user_name] methods [roots/list, sampling/createMessage, elicitation/create]"), "{}", out.stderr);
    let exec = r#"exec:grep -q 'capital' && echo '{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"stub"}'"#;
    for era in ["2026-07-28", "2025-11-25"] {
        let out = term(
            &[
                "call",
                "test_sampling",
                "prompt=What is the capital?",
                &server.url,
                "--era",
                era,
                "--sampling",
                exec,
            ],
            &[],
            None,
        );
        assert_eq!(out.stdout, "LLM response: Paris\n", "{era}: {}", out.stderr);
    }
    let out = term(
        &[
            "call",
            "test_input_required_result_sampling",
            &server.url,
            "--era",
            "2026-07-28",
            "--sampling",
            "decline",
        ],
        &[],
        None,
    );
    assert_eq!(out.code, 11, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        "capital_question: User rejected sampling request"
    );
}

#[test]
fn prompts_resources_and_read_out() {
    let server = Http::start("conformance-server", &["--port", "0"]);
    let out = term(&["prompts", &server.url], &[], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.is_empty());
    let out = term(&["resources", "--format", "json", &server.url], &[], None);
    let resources = out.json();
    let text = resources
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mimeType"] == "text/plain")
        .expect("a text resource");
    let uri = text["uri"].as_str().unwrap();
    let file = std::env::temp_dir().join(format!("mcp-term-read-{}", std::process::id()));
    let out = term(
        &["read", uri, &server.url, "--out", file.to_str().unwrap()],
        &[],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = term(&["read", uri, &server.url], &[], None);
    assert_eq!(std::fs::read_to_string(&file).unwrap() + "\n", shown.stdout);
    let _ = std::fs::remove_file(file);
    let out = term(&["templates", &server.url], &[], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = term(&["prompt", "nope", &server.url], &[], None);
    assert_eq!(out.code, 6);
}

#[test]
fn piped_answers_are_asked_again_until_valid() {
    let out = term(
        &["call", "delete_folder", "path=/tmp/project", "--tty"],
        &stdio("files"),
        Some("a\nmaybe\nyes\ns\n"),
    );
    assert_eq!(out.stdout, "deleted /tmp/project\n", "{}", out.stderr);
    assert!(
        out.stderr.contains("  ! answer yes or no; try again\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn bearer_tokens_from_the_environment_or_a_header() {
    let server = Http::start("protected", &["--http", "127.0.0.1:0"]);
    let run = |extra: &[&str], token: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-term"));
        cmd.args([
            "call",
            "deploy",
            "service=web",
            "--answer",
            "ok=yes",
            &server.url,
        ])
        .args(extra)
        .stdin(Stdio::null());
        match token {
            Some(t) => cmd.env("DEMO_TOKEN", t),
            None => cmd.env_remove("DEMO_TOKEN"),
        };
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, stdout, stderr) = run(&["--bearer-env", "DEMO_TOKEN"], Some("alice-token"));
    assert_eq!(
        (code, stdout.as_str()),
        (0, "alice deployed web.\n"),
        "{stderr}"
    );
    let (code, stdout, stderr) = run(&["-H", "Authorization: Bearer bob-token"], None);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "bob deployed web.\n"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--bearer-env", "DEMO_TOKEN"], None);
    assert_eq!(code, 2, "an unset variable is a usage error: {stderr}");
    assert!(
        stderr.contains("--bearer-env DEMO_TOKEN: the variable is not set"),
        "{stderr}"
    );
    assert!(!stderr.contains("alice-token"));
    let (code, _, stderr) = run(&[], None);
    assert_eq!(code, 3, "no token: {stderr}");
}

#[test]
fn progress_and_logs_go_to_stderr_in_both_eras() {
    let server = Http::start("conformance-server", &["--port", "0"]);
    for era in ["2026-07-28", "2025-11-25"] {
        let out = term(
            &["call", "test_tool_with_progress", &server.url, "--era", era],
            &[],
            None,
        );
        assert_eq!(out.code, 0, "{era}: {}", out.stderr);
        for step in [
            "progress 0/100 working",
            "progress 50/100 working",
            "progress 100/100 working",
        ] {
            assert!(
                out.stderr.contains(step),
                "{era}: {step:?} missing from {}",
                out.stderr
            );
        }
        assert!(!out.stdout.contains("progress"), "stdout stays clean");
        let out = term(
            &["call", "test_tool_with_logging", &server.url, "--era", era],
            &[],
            None,
        );
        assert_eq!(out.code, 0, "{era}: {}", out.stderr);
        assert!(
            out.stderr.contains("log [info] conformance: "),
            "{era}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_prompt_that_asks_and_the_tool_list() {
    for era in ["2026-07-28", "2025-11-25"] {
        let out = term(
            &[
                "prompt",
                "briefing",
                "--era",
                era,
                "--answer",
                "audience=the board",
            ],
            &stdio("briefing"),
            None,
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "user: Write a briefing for the board.\n"),
            "{era}: {}",
            out.stderr
        );
        let out = term(
            &["prompt", "briefing", "--era", era],
            &stdio("briefing"),
            None,
        );
        assert_eq!(out.code, 10, "{era}: {}", out.stderr);
    }
    let out = term(&["prompt", "briefing", "who=x"], &stdio("briefing"), None);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.error()["error"]["message"],
        "the prompt has no argument \"who\""
    );
    let out = term(&["tools"], &stdio("files"), None);
    assert_eq!(
        out.stdout,
        "delete_folder  Delete a folder, asking for confirmation when it is not empty.\n"
    );
    let out = term(&["tools", "--schema"], &stdio("files"), None);
    assert!(
        out.stdout.contains("        \"path\": {\n"),
        "{}",
        out.stdout
    );
    let out = term(&["tools", "--format", "json"], &stdio("files"), None);
    assert_eq!(out.json()[0]["inputSchema"]["required"], json!(["path"]));
}

#[test]
fn a_url_goes_to_the_transport_whatever_its_scheme() {
    // Nothing listens on port 1: with or without TLS in the transport this is a transport
    // failure (exit 4), never a refusal by mcp-term itself.
    for url in ["http://127.0.0.1:1/mcp", "https://127.0.0.1:1/mcp"] {
        let out = term(&["tools", url, "--timeout", "5"], &[], None);
        assert_eq!(out.code, 4, "{url}: {}", out.stderr);
        assert_eq!(out.error()["error"]["kind"], "transport", "{url}");
    }
}

/// The task's question, as the round line of `--trace-rounds` shows it.
fn task_round(stderr: &str, round: u32) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with(&format!("round {round}: ")))
        .unwrap_or_else(|| panic!("no round {round} line in {stderr}"))
}

#[test]
fn a_task_in_input_required_is_answered_by_the_same_form_engine() {
    // On 2026-07-28 the client declares the Tasks extension, so `run_build` becomes a task and
    // its question arrives as the task's inputRequests; the answer goes back with tasks/update.
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answer",
            "deploy=yes",
            "--trace-rounds",
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "orders built and deployed.\n"),
        "{}",
        out.stderr
    );
    let line = task_round(&out.stderr, 1);
    assert!(
        line.ends_with("methods [elicitation/create] task input_required"),
        "{line}"
    );
    assert!(
        out.stderr.contains("\ntask input_required"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("\ntask completed"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("round 2:"),
        "one question: {}",
        out.stderr
    );

    // The same answer sources and the same validation as any form.
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answer",
            "deploy=no",
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(
        out.stdout, "orders built; not deployed.\n",
        "{}",
        out.stderr
    );
    let out = term(
        &["call", "run_build", "project=orders", "--elicit", "decline"],
        &stdio("builds"),
        None,
    );
    assert_eq!(
        out.stdout, "orders built; not deployed.\n",
        "{}",
        out.stderr
    );
    let file = temp("task-answers.json", r#"{"rounds": [{"deploy": true}]}"#);
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answers",
            file.to_str().unwrap(),
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(out.stdout, "orders built and deployed.\n", "{}", out.stderr);
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answer",
            "deploy=perhaps",
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.error()["error"]["message"],
        "--answer deploy: answer yes or no"
    );

    // A person answers the task's form: the invalid answer is asked again with the reason,
    // and the header says the question comes from a task.
    let out = term(
        &["call", "run_build", "project=orders", "--tty"],
        &stdio("builds"),
        Some("a\nmaybe\ny\ns\n"),
    );
    assert_eq!(out.stdout, "orders built and deployed.\n", "{}", out.stderr);
    assert!(
        out.stderr.contains("  ! answer yes or no; try again\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("tools/call run_build (a task)"),
        "{}",
        out.stderr
    );

    // Without the extension this server cannot ask on 2026-07-28 (its question needs a task
    // or a live back-channel): the server's error, exit 5, never a hang.
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answer",
            "deploy=yes",
            "--no-tasks",
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        !out.stderr.contains("task input_required"),
        "{}",
        out.stderr
    );
    // On a 2025-11-25 session the same question is a live request.
    let out = term(
        &[
            "call",
            "run_build",
            "project=orders",
            "--answer",
            "deploy=yes",
            "--era",
            "2025-11-25",
        ],
        &stdio("builds"),
        None,
    );
    assert_eq!(out.stdout, "orders built and deployed.\n", "{}", out.stderr);
}

#[test]
fn an_unanswered_task_question_is_pending_and_resumed_from_a_new_process() {
    let server = Http::start("builds", &["--http", "127.0.0.1:0"]);
    let first = term(
        &["call", "run_build", "project=orders", &server.url],
        &[],
        None,
    );
    assert_eq!(first.code, 10, "{}", first.stderr);
    let pending = first.json();
    assert_eq!(pending["kind"], "mcp-term/pending");
    assert_eq!(pending["protocolVersion"], "2026-07-28");
    assert_eq!(pending["task"]["status"], "input_required");
    let task_id = pending["task"]["taskId"].as_str().unwrap().to_owned();
    assert!(!task_id.is_empty());
    let key = pending["unanswered"][0].as_str().unwrap().to_owned();
    assert_eq!(
        pending["inputRequired"]["inputRequests"][&key]["method"],
        "elicitation/create"
    );
    assert_eq!(
        pending["inputRequired"]["inputRequests"][&key]["params"]["message"],
        "orders built and passed its tests. Deploy it now?"
    );
    assert_eq!(first.error()["error"]["kind"], "input_required");
    assert!(
        !first.stderr.contains(&task_id),
        "the task id (a handle on the task) stays off stderr: {}",
        first.stderr
    );

    // Another process answers the task with tasks/update and follows it to the end.
    let file = temp("task-pending.json", &first.stdout);
    let answers = temp("task-resume.json", r#"{"deploy": true}"#);
    let out = term(
        &[
            "resume",
            file.to_str().unwrap(),
            "--answers",
            answers.to_str().unwrap(),
            "--trace-rounds",
        ],
        &[],
        None,
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "orders built and deployed.\n"),
        "{}",
        out.stderr
    );
    assert_eq!(
        task_round(&out.stderr, 1),
        format!("round 1: keys [{key}] methods [elicitation/create] task input_required")
    );

    // The task is over: resuming the same file again finds it completed, asks nothing and
    // prints the same result.
    let again = term(&["resume", file.to_str().unwrap()], &[], None);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, "orders built and deployed.\n"),
        "{}",
        again.stderr
    );

    // A task id the server never minted is the server's error, not a hang.
    let mut forged = pending.clone();
    forged["task"]["taskId"] = Value::String("no-such-task".into());
    let forged = temp("task-forged.json", &forged.to_string());
    let out = term(
        &[
            "resume",
            forged.to_str().unwrap(),
            "--answers",
            answers.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert_eq!(out.code, 5, "{}", out.stderr);
}
