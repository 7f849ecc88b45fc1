//! What the kernel says about the server process: CPU time and memory.

use std::sync::OnceLock;

/// User + system CPU time of the whole process (all threads), in microseconds.
pub fn cpu_us(pid: u32) -> Result<u64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are
    // state (3) ... utime (14), stime (15).
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or("bad stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| format!("bad stat field {n}"))
    };
    let ticks = field(14)? + field(15)?;
    Ok(ticks * 1_000_000 / clock_ticks())
}

/// `VmRSS` (current) or `VmHWM` (peak) of the process, in KiB.
pub fn memory_kb(pid: u32, key: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {key} in /proc/{pid}/status"))
}

fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    })
}
