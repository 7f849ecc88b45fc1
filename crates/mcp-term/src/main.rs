//! `mcp-term`: a terminal MCP client that answers elicitation properly. See
//! `docs/mcp-term.md` for the guide.
//!
//! Exit codes: 0 ok, 1 the tool returned `isError`, 2 usage, 3 authorization, 4 transport,
//! 5 JSON-RPC or protocol error, 6 not found (tool, prompt, resource, `@name`), 10 input
//! required (a question nobody answered; the pending request is on stdout), 11 a question
//! was refused (sampling declined), 12 `--max-rounds` exceeded, 130 interrupted.

mod batch;
mod cli;
mod fail;
mod render;
mod target;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::Parser;
use mcp::ClientBuilderExt;
use mcp::client::{Client, ClientBuilder, Mode};
use mcp::types::ErrorCode;
use mcp::types::elicitation::ElicitResult;
use mcp::types::logging::LoggingLevel;
use mcp::types::mrtr::{InputRequest, InputResponse, InputResponses};
use serde_json::{Value, json};

use mcp_term::answers::{CliAnswer, Sources};
use mcp_term::code;
use mcp_term::config::{self, ServerSpec};
use mcp_term::responder::{Policy, Responder};
use mcp_term::rounds::{Call, Driver, Finished, Pending};
use mcp_term::{args, text};

use cli::{Cli, Era, Format, Opts, Verb};
use fail::{Fail, client_fail, fail, usage};
use render::{print_list, show_log, show_progress};
use target::{
    Target, config_files, interactive, run_pending_command, spec_of, split_target, target_from_json,
};

fn main() {
    let mut argv: Vec<String> = std::env::args().collect();
    let command = match argv.iter().position(|a| a == "--") {
        Some(i) => {
            let tail = argv.split_off(i);
            tail[1..].to_vec()
        }
        None => Vec::new(),
    };
    let cli = Cli::parse_from(argv);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "{}",
                json!({"error": {"code": code::USAGE, "kind": "runtime", "message": e.to_string()}})
            );
            std::process::exit(code::USAGE);
        }
    };
    let exit = runtime.block_on(async {
        #[cfg(feature = "otel")]
        let otel = match cli.opts.otel.then(observe).transpose() {
            Ok(otel) => otel,
            Err(f) => return Err(f),
        };
        let exit = tokio::select! {
            exit = run(cli, command) => exit,
            _ = tokio::signal::ctrl_c() => Err(fail(code::INTERRUPTED, "interrupted", interrupted().await)),
        };
        #[cfg(feature = "otel")]
        if let Some(otel) = otel {
            // A collector that is down must not hold the command's exit for long.
            if tokio::time::timeout(Duration::from_secs(5), otel.shutdown()).await.is_err() {
                eprintln!("mcp-term: the OpenTelemetry export did not finish within 5 s");
            }
        }
        exit
    });
    let code = match exit {
        Ok(code) => code,
        Err(f) => {
            // The one sink of every failure: a message may quote a server's error, a task's
            // failure, an HTTP body or an authorization server's description.
            let message = text::sanitize_line(&f.message);
            eprintln!("mcp-term: {message}");
            eprintln!(
                "{}",
                text::json_line(
                    &json!({"error": {"code": f.code, "kind": f.kind, "message": message}})
                )
            );
            f.code
        }
    };
    runtime.shutdown_timeout(Duration::from_millis(200));
    std::process::exit(code);
}

/// `--otel`: the exporters the `OTEL_*` variables describe, else a collector on this machine's
/// default OTLP/HTTP port, installed under a subscriber of their own.
#[cfg(feature = "otel")]
fn observe() -> Result<mcp::otel::Otel, Fail> {
    let otel = match mcp::otel::Otel::from_env("mcp-term") {
        Ok(Some(otel)) => Ok(otel),
        Ok(None) => mcp::otel::Otel::to_endpoint("http://127.0.0.1:4318", "mcp-term"),
        Err(e) => Err(e),
    }
    .map_err(|e| usage(format!("--otel: {e}")))?;
    otel.set_global_subscriber()
        .map_err(|e| usage(format!("--otel: {e}")))?;
    Ok(otel)
}

