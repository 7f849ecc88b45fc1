//! `cargo xtask fleet`: three `fleet` instances behind nginx (plain round-robin, nothing
//! sticky) on a shared Redis, on loopback, under a bounded load, through a three-phase key
//! rotation by rolling restarts (SIGTERM, so each instance drains), one SIGKILL, a restart of
//! Redis (its append-only file on) and a 2 s stall of Redis (SIGSTOP). Then, in steady state,
//! the notification check: a `subscriptions/listen` stream and a legacy GET stream held on
//! every instance each hear every announcement raised on any instance exactly once.
//!
//! The load generator is plain blocking HTTP/1.1 over keep-alive connections to nginx, one
//! thread per concurrent flow. It never retries a failed leg: a fleet that drops a request
//! shows up as a failed or lost flow, not as a slower one. Flow kinds:
//!
//! - `plain`: one 2026-07-28 `tools/call` that answers at once;
//! - `mrtr-2`: `restart`, one question (`input_required`, then the retry with the answer and
//!   the sealed `requestState`, which any instance may receive);
//! - `mrtr-3`: `deploy`, two questions one after the other (three rounds);
//! - `task`: `migrate` as a task (Tasks extension): `tasks/get` until it asks, `tasks/update`
//!   with the answer, `tasks/get` until it completes, all through nginx (any instance);
//! - `legacy`: a 2025-11-25 session: `initialize`, `tools/call status`, `DELETE`;
//! - `sse-resume`: a 2025-11-25 session whose `restart` call elicits on the POST's SSE stream;
//!   the stream is cut after the question, the answer POSTed, and the result read from a GET
//!   with `Last-Event-ID` (each leg on whichever instance nginx picks: the answer is handed to
//!   the instance that asked over the fleet's bus);
//! - `kept`: three 2025-11-25 sessions opened at the start, one directly on each instance,
//!   called through nginx every 100 ms for the whole run: each must outlive the rolling
//!   restarts and the SIGKILL of the instance that opened it.
//!
//! Outcomes: completed; failed with a clean error (an HTTP error status or a JSON-RPC error,
//! with its reason); lost (no answer within the deadline, a broken connection, or a wrong
//! answer). Exit status: non-zero on any lost flow, and on any clean failure that no fault of
//! the schedule explains. A failure is attributed by what it names, not by when it happened
//! (see [`cause`]): the killed process by its fleet member name (a question it asked, a stream
//! it ran, a task it worked on), Redis by name (every store error says "Redis"); time only
//! orders cause before effect. Every task that completed is read again after the Redis
//! restart and must still be there with its result. `--plant hang|lost-task` plants a real
//! problem, which must fail the run.
//! A round in flight on the killed instance that nginx re-sent elsewhere must complete there:
//! the replay guard hands a dead instance's unfinished claim over (see `mcp-store-redis`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{cargo, run, workspace_root};

const KINDS: [&str; 7] = [
    "plain",
    "mrtr-2",
    "mrtr-3",
    "task",
    "task-rerun",
    "legacy",
    "sse-resume",
];
/// The kind of the long-lived sessions' calls, reported after the load's kinds.
const KEPT: &str = "kept";
/// How many tasks of each tool are left running on the instance about to be killed.
const PLANTED: usize = 3;
/// How many times `sse-resume` resumes a stream that ended before its answer.
const RESUMPTIONS: usize = 3;
/// How many announcements the notification check raises.
const NOTICES: u64 = 30;
/// Task flows that completed (task id, result text): each is read again at the end of the run.
static COMPLETED_TASKS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// A leg that gets no answer in this long is lost (hung).
const LEG_DEADLINE: Duration = Duration::from_secs(30);
/// How long a task flow polls before calling it lost.
const TASK_DEADLINE: Duration = Duration::from_secs(60);
/// How long after phase 2 is rolled out phase 3 starts (see the schedule).
const PHASE3_GAP: Duration = Duration::from_secs(5);
const KEY_A: &str = "fleet-xtask-key-one-0123456789abcdef0123456789";
const KEY_B: &str = "fleet-xtask-key-two-0123456789abcdef0123456789";

struct Options {
    flows: usize,
    concurrency: usize,
    release: bool,
    /// One instance on its in-memory stores (no Redis), no restarts: the single-process
    /// default under the same load and checks.
    single: bool,
    /// A real problem planted in the run, which must then fail naming it.
    plant: Option<Plant>,
}

/// A real problem `--plant` puts in a run, to show the run fails on it and says which.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Plant {
    /// One instance stops answering (SIGSTOP) for longer than a leg's deadline: the flows it
    /// holds hang, and no injected fault explains that.
    Hang,
    /// A completed task's record is deleted from Redis behind the fleet's back: the task is
    /// lost, and the read-back at the end of the run finds it gone.
    LostTask,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        flows: 10_000,
        concurrency: 32,
        release: false,
        single: false,
        plant: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or(format!("{name} needs a positive number"))
        };
        match arg.as_str() {
            "--flows" => o.flows = number("--flows")?,
            "--concurrency" => o.concurrency = number("--concurrency")?.min(256),
            "--release" => o.release = true,
            "--single" => o.single = true,
            "--plant" => {
                o.plant = Some(match args.next().map(String::as_str) {
                    Some("hang") => Plant::Hang,
                    Some("lost-task") => Plant::LostTask,
                    other => {
                        return Err(format!(
                            "--plant takes `hang` or `lost-task`, not {other:?}"
                        ));
                    }
                })
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: cargo xtask fleet [--flows N] [--concurrency C] [--release] [--single] [--plant hang|lost-task]"
                ));
            }
        }
    }
    if o.single && o.plant.is_some() {
        return Err("--plant needs the fleet (it is not for --single)".into());
    }
    Ok(o)
}

pub(crate) fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

pub(crate) fn wait_for_port(port: u16, what: &str) -> Result<(), String> {
    for _ in 0..1000 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(format!("{what} did not listen on port {port}"))
}

/// One instance of the fleet, restartable with another key ring.
struct Instance {
    name: String,
    port: u16,
    child: Option<Child>,
    /// The fleet member its running process is (`i2~9d72d840`), from its log: what the
    /// failures its death causes name.
    member: Option<String>,
}

struct Fleet {
    binary: PathBuf,
    dir: PathBuf,
    /// The fleet's Redis; `None`: every instance on its in-memory stores.
    redis_url: Option<String>,
    instances: Vec<Instance>,
}

