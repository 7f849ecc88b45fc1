//! Real-terminal tests: `tmux` runs `mcp-term` in a pane, `send-keys` answers the form like a
//! person (one answer is invalid and must be asked again), `capture-pane` checks the screen.
//! `.ci/run` installs tmux; without it these tests fail and say so.

use std::process::Command;
use std::time::{Duration, Instant};

mod fake;
mod support;

use fake::{Fake, path_with, recording_opener, url_consent};
use support::{Http, example};

/// One detached tmux session on its own socket, killed when dropped.
struct Pane {
    socket: String,
    name: String,
}

impl Pane {
    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn start(name: &str, shell_command: &str) -> Pane {
        let pane = Pane {
            socket: format!("mcp-term-test-{}-{name}", std::process::id()),
            name: name.to_owned(),
        };
        let status = pane
            .tmux()
            .args([
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-s",
                name,
                shell_command,
            ])
            .status()
            .expect("tmux is not installed: `cargo xtask test` checks for it first, and `cargo xtask setup test` installs it");
        assert!(status.success(), "tmux new-session failed");
        pane
    }

    fn send(&self, keys: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.name, "-l", keys])
            .status()
            .unwrap();
        assert!(status.success());
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.name, "Enter"])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    /// Waits until the screen shows `text` (a guard against a hang, not a timing assertion).
    fn wait_for(&self, text: &str) -> String {
        let text = text.trim_end();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {text:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().args(["kill-server"]).status();
    }
}

fn command(era: &str) -> String {
    format!(
        "{} call delete_folder path=/tmp/project --era {era} -- {}; echo EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_mcp-term"),
        example("files").display()
    )
}

fn answer_the_delete_folder_form(era: &str) -> String {
    let pane = Pane::start(&format!("files-{}", era.replace('-', "")), &command(era));
    let screen = pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    assert!(
        screen.contains("── Files asks (tools/call delete_folder, round 1 of 10, "),
        "{screen}"
    );
    assert!(
        screen.contains("  /tmp/project has 2 file(s). Delete anyway?"),
        "{screen}"
    );
    assert!(
        screen.contains("    ok* (true or false): Delete the folder and everything in it."),
        "{screen}"
    );
    pane.send("a");
    pane.wait_for("ok* (y/n):");
    pane.send("maybe");
    pane.wait_for("! answer yes or no; try again");
    pane.send("y");
    pane.wait_for("[s]ubmit, [e]dit NAME, [d]ecline, [c]ancel?");
    pane.send("s");
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("    ok = yes\n"), "{screen}");
    assert!(screen.contains("deleted /tmp/project\nEXIT=0"), "{screen}");
    screen
}

#[test]
fn a_person_answers_the_files_form_on_2026_07_28_with_one_answer_asked_again() {
    let screen = answer_the_delete_folder_form("2026-07-28");
    assert!(screen.contains("round 1 of 10, 2026-07-28)"), "{screen}");
    println!("{}", screen.trim_end());
}

#[test]
fn a_person_answers_the_files_form_on_a_2025_11_25_session() {
    let screen = answer_the_delete_folder_form("2025-11-25");
    assert!(screen.contains("round 1 of 10, 2025-11-25)"), "{screen}");
}

#[test]
fn a_person_declines_from_the_review() {
    let pane = Pane::start("decline", &command("2026-07-28"));
    pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    pane.send("a");
    pane.wait_for("ok* (y/n):");
    pane.send("y");
    pane.wait_for("[s]ubmit, [e]dit NAME, [d]ecline, [c]ancel?");
    pane.send("d");
    let screen = pane.wait_for("EXIT=");
    assert!(
        screen.contains("declined: folder not deleted\nEXIT=0"),
        "{screen}"
    );
}

#[test]
fn ctrl_c_in_the_middle_of_a_form_exits_130() {
    let pane = Pane::start("interrupt", &command("2026-07-28"));
    pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    pane.send("a");
    pane.wait_for("ok* (y/n):");
    let status = pane
        .tmux()
        .args(["send-keys", "-t", &pane.name, "C-c"])
        .status()
        .unwrap();
    assert!(status.success());
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(
        screen.contains(r#"{"error":{"code":130,"kind":"interrupted""#),
        "{screen}"
    );
}

#[test]
fn a_url_request_shows_the_host_and_waits_for_consent() {
    let cmd = format!(
        "{} call pay_deposit booking_id=B-1225 --era 2025-11-25 -- {}; echo EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_mcp-term"),
        example("bistro").display()
    );
    let pane = Pane::start("url", &cmd);
    let screen = pane.wait_for("[a]ccept (open it yourself), [d]ecline, [c]ancel?");
    assert!(
        screen.contains("  A 20 EUR deposit confirms your booking."),
        "{screen}"
    );
    assert!(
        screen.contains("  open: https://pay.example.com/deposit/B-1225"),
        "{screen}"
    );
    assert!(screen.contains("  host: pay.example.com"), "{screen}");
    assert!(!screen.contains("! not https"), "{screen}");
    pane.send("a");
    let screen = pane.wait_for("EXIT=");
    assert!(
        screen.contains("  open this URL yourself: https://pay.example.com/deposit/B-1225"),
        "{screen}"
    );
    assert!(
        screen.contains("Complete the payment in your browser.\nEXIT=0"),
        "{screen}"
    );
}

