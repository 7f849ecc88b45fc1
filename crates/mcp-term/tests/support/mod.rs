//! What the process-level tests of `mcp-term` share: the built example servers, and one of
//! them over HTTP on a port the system chose for it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>/examples/<name>`, refused when missing or older than its sources.
pub(crate) fn example(name: &str) -> PathBuf {
    mcp_faults::built::example(name)
}

/// An example server over HTTP, stopped when dropped.
///
/// The server is started on port 0 and binds before it prints its address, so the port is
/// the one the system gave it. Picking a free port in the test and passing it on is a race:
/// until the server binds, another test's outgoing connection can take that port as its
/// local one (the server's bind then fails), and a probe connecting to a port nobody
/// listens on can connect to itself.
pub(crate) struct Http {
    child: Child,
    pub(crate) url: String,
}

impl Http {
    /// `args` put the server on port 0 (`--http 127.0.0.1:0`, `--port 0`); its first stderr
    /// line names the URL it serves.
    pub(crate) fn start(name: &str, args: &[&str]) -> Http {
        let mut child = Command::new(example(name))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the example starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines
            .next()
            .expect("the server says where it listens")
            .unwrap();
        let start = line
            .find("http://")
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let mut url = line[start..].trim().to_owned();
        if !url.ends_with("/mcp") {
            url.push_str("/mcp");
        }
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        assert!(
            !addr.ends_with(":0"),
            "{name} announced port 0 instead of the one it bound: {line:?}"
        );
        std::thread::spawn(move || for _ in lines {});
        // The server is listening once it has printed; a connection that fails here means
        // it died, and the test says so rather than timing out further on.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&addr).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{name} exited ({status}) after announcing {addr}");
            }
            assert!(Instant::now() < deadline, "{name} never accepted on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Http { child, url }
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
