//! A `redis-server` for one test: started on a loopback port with no persistence, waited for
//! until it accepts connections, killed on drop. Shared by the store's tests (`redis.rs`,
//! `tls.rs`) and the HTTP transport's fleet test (`fleet_redis.rs`, through `#[path]`), so the
//! three start it the same way. Debian's `redis-server` package; `.ci/run` installs it.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redis-server`, killed on drop.
pub(crate) struct RedisServer {
    child: Child,
    /// The port it accepts connections on (plain or TLS, as it was started).
    pub(crate) port: u16,
}

/// A loopback port free when asked.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl RedisServer {
    /// Plain `redis://` on a free port.
    pub(crate) fn start() -> RedisServer {
        Self::start_on(free_port())
    }

    /// Plain `redis://` on `port` (a test that restarts Redis on the port it had).
    pub(crate) fn start_on(port: u16) -> RedisServer {
        Self::spawn(port, &["--port", &port.to_string()], None)
    }

    /// `redis-server` with `args` (which name the port it listens on, `port`), on loopback
    /// without persistence; its stdout goes to `log` when given (quoted if it never listens).
    pub(crate) fn spawn(port: u16, args: &[&str], log: Option<&Path>) -> RedisServer {
        let stdout = match log {
            Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
            None => Stdio::null(),
        };
        let mut child = Command::new("redis-server")
            .args(args)
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
            .expect(
                "redis-server is not installed: `cargo xtask test` checks for it first, and \
                 `cargo xtask setup test` installs it",
            );
        for _ in 0..500 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return RedisServer { child, port };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        let said = log
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        panic!("redis-server did not listen on port {port}:\n{said}");
    }

    /// `redis://` on its port.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills it now and gives back its port.
    pub(crate) fn stop(mut self) -> u16 {
        self.kill();
        self.port
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
