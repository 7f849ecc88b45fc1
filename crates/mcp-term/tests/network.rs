//! `mcp-term` against a network that misbehaves (`mcp-faults`), in both eras: a read-only
//! call the connection failed is sent again and printed, a side-effecting one is never sent
//! twice and exits 4 saying whether it may have run, and a stalled answer ends at `--timeout`.

mod out;

use out::Out;
use std::time::{Duration, Instant};

use mcp_faults::{Fault, Harness, Rule};

/// Runs `mcp-term` (off the runtime's threads, bounded) against the harness.
async fn term(harness: &Harness, era: &str, args: &[&str]) -> Out {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-term"));
    command
        .args(args)
        .args(["--era", era, "--timeout", "3", &harness.url()])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(15), command.output())
        .await
        .expect("mcp-term ended in time")
        .expect("mcp-term runs");
    Out::from(out)
}

const ERAS: [&str; 2] = ["2025-11-25", "2026-07-28"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_call_is_sent_again_and_a_charge_never_is() {
    tokio::time::timeout(Duration::from_secs(40), async {
        for era in ERAS {
            let harness = Harness::start().await;
            harness.fault(Rule::tool("lookup", Fault::ResetAfterForward));
            let out = term(&harness, era, &["call", "lookup", "key=k"]).await;
            assert_eq!(out.code, 0, "{era}: {}", out.stderr);
            assert!(out.stdout.contains("value of k"), "{era}: {}", out.stdout);
            assert_eq!(harness.proxy.count_tool("lookup"), 2, "{era}");

            for (fault, kind, ran) in [
                (Fault::ResetAfterForward, "interrupted", 1),
                (
                    Fault::Status {
                        code: 503,
                        retry_after: None,
                    },
                    "not_run",
                    0,
                ),
            ] {
                let before = harness.proxy.count_tool("charge");
                let executed = harness.counters.executed("charge");
                harness.fault(Rule::tool("charge", fault.clone()));
                let out = term(&harness, era, &["call", "charge"]).await;
                out.assert_failed(4, kind, &format!("{era} {fault:?}"));
                assert_eq!(
                    harness.proxy.count_tool("charge"),
                    before + 1,
                    "{era} {fault:?}: sent twice"
                );
                assert_eq!(
                    harness.counters.executed("charge"),
                    executed + ran,
                    "{era} {fault:?}"
                );
            }
        }
    })
    .await
    .expect("the test ran past its deadline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_answer_ends_at_the_timeout() {
    tokio::time::timeout(Duration::from_secs(20), async {
        for era in ERAS {
            let harness = Harness::start().await;
            // mcp-term asks for progress: the answer is an event stream, stalled after its first event.
            harness.fault(Rule::tool("lookup", Fault::Stall { events: 1 }));
            let started = Instant::now();
            let out = term(
                &harness,
                era,
                &["call", "lookup", "key=k", "steps:=3", "step_ms:=10"],
            )
            .await;
            out.assert_failed(4, "timeout", era);
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{era}: {:?}",
                started.elapsed()
            );
            assert_eq!(out.stdout, "");
        }
    })
    .await
    .expect("the test ran past its deadline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_the_network_leaves_a_lookup_answered_and_a_charge_sent_once() {
    tokio::time::timeout(Duration::from_secs(60), async {
        for era in ERAS {
            let legacy = era == "2025-11-25";
            let harness = Harness::start().await;
            let mut faults = vec![
                Fault::ResetBeforeForward,
                Fault::DropMidStream { events: 0 },
                Fault::Status {
                    code: 502,
                    retry_after: None,
                },
                Fault::TruncateBody { bytes: 10 },
                Fault::Delay(Duration::from_millis(100)),
            ];
            if legacy {
                faults.push(Fault::SessionNotFound);
            }
            for fault in faults {
                let lookups = harness.proxy.count_tool("lookup");
                harness.fault(Rule::tool("lookup", fault.clone()));
                let out = term(&harness, era, &["call", "lookup", "key=k"]).await;
                assert_eq!(out.code, 0, "{era} {fault:?}: {}", out.stderr);
                assert!(
                    out.stdout.contains("value of k"),
                    "{era} {fault:?}: {}",
                    out.stdout
                );
                let sent = if fault == Fault::Delay(Duration::from_millis(100)) {
                    1
                } else {
                    2
                };
                assert_eq!(
                    harness.proxy.count_tool("lookup"),
                    lookups + sent,
                    "{era} {fault:?}"
                );

                let charges = harness.proxy.count_tool("charge");
                harness.fault(Rule::tool("charge", fault.clone()));
                let out = term(&harness, era, &["call", "charge"]).await;
                assert_eq!(
                    harness.proxy.count_tool("charge"),
                    charges + 1,
                    "{era} {fault:?}: sent twice"
                );
                let expected = match &fault {
                    Fault::Delay(_) => None,
                    Fault::SessionNotFound => Some("not_run"),
                    _ => Some("interrupted"),
                };
                match expected {
                    None => assert_eq!(out.code, 0, "{era} {fault:?}: {}", out.stderr),
                    Some(kind) => out.assert_failed(4, kind, &format!("{era} {fault:?}")),
                }
            }
        }
    })
    .await
    .expect("the test ran past its deadline");
}

/// A batch file in the test's own folder.
fn batch_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-term-network-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_lists_the_tools_once_while_the_server_lets_it_keep_them() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let server = mcp_faults::TestServer::new().cache_hints(mcp::CacheHints {
            ttl_ms: 60_000,
            scope: mcp::types::common::CacheScope::Public,
        });
        let harness = Harness::with(server).await;
        let file = batch_file("twice.txt", "tools\n# again\ntools\ncall lookup key=k\n");
        let file = file.to_str().unwrap();

        let out = term(&harness, "2026-07-28", &["batch", file, "--verbose"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        // The listing of `tools`, `tools` again, and the one `call` builds its arguments with.
        assert_eq!(harness.proxy.count("tools/list"), 1);
        assert_eq!(
            out.stderr
                .matches("cache: tools/list answered from the client's cache, not the server\n")
                .count(),
            2,
            "{}",
            out.stderr
        );
        assert_eq!(out.stdout.matches("lookup").count(), 2, "{}", out.stdout);
        assert!(out.stdout.contains("value of k"), "{}", out.stdout);

        // Without --verbose nothing is said, and the cache still serves.
        let out = term(&harness, "2026-07-28", &["batch", file]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(harness.proxy.count("tools/list"), 2);
        assert!(!out.stderr.contains("cache:"), "{}", out.stderr);

        // 2025-11-25 has no caching hints: each listing goes to the server.
        let out = term(&harness, "2025-11-25", &["batch", file, "--verbose"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(harness.proxy.count("tools/list"), 5);
        assert!(!out.stderr.contains("cache:"), "{}", out.stderr);
    })
    .await
    .expect("the test ran past its deadline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_stops_at_the_first_line_that_fails_and_names_it() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let harness = Harness::start().await;
        let file = batch_file(
            "stops.txt",
            "call lookup key=a\ncall nosuch\ncall lookup key=b\n",
        );
        let out = term(&harness, "2026-07-28", &["batch", file.to_str().unwrap()]).await;
        assert_eq!(out.code, 6, "{}", out.stderr);
        assert_eq!(out.error()["error"]["kind"], "not_found");
        assert_eq!(
            out.error()["error"]["message"],
            "batch line 2 (call nosuch): the server has no tool \"nosuch\""
        );
        assert!(out.stdout.contains("value of a"), "{}", out.stdout);
        assert_eq!(harness.proxy.count_tool("lookup"), 1, "line 3 never ran");

        // A line that does not parse stops the batch before anything is sent.
        let file = batch_file("bad.txt", "call lookup key=a\ntools --era 2026-07-28\n");
        let out = term(&harness, "2026-07-28", &["batch", file.to_str().unwrap()]).await;
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(
            out.error()["error"]["message"],
            "batch line 2 (tools --era 2026-07-28): unexpected argument '--era' found"
        );
        assert_eq!(harness.proxy.count_tool("lookup"), 1, "nothing was sent");
    })
    .await
    .expect("the test ran past its deadline");
}