impl Fleet {
    fn start(&mut self, i: usize, keys: &str) -> Result<(), String> {
        let instance = &mut self.instances[i];
        let log_path = self.dir.join(format!("{}.log", instance.name));
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| e.to_string())?;
        let mut command = Command::new(&self.binary);
        if let Some(url) = &self.redis_url {
            command.env("MCP_REDIS_URL", url);
        }
        let child = command
            .args(["--http", &format!("127.0.0.1:{}", instance.port)])
            .env("MCP_STATE_KEYS", keys)
            .env("MCP_INSTANCE", &instance.name)
            .env("MCP_DRAIN_GRACE_MS", "5000")
            .env("MCP_TRUSTED_PROXIES", "127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", self.binary.display()))?;
        instance.child = Some(child);
        wait_ready(instance.port)?;
        // Written before the process listens: the log's last such line is this process's.
        instance.member = self.redis_url.as_ref().and_then(|_| {
            fs::read_to_string(&log_path).ok().and_then(|log| {
                log.lines()
                    .rev()
                    .find_map(|l| l.strip_prefix("fleet member "))
                    .map(|m| m.trim().to_owned())
            })
        });
        if self.redis_url.is_some() && instance.member.is_none() {
            return Err(format!(
                "{} did not log its fleet member name (\"fleet member …\")",
                instance.name
            ));
        }
        Ok(())
    }

    /// SIGTERM, then wait for the drain to finish and the process to exit.
    fn stop(&mut self, i: usize) -> Result<Duration, String> {
        let started = Instant::now();
        if let Some(mut child) = self.instances[i].child.take() {
            signal(&child, "TERM")?;
            let _ = child.wait();
        }
        Ok(started.elapsed())
    }

    fn kill(&mut self, i: usize) -> Result<(), String> {
        if let Some(mut child) = self.instances[i].child.take() {
            signal(&child, "KILL")?;
            let _ = child.wait();
        }
        Ok(())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for instance in &mut self.instances {
            if let Some(mut child) = instance.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn signal(child: &Child, name: &str) -> Result<(), String> {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{name} {} failed", child.id()))
    }
}

/// Waits until the instance's readiness endpoint answers 200.
fn wait_ready(port: u16) -> Result<(), String> {
    for _ in 0..1000 {
        if let Ok(mut conn) = Conn::open(port)
            && let Ok(r) = conn.send("GET", "/ready", &[], "")
            && r.status == 200
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(format!("the instance on port {port} never became ready"))
}

/// A child process stopped on drop (Redis, nginx): SIGTERM first, so that nginx's master
/// stops its workers (a SIGKILLed master leaves them running), SIGKILL after 5 s.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if signal(&self.0, "TERM").is_ok() {
            for _ in 0..500 {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn fleet(args: &[String]) -> Result<(), String> {
    let o = options(args)?;
    let started = Instant::now();
    // `cargo xtask fleet` has installed both (xtask/setup), or stopped naming them.
    let redis_server = xtask_setup::require_program("redis-server")?;
    let nginx = xtask_setup::require_program("nginx")?;
    let mut build = cargo();
    build.args(["build", "--locked", "--workspace", "--example", "fleet"]);
    if o.release {
        build.arg("--release");
    }
    run(&mut build)?;
    let root = workspace_root();
    let binary = root
        .join("target")
        .join(if o.release { "release" } else { "debug" })
        .join("examples/fleet");
    let dir = root.join("target/fleet");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("tmp")).map_err(|e| e.to_string())?;

    let redis_port = free_port()?;
    let redis_dir = dir.join("redis");
    fs::create_dir_all(&redis_dir).map_err(|e| e.to_string())?;
    let mut redis = if o.single {
        None
    } else {
        let guard = Guard(spawn_redis(&redis_server, redis_port, &redis_dir)?);
        wait_for_port(redis_port, "redis-server")?;
        Some(guard)
    };

    let mut fleet = Fleet {
        binary,
        dir: dir.clone(),
        redis_url: (!o.single).then(|| format!("redis://127.0.0.1:{redis_port}/")),
        instances: Vec::new(),
    };
    let size = if o.single { 1 } else { 3 };
    for n in 1..=size {
        fleet.instances.push(Instance {
            name: format!("i{n}"),
            port: free_port()?,
            child: None,
            member: None,
        });
    }
    for i in 0..size {
        fleet.start(i, KEY_A)?;
    }

    let nginx_port = free_port()?;
    let template = fs::read_to_string(root.join("examples/fleet/nginx.conf"))
        .map_err(|e| format!("examples/fleet/nginx.conf: {e}"))?;
    let mut conf = template.replace(
        "listen 127.0.0.1:8080;",
        &format!("listen 127.0.0.1:{nginx_port};"),
    );
    for n in 0..3 {
        // One instance: the three upstream entries all name it.
        let instance = &fleet.instances[n % size];
        conf = conf.replace(
            &format!("127.0.0.1:800{}", n + 1),
            &format!("127.0.0.1:{}", instance.port),
        );
    }
    fs::write(dir.join("nginx.conf"), conf).map_err(|e| e.to_string())?;
    let _nginx = Guard(
        Command::new(&nginx)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.join("nginx.log")).map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("nginx: {e}"))?,
    );
    wait_for_port(nginx_port, "nginx")?;
    eprintln!(
        "xtask: fleet up: {}, instances {:?}, nginx :{nginx_port}; {} flows, {} at once",
        if o.single {
            "in-memory stores (no Redis)".to_owned()
        } else {
            format!("redis :{redis_port}")
        },
        fleet
            .instances
            .iter()
            .map(|i| format!("{}:{}", i.member.as_deref().unwrap_or(&i.name), i.port))
            .collect::<Vec<_>>(),
        o.flows,
        o.concurrency
    );

    // Sessions that live through the whole run, each opened on one instance.
    let mut kept = Vec::new();
    for instance in &fleet.instances {
        let (_, session) = legacy_init(instance.port)
            .map_err(|e| format!("a kept session on {}: {e:?}", instance.name))?;
        kept.push(session);
    }
    // What the schedule did to the fleet, for the failures it explains.
    let mut faults: Vec<Fault> = Vec::new();

    // The load.
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let load_start = Instant::now();
    // Flows go on past N until the schedule is done, so every event happens under load.
    let finished = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..o.concurrency {
        let next = next.clone();
        let done = done.clone();
        let results = results.clone();
        let flows = o.flows;
        let finished = finished.clone();
        workers.push(std::thread::spawn(move || {
            let mut conn: Option<Conn> = None;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= flows && finished.load(Ordering::Relaxed) {
                    return;
                }
                let kind = KINDS[n % KINDS.len()];
                let start = Instant::now();
                let result = run_flow(kind, n, nginx_port, &mut conn);
                let outcome = Outcome {
                    kind,
                    result,
                    took: start.elapsed(),
                    started: start,
                };
                if let Ok(mut r) = results.lock() {
                    r.push(outcome);
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    let keeper = {
        let results = results.clone();
        let finished = finished.clone();
        std::thread::spawn(move || {
            let mut conn: Option<Conn> = None;
            let mut n = 0;
            // At least one round, then rounds until the load is over.
            loop {
                for session in &kept {
                    n += 1;
                    let start = Instant::now();
                    let result = kept_call(session, n, nginx_port, &mut conn);
                    if let Ok(mut r) = results.lock() {
                        r.push(Outcome {
                            kind: KEPT,
                            result,
                            took: start.elapsed(),
                            started: start,
                        });
                    }
                }
                if finished.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    // The schedule: three rotation phases by rolling restarts, then one SIGKILL.
    let mut events = Vec::new();
    let at = |fraction: f64| (o.flows as f64 * fraction) as usize;
    let wait_until = |n: usize| {
        while done.load(Ordering::Relaxed) < n {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut schedule_error = None;
    let phases = if o.single {
        Vec::new()
    } else {
        vec![
            (0.10, format!("{KEY_A},{KEY_B}"), "phase 1: [OLD, NEW]"),
            (0.30, format!("{KEY_B},{KEY_A}"), "phase 2: [NEW, OLD]"),
            (0.50, KEY_B.to_owned(), "phase 3: [NEW]"),
        ]
    };
    for (n, (fraction, keys, label)) in phases.iter().enumerate() {
        wait_until(at(*fraction));
        if n == 2 {
            // Phase 3 drops OLD: only once no state sealed with it can still come back. The
            // protocol's wait is the state lifetime (10 min); here, every flow sealed under
            // OLD ended long before this (flows take milliseconds, legs at most LEG_DEADLINE
            // before counting as lost), so a few seconds stand in for it.
            std::thread::sleep(PHASE3_GAP);
        }
        for i in 0..3 {
            faults.push(Fault::Drained {
                member: fleet.instances[i].member.clone().unwrap_or_default(),
                at: Instant::now(),
            });
            let drained = match fleet.stop(i) {
                Ok(d) => d,
                Err(e) => {
                    schedule_error = Some(e);
                    break;
                }
            };
            if let Err(e) = fleet.start(i, keys) {
                schedule_error = Some(e);
                break;
            }
            events.push(format!(
                "{label}: i{} restarted (drain {} ms) as {} at flow {}",
                i + 1,
                drained.as_millis(),
                fleet.instances[i].member.as_deref().unwrap_or("-"),
                done.load(Ordering::Relaxed)
            ));
        }
    }
    if schedule_error.is_none() && o.plant == Some(Plant::Hang) {
        // Planted: i3 stops answering, longer than a leg may wait, under load.
        wait_until(at(0.60));
        let hung = &fleet.instances[2];
        if let Some(child) = &hung.child {
            let stopped = signal(child, "STOP").map(|()| {
                std::thread::sleep(LEG_DEADLINE + Duration::from_secs(5));
            });
            if let Err(e) = stopped.and(signal(child, "CONT")) {
                schedule_error = Some(format!("planting a hang: {e}"));
            }
            events.push(format!(
                "planted: {} stopped answering (SIGSTOP) for {} s at flow {}",
                hung.name,
                (LEG_DEADLINE + Duration::from_secs(5)).as_secs(),
                done.load(Ordering::Relaxed)
            ));
        }
    }
    let mut planted = None;
    let mut killed_member = String::new();
    if schedule_error.is_none() && !o.single {
        wait_until(at(0.70));
        let killed = 1;
        match plant_tasks(fleet.instances[killed].port) {
            Ok(p) => planted = Some(p),
            Err(e) => schedule_error = Some(format!("planting tasks on i{}: {e}", killed + 1)),
        }
        killed_member = fleet.instances[killed].member.clone().unwrap_or_default();
        faults.push(Fault::Killed {
            member: killed_member.clone(),
            at: Instant::now(),
        });
        let _ = fleet.kill(killed);
        events.push(format!(
            "SIGKILL i{} ({killed_member}) at flow {}",
            killed + 1,
            done.load(Ordering::Relaxed)
        ));
        std::thread::sleep(Duration::from_secs(1));
        match fleet.start(killed, KEY_B) {
            Ok(()) => events.push(format!(
                "i{} restarted as {} at flow {}",
                killed + 1,
                fleet.instances[killed].member.as_deref().unwrap_or("-"),
                done.load(Ordering::Relaxed)
            )),
            Err(e) => schedule_error = Some(e),
        }
    }
    if let (None, Some(redis)) = (&schedule_error, redis.as_mut()) {
        // Redis restarts under load (SIGTERM: it writes its append-only file and exits).
        wait_until(at(0.80));
        let down = Instant::now();
        let restarted = signal(&redis.0, "TERM")
            .and_then(|()| redis.0.wait().map_err(|e| e.to_string()))
            .and_then(|_| spawn_redis(&redis_server, redis_port, &redis_dir))
            .and_then(|child| {
                redis.0 = child;
                wait_redis_ready(redis_port)
            });
        let up = Instant::now();
        faults.push(Fault::RedisRestart { at: down });
        match restarted {
            Ok(()) => events.push(format!(
                "Redis restarted (away {} ms, until it had loaded its file) at flow {}",
                up.duration_since(down).as_millis(),
                done.load(Ordering::Relaxed)
            )),
            Err(e) => schedule_error = Some(format!("restarting Redis: {e}")),
        }
    }
    if let (None, Some(redis)) = (&schedule_error, redis.as_mut()) {
        // Redis stalls for 2 s: connections stay open, nothing answers.
        wait_until(at(0.90));
        faults.push(Fault::RedisStall { at: Instant::now() });
        let stall = signal(&redis.0, "STOP").map(|()| {
            std::thread::sleep(Duration::from_secs(2));
        });
        let resumed = signal(&redis.0, "CONT");
        match stall.and(resumed) {
            Ok(()) => events.push(format!(
                "Redis stalled (SIGSTOP) for 2 s at flow {}",
                done.load(Ordering::Relaxed)
            )),
            Err(e) => schedule_error = Some(format!("stalling Redis: {e}")),
        }
    }
    finished.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.join();
    }
    let _ = keeper.join();
    let load_took = load_start.elapsed();

    let results = results
        .lock()
        .map(|mut r| std::mem::take(&mut *r))
        .unwrap_or_default();
    if o.plant == Some(Plant::LostTask) {
        // Planted: a completed task's record vanishes from the store.
        let first = COMPLETED_TASKS
            .lock()
            .ok()
            .and_then(|t| t.first().map(|(id, _)| id.clone()));
        match first {
            Some(id) => match redis_command(redis_port, &["DEL", &format!("fleet:task:{id}")]) {
                Ok(reply) if reply.starts_with(":1") => {
                    events.push(format!("planted: task {id} deleted from Redis"));
                }
                Ok(reply) => {
                    schedule_error = Some(format!("planting a lost task: DEL answered {reply}"));
                }
                Err(e) => schedule_error = Some(format!("planting a lost task: {e}")),
            },
            None => schedule_error = Some("planting a lost task: no task completed".into()),
        }
    }
    for event in &events {
        println!("  {event}");
    }
    let mut verdict = report(&results, &faults);
    if let Some(planted) = planted {
        match check_planted(&planted, nginx_port, &killed_member) {
            Ok(line) => println!("  {line}"),
            Err(e) => verdict = verdict.and(Err(e)),
        }
    }
    match recheck_tasks(nginx_port) {
        Ok(line) => println!("  {line}"),
        Err(e) => verdict = verdict.and(Err(e)),
    }
    let ports: Vec<u16> = fleet.instances.iter().map(|i| i.port).collect();
    match notification_check(&ports, nginx_port) {
        Ok(line) => println!("  {line}"),
        Err(e) => verdict = verdict.and(Err(e)),
    }
    let nginx_log = fs::read_to_string(dir.join("nginx.log")).unwrap_or_default();
    let refused = nginx_log.matches("connect() failed (111").count();
    let resent = nginx_log
        .lines()
        .filter(|l| l.contains("while reading response header from upstream"))
        .count();
    println!(
        "  nginx: {refused} connection(s) refused by a restarting instance (passed to the next), \
         {resent} request(s) cut after they were sent (by the SIGKILL, or reset in a draining \
         listener's accept queue), re-sent to the next (non_idempotent)"
    );
    println!(
        "fleet: {} flows in {:.1} s (whole run {:.1} s)",
        results.len(),
        load_took.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if let Some(e) = schedule_error {
        return Err(format!("the rotation/crash schedule failed: {e}"));
    }
    verdict
}

struct Outcome {
    kind: &'static str,
    result: Result<(), Failure>,
    took: Duration,
    started: Instant,
}

#[derive(Debug)]
enum Failure {
    /// A clean refusal: the reason.
    Clean(String),
    /// Hung, broken or wrong.
    Lost(String),
}

fn percentile(sorted: &[Duration], p: f64) -> String {
    if sorted.is_empty() {
        return "-".into();
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    format!("{:.1}", sorted[i].as_secs_f64() * 1000.0)
}

/// What the schedule did to the fleet: the faults a failure may be attributed to.
#[derive(Clone, Debug)]
enum Fault {
    /// A rolling restart's SIGTERM: the instance drained. A drain loses nothing, so it
    /// explains no failure; a failure naming its member is reported as one.
    Drained { member: String, at: Instant },
    /// The SIGKILL of fleet member `member` (`i2~9d72d840`).
    Killed { member: String, at: Instant },
    /// Redis restarted (SIGTERM, then started again on its append-only file).
    RedisRestart { at: Instant },
    /// Redis stalled (SIGSTOP for 2 s).
    RedisStall { at: Instant },
}

impl Fault {
    fn at(&self) -> Instant {
        match self {
            Fault::Drained { at, .. }
            | Fault::Killed { at, .. }
            | Fault::RedisRestart { at }
            | Fault::RedisStall { at } => *at,
        }
    }

    fn label(&self) -> String {
        match self {
            Fault::Drained { member, .. } => format!("SIGTERM (drain) of {member}"),
            Fault::Killed { member, .. } => format!("SIGKILL of {member}"),
            Fault::RedisRestart { .. } => "Redis restart".into(),
            Fault::RedisStall { .. } => "Redis stall (SIGSTOP 2 s)".into(),
        }
    }
}

/// The fault that explains a clean failure, from what the failure names, not from when it
/// happened: a process that is gone or was lost (the killed member, by name), or Redis (the
/// stores name it in every error). The only use of time is causality: a fault explains only
/// a failure of a flow that ended after the fault began. `None`: nothing the schedule did
/// explains it, and it is a problem.
fn cause<'f>(why: &str, ended: Instant, faults: &'f [Fault]) -> Option<&'f Fault> {
    let before = |f: &&Fault| f.at() <= ended;
    // A process that died: its clean failures name it ("… (i2~9d72d840) is gone …", "The
    // worker running this task (i2~9d72d840) was lost").
    let process_gone = why.contains("is gone") || why.contains("was lost");
    if process_gone
        && let Some(killed) = faults.iter().filter(before).find(
            |f| matches!(f, Fault::Killed { member, .. } if !member.is_empty() && why.contains(member.as_str())),
        )
    {
        return Some(killed);
    }
    if !why.contains("Redis") {
        return None;
    }
    // A Redis failure: a command with no answer is the stall's; a connection refused, reset
    // or broken is the restart's. Either falls back on the other kind of Redis fault that came
    // before it (a stall can break a connection; a restart can leave a command unanswered),
    // and one that does not say which (the replay guard's "cannot answer") is the latest's.
    let timed_out = why.contains("no answer within") || why.contains("timed out");
    let broken = [
        "refused",
        "reset",
        "broken pipe",
        "closed",
        "LOADING",
        "end of file",
    ]
    .iter()
    .any(|w| why.contains(w));
    let redis = |f: &&Fault| matches!(f, Fault::RedisRestart { .. } | Fault::RedisStall { .. });
    let latest = faults
        .iter()
        .filter(before)
        .filter(redis)
        .max_by_key(|f| f.at());
    let restart = faults
        .iter()
        .filter(before)
        .rfind(|f| matches!(f, Fault::RedisRestart { .. }));
    let stall = faults
        .iter()
        .filter(before)
        .rfind(|f| matches!(f, Fault::RedisStall { .. }));
    match (timed_out, broken) {
        (true, false) => stall.or(restart),
        (false, true) => restart.or(stall),
        _ => latest,
    }
}

fn report(results: &[Outcome], faults: &[Fault]) -> Result<(), String> {
    println!();
    println!("| flow | completed | failed (clean) | lost | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|---|");
    let mut problems = Vec::new();
    let mut reasons: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut retrying = 0usize;
    // Clean failures by the fault that explains them: (cause, flow) → count.
    let mut explained: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for kind in KINDS.into_iter().chain([KEPT]) {
        let of_kind: Vec<&Outcome> = results.iter().filter(|o| o.kind == kind).collect();
        let completed = of_kind.iter().filter(|o| o.result.is_ok()).count();
        let mut clean = 0;
        let mut lost = 0;
        for o in &of_kind {
            match &o.result {
                Ok(()) => {}
                Err(Failure::Clean(why)) => {
                    clean += 1;
                    *reasons.entry((kind, format!("failed: {why}"))).or_default() += 1;
                    // Flows a retrying client would have completed: a 502/503 before an answer.
                    if why.starts_with("HTTP 502") || why.starts_with("HTTP 503") {
                        retrying += 1;
                    }
                    match cause(why, o.started + o.took, faults) {
                        Some(fault) => *explained.entry((fault.label(), kind)).or_default() += 1,
                        None => problems.push(format!("{kind}: {why} (no fault explains it)")),
                    }
                }
                Err(Failure::Lost(why)) => {
                    lost += 1;
                    *reasons.entry((kind, format!("lost: {why}"))).or_default() += 1;
                    problems.push(format!("{kind} lost: {why}"));
                }
            }
        }
        let mut times: Vec<Duration> = of_kind
            .iter()
            .filter(|o| o.result.is_ok())
            .map(|o| o.took)
            .collect();
        times.sort();
        println!(
            "| {kind} | {completed} | {clean} | {lost} | {} | {} |",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
    println!();
    for ((kind, why), n) in &reasons {
        println!("  {kind}: {n} × {why}");
    }
    if !explained.is_empty() {
        println!();
        println!("| clean failures caused by | flow | count |");
        println!("|---|---|---|");
        for ((fault, kind), n) in &explained {
            println!("| {fault} | {kind} | {n} |");
        }
        println!();
    }
    println!("  a client retrying once on 502/503 would have completed {retrying} more flow(s)");
    if problems.is_empty() {
        Ok(())
    } else {
        problems.sort();
        problems.dedup();
        Err(format!(
            "{} problem kind(s): {}",
            problems.len(),
            problems.into_iter().take(10).collect::<Vec<_>>().join("; ")
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// The flows.

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "xtask-fleet", "version": "1"}
    })
}

fn tasks_caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// One 2026-07-28 request through nginx on the worker's keep-alive connection. A broken
/// connection is not retried: the leg is lost, and the next leg opens a new connection.
fn modern(
    conn: &mut Option<Conn>,
    port: u16,
    id: usize,
    method: &str,
    name: &str,
    params: Value,
) -> Result<Value, Failure> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    let response = send_on(conn, port, "POST", &headers, &body)?;
    json_answer(&response)
}

fn send_on(
    conn: &mut Option<Conn>,
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Response, Failure> {
    if conn.is_none() {
        *conn = Some(Conn::open(port).map_err(|e| Failure::Lost(format!("connect: {e}")))?);
    }
    let Some(c) = conn.as_mut() else {
        return Err(Failure::Lost("no connection".into()));
    };
    match c.send(method, "/mcp", headers, body) {
        Ok(response) => {
            if response.close {
                *conn = None;
            }
            Ok(response)
        }
        Err(e) => {
            *conn = None;
            Err(Failure::Lost(e))
        }
    }
}

fn json_answer(response: &Response) -> Result<Value, Failure> {
    let text = String::from_utf8_lossy(&response.body);
    let value: Option<Value> = serde_json::from_str(&text).ok();
    if response.status != 200 {
        let detail = value
            .as_ref()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(80).collect());
        return Err(Failure::Clean(format!(
            "HTTP {} {}",
            response.status,
            detail.trim()
        )));
    }
    let Some(value) = value else {
        return Err(Failure::Lost(format!(
            "not JSON: {}",
            text.chars().take(80).collect::<String>()
        )));
    };
    if let Some(message) = value["error"]["message"].as_str() {
        return Err(Failure::Clean(format!(
            "JSON-RPC {} {message}",
            value["error"]["code"]
        )));
    }
    Ok(value)
}

/// The start of a response's body, for a failure's reason.
fn body_text(response: &Response) -> String {
    String::from_utf8_lossy(&response.body)
        .chars()
        .take(120)
        .collect::<String>()
        .trim()
        .to_owned()
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

fn expect_text(result: &Value, expected: &str) -> Result<(), Failure> {
    if text_of(result) == expected {
        Ok(())
    } else {
        Err(Failure::Lost(format!("wrong answer: {result}")))
    }
}

fn run_flow(kind: &str, n: usize, port: u16, conn: &mut Option<Conn>) -> Result<(), Failure> {
    let service = format!("svc{n}");
    match kind {
        "plain" => {
            let r = modern(
                conn,
                port,
                1,
                "tools/call",
                "status",
                json!({"name": "status", "arguments": {"service": service}, "_meta": meta(json!({}))}),
            )?;
            expect_text(&r["result"], &format!("{service} is healthy."))
        }
        "mrtr-2" => {
            let args = json!({"service": service});
            let round = |extra: Value, id: usize, conn: &mut Option<Conn>| {
                let mut params = json!({"name": "restart", "arguments": args, "_meta": meta(json!({"elicitation": {}}))});
                if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
                    p.extend(e.clone());
                }
                modern(conn, port, id, "tools/call", "restart", params)
            };
            let first = round(json!({}), 1, conn)?;
            let state = input_required(&first, "confirm_restart")?;
            let second = round(
                json!({"requestState": state, "inputResponses": {"confirm_restart": {"action": "accept", "content": {"ok": true}}}}),
                2,
                conn,
            )?;
            expect_text(&second["result"], &format!("Restarted {service}."))
        }
        "mrtr-3" => {
            let args = json!({"service": service});
            let round = |extra: Value, id: usize, conn: &mut Option<Conn>| {
                let mut params = json!({"name": "deploy", "arguments": args, "_meta": meta(json!({"elicitation": {}}))});
                if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
                    p.extend(e.clone());
                }
                modern(conn, port, id, "tools/call", "deploy", params)
            };
            let first = round(json!({}), 1, conn)?;
            let state = input_required(&first, "pick_window")?;
            let window = json!({"pick_window": {"action": "accept", "content": {"when": "now"}}});
            let second = round(
                json!({"requestState": state, "inputResponses": window}),
                2,
                conn,
            )?;
            let state = input_required(&second, "confirm_deploy")?;
            let third = round(
                json!({"requestState": state, "inputResponses": {"confirm_deploy": {"action": "accept", "content": {"ok": true}}}}),
                3,
                conn,
            )?;
            expect_text(&third["result"], &format!("Deploying {service} now."))
        }
        "task" => task_flow(TaskKind::Migrate, &service, port, conn),
        "task-rerun" => task_flow(TaskKind::Reindex, &service, port, conn),
        "legacy" => legacy_flow(&service, port),
        "sse-resume" => sse_resume_flow(&service, port),
        other => Err(Failure::Lost(format!("unknown flow {other}"))),
    }
}

/// The `requestState` of an `input_required` result asking `key`.
fn input_required(answer: &Value, key: &str) -> Result<Value, Failure> {
    let result = &answer["result"];
    if result["resultType"] != "input_required" || result["inputRequests"].get(key).is_none() {
        return Err(Failure::Lost(format!(
            "expected a question {key}: {answer}"
        )));
    }
    Ok(result["requestState"].clone())
}

/// The fleet's two task tools: `migrate` fails "worker lost" when its instance dies,
/// `reindex` (idempotent) runs again on another instance.
#[derive(Clone, Copy)]
enum TaskKind {
    Migrate,
    Reindex,
}

impl TaskKind {
    fn tool(self) -> &'static str {
        match self {
            TaskKind::Migrate => "migrate",
            TaskKind::Reindex => "reindex",
        }
    }

    fn arguments(self, name: &str) -> Value {
        match self {
            TaskKind::Migrate => json!({"database": name}),
            TaskKind::Reindex => json!({"index": name}),
        }
    }

    fn done_text(self, name: &str) -> String {
        match self {
            TaskKind::Migrate => format!("Migrated {name}."),
            TaskKind::Reindex => format!("Reindexed {name}."),
        }
    }

    /// Creates the task on `port`: its id.
    fn create(self, name: &str, port: u16, conn: &mut Option<Conn>) -> Result<String, Failure> {
        let tool = self.tool();
        let created = modern(
            conn,
            port,
            1,
            "tools/call",
            tool,
            json!({"name": tool, "arguments": self.arguments(name), "_meta": meta(tasks_caps())}),
        )?;
        if created["result"]["resultType"] != "task" {
            return Err(Failure::Lost(format!("not a task: {created}")));
        }
        Ok(created["result"]["taskId"]
            .as_str()
            .unwrap_or("")
            .to_owned())
    }
}

fn task_flow(
    kind: TaskKind,
    service: &str,
    port: u16,
    conn: &mut Option<Conn>,
) -> Result<(), Failure> {
    let id = kind.create(service, port, conn)?;
    let deadline = Instant::now() + TASK_DEADLINE;
    let mut answered = false;
    let mut n = 2;
    loop {
        if Instant::now() > deadline {
            return Err(Failure::Lost(format!(
                "task still not done after {TASK_DEADLINE:?}"
            )));
        }
        n += 1;
        let got = modern(
            conn,
            port,
            n,
            "tasks/get",
            &id,
            json!({"taskId": id, "_meta": meta(tasks_caps())}),
        )?;
        let result = &got["result"];
        match result["status"].as_str().unwrap_or("") {
            "input_required" if !answered => {
                n += 1;
                modern(
                    conn,
                    port,
                    n,
                    "tasks/update",
                    &id,
                    json!({"taskId": id, "inputResponses": {"q1": {"action": "accept", "content": {"ok": true}}}, "_meta": meta(tasks_caps())}),
                )?;
                answered = true;
            }
            "completed" => {
                let text = kind.done_text(service);
                expect_text(&result["result"], &text)?;
                if let Ok(mut done) = COMPLETED_TASKS.lock() {
                    done.push((id.clone(), text));
                }
                return Ok(());
            }
            "failed" => {
                let why = result["statusMessage"]
                    .as_str()
                    .or(result["error"]["message"].as_str())
                    .unwrap_or("failed")
                    .to_owned();
                return Err(Failure::Clean(format!("task failed: {why}")));
            }
            "cancelled" => return Err(Failure::Lost("task cancelled".into())),
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn legacy_init(port: u16) -> Result<(Conn, String), Failure> {
    let mut conn = Conn::open(port).map_err(|e| Failure::Lost(format!("connect: {e}")))?;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "xtask-fleet", "version": "1"}}})
    .to_string();
    let response = conn
        .send(
            "POST",
            "/mcp",
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            &init,
        )
        .map_err(Failure::Lost)?;
    json_answer(&response)?;
    let session = response
        .header("mcp-session-id")
        .ok_or(Failure::Lost("initialize without Mcp-Session-Id".into()))?
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = conn
        .send("POST", "/mcp", &legacy_headers(&session), &note)
        .map_err(Failure::Lost)?;
    if r.status != 202 {
        return Err(Failure::Clean(format!(
            "HTTP {} to notifications/initialized: {}",
            r.status,
            body_text(&r)
        )));
    }
    Ok((conn, session))
}

fn legacy_headers(session: &str) -> Vec<(&'static str, &str)> {
    vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session),
    ]
}

fn legacy_flow(service: &str, port: u16) -> Result<(), Failure> {
    let (mut conn, session) = legacy_init(port)?;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {"service": service}}}).to_string();
    let mut headers = legacy_headers(&session);
    headers[1] = ("accept", "application/json");
    let r = conn
        .send("POST", "/mcp", &headers, &call)
        .map_err(Failure::Lost)?;
    let answer = json_answer(&r)?;
    expect_text(&answer["result"], &format!("{service} is healthy."))?;
    let r = conn
        .send("DELETE", "/mcp", &legacy_headers(&session), "")
        .map_err(Failure::Lost)?;
    if r.status != 200 {
        return Err(Failure::Clean(format!(
            "HTTP {} to DELETE: {}",
            r.status,
            body_text(&r)
        )));
    }
    Ok(())
}

fn sse_resume_flow(service: &str, port: u16) -> Result<(), Failure> {
    let (mut conn, session) = legacy_init(port)?;
    // The call: its SSE stream carries the question; cut it right after.
    let mut stream = Conn::open(port).map_err(|e| Failure::Lost(format!("connect: {e}")))?;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "restart", "arguments": {"service": service}}}).to_string();
    let events = stream
        .sse_until("POST", &legacy_headers(&session), &call, |e| {
            e.get("method").and_then(Value::as_str) == Some("elicitation/create")
        })
        .map_err(|e| match e {
            SseError::Status(status, body) => {
                Failure::Clean(format!("HTTP {status} {}", body.trim()))
            }
            SseError::Io(e) => Failure::Lost(e),
            SseError::Broken { last_id, why } => {
                after_broken_stream(port, &session, last_id.as_deref(), &why)
            }
        })?;
    drop(stream);
    let (_, question) = events
        .last()
        .cloned()
        .ok_or(Failure::Lost("no question on the stream".into()))?;
    // Resume from the last event id the stream set, as an SSE client does: an event the
    // server could not record goes out without one (its stream's priming event has one).
    let last_id = events
        .iter()
        .rev()
        .find(|(id, _)| !id.is_empty())
        .map(|(id, _)| id.clone())
        .ok_or(Failure::Lost("no event id on the stream".into()))?;
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": true}}}).to_string();
    let r = conn
        .send("POST", "/mcp", &legacy_headers(&session), &answer)
        .map_err(Failure::Lost)?;
    if r.status != 202 {
        return Err(Failure::Clean(format!(
            "HTTP {} to the elicitation answer: {}",
            r.status,
            body_text(&r)
        )));
    }
    // A resumed stream that ends before the answer (its instance drained) is resumed again
    // from the last event it carried, as an SSE client does: at most RESUMPTIONS times.
    let mut last_id = last_id;
    for attempt in 0..RESUMPTIONS {
        let mut resume = Conn::open(port).map_err(|e| Failure::Lost(format!("connect: {e}")))?;
        let last_id_sent = last_id.clone();
        let mut headers = legacy_headers(&session);
        headers.push(("last-event-id", &last_id_sent));
        let events = match resume.sse_until("GET", &headers, "", |e| e.get("id") == Some(&json!(2)))
        {
            Ok(events) => events,
            // Cut (its instance restarted or died): resume again from what it carried.
            Err(SseError::Broken { last_id: seen, .. }) if attempt + 1 < RESUMPTIONS => {
                if let Some(seen) = seen {
                    last_id = seen;
                }
                continue;
            }
            Err(SseError::Status(status, body)) => {
                return Err(Failure::Clean(format!(
                    "HTTP {status} on resume {}",
                    body.trim()
                )));
            }
            Err(SseError::Io(e)) => return Err(Failure::Lost(format!("resume: {e}"))),
            Err(SseError::Broken { last_id, why }) => {
                return Err(after_broken_stream(
                    port,
                    &session,
                    last_id.as_deref().or(Some(last_id_sent.as_str())),
                    &format!("resume: {why}"),
                ));
            }
        };
        if let Some((_, result)) = events.iter().find(|(_, e)| e.get("id") == Some(&json!(2))) {
            return expect_text(&result["result"], &format!("Restarted {service}."));
        }
        if let Some((id, _)) = events.iter().rev().find(|(id, _)| !id.is_empty()) {
            last_id = id.clone();
        }
    }
    Err(Failure::Lost(format!(
        "the resumed stream ended without the answer {RESUMPTIONS} times"
    )))
}