/// After Ctrl-C: a task being followed is cancelled (within 5 s), so it does not run on.
async fn interrupted() -> String {
    let Some(task) = mcp_term::rounds::running_task() else {
        return "interrupted (Ctrl-C); nothing more was sent".into();
    };
    match tokio::time::timeout(Duration::from_secs(5), task.cancel()).await {
        Ok(Ok(())) => "interrupted (Ctrl-C); the task was cancelled".into(),
        Ok(Err(e)) => format!("interrupted (Ctrl-C); cancelling the task failed: {e}"),
        Err(_) => "interrupted (Ctrl-C); the server did not acknowledge the task's cancellation within 5 s".into(),
    }
}

fn parse_level(s: &str) -> Result<LoggingLevel, Fail> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| usage(format!("--log-level {s}: expected debug, info, notice, warning, error, critical, alert or emergency")))
}

struct Setup {
    responder: Arc<Responder>,
    elicit_form: bool,
    elicit_url: bool,
}

fn setup(opts: &Opts) -> Result<Setup, Fail> {
    let cli = opts
        .answer
        .iter()
        .map(|a| CliAnswer::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let file = match &opts.answers {
        None => None,
        Some(path) => Some(read_json(path, "--answers")?),
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let interactive = interactive(opts);
    let policy = opts.elicit.unwrap_or(if interactive {
        Policy::Prompt
    } else {
        Policy::Fail
    });
    let mut responder = Responder::new(Sources { cli, file }, policy, interactive);
    responder.color = terminal;
    responder.accept_defaults = opts.accept_defaults;
    responder.sampling = opts.sampling.clone();
    responder.open = opts.open;
    responder.exec_timeout = Duration::from_secs(opts.timeout);
    for dir in &opts.roots {
        let abs = std::fs::canonicalize(dir)
            .map_err(|e| usage(format!("--root {}: {e}", dir.display())))?;
        let uri = format!("file://{}", abs.display());
        let name = abs.file_name().map(|n| n.to_string_lossy().into_owned());
        responder.roots.push(
            serde_json::from_value(json!({"uri": uri, "name": name}))
                .map_err(|e| usage(e.to_string()))?,
        );
    }
    let (elicit_form, elicit_url) = match opts.elicit_modes.as_str() {
        "both" | "form,url" | "url,form" => (true, true),
        "form" => (true, false),
        "url" => (false, true),
        "none" => (false, false),
        other => {
            return Err(usage(format!(
                "--elicit-modes {other}: expected form, url, both or none"
            )));
        }
    };
    Ok(Setup {
        responder: Arc::new(responder),
        elicit_form,
        elicit_url,
    })
}

const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// A file's text (`-`: stdin), at most [`MAX_INPUT_BYTES`].
fn read_text(path: &Path, what: &str) -> Result<String, Fail> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .take(MAX_INPUT_BYTES)
            .read_to_string(&mut s)
            .map_err(|e| usage(format!("{what} -: {e}")))?;
        return Ok(s);
    }
    let meta =
        std::fs::metadata(path).map_err(|e| usage(format!("{what} {}: {e}", path.display())))?;
    if meta.len() > MAX_INPUT_BYTES {
        return Err(usage(format!(
            "{what} {}: larger than {MAX_INPUT_BYTES} bytes",
            path.display()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| usage(format!("{what} {}: {e}", path.display())))
}

fn read_json(path: &Path, what: &str) -> Result<Value, Fail> {
    let text = read_text(path, what)?;
    serde_json::from_str(&text)
        .map_err(|e| usage(format!("{what} {}: not JSON: {e}", path.display())))
}

async fn connect(
    spec: &ServerSpec,
    opts: &Opts,
    setup: &Setup,
    mode: Mode,
    driver: Arc<OnceLock<Arc<Driver>>>,
) -> Result<Client, Fail> {
    let mut builder = Client::builder()
        .client_info("mcp-term", env!("CARGO_PKG_VERSION"))
        .mode(mode)
        .request_timeout(Duration::from_secs(opts.timeout))
        .max_task_wait(Duration::from_secs(opts.task_wait.max(1)))
        .max_rounds(opts.max_rounds)
        .tasks(!opts.no_tasks)
        .apps(opts.save_ui.is_some())
        .log_level(parse_level(&opts.log_level)?)
        .on_progress(|p| show_progress(&p))
        .on_cache_hit({
            let verbose = opts.verbose;
            move |method| {
                if verbose {
                    eprintln!("cache: {method} answered from the client's cache, not the server");
                }
            }
        })
        .on_log(|m| show_log(&m))
        .on_notification(|n| {
            if let mcp::types::ServerNotification::ElicitationComplete(p) = n {
                eprintln!(
                    "the server says the URL flow {} is complete",
                    text::sanitize_line(&p.elicitation_id)
                );
            }
        });
    builder = callbacks(builder, setup, driver);
    let connected = match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).kill_on_drop(true);
            for (k, v) in env {
                cmd.env(k, v);
            }
            for kv in &opts.envs {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| usage(format!("--env {kv}: write K=V")))?;
                cmd.env(k, v);
            }
            if let Some(dir) = opts
                .cwd
                .as_deref()
                .map(Path::to_owned)
                .or_else(|| cwd.as_ref().map(PathBuf::from))
            {
                cmd.current_dir(dir);
            }
            builder.connect_stdio(cmd).await
        }
        ServerSpec::Http { url, headers } => {
            let mut transport = mcp::http::HttpTransport::new(url)
                .map_err(|e| fail(code::TRANSPORT, "transport", e))?;
            if let Some(path) = &opts.ca {
                let pem = std::fs::read(path)
                    .map_err(|e| usage(format!("--ca {}: {e}", path.display())))?;
                transport = transport
                    .add_root_pem(&pem)
                    .map_err(|e| usage(format!("--ca {}: {e}", path.display())))?;
            }
            for (k, v) in headers {
                transport = transport
                    .header(k, v)
                    .map_err(|e| usage(format!("header {k}: {e}")))?;
            }
            for h in &opts.headers {
                let (k, v) = h
                    .split_once(':')
                    .ok_or_else(|| usage(format!("--header {h:?}: write 'Name: value'")))?;
                transport = transport
                    .header(k.trim(), v.trim())
                    .map_err(|e| usage(format!("--header {}: {e}", k.trim())))?;
            }
            if let Some(var) = &opts.bearer_env {
                let token = std::env::var(var)
                    .map_err(|_| usage(format!("--bearer-env {var}: the variable is not set")))?;
                transport = transport
                    .bearer(&token)
                    .map_err(|e| usage(format!("--bearer-env {var}: {e}")))?;
            }
            if opts.oauth {
                use mcp::client::oauth::{HeadlessAuthorizer, OAuth, OAuthConfig};
                let fetch = transport.fetcher();
                let mut config = OAuthConfig::new("http://127.0.0.1:8976/callback");
                config.client_name = "mcp-term".into();
                let authorizer: Arc<dyn mcp::client::oauth::Authorizer> =
                    if setup.responder.interactive {
                        Arc::new(mcp_term::auth::TerminalAuthorizer { open: opts.open })
                    } else {
                        Arc::new(HeadlessAuthorizer::new(fetch.clone()))
                    };
                transport = transport.oauth(Arc::new(OAuth::new(config, fetch, authorizer)));
            }
            builder.connect(transport).await
        }
    };
    connected.map_err(client_fail)
}

