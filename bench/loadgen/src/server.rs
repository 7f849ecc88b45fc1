//! The server under test, started by the load generator itself (loopback, a free port), so it
//! knows its PID; stopped by that PID.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::process::Child;

use crate::{Settings, procfs};

/// How long to let the allocator and the server settle before reading RSS.
pub const SETTLE: Duration = Duration::from_millis(500);

/// The server under test, started by us.
pub struct Server {
    child: Child,
    pub pid: u32,
    pub addr: SocketAddr,
    spawned: Instant,
}

impl Server {
    /// Starts `settings.command` (`{port}` and `{tools}` replaced) and returns at once: the
    /// HTTP suite times the cold start from here ([`Server::first_answer`]).
    pub fn spawn(settings: &Settings, tools: usize) -> Result<Self, String> {
        let port = crate::http::free_port()?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let args: Vec<String> = settings.command[1..]
            .iter()
            .map(|a| {
                a.replace("{port}", &port.to_string())
                    .replace("{tools}", &tools.to_string())
            })
            .collect();
        let spawned = Instant::now();
        let child = tokio::process::Command::new(&settings.command[0])
            .args(&args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start {:?}: {e}", settings.command))?;
        let pid = child.id().ok_or("server has no pid")?;
        Ok(Self {
            child,
            pid,
            addr,
            spawned,
        })
    }

    /// Waits for the server's first correct answer; the time since it was spawned.
    pub async fn first_answer(&mut self) -> Result<Duration, String> {
        crate::http::first_answer(self.addr, self.spawned, &mut self.child).await
    }

    /// [`Server::spawn`], its first correct answer, and [`SETTLE`].
    pub async fn start(settings: &Settings, tools: usize) -> Result<Self, String> {
        let mut server = Self::spawn(settings, tools)?;
        server.first_answer().await?;
        tokio::time::sleep(SETTLE).await;
        Ok(server)
    }

    pub fn rss(&self) -> Result<u64, String> {
        procfs::memory_kb(self.pid, "VmRSS")
    }

    /// Stops our own child, by its PID.
    pub async fn stop(&mut self) {
        let _ = self.child.kill().await;
    }
}