/// Redis on `port` with its append-only file in `dir`, written through on every command
/// (`appendfsync always`): what was acknowledged survives a restart.
fn spawn_redis(
    program: &std::path::Path,
    port: u16,
    dir: &std::path::Path,
) -> Result<Child, String> {
    Command::new(program)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
        ])
        .arg(dir)
        .stdout(
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("redis.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        )
        .spawn()
        .map_err(|e| format!("redis-server: {e}"))
}

/// Waits until Redis on `port` answers `PING` with `PONG` (not `LOADING`), up to 60 s.
fn wait_redis_ready(port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let answer = TcpStream::connect(("127.0.0.1", port)).and_then(|mut stream| {
            stream.set_read_timeout(Some(Duration::from_secs(2)))?;
            stream.write_all(b"PING\r\n")?;
            let mut line = String::new();
            BufReader::new(stream).read_line(&mut line)?;
            Ok(line)
        });
        if answer.is_ok_and(|line| line.starts_with("+PONG")) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("Redis on port {port} was not ready within 60 s"))
}

/// Sends one command to Redis on `port` (RESP): its reply's first line.
fn redis_command(port: u16, args: &[&str]) -> Result<String, String> {
    let mut command = format!("*{}\r\n", args.len());
    for arg in args {
        command.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("Redis: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .and_then(|()| stream.write_all(command.as_bytes()))
        .map_err(|e| format!("Redis: {e}"))?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .map_err(|e| format!("Redis: {e}"))?;
    Ok(line.trim().to_owned())
}

/// One call on a kept session, through nginx (any instance). A 404 is a lost session.
fn kept_call(session: &str, n: usize, port: u16, conn: &mut Option<Conn>) -> Result<(), Failure> {
    let service = format!("kept-{n}");
    let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "status", "arguments": {"service": service}}}).to_string();
    let mut headers = legacy_headers(session);
    headers[1] = ("accept", "application/json");
    let response = send_on(conn, port, "POST", &headers, &call)?;
    if response.status == 404 {
        return Err(Failure::Lost("the session was lost (HTTP 404)".into()));
    }
    let answer = json_answer(&response)?;
    expect_text(&answer["result"], &format!("{service} is healthy."))
}

