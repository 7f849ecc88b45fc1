//! A throwaway `redis-server` for one run: loopback, a free port, no persistence, stopped by
//! its PID when dropped. The scaling runs keep tasks in it (`scale.rs`) and the DPoP replay
//! attack shares a replay store through it (`attack/dpop.rs`); the fleet run starts its own,
//! with an append-only file, because it restarts Redis and reads it back.

use std::process::{Child, Command, Stdio};

pub(crate) struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    /// Starts it and waits until it accepts connections (10 s at most).
    pub(crate) fn start() -> Result<Self, String> {
        let program = xtask_setup::require_program("redis-server")?;
        let port = super::fleet::free_port()?;
        let child = Command::new(&program)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        // Dropped on the error path below: the child is stopped either way.
        let redis = Redis { child, port };
        super::fleet::wait_for_port(port, "redis-server")?;
        Ok(redis)
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