/// Registers exactly the callbacks the command line configured: each declares its capability.
fn callbacks(
    mut builder: ClientBuilder,
    setup: &Setup,
    driver: Arc<OnceLock<Arc<Driver>>>,
) -> ClientBuilder {
    fn live(
        driver: &Arc<OnceLock<Arc<Driver>>>,
        key: String,
        request: InputRequest,
    ) -> impl std::future::Future<Output = Result<InputResponse, mcp::types::ErrorObject>> + Send + use<>
    {
        let driver = driver.get().cloned();
        async move {
            match driver {
                Some(d) => d.live(key, request).await,
                None => Err(mcp::types::ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "not ready to answer yet",
                )),
            }
        }
    }
    if setup.elicit_form || setup.elicit_url {
        let d = driver.clone();
        builder = builder
            .elicitation(move |info, params| {
                let f = live(&d, info.key, InputRequest::Elicit(params));
                async move {
                    match f.await? {
                        InputResponse::Elicit(r) => Ok(r),
                        _ => Ok(ElicitResult::cancel()),
                    }
                }
            })
            .elicitation_modes(setup.elicit_form, setup.elicit_url);
    }
    if setup.responder.sampling.is_some() {
        let d = driver.clone();
        builder = builder.sampling(move |info, params| {
            let f = live(&d, info.key, InputRequest::CreateMessage(params));
            async move {
                match f.await? {
                    InputResponse::CreateMessage(r) => Ok(r),
                    _ => Err(mcp::types::ErrorObject::internal("no sampling result")),
                }
            }
        });
    }
    if !setup.responder.roots.is_empty() {
        let d = driver;
        builder = builder.roots(move |info| {
            let f = live(&d, info.key, InputRequest::ListRoots(None));
            async move {
                match f.await? {
                    InputResponse::ListRoots(r) => Ok(r),
                    _ => Err(mcp::types::ErrorObject::internal("no roots")),
                }
            }
        });
    }
    builder
}