/// Reads every task that completed during the run again (after Redis restarted): each must
/// still be there, completed, with its result.
fn recheck_tasks(port: u16) -> Result<String, String> {
    let tasks = COMPLETED_TASKS
        .lock()
        .map(|t| t.clone())
        .unwrap_or_default();
    let mut conn = None;
    let mut missing = Vec::new();
    for (n, (id, text)) in tasks.iter().enumerate() {
        let got = modern(
            &mut conn,
            port,
            n + 1,
            "tasks/get",
            id,
            json!({"taskId": id, "_meta": meta(tasks_caps())}),
        );
        let ok = got.as_ref().is_ok_and(|v| {
            v["result"]["status"] == "completed" && text_of(&v["result"]["result"]) == text
        });
        if !ok {
            missing.push(format!("{id}: {got:?}"));
        }
    }
    if missing.is_empty() {
        Ok(format!(
            "tasks: all {} completed tasks read back with their results at the end of the run",
            tasks.len()
        ))
    } else {
        Err(format!(
            "{} of {} completed tasks lost: {}",
            missing.len(),
            tasks.len(),
            missing.into_iter().take(3).collect::<Vec<_>>().join("; ")
        ))
    }
}

/// Tasks left on the instance about to be killed: `reindex` ones confirmed and working
/// (they must run again elsewhere and complete), `migrate` ones waiting for their answer
/// (they must fail "worker lost").
struct Planted {
    reruns: Vec<(String, String)>,
    lost: Vec<String>,
}