/// A browser reads `\` as the end of an https host, so this URL goes to evil.example: the
/// consent screen says so, and `--open` opens exactly the address it shows.
#[test]
fn a_disguised_url_shows_the_host_a_browser_opens_and_opens_exactly_that() {
    let server = Fake::start(url_consent("https://evil.example\\@bank.example/login"));
    let opener = recording_opener("tmux");
    let cmd = format!(
        "PATH='{}' {} call pay --era 2026-07-28 --open {}; echo EXIT=$?; sleep 600",
        path_with(&opener),
        env!("CARGO_BIN_EXE_mcp-term"),
        server.url
    );
    let pane = Pane::start("disguised-url", &cmd);
    let screen = pane.wait_for("[a]ccept (open it yourself), [d]ecline, [c]ancel?");
    assert!(
        screen.contains(
            "  Sign in to pay.\n  open: https://evil.example/@bank.example/login\n  host: evil.example\n  \
             ! the server wrote it as https://evil.example\\@bank.example/login; a browser reads that as the address above\n"
        ),
        "{screen}"
    );
    assert!(!screen.contains("host: bank.example"), "{screen}");
    assert!(
        !opener.join("opened.txt").exists(),
        "nothing is opened before consent"
    );
    pane.send("a");
    let screen = pane.wait_for("EXIT=");
    assert!(
        screen.contains(
            "  opened https://evil.example/@bank.example/login in your browser\nthe person answered accept\nEXIT=0"
        ),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(opener.join("opened.txt")).unwrap(),
        "https://evil.example/@bank.example/login\n"
    );
}

/// A `.mcp.json` in the working directory that would run a command is shown to the person,
/// who says yes before it runs.
#[test]
fn a_person_is_asked_before_a_workspace_entry_runs_a_command() {
    let dir = std::env::temp_dir().join(format!("mcp-term-tmux-ws-{}", std::process::id()));
    let (ws, home) = (dir.join("ws"), dir.join("home"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let bin = example("files").display().to_string();
    std::fs::write(
        ws.join(".mcp.json"),
        format!(
            r#"{{"mcpServers": {{"files": {{"command": "{bin}", "env": {{"NOTE": "${{FILES_NOTE:-none}}"}}}}}}}}"#
        ),
    )
    .unwrap();
    let cmd = format!(
        "cd '{}' && HOME='{}' {} call delete_folder path=/tmp/empty @files; echo EXIT=$?; sleep 600",
        ws.display(),
        home.display(),
        env!("CARGO_BIN_EXE_mcp-term"),
    );
    let pane = Pane::start("workspace", &cmd);
    let screen = pane.wait_for("use it this once? [y]es, [n]o?");
    assert!(
        screen.contains(&format!(
            "── @files is defined by a workspace file: {} ──\n  \
             a file in the working directory comes with whatever was put there (a cloned repository can ship one)\n  \
             it would run the command [\"{bin}\"]\n  \
             it would read the environment variable(s) FILES_NOTE\n",
            ws.join(".mcp.json").display()
        )),
        "{screen}"
    );
    pane.send("y");
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("deleted /tmp/empty\nEXIT=0"), "{screen}");
}

#[test]
fn a_person_answers_a_sampling_request() {
    let server = Http::start("conformance-server", &["--port", "0"]);
    let cmd = format!(
        "{} call test_sampling 'prompt=Capital of France?' {} --sampling prompt; echo EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_mcp-term"),
        server.url
    );
    let pane = Pane::start("sampling", &cmd);
    let screen = pane.wait_for("reply (empty declines):");
    assert!(
        screen
            .contains("The server asks for a model's reply (sampling, deprecated on 2026-07-28)."),
        "{screen}"
    );
    assert!(screen.contains("  user: Capital of France?"), "{screen}");
    assert!(screen.contains("  maxTokens: 100"), "{screen}");
    pane.send("Paris");
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("LLM response: Paris\nEXIT=0"), "{screen}");
}