async fn run(cli: Cli, command: Vec<String>) -> Result<i32, Fail> {
    let Cli { mut verb, opts } = cli;
    let target = split_target(verb.rest_mut(), &opts, &command)?;
    if let Verb::Servers { rest } = &verb {
        return servers(rest, &opts);
    }
    let pending = match &verb {
        Verb::Resume { file, .. } => Some((file.clone(), read_pending(file)?)),
        _ => None,
    };
    let resume = pending.as_ref().map(|(file, p)| (file.as_path(), p));
    // A batch's lines are read before connecting: a line that does not parse costs nothing.
    let lines = match &verb {
        Verb::Batch { file, .. } => Some(batch::parse(
            &file.display().to_string(),
            &read_text(file, "batch")?,
        )?),
        _ => None,
    };
    let mut session = open(target, resume, &opts).await?;
    let outcome = match (verb, lines) {
        (Verb::Resume { .. }, _) => {
            let (_, p) = pending.expect("read above");
            resume_call(&mut session, p).await
        }
        (Verb::Batch { .. }, Some(lines)) => run_batch(&mut session, lines).await,
        (verb, _) => one(&mut session, verb).await,
    };
    session.client.close().await;
    outcome
}

/// Runs a batch's lines in order, stopping at the first that does not exit 0 (its code is the
/// batch's, and stderr says which line).
async fn run_batch(session: &mut Session, lines: Vec<batch::Line>) -> Result<i32, Fail> {
    for batch::Line { number, text, verb } in lines {
        match one(session, verb).await {
            Ok(code::OK) => {}
            Ok(other) => {
                eprintln!("mcp-term: batch stopped at line {number} ({text}): exit {other}");
                return Ok(other);
            }
            Err(f) => {
                return Err(Fail {
                    message: format!("batch line {number} ({text}): {}", f.message),
                    ..f
                });
            }
        }
    }
    Ok(code::OK)
}

/// One verb over an open session (the session is closed by the caller).
async fn one(session: &mut Session, verb: Verb) -> Result<i32, Fail> {
    match verb {
        Verb::Info { .. } => info(session).await,
        Verb::Tools { schema, .. } => tools(session, schema).await,
        Verb::Prompts { .. } => prompts(session).await,
        Verb::Resources { .. } => resources(session).await,
        Verb::Templates { .. } => templates(session).await,
        Verb::Call { name, params, args } => call(session, name, params, args).await,
        Verb::Prompt { name, params } => get_prompt(session, name, params).await,
        Verb::Read { uri, out, .. } => read(session, uri, out).await,
        Verb::Resume { .. } | Verb::Servers { .. } | Verb::Batch { .. } => Err(usage(
            "resume, servers and batch are not verbs of a batch line",
        )),
    }
}

/// `resume FILE`: the pending file, read.
fn read_pending(file: &Path) -> Result<Pending, Fail> {
    let v = read_json(file, "resume")?;
    serde_json::from_value(v).map_err(|e| {
        usage(format!(
            "resume {}: not a pending file: {e}",
            file.display()
        ))
    })
}