/// The task `id` on `port` once `done` holds, within the task deadline.
fn task_when(
    id: &str,
    port: u16,
    conn: &mut Option<Conn>,
    done: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let deadline = Instant::now() + TASK_DEADLINE;
    for n in 1.. {
        let got = match modern(
            conn,
            port,
            n,
            "tasks/get",
            id,
            json!({"taskId": id, "_meta": meta(tasks_caps())}),
        ) {
            Ok(got) => got,
            // A checker is a patient client: Redis may still be coming back.
            Err(Failure::Clean(why)) if why.contains("Redis") && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(e) => return Err(format!("tasks/get {id}: {e:?}")),
        };
        if done(&got["result"]) {
            return Ok(got["result"].clone());
        }
        if Instant::now() > deadline {
            return Err(format!("task {id} never got there: {got}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("unreachable".into())
}

fn plant_tasks(port: u16) -> Result<Planted, String> {
    let mut conn = None;
    let mut planted = Planted {
        reruns: Vec::new(),
        lost: Vec::new(),
    };
    for k in 0..PLANTED {
        let name = format!("crash-{k}");
        let id = TaskKind::Reindex
            .create(&name, port, &mut conn)
            .map_err(|e| format!("{e:?}"))?;
        task_when(&id, port, &mut conn, |r| r["status"] == "input_required")?;
        modern(
            &mut conn,
            port,
            2,
            "tasks/update",
            &id,
            json!({"taskId": id, "inputResponses": {"q1": {"action": "accept", "content": {"ok": true}}}, "_meta": meta(tasks_caps())}),
        )
        .map_err(|e| format!("tasks/update: {e:?}"))?;
        task_when(&id, port, &mut conn, |r| r["status"] == "working")?;
        planted
            .reruns
            .push((id, TaskKind::Reindex.done_text(&name)));
    }
    for k in 0..PLANTED {
        let id = TaskKind::Migrate
            .create(&format!("crash-m{k}"), port, &mut conn)
            .map_err(|e| format!("{e:?}"))?;
        task_when(&id, port, &mut conn, |r| r["status"] == "input_required")?;
        planted.lost.push(id);
    }
    Ok(planted)
}

/// After the kill: each planted `reindex` completed on another instance, run again without
/// asking again; each planted `migrate` failed "worker lost".
fn check_planted(planted: &Planted, port: u16, killed: &str) -> Result<String, String> {
    let lost = format!("The worker running this task ({killed}) was lost");
    let mut conn = None;
    let mut problems = Vec::new();
    for (id, text) in &planted.reruns {
        match task_when(id, port, &mut conn, |r| {
            matches!(
                r["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            ) || r["status"] == "input_required"
        }) {
            Ok(r) if r["status"] == "completed" && text_of(&r["result"]) == text => {
                if !r["statusMessage"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Running again"))
                {
                    problems.push(format!("reindex {id} completed without running again: {r}"));
                }
            }
            Ok(r) => problems.push(format!(
                "reindex {id} did not complete by running again: {r}"
            )),
            Err(e) => problems.push(e),
        }
    }
    for id in &planted.lost {
        match task_when(id, port, &mut conn, |r| r["status"] != "input_required") {
            Ok(r) if r["status"] == "failed" && r["statusMessage"] == lost.as_str() => {}
            Ok(r) => problems.push(format!("migrate {id} did not fail '{lost}': {r}")),
            Err(e) => problems.push(e),
        }
    }
    if problems.is_empty() {
        Ok(format!(
            "crash: {n} reindex tasks (idempotent) working on the killed instance ran again on \
             another one and completed without asking again; {n} migrate tasks failed '{lost}'",
            n = PLANTED
        ))
    } else {
        Err(format!("crash: {}", problems.join("; ")))
    }
}

/// What one notification stream heard: the notice numbers, in order, or why it failed.
type Heard = Result<Vec<u64>, String>;

/// The notice number of a `notifications/resources/updated` for `fleet://notices/{n}`.
fn notice_of(message: &Value) -> Option<u64> {
    (message["method"] == "notifications/resources/updated")
        .then(|| message["params"]["uri"].as_str())
        .flatten()
        .and_then(|uri| uri.strip_prefix("fleet://notices/"))
        .and_then(|n| n.parse().ok())
}

/// Reads `conn`'s SSE stream (its head already read) until `quiet` passes without an event
/// after the last notice expected, collecting notice numbers.
fn collect_notices(mut conn: Conn, quiet: Duration) -> Heard {
    let _ = conn.reader.get_mut().set_read_timeout(Some(quiet));
    let mut pending = String::new();
    let mut heard = Vec::new();
    loop {
        let chunk = match conn.read_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(heard),
            // The read timeout: nothing more came within `quiet`.
            Err(e) if e.ends_with("(hung)") => {
                return Ok(heard);
            }
            Err(e) => return Err(e),
        };
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data: ")
                    && let Ok(message) = serde_json::from_str::<Value>(data)
                    && let Some(n) = notice_of(&message)
                {
                    heard.push(n);
                }
            }
        }
    }
}

/// Opens a stream on `port` and returns its connection once the head says SSE.
fn open_stream(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Conn, String> {
    let mut conn = Conn::open(port)?;
    conn.write_request(method, "/mcp", headers, body)?;
    let (status, head) = conn.read_head()?;
    let sse = head
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
    if status == 200 && sse {
        Ok(conn)
    } else {
        Err(format!(
            "HTTP {status} to {method} of a notification stream"
        ))
    }
}

/// In steady state: one `subscriptions/listen` stream and one legacy GET stream (its session
/// subscribed to `fleet://notices`) held directly on every instance; [`NOTICES`]
/// announcements raised through nginx (so on every instance in turn); every stream must hear
/// each exactly once.
fn notification_check(ports: &[u16], nginx_port: u16) -> Result<String, String> {
    let mut streams: Vec<(String, Conn)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let listen =
            json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": ["fleet://notices"]},
            "_meta": meta(json!({}))}})
            .to_string();
        let headers = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ];
        let conn = open_stream(*port, "POST", &headers, &listen)
            .map_err(|e| format!("listen stream on i{}: {e}", i + 1))?;
        streams.push((format!("listen stream on i{}", i + 1), conn));

        let (mut session_conn, session) =
            legacy_init(nginx_port).map_err(|e| format!("legacy session: {e:?}"))?;
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "fleet://notices"}}).to_string();
        let mut headers = legacy_headers(&session);
        headers[1] = ("accept", "application/json");
        let r = session_conn
            .send("POST", "/mcp", &headers, &subscribe)
            .map_err(|e| format!("resources/subscribe: {e}"))?;
        json_answer(&r).map_err(|e| format!("resources/subscribe: {e:?}"))?;
        let get_headers = [
            ("accept", "text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", session.as_str()),
        ];
        let conn = open_stream(*port, "GET", &get_headers, "")
            .map_err(|e| format!("legacy GET stream on i{}: {e}", i + 1))?;
        streams.push((format!("legacy GET stream on i{}", i + 1), conn));
    }
    // Subscriptions are announced over the bus: let them land before the first notice.
    std::thread::sleep(Duration::from_millis(500));
    let readers: Vec<(String, std::thread::JoinHandle<Heard>)> = streams
        .into_iter()
        .map(|(name, conn)| {
            (
                name,
                std::thread::spawn(move || collect_notices(conn, Duration::from_secs(3))),
            )
        })
        .collect();
    let mut conn = None;
    for n in 1..=NOTICES {
        modern(
            &mut conn,
            nginx_port,
            n as usize,
            "tools/call",
            "announce",
            json!({"name": "announce", "arguments": {"n": n}, "_meta": meta(json!({}))}),
        )
        .map_err(|e| format!("announce {n}: {e:?}"))?;
    }
    let mut problems = Vec::new();
    for (name, reader) in readers {
        let heard = reader
            .join()
            .map_err(|_| format!("the reader of the {name} panicked"))?;
        match heard {
            Err(e) => problems.push(format!("{name}: {e}")),
            Ok(mut heard) => {
                heard.sort_unstable();
                let expected: Vec<u64> = (1..=NOTICES).collect();
                if heard != expected {
                    problems.push(format!("{name} heard {heard:?}"));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(format!(
            "notifications: {} streams (a listen stream and a legacy GET stream on each of {} \
             instances) each heard all {NOTICES} announcements exactly once",
            ports.len() * 2,
            ports.len()
        ))
    } else {
        Err(format!("notifications: {}", problems.join("; ")))
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal blocking HTTP/1.1 client: keep-alive, content-length and chunked bodies.

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    close: bool,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

enum SseError {
    Status(u16, String),
    Io(String),
    /// The stream broke after its head (the connection closed, a cut chunk, the leg's
    /// deadline): the last event id it carried, for the resumption a client would try.
    Broken {
        last_id: Option<String>,
        why: String,
    },
}

/// What a client learns after a legacy stream broke: it resumes with `Last-Event-ID` (or,
/// with no id, asks the session anything). A 404 means the session's instance is gone, the
/// clean end the spec describes; anything else means the stream broke while its session lived.
fn after_broken_stream(port: u16, session: &str, last_id: Option<&str>, why: &str) -> Failure {
    let probe = Conn::open(port).and_then(|mut conn| {
        let mut headers = legacy_headers(session);
        match last_id {
            Some(id) => {
                headers.push(("last-event-id", id));
                conn.write_request("GET", "/mcp", &headers, "")?;
            }
            None => {
                let ping = json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}).to_string();
                conn.write_request("POST", "/mcp", &headers, &ping)?;
            }
        }
        let (status, head) = conn.read_head()?;
        // A refusal's text names its cause (a 410 names the process that is gone).
        let mut text = String::new();
        if status != 200
            && let Some(length) = head
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse::<usize>().ok())
        {
            let mut body = vec![0u8; length.min(4096)];
            conn.reader.read_exact(&mut body).map_err(read_error)?;
            text = String::from_utf8_lossy(&body).trim().to_owned();
        }
        Ok((status, text))
    });
    match probe {
        Ok((404, _)) => Failure::Clean(format!(
            "the stream broke ({why}) and its session is gone: HTTP 404"
        )),
        Ok((410, text)) => Failure::Clean(format!("the stream broke ({why}): HTTP 410 {text}")),
        Ok((status, _)) => Failure::Lost(format!(
            "the stream broke ({why}) while its session lived (HTTP {status} after)"
        )),
        Err(e) => Failure::Lost(format!("the stream broke ({why}); then {e}")),
    }
}

/// A failed read's reason; one that timed out says the peer hung.
fn read_error(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!("no answer within {} s (hung)", LEG_DEADLINE.as_secs())
        }
        _ => format!("read: {e}"),
    }
}