#[test]
fn a_person_answers_the_question_of_a_task_with_one_answer_asked_again() {
    let cmd = format!(
        "{} call run_build project=orders -- {}; echo EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_mcp-term"),
        example("builds").display()
    );
    let pane = Pane::start("task", &cmd);
    let screen = pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    assert!(
        screen.contains(
            "── builds asks (tools/call run_build (a task), round 1 of 10, 2026-07-28) ──"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("  orders built and passed its tests. Deploy it now?"),
        "{screen}"
    );
    assert!(screen.contains("task input_required"), "{screen}");
    pane.send("a");
    pane.wait_for("deploy* (y/n):");
    pane.send("perhaps");
    pane.wait_for("! answer yes or no; try again");
    pane.send("y");
    pane.wait_for("[s]ubmit, [e]dit NAME, [d]ecline, [c]ancel?");
    pane.send("s");
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("    deploy = yes\n"), "{screen}");
    assert!(
        screen.contains("orders built and deployed.\nEXIT=0"),
        "{screen}"
    );
    println!("{}", screen.trim_end());
}

/// The README shows `mcp-term` against the Bistro with the terminal text it prints: the same
/// command (the binaries themselves instead of `cargo run`), the same keys, the same screen.
#[test]
fn the_readme_shows_the_true_terminal_text() {
    let readme = include_str!("../../../README.md");
    let section = &readme[readme
        .find("## `mcp-term`")
        .expect("the README has an mcp-term section")..];
    let command = section
        .lines()
        .find(|l| l.starts_with("cargo run -q -p keel-mcp-term -- "))
        .expect("the README shows the command");
    let args = command
        .trim_start_matches("cargo run -q -p keel-mcp-term -- ")
        .split(" -- ")
        .next()
        .unwrap();
    assert_eq!(
        command.split(" -- ").nth(2),
        Some("cargo run -q --example bistro"),
        "{command}"
    );
    let start = section
        .find("```text\n")
        .expect("the README shows the screen")
        + 8;
    let shown = &section[start..start + section[start..].find("```").unwrap()];

    let cmd = format!(
        "{} {args} -- {}; echo EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_mcp-term"),
        example("bistro").display()
    );
    let pane = Pane::start("readme", &cmd);
    pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    pane.send("a");
    pane.wait_for("accept_alternative* (y/n):");
    pane.send("maybe");
    pane.wait_for("! answer yes or no; try again");
    pane.send("y");
    pane.wait_for("date [2025-12-26]:");
    pane.send("2025-12-27");
    pane.wait_for("[s]ubmit, [e]dit NAME, [d]ecline, [c]ancel?");
    pane.send("s");
    let screen = pane.wait_for("EXIT=");
    let printed = &screen[..screen.find("EXIT=").unwrap()];
    assert_eq!(printed, shown);
    assert!(screen.contains("EXIT=0"), "{screen}");
}

#[test]
fn ctrl_c_in_a_tasks_form_cancels_the_task() {
    let server = Http::start("builds", &["--http", "127.0.0.1:0"]);
    let url = server.url.clone();
    let term = env!("CARGO_BIN_EXE_mcp-term");
    // A first run without a terminal leaves the task waiting and its pending file.
    let first = Command::new(term)
        .args(["call", "run_build", "project=orders", &url])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(10));
    let dir = std::env::temp_dir().join(format!("mcp-term-tmux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pending = dir.join("pending.json");
    std::fs::write(&pending, &first.stdout).unwrap();

    // A person resumes it on a terminal and presses Ctrl-C in the form: the task is cancelled.
    let cmd = format!(
        "{term} resume {}; echo EXIT=$?; sleep 600",
        pending.display()
    );
    let pane = Pane::start("task-interrupt", &cmd);
    pane.wait_for("[a]nswer, [d]ecline, [c]ancel?");
    let status = pane
        .tmux()
        .args(["send-keys", "-t", &pane.name, "C-c"])
        .status()
        .unwrap();
    assert!(status.success());
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(
        screen.contains("mcp-term: interrupted (Ctrl-C); the task was cancelled\n"),
        "{screen}"
    );

    // So a later resume finds it cancelled instead of answering it.
    let answers = dir.join("yes.json");
    std::fs::write(&answers, r#"{"deploy": true}"#).unwrap();
    let later = Command::new(term)
        .args(["resume", pending.to_str().unwrap(), "--answers"])
        .arg(&answers)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&later.stderr);
    assert_eq!(later.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("task cancelled"), "{stderr}");
    assert!(later.stdout.is_empty());
}