/// A connected client and the driver of its rounds, ready for one verb.
struct Session {
    client: Client,
    driver: Arc<Driver>,
    stuck: tokio::sync::mpsc::UnboundedReceiver<Finished>,
    modern: bool,
    format: Format,
    save_ui: Option<PathBuf>,
}

/// Connects to the target (or, for `resume`, the one the pending file names) and sets up the
/// driver that answers the server's questions.
async fn open(
    target: Option<Target>,
    resume: Option<(&Path, &Pending)>,
    opts: &Opts,
) -> Result<Session, Fail> {
    let target = match (target, resume) {
        (Some(t), _) => t,
        (None, Some((file, p))) => {
            let t = p
                .target
                .as_ref()
                .and_then(target_from_json)
                .ok_or_else(|| usage("the pending file names no server; give one"))?;
            if let Target::Stdio(argv) = &t {
                run_pending_command(file, argv, opts).await?;
            }
            t
        }
        (None, None) => return Err(usage("no server: give -- CMD ARGS, a URL, or @name")),
    };
    let (spec, target_json) = spec_of(&target, opts).await?;
    let setup = setup(opts)?;
    let mode = match (resume, opts.era) {
        (Some((_, p)), _) => Mode::Pinned(p.protocol_version.clone()),
        (None, Era::Auto) => Mode::Auto,
        (None, Era::Modern) => Mode::Pinned("2026-07-28".into()),
        (None, Era::Legacy) => Mode::Legacy,
    };
    let cell = Arc::new(OnceLock::new());
    let client = connect(&spec, opts, &setup, mode, cell.clone()).await?;
    let negotiated = client.negotiated();
    let server_name = negotiated
        .as_ref()
        .and_then(|n| n.server_info.as_ref().map(|i| i.name.clone()))
        .unwrap_or_else(|| match &target {
            Target::Stdio(argv) => Path::new(&argv[0])
                .file_name()
                .map_or_else(|| argv[0].clone(), |n| n.to_string_lossy().into_owned()),
            Target::Url(u) => u.clone(),
            Target::Named(n) => format!("@{n}"),
        });
    let (stuck_tx, stuck) = tokio::sync::mpsc::unbounded_channel();
    let driver = Arc::new(Driver {
        client: client.clone(),
        responder: setup.responder.clone(),
        max_rounds: opts.max_rounds,
        trace: opts.trace_rounds,
        server: server_name,
        target: Some(target_json),
        rounds: std::sync::Mutex::new(Vec::new()),
        ndjson: opts.format == Format::Ndjson,
        timeout: Some(Duration::from_secs(opts.timeout)),
        task_wait: Duration::from_secs(opts.task_wait.max(1)),
        live_rounds: Default::default(),
        during: Default::default(),
        stuck: stuck_tx,
    });
    let _ = cell.set(driver.clone());
    let modern = client.era() == Some(mcp::types::version::Era::Modern);
    Ok(Session {
        client,
        driver,
        stuck,
        modern,
        format: opts.format,
        save_ui: opts.save_ui.clone(),
    })
}

impl Session {
    /// Drives a call (or the rest of a pending one) to its end and reports how it ended.
    async fn finish_call(
        &mut self,
        call: Call,
        resume: Option<Pending>,
        out: Option<&Path>,
    ) -> Result<i32, Fail> {
        // The rounds shown with the result are this call's (a batch makes several).
        if let Ok(mut rounds) = self.driver.rounds.lock() {
            rounds.clear();
        }
        let finished = drive(&self.driver, &call, self.modern, &mut self.stuck, resume).await;
        finish(&self.driver, &call, finished, self.format, out).await
    }
}

/// `servers`: the configured servers and where each comes from.
fn servers(rest: &[String], opts: &Opts) -> Result<i32, Fail> {
    if !rest.is_empty() {
        return Err(usage(format!(
            "servers takes no arguments, got {}",
            rest.join(" ")
        )));
    }
    let listing = config::listing(&config_files(opts)).map_err(usage)?;
    render::servers(&listing, opts.format);
    Ok(code::OK)
}