struct Conn {
    reader: BufReader<TcpStream>,
    port: u16,
}

impl Conn {
    fn open(port: u16) -> Result<Conn, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(LEG_DEADLINE))
            .map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            reader: BufReader::new(stream),
            port,
        })
    }

    fn write_request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<(), String> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n",
            self.port
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        let stream = self.reader.get_mut();
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(|e| format!("write: {e}"))
    }

    fn read_head(&mut self) -> Result<(u16, Vec<(String, String)>), String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(read_error)?;
        if n == 0 {
            return Err("the connection closed before an answer".into());
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or(format!("not an HTTP status line: {line:?}"))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).map_err(read_error)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((n, v)) = l.split_once(':') {
                headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        Ok((status, headers))
    }

    /// One chunk of a chunked body; `None` at its end.
    fn read_chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(read_error)?;
        if n == 0 {
            return Err("the connection closed mid-body".into());
        }
        let size = usize::from_str_radix(line.trim(), 16)
            .map_err(|_| format!("bad chunk size {line:?}"))?;
        let mut chunk = vec![0u8; size + 2];
        self.reader.read_exact(&mut chunk).map_err(read_error)?;
        chunk.truncate(size);
        Ok((size > 0).then_some(chunk))
    }

    fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Response, String> {
        self.write_request(method, path, headers, body)?;
        let (status, headers) = self.read_head()?;
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            while let Some(chunk) = self.read_chunk()? {
                body.extend_from_slice(&chunk);
            }
        } else if let Some(length) = get("content-length").and_then(|l| l.parse::<usize>().ok()) {
            body = vec![0u8; length];
            self.reader.read_exact(&mut body).map_err(read_error)?;
        }
        let close = get("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
        Ok(Response {
            status,
            headers,
            body,
            close,
        })
    }

    /// Reads an SSE answer until an event's message satisfies `stop`; returns the events
    /// (event id, message) read.
    fn sse_until(
        &mut self,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
        stop: impl Fn(&Value) -> bool,
    ) -> Result<Vec<(String, Value)>, SseError> {
        self.write_request(method, "/mcp", headers, body)
            .map_err(SseError::Io)?;
        let (status, head) = self.read_head().map_err(SseError::Io)?;
        let is_sse = head
            .iter()
            .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
        if status != 200 || !is_sse {
            let mut text = String::new();
            let _ = self
                .reader
                .get_mut()
                .set_read_timeout(Some(Duration::from_millis(200)));
            let _ = self.reader.read_to_string(&mut text);
            return Err(SseError::Status(status, text.chars().take(80).collect()));
        }
        let mut pending = String::new();
        let mut events = Vec::new();
        let mut last_id: Option<String> = None;
        loop {
            let chunk = self.read_chunk().map_err(|why| SseError::Broken {
                last_id: last_id.clone(),
                why,
            })?;
            let Some(chunk) = chunk else {
                return Ok(events);
            };
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let event: String = pending.drain(..end + 2).collect();
                let mut id = String::new();
                let mut data = String::new();
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.to_owned();
                        last_id = Some(id.clone());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if data.trim().is_empty() {
                    continue;
                }
                let message: Value = serde_json::from_str(&data)
                    .map_err(|e| SseError::Io(format!("bad SSE data: {e}")))?;
                let done = stop(&message);
                events.push((id, message));
                if done {
                    return Ok(events);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KILLED: &str = "i2~9d72d840";

    /// The schedule of a run: i1 drained, i2 killed, Redis restarted, then stalled, a second
    /// apart; `t0` is before all of them.
    fn schedule() -> (Instant, Vec<Fault>) {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let faults = vec![
            Fault::Drained {
                member: "i1~0badc0de".into(),
                at: t0 + s,
            },
            Fault::Killed {
                member: KILLED.into(),
                at: t0 + 2 * s,
            },
            Fault::RedisRestart { at: t0 + 3 * s },
            Fault::RedisStall { at: t0 + 4 * s },
        ];
        (t0, faults)
    }

    fn label(why: &str, ended: Instant, faults: &[Fault]) -> Option<String> {
        cause(why, ended, faults).map(Fault::label)
    }

    #[test]
    fn a_failure_is_attributed_to_the_process_it_names() {
        let (t0, faults) = schedule();
        let late = t0 + Duration::from_secs(60);
        let asked = format!(
            "HTTP 410 to the elicitation answer: The server process that asked this question ({KILLED}) is gone, and the call it was serving with it; retry that call"
        );
        assert_eq!(
            label(&asked, late, &faults).as_deref(),
            Some("SIGKILL of i2~9d72d840")
        );
        // However long after the kill it surfaced: the cause is what it names.
        let worker = format!("task failed: The worker running this task ({KILLED}) was lost");
        assert_eq!(
            label(&worker, t0 + Duration::from_secs(3600), &faults).as_deref(),
            Some("SIGKILL of i2~9d72d840")
        );
        // The same failure naming a process that was only drained, or never touched, or the
        // killed instance's successor: nothing explains it.
        for other in ["i1~0badc0de", "i3~12345678", "i2~ffffffff"] {
            let why = asked.replace(KILLED, other);
            assert_eq!(label(&why, late, &faults), None, "{why}");
        }
        // A failure that ended before the kill cannot be its effect.
        assert_eq!(
            label(&worker, t0 + Duration::from_millis(1500), &faults),
            None
        );
        // Naming the member without saying it is gone is no clean loss of it.
        assert_eq!(
            label(&format!("HTTP 500 {KILLED} panicked"), late, &faults),
            None
        );
    }

    #[test]
    fn a_redis_failure_is_attributed_to_the_redis_fault_of_its_kind() {
        let (t0, faults) = schedule();
        let late = t0 + Duration::from_secs(60);
        let broken = "task failed: The request could not be sent: the task store failed: Redis compare-and-set of a task: broken pipe";
        let unanswered =
            "JSON-RPC -32603 the task store failed: Redis GET task: no answer within 2s";
        assert_eq!(
            label(broken, late, &faults).as_deref(),
            Some("Redis restart")
        );
        assert_eq!(
            label(unanswered, late, &faults).as_deref(),
            Some("Redis stall (SIGSTOP 2 s)")
        );
        // Between the restart and the stall, a command without an answer is the restart's.
        let between = t0 + Duration::from_millis(3500);
        assert_eq!(
            label(unanswered, between, &faults).as_deref(),
            Some("Redis restart")
        );
        // Before Redis was touched, a Redis failure is a problem.
        assert_eq!(
            label(broken, t0 + Duration::from_millis(2500), &faults),
            None
        );
        // One that does not say how Redis failed is the latest Redis fault's.
        let unsaid = "JSON-RPC -32603 The replay guard's store (Redis) cannot answer, so the requestState could not be checked; retry shortly";
        assert_eq!(
            label(unsaid, between, &faults).as_deref(),
            Some("Redis restart")
        );
        assert_eq!(
            label(unsaid, late, &faults).as_deref(),
            Some("Redis stall (SIGSTOP 2 s)")
        );
        // A store failure that does not name Redis is not Redis's.
        assert_eq!(
            label("task failed: the task store failed", late, &faults),
            None
        );
    }

    fn outcome(kind: &'static str, result: Result<(), Failure>, ended: Instant) -> Outcome {
        Outcome {
            kind,
            result,
            took: Duration::from_millis(10),
            started: ended - Duration::from_millis(10),
        }
    }

    #[test]
    fn a_run_fails_on_a_hang_a_lost_task_or_an_unexplained_failure_and_says_which() {
        let (t0, faults) = schedule();
        let late = t0 + Duration::from_secs(60);
        let explained = || {
            vec![
                outcome("plain", Ok(()), late),
                outcome(
                    "task",
                    Err(Failure::Clean(format!(
                        "task failed: The worker running this task ({KILLED}) was lost"
                    ))),
                    late,
                ),
                outcome(
                    "legacy",
                    Err(Failure::Clean(
                        "HTTP 503 The session store failed: Redis GET: Connection refused".into(),
                    )),
                    late,
                ),
            ]
        };
        assert_eq!(report(&explained(), &faults), Ok(()));

        let mut hung = explained();
        hung.push(outcome(
            "mrtr-2",
            Err(Failure::Lost(
                "read: Resource temporarily unavailable".into(),
            )),
            late,
        ));
        let e = report(&hung, &faults).unwrap_err();
        assert_eq!(
            e,
            "1 problem kind(s): mrtr-2 lost: read: Resource temporarily unavailable"
        );

        let mut lost_task = explained();
        lost_task.push(outcome(
            "task",
            Err(Failure::Lost("task still not done after 60s".into())),
            late,
        ));
        assert!(
            report(&lost_task, &faults)
                .unwrap_err()
                .contains("task lost: task still not done after 60s"),
        );

        let mut unexplained = explained();
        unexplained.push(outcome(
            "task",
            Err(Failure::Clean(
                "task failed: The worker running this task (i3~12345678) was lost".into(),
            )),
            late,
        ));
        assert_eq!(
            report(&unexplained, &faults).unwrap_err(),
            "1 problem kind(s): task: task failed: The worker running this task (i3~12345678) was lost (no fault explains it)"
        );
    }

    #[test]
    fn plant_is_an_option_of_the_fleet_only() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            options(&args(&["--plant", "hang"])).map(|o| o.plant),
            Ok(Some(Plant::Hang))
        );
        assert_eq!(
            options(&args(&["--plant", "lost-task"])).map(|o| o.plant),
            Ok(Some(Plant::LostTask))
        );
        assert!(options(&args(&["--plant", "fire"])).is_err());
        assert!(options(&args(&["--single", "--plant", "hang"])).is_err());
    }
}
