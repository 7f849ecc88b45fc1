//! What the verbs print: listings, the server's information, results for people, and
//! progress and log lines on stderr. Server text is sanitized where it is printed.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use std::path::Path;

use mcp::types::lifecycle::Implementation;
use mcp::types::prompts::Prompt;
use mcp::types::tools::Tool;
use serde_json::{Value, json};

use mcp_term::code;
use mcp_term::rounds::Call;
use mcp_term::text;

use crate::cli::Format;
use crate::fail::{Fail, fail, usage};

/// Progress on stderr: a bar on a terminal, a line otherwise.
pub(crate) fn show_progress(p: &mcp::types::notifications::ProgressParams) {
    let v = serde_json::to_value(p).unwrap_or(Value::Null);
    let done = v.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let total = v.get("total").and_then(Value::as_f64);
    let message = v
        .get("message")
        .and_then(Value::as_str)
        .map(text::sanitize_line)
        .unwrap_or_default();
    let terminal = std::io::stderr().is_terminal();
    match total {
        Some(t) if t > 0.0 && terminal => {
            let width = 20usize;
            let filled = ((done / t).clamp(0.0, 1.0) * width as f64) as usize;
            eprint!(
                "\r[{}{}] {done}/{t} {message}\u{1b}[K",
                "#".repeat(filled),
                " ".repeat(width - filled)
            );
            if done >= t {
                eprintln!();
            }
        }
        Some(t) => eprintln!("progress {done}/{t} {message}"),
        None => eprintln!("progress {done} {message}"),
    }
}

pub(crate) fn show_log(m: &mcp::types::logging::LoggingMessageParams) {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    let level = v.get("level").and_then(Value::as_str).unwrap_or("?");
    let logger = v
        .get("logger")
        .and_then(Value::as_str)
        .map(|l| format!(" {}", text::sanitize(l)))
        .unwrap_or_default();
    let data = match v.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    eprintln!("log [{level}]{logger}: {}", text::sanitize(&data));
}

/// JSON on stdout: the exact data, with what a terminal would act on escaped.
pub(crate) fn print_json(v: &Value, format: Format) {
    match format {
        Format::Ndjson => println!("{}", text::json_line(v)),
        _ => println!("{}", text::json_pretty(v)),
    }
}

/// A listing: one `first  second` line per item for people (server text sanitized), or the
/// items as JSON.
pub(crate) fn print_list<T: serde::Serialize>(
    list: &[T],
    format: Format,
    columns: impl Fn(&T) -> (&str, &str),
) {
    if format == Format::Human {
        for item in list {
            let (first, second) = columns(item);
            println!(
                "{}  {}",
                text::sanitize_line(first),
                text::sanitize_line(second)
            );
        }
    } else {
        print_json(&serde_json::to_value(list).unwrap_or(Value::Null), format);
    }
}

/// A result for people. Every line holds the server's text (a role, a type, a URI, content),
/// so the whole text is sanitized once, where it is printed.
pub(crate) fn print_human(call: &Call, result: &Value) {
    let mut shown = String::new();
    human(&mut shown, call, result);
    print!("{}", text::sanitize(&shown));
}

fn human(out: &mut String, call: &Call, result: &Value) {
    use std::fmt::Write as _;
    let blocks: Vec<Value> = match call {
        Call::Tool { .. } => result
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        Call::Prompt { .. } => {
            if let Some(d) = result.get("description").and_then(Value::as_str) {
                let _ = writeln!(out, "{d}");
            }
            for m in result
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                let _ = write!(out, "{}: ", text::sanitize_line(role));
                human_block(out, m.get("content").unwrap_or(&Value::Null));
            }
            return;
        }
        Call::Read { .. } => {
            for c in result
                .get("contents")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match c.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        let _ = writeln!(out, "{t}");
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "[binary {} from {}; use --out FILE]",
                            text::sanitize_line(
                                c.get("mimeType").and_then(Value::as_str).unwrap_or("data")
                            ),
                            text::sanitize_line(c.get("uri").and_then(Value::as_str).unwrap_or(""))
                        );
                    }
                }
            }
            return;
        }
    };
    for b in &blocks {
        human_block(out, b);
    }
    if let Some(s) = result.get("structuredContent") {
        let _ = writeln!(
            out,
            "structured: {}",
            serde_json::to_string_pretty(s).unwrap_or_default()
        );
    }
}

/// One content block for people; the text it writes is sanitized by the caller.
fn human_block(out: &mut String, b: &Value) {
    use std::fmt::Write as _;
    let one = |key: &str| text::sanitize_line(b.get(key).and_then(Value::as_str).unwrap_or(""));
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
    let _ = match kind {
        "text" => writeln!(
            out,
            "{}",
            b.get("text").and_then(Value::as_str).unwrap_or("")
        ),
        "image" | "audio" => writeln!(
            out,
            "[{kind} {}, {} base64 characters]",
            b.get("mimeType")
                .and_then(Value::as_str)
                .map_or_else(|| "?".to_owned(), text::sanitize_line),
            b.get("data").and_then(Value::as_str).map_or(0, str::len)
        ),
        "resource_link" => writeln!(out, "link: {}", one("uri")),
        "resource" => {
            let r = b.get("resource").cloned().unwrap_or(Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(t) => writeln!(out, "{t}"),
                None => writeln!(
                    out,
                    "[embedded resource {}]",
                    text::sanitize_line(r.get("uri").and_then(Value::as_str).unwrap_or(""))
                ),
            }
        }
        _ => writeln!(out, "{b}"),
    };
}