/// `info`: the era negotiated, the server's information, and what this client advertised.
async fn info(s: &mut Session) -> Result<i32, Fail> {
    let client = &s.client;
    let n = client.negotiated();
    let info = json!({
        "protocolVersion": client.protocol_version(),
        "era": if s.modern { "2026-07-28 (stateless)" } else { "2025-11-25 (session)" },
        "serverInfo": n.as_ref().and_then(|n| n.server_info.clone()),
        "capabilities": n.as_ref().and_then(|n| n.capabilities.clone()),
        "instructions": n.as_ref().and_then(|n| n.instructions.clone()),
        "clientCapabilities": client.capabilities(),
    });
    let server_info = n.as_ref().and_then(|n| n.server_info.as_ref());
    render::info(&info, server_info, s.format);
    Ok(code::OK)
}

/// `tools`: the tools, with their input schemas on `--schema`.
async fn tools(s: &mut Session, schema: bool) -> Result<i32, Fail> {
    let tools = s.client.list_all_tools().await.map_err(client_fail)?;
    render::tools(&tools, schema, s.format);
    Ok(code::OK)
}

/// `prompts`: the prompts and their arguments.
async fn prompts(s: &mut Session) -> Result<i32, Fail> {
    let prompts = s.client.list_all_prompts().await.map_err(client_fail)?;
    render::prompts(&prompts, s.format);
    Ok(code::OK)
}

/// `resources`: the resources.
async fn resources(s: &mut Session) -> Result<i32, Fail> {
    let list = s.client.list_all_resources().await.map_err(client_fail)?;
    print_list(&list, s.format, |r| (&r.uri, &r.name));
    Ok(code::OK)
}

/// `templates`: the resource templates.
async fn templates(s: &mut Session) -> Result<i32, Fail> {
    let list = s
        .client
        .list_all_resource_templates()
        .await
        .map_err(client_fail)?;
    print_list(&list, s.format, |r| (&r.uri_template, &r.name));
    Ok(code::OK)
}

/// `call NAME k=v …`: the arguments built against the tool's input schema, then the call.
async fn call(
    s: &mut Session,
    name: String,
    params: Vec<String>,
    json_args: Option<String>,
) -> Result<i32, Fail> {
    let tools = s.client.list_all_tools().await.map_err(client_fail)?;
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        let hint = args::suggest(&name, tools.iter().map(|t| t.name.as_str()))
            .map(|s| format!("; did you mean {s}?"))
            .unwrap_or_default();
        return Err(fail(
            code::NOT_FOUND,
            "not_found",
            format!("the server has no tool {name:?}{hint}"),
        ));
    };
    let base = match json_args.as_deref() {
        None => None,
        Some("-") => Some(read_json(Path::new("-"), "--args")?),
        Some(a) if a.starts_with('@') => Some(read_json(Path::new(&a[1..]), "--args")?),
        Some(a) => {
            Some(serde_json::from_str(a).map_err(|e| usage(format!("--args: not JSON: {e}")))?)
        }
    };
    let arguments = args::build(base, &params, &tool.input_schema).map_err(usage)?;
    if let Some(uri) = Client::tool_app(tool).and_then(|ui| ui.resource_uri) {
        mcp_term::apps::announce(&s.client, &name, &uri, s.save_ui.as_deref()).await;
    }
    let call = Call::Tool {
        name,
        arguments: Value::Object(arguments),
    };
    s.finish_call(call, None, None).await
}

/// `prompt NAME k=v …`: the arguments checked against the prompt's, then the get.
async fn get_prompt(s: &mut Session, name: String, params: Vec<String>) -> Result<i32, Fail> {
    let prompts = s.client.list_all_prompts().await.map_err(client_fail)?;
    let Some(p) = prompts.iter().find(|p| p.name == name) else {
        let hint = args::suggest(&name, prompts.iter().map(|p| p.name.as_str()))
            .map(|s| format!("; did you mean {s}?"))
            .unwrap_or_default();
        return Err(fail(
            code::NOT_FOUND,
            "not_found",
            format!("the server has no prompt {name:?}{hint}"),
        ));
    };
    let known: Vec<&str> = p
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.as_str())
        .collect();
    let mut arguments = BTreeMap::new();
    for pair in &params {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| usage(format!("{pair:?}: write name=value")))?;
        if !known.contains(&k) {
            let hint = args::suggest(k, known.iter().copied())
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
            return Err(usage(format!("the prompt has no argument {k:?}{hint}")));
        }
        arguments.insert(k.to_owned(), v.to_owned());
    }
    s.finish_call(Call::Prompt { name, arguments }, None, None)
        .await
}

/// `read URI [--out FILE]`.
async fn read(s: &mut Session, uri: String, out: Option<PathBuf>) -> Result<i32, Fail> {
    s.finish_call(Call::Read { uri }, None, out.as_deref())
        .await
}

/// `resume FILE`: the call a pending file stopped at, finished.
async fn resume_call(s: &mut Session, p: Pending) -> Result<i32, Fail> {
    if !s.modern {
        return Err(usage(
            "the server no longer speaks the pending file's protocol version",
        ));
    }
    let call = p.call.clone();
    s.finish_call(call, Some(p), None).await
}

async fn drive(
    driver: &Arc<Driver>,
    call: &Call,
    modern: bool,
    stuck: &mut tokio::sync::mpsc::UnboundedReceiver<Finished>,
    resume: Option<Pending>,
) -> Finished {
    if !modern {
        return driver.legacy(call, stuck).await;
    }
    match resume {
        None => driver.modern(call, None, None, 0).await,
        // A task keeps its own state on the server: poll it, answer what is still open (with
        // what the earlier process already answered) and follow it to the end.
        Some(Pending {
            task: Some(task),
            round,
            answered,
            ..
        }) => match driver.client.attach_task(task, driver.timeout) {
            Ok(handle) => {
                driver
                    .task(call, handle, round.saturating_sub(1), answered)
                    .await
            }
            Err(e) => Finished::Client(e),
        },
        Some(p) => {
            // Answer what the earlier process could not, keep what it answered, and retry with
            // the state exactly as the server sent it.
            driver.record(mcp_term::rounds::RoundTrace::of(p.round, &p.input_required));
            let answered: InputResponses = p.answered.clone();
            match driver
                .answer_round(call, p.round, &p.input_required, answered)
                .await
            {
                Ok(responses) => {
                    driver
                        .modern(
                            call,
                            Some(responses),
                            p.input_required.request_state.clone(),
                            p.round,
                        )
                        .await
                }
                Err(f) => f,
            }
        }
    }
}

async fn finish(
    driver: &Arc<Driver>,
    call: &Call,
    finished: Finished,
    format: Format,
    out: Option<&Path>,
) -> Result<i32, Fail> {
    let rounds = driver.rounds.lock().map(|r| r.clone()).unwrap_or_default();
    let result = match finished {
        Finished::Done(v) => v,
        Finished::Pending(p) => {
            let v = serde_json::to_value(&*p).unwrap_or(Value::Null);
            render::pending(&v, format);
            // `resume` does not run a command from the file: a stdio server is named again.
            let again = if p.target.as_ref().is_some_and(|t| t.get("stdio").is_some()) {
                " -- CMD ARGS"
            } else {
                ""
            };
            return Err(fail(
                code::INPUT_REQUIRED,
                "input_required",
                format!(
                    "input required: {} (save the JSON above and finish with: mcp-term resume FILE --answers ANSWERS.json{again})",
                    p.reason
                ),
            ));
        }
        Finished::PendingLegacy(v) => {
            render::pending(&v, format);
            let reason = v["reason"].as_str().unwrap_or("input required").to_owned();
            return Err(fail(code::INPUT_REQUIRED, "input_required", reason));
        }
        Finished::Refused(why) => return Err(fail(code::REFUSED, "refused", why)),
        Finished::MaxRounds(n) => {
            return Err(fail(
                code::MAX_ROUNDS,
                "max_rounds",
                format!("the server kept asking past {n} round(s) (--max-rounds)"),
            ));
        }
        Finished::Client(e) => return Err(client_fail(e)),
        Finished::Usage(why) => return Err(usage(why)),
    };
    let is_error =
        matches!(call, Call::Tool { .. }) && result.get("isError") == Some(&Value::Bool(true));
    if let (Call::Read { .. }, Some(path)) = (call, out) {
        render::write_contents(&result, path)?;
        return Ok(code::OK);
    }
    render::result(call, &result, &rounds, format);
    Ok(if is_error { code::TOOL_ERROR } else { code::OK })
}