/// `servers`: one line per configured server for people, or the listing as JSON.
pub(crate) fn servers(listing: &[BTreeMap<&'static str, Value>], format: Format) {
    if format == Format::Human {
        for e in listing {
            let shadow = if e["shadowed"] == Value::Bool(true) {
                " (shadowed)"
            } else {
                ""
            };
            println!(
                "{}",
                text::sanitize_line(&format!(
                    "@{}  {}  {}  {}{shadow}",
                    e["name"].as_str().unwrap_or(""),
                    e["transport"].as_str().unwrap_or(""),
                    e["source"].as_str().unwrap_or(""),
                    e["scope"].as_str().unwrap_or("")
                ))
            );
        }
    } else {
        print_json(
            &serde_json::to_value(listing).unwrap_or(Value::Null),
            format,
        );
    }
}

/// `info`: the era, the server, its capabilities and instructions, and what this client
/// advertised; `info` is the whole of it as JSON.
pub(crate) fn info(info: &Value, server_info: Option<&Implementation>, format: Format) {
    if format == Format::Human {
        println!("protocol: {}", info["era"].as_str().unwrap_or(""));
        if let Some(i) = server_info {
            println!(
                "server: {} {}",
                text::sanitize_line(&i.name),
                text::sanitize_line(&i.version)
            );
        }
        println!(
            "server capabilities: {}",
            text::json_line(&info["capabilities"])
        );
        if let Some(instructions) = info["instructions"].as_str() {
            println!("instructions: {}", text::sanitize(instructions));
        }
        println!("client advertised: {}", info["clientCapabilities"]);
    } else {
        print_json(info, format);
    }
}

/// `tools`: a name and description per tool (and its input schema with `schema`), or JSON.
pub(crate) fn tools(tools: &[Tool], schema: bool, format: Format) {
    if format == Format::Human {
        for t in tools {
            let desc = t
                .description
                .as_deref()
                .map(|d| format!("  {}", text::sanitize(d)))
                .unwrap_or_default();
            let app = mcp::client::Client::tool_app(t)
                .and_then(|ui| ui.resource_uri)
                .map(|uri| format!("  [app: {}]", text::sanitize_line(&uri)))
                .unwrap_or_default();
            println!("{}{desc}{app}", text::sanitize_line(&t.name));
            if schema {
                let s = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
                for line in text::sanitize(&s).lines() {
                    println!("    {line}");
                }
            }
        }
    } else {
        print_json(&serde_json::to_value(tools).unwrap_or(Value::Null), format);
    }
}

/// `prompts`: `name(arg, required*)  description` per prompt, or JSON.
pub(crate) fn prompts(prompts: &[Prompt], format: Format) {
    if format == Format::Human {
        for p in prompts {
            let args: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    format!(
                        "{}{}",
                        a.name,
                        if a.required == Some(true) { "*" } else { "" }
                    )
                })
                .collect();
            let desc = p
                .description
                .as_deref()
                .map(|d| format!("  {}", text::sanitize(d)))
                .unwrap_or_default();
            println!(
                "{}({}){desc}",
                text::sanitize_line(&p.name),
                text::sanitize_line(&args.join(", "))
            );
        }
    } else {
        print_json(
            &serde_json::to_value(prompts).unwrap_or(Value::Null),
            format,
        );
    }
}

/// A pending request on stdout, always as JSON (one line with `--format ndjson`).
pub(crate) fn pending(v: &Value, format: Format) {
    print_json(
        v,
        if format == Format::Ndjson {
            Format::Ndjson
        } else {
            Format::Json
        },
    );
}

/// A call's result on stdout: for people, as JSON with its rounds, or as an ndjson event.
pub(crate) fn result(call: &Call, result: &Value, rounds: &impl serde::Serialize, format: Format) {
    match format {
        Format::Human => print_human(call, result),
        Format::Json => print_json(&json!({"result": result, "rounds": rounds}), Format::Json),
        Format::Ndjson => println!(
            "{}",
            text::json_line(&json!({"event": "result", "result": result}))
        ),
    }
}

/// `read --out FILE`: the contents of a read, text as is and blobs decoded, into one file.
pub(crate) fn write_contents(result: &Value, path: &Path) -> Result<(), Fail> {
    let mut bytes = Vec::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.get("text").and_then(Value::as_str) {
            bytes.extend_from_slice(t.as_bytes());
        } else if let Some(b) = c.get("blob").and_then(Value::as_str) {
            use base64::Engine as _;
            bytes.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| {
                        fail(
                            code::PROTOCOL,
                            "protocol",
                            format!("a blob is not base64: {e}"),
                        )
                    })?,
            );
        }
    }
    std::fs::write(path, &bytes).map_err(|e| usage(format!("--out {}: {e}", path.display())))?;
    eprintln!("wrote {} byte(s) to {}", bytes.len(), path.display());
    Ok(())
}
