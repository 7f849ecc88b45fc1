//! The one entry point for every way a server asks: a legacy live request, a 2026-07-28
//! `inputRequests` entry, or a question of a task in `input_required` all become a
//! [`Question`], and [`Responder::answer`] decides with the same sources, form engine and
//! renderer.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult,
};
use mcp::types::mrtr::{InputRequest, InputResponse};
use mcp::types::roots::{ListRootsResult, Root};
use mcp::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp::types::{ErrorCode, ErrorObject};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::answers::{Given, Sources};
use crate::form::Form;
use crate::prompt::{Asking, Decision, Prompter};

/// `--elicit`: what to do with a question no source answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    /// Ask on the terminal (without one, the same as `fail`).
    Prompt,
    /// Decline it.
    Decline,
    /// Cancel it.
    Cancel,
    /// Stop: print the pending request and exit 10.
    Fail,
}

/// `--sampling`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SamplingMode {
    /// Show the request and type the reply (declines without a terminal).
    Prompt,
    /// Refuse every request.
    Decline,
    /// Answer every request with this text.
    Fixed(String),
    /// Pipe the request JSON to `sh -c CMD`; its stdout is the `CreateMessageResult`.
    Exec(String),
}

impl std::str::FromStr for SamplingMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "prompt" => Ok(SamplingMode::Prompt),
            "decline" => Ok(SamplingMode::Decline),
            _ => {
                if let Some(text) = s.strip_prefix("fixed:") {
                    Ok(SamplingMode::Fixed(text.to_owned()))
                } else if let Some(cmd) = s.strip_prefix("exec:") {
                    Ok(SamplingMode::Exec(cmd.to_owned()))
                } else {
                    Err("expected prompt, decline, fixed:TEXT or exec:CMD".into())
                }
            }
        }
    }
}

/// One question from the server.
#[derive(Debug, Clone)]
pub struct Question {
    /// Who asks, where, which round.
    pub asking: Asking,
    /// What it asks.
    pub request: InputRequest,
}

/// The decision on one question.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per question, never stored in bulk
pub enum Reply {
    /// Send this.
    Answer(InputResponse),
    /// Nobody can answer now: the flow stops with exit 10.
    Pending(String),
    /// Refuse with this error.
    Refused(ErrorObject),
}

/// A mistake of the person running the command (an invalid `--answer`): exit 2.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage(pub String);

/// Longest `exec:` sampling output read.
pub const MAX_EXEC_OUTPUT: u64 = 1024 * 1024;

/// Answers questions.
pub struct Responder {
    /// `--answer`, `--answers`.
    pub sources: Sources,
    /// `--elicit`.
    pub policy: Policy,
    /// Whether a person is there to ask (a terminal, or `--tty`).
    pub interactive: bool,
    /// ANSI emphasis in prompts.
    pub color: bool,
    /// `--accept-defaults`.
    pub accept_defaults: bool,
    /// `--sampling`; `None` means not advertised.
    pub sampling: Option<SamplingMode>,
    /// `--root`s.
    pub roots: Vec<Root>,
    /// `--open`.
    pub open: bool,
    /// How long an `exec:` sampler may run.
    pub exec_timeout: Duration,
    /// One prompt on the terminal at a time.
    terminal: Mutex<()>,
}

impl Responder {
    /// A responder with the given sources and policy; the rest is off.
    pub fn new(sources: Sources, policy: Policy, interactive: bool) -> Self {
        Responder {
            sources,
            policy,
            interactive,
            color: interactive && std::io::stderr().is_terminal(),
            accept_defaults: false,
            sampling: None,
            roots: Vec::new(),
            open: false,
            exec_timeout: Duration::from_secs(60),
            terminal: Mutex::new(()),
        }
    }

    fn can_prompt(&self) -> bool {
        self.interactive && self.policy == Policy::Prompt
    }

    fn unanswered(&self, why: String) -> Reply {
        match self.policy {
            Policy::Decline => Reply::Answer(InputResponse::Elicit(ElicitResult::decline())),
            Policy::Cancel => Reply::Answer(InputResponse::Elicit(ElicitResult::cancel())),
            Policy::Fail | Policy::Prompt => Reply::Pending(why),
        }
    }

    /// Runs `f` with a prompter on stdin/stderr, off the async threads.
    async fn on_terminal<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(
            &mut Prompter<std::io::StdinLock<'static>, std::io::Stderr>,
        ) -> std::io::Result<T>
        + Send
        + 'static,
    ) -> Result<T, Usage> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let _one = me.terminal.lock().unwrap_or_else(|e| e.into_inner());
            let mut prompter = Prompter::new(std::io::stdin().lock(), std::io::stderr(), me.color);
            f(&mut prompter)
        })
        .await
        .map_err(|e| Usage(format!("the prompt stopped: {e}")))?
        .map_err(|e| Usage(format!("the terminal failed: {e}")))
    }

    /// Decides one question.
    pub async fn answer(self: &Arc<Self>, question: Question) -> Result<Reply, Usage> {
        let Question { asking, request } = question;
        match request {
            InputRequest::Elicit(ElicitRequestParams::Form(params)) => {
                self.answer_form(asking, params).await
            }
            InputRequest::Elicit(ElicitRequestParams::Url(params)) => {
                self.answer_url(asking, params).await
            }
            InputRequest::CreateMessage(params) => Ok(self.sample(asking, params).await),
            InputRequest::ListRoots(_) => Ok(if self.roots.is_empty() {
                Reply::Refused(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "List roots not supported",
                ))
            } else {
                Reply::Answer(InputResponse::ListRoots(ListRootsResult {
                    roots: self.roots.clone(),
                    meta: None,
                    extra: Default::default(),
                }))
            }),
            InputRequest::Unknown { method, .. } => {
                Ok(Reply::Refused(ErrorObject::method_not_found(&method)))
            }
        }
    }

    /// A form: from the sources (flags, answers file, defaults), else the terminal, else
    /// unanswered.
    async fn answer_form(
        self: &Arc<Self>,
        asking: Asking,
        params: ElicitRequestFormParams,
    ) -> Result<Reply, Usage> {
        let message = params.message.clone();
        let form = match Form::from_schema(&params.requested_schema) {
            Ok(form) => form,
            Err(why) => {
                if !self.can_prompt() {
                    return Ok(self.unanswered(format!("the form cannot be rendered ({})", why.0)));
                }
                let schema = serde_json::to_value(&params.requested_schema).unwrap_or(Value::Null);
                let d = self
                    .on_terminal(move |p| p.raw(&asking, &message, &schema, &why.0))
                    .await?;
                return Ok(Reply::Answer(InputResponse::Elicit(form_result(d))));
            }
        };
        let given = self
            .sources
            .form(asking.round, &asking.key, &form)
            .map_err(Usage)?;
        let fields = match given {
            Given::Action(ElicitAction::Accept, Some(content)) => {
                return Ok(Reply::Answer(InputResponse::Elicit(ElicitResult::accept(
                    content,
                ))));
            }
            Given::Action(ElicitAction::Accept, None) => BTreeMap::new(),
            Given::Action(ElicitAction::Decline, _) => {
                return Ok(Reply::Answer(
                    InputResponse::Elicit(ElicitResult::decline()),
                ));
            }
            Given::Action(ElicitAction::Cancel, _) => {
                return Ok(Reply::Answer(InputResponse::Elicit(ElicitResult::cancel())));
            }
            Given::Fields(fields) => fields,
        };
        let full = form.with_defaults(fields.clone());
        let missing = form.missing(&full);
        if missing.is_empty() && (!fields.is_empty() || self.accept_defaults) {
            let content = form.check(&full).map_err(Usage)?;
            return Ok(Reply::Answer(InputResponse::Elicit(ElicitResult::accept(
                content,
            ))));
        }
        if self.can_prompt() {
            let d = self
                .on_terminal(move |p| p.form(&asking, &message, &form, fields))
                .await?;
            return Ok(Reply::Answer(InputResponse::Elicit(form_result(d))));
        }
        let why = if missing.is_empty() {
            "no answer was given (--answer, --answers or --accept-defaults)".to_owned()
        } else {
            format!("no answer for required field(s) {}", missing.join(", "))
        };
        Ok(self.unanswered(why))
    }

    /// A URL: opened only when a person who saw the address accepted it on the terminal.
    async fn answer_url(
        self: &Arc<Self>,
        asking: Asking,
        params: ElicitRequestUrlParams,
    ) -> Result<Reply, Usage> {
        let page = crate::browser::parse(&params.url);
        // Who decided matters: only a person who saw the address may have it opened.
        let (decided, by_person) =
            match self.sources.url(asking.round, &asking.key).map_err(Usage)? {
                Some(a) => (Some(a), false),
                None if self.can_prompt() => {
                    let (message, raw, shown) =
                        (params.message.clone(), params.url.clone(), page.clone());
                    let d = self
                        .on_terminal(move |p| p.url(&asking, &message, &raw, &shown))
                        .await?;
                    let action = match d {
                        Decision::Accept(_) => ElicitAction::Accept,
                        Decision::Decline => ElicitAction::Decline,
                        Decision::Cancel => ElicitAction::Cancel,
                    };
                    (Some(action), true)
                }
                None => (None, false),
            };
        let declined = |why: &crate::browser::Refused| {
            eprintln!(
                "  declined a URL request ({why}): {}",
                crate::text::sanitize_line(&params.url)
            );
            Reply::Answer(InputResponse::Elicit(ElicitResult::decline()))
        };
        Ok(match (decided, page) {
            (Some(ElicitAction::Accept), Ok(page)) => {
                if self.open && by_person {
                    crate::browser::open(&page);
                } else {
                    eprintln!("  open this URL yourself: {}", page.href);
                    if self.open {
                        eprintln!(
                            "  (--open opens only what a person accepted on the terminal, not an answer from --answers)"
                        );
                    }
                }
                Reply::Answer(InputResponse::Elicit(ElicitResult::accept_url()))
            }
            // Nobody can consent to a refused URL: an answer written in advance, or
            // no answer at all, declines it.
            (Some(ElicitAction::Accept) | None, Err(why)) => declined(&why),
            (Some(ElicitAction::Decline), _) => {
                Reply::Answer(InputResponse::Elicit(ElicitResult::decline()))
            }
            (Some(ElicitAction::Cancel), _) => {
                Reply::Answer(InputResponse::Elicit(ElicitResult::cancel()))
            }
            (None, Ok(_)) => self
                .unanswered("a URL needs consent (--answers with \"_url\", or a terminal)".into()),
        })
    }

    async fn sample(self: &Arc<Self>, asking: Asking, params: CreateMessageRequestParams) -> Reply {
        let rejected = || {
            Reply::Refused(ErrorObject::new(
                ErrorCode(-1),
                "User rejected sampling request",
            ))
        };
        match self.sampling.clone() {
            None => Reply::Refused(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "Sampling not supported",
            )),
            Some(SamplingMode::Decline) => rejected(),
            Some(SamplingMode::Fixed(text)) => Reply::Answer(InputResponse::CreateMessage(
                assistant(&text, "mcp-term-fixed"),
            )),
            Some(SamplingMode::Exec(cmd)) => match self.exec(&cmd, &params).await {
                Ok(result) => Reply::Answer(InputResponse::CreateMessage(result)),
                Err(why) => Reply::Refused(ErrorObject::internal(format!(
                    "the sampling command failed: {why}"
                ))),
            },
            Some(SamplingMode::Prompt) if self.interactive => {
                let shown = describe_sampling(&params);
                match self
                    .on_terminal(move |p| p.text(&asking, &shown, "  reply (empty declines): "))
                    .await
                {
                    Ok(Some(text)) => Reply::Answer(InputResponse::CreateMessage(assistant(
                        &text,
                        "mcp-term-user",
                    ))),
                    _ => rejected(),
                }
            }
            Some(SamplingMode::Prompt) => rejected(),
        }
    }

    async fn exec(
        &self,
        cmd: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, String> {
        let request =
            serde_json::to_vec(&json!({"method": "sampling/createMessage", "params": params}))
                .map_err(|e| e.to_string())?;
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", cmd])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start sh -c {cmd:?}: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let run = async {
            // A command that answers without reading its input (a canned reply) is fine.
            match stdin.write_all(&request).await {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.to_string()),
                _ => {}
            }
            drop(stdin);
            let mut out = Vec::new();
            stdout
                .take(MAX_EXEC_OUTPUT + 1)
                .read_to_end(&mut out)
                .await
                .map_err(|e| e.to_string())?;
            if out.len() as u64 > MAX_EXEC_OUTPUT {
                return Err(format!("it printed more than {MAX_EXEC_OUTPUT} bytes"));
            }
            let status = child.wait().await.map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("it exited with {status}"));
            }
            serde_json::from_slice::<CreateMessageResult>(&out)
                .map_err(|e| format!("its output is not a CreateMessageResult: {e}"))
        };
        tokio::time::timeout(self.exec_timeout, run)
            .await
            .map_err(|_| format!("no result within {:?}", self.exec_timeout))?
    }
}

fn form_result(d: Decision) -> ElicitResult {
    match d {
        Decision::Accept(content) => ElicitResult::accept(content),
        Decision::Decline => ElicitResult::decline(),
        Decision::Cancel => ElicitResult::cancel(),
    }
}

fn assistant(text: &str, model: &str) -> CreateMessageResult {
    serde_json::from_value(
        json!({"role": "assistant", "content": {"type": "text", "text": text},
        "model": model, "stopReason": "endTurn"}),
    )
    .expect("a text CreateMessageResult is valid")
}

fn describe_sampling(params: &CreateMessageRequestParams) -> String {
    let mut s =
        String::from("The server asks for a model's reply (sampling, deprecated on 2026-07-28).\n");
    if let Some(system) = &params.system_prompt {
        s.push_str(&format!("system: {system}\n"));
    }
    for m in &params.messages {
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        let role = v
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let text = match v.get("content") {
            Some(Value::Object(c)) => c
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("[non-text content]")
                .to_owned(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|c| {
                    c.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("[non-text content]")
                })
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        s.push_str(&format!("{role}: {text}\n"));
    }
    s.push_str(&format!("maxTokens: {}", params.max_tokens));
    if let Some(ctx) = &params.include_context {
        s.push_str(&format!(", includeContext: {ctx}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp::types::elicitation::ElicitValue;

    fn question(schema: Value) -> Question {
        let request: InputRequest = serde_json::from_value(json!({"method": "elicitation/create",
            "params": {"message": "Delete?", "requestedSchema": schema}}))
        .unwrap();
        Question {
            asking: Asking {
                round: 1,
                key: "confirm".into(),
                ..Default::default()
            },
            request,
        }
    }

    fn confirm() -> Value {
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
    }

    fn responder(file: Option<Value>, policy: Policy) -> Arc<Responder> {
        Arc::new(Responder::new(
            Sources {
                cli: Vec::new(),
                file,
            },
            policy,
            false,
        ))
    }

    #[tokio::test]
    async fn without_a_terminal_an_unanswered_form_is_pending_or_the_policy() {
        let reply = responder(None, Policy::Fail)
            .answer(question(confirm()))
            .await
            .unwrap();
        assert_eq!(
            reply,
            Reply::Pending("no answer for required field(s) ok".into())
        );
        let reply = responder(None, Policy::Prompt)
            .answer(question(confirm()))
            .await
            .unwrap();
        assert!(matches!(reply, Reply::Pending(_)));
        let reply = responder(None, Policy::Decline)
            .answer(question(confirm()))
            .await
            .unwrap();
        assert_eq!(
            reply,
            Reply::Answer(InputResponse::Elicit(ElicitResult::decline()))
        );
        let reply = responder(None, Policy::Cancel)
            .answer(question(confirm()))
            .await
            .unwrap();
        assert_eq!(
            reply,
            Reply::Answer(InputResponse::Elicit(ElicitResult::cancel()))
        );
    }

    #[tokio::test]
    async fn answers_and_defaults_complete_a_form() {
        let reply = responder(Some(json!({"ok": true})), Policy::Fail)
            .answer(question(confirm()))
            .await
            .unwrap();
        assert_eq!(
            reply,
            Reply::Answer(InputResponse::Elicit(ElicitResult::accept(BTreeMap::from(
                [("ok".into(), ElicitValue::Bool(true))]
            ))))
        );
        let with_default = json!({"type": "object", "properties": {"ok": {"type": "boolean", "default": true}}, "required": ["ok"]});
        let r = responder(None, Policy::Fail);
        assert!(matches!(
            r.answer(question(with_default.clone())).await.unwrap(),
            Reply::Pending(_)
        ));
        let mut r = Responder::new(Sources::default(), Policy::Fail, false);
        r.accept_defaults = true;
        let reply = Arc::new(r).answer(question(with_default)).await.unwrap();
        assert_eq!(
            reply,
            Reply::Answer(InputResponse::Elicit(ElicitResult::accept(BTreeMap::from(
                [("ok".into(), ElicitValue::Bool(true))]
            ))))
        );
    }

    #[tokio::test]
    async fn an_invalid_file_answer_is_a_usage_error() {
        let err = responder(Some(json!({"ok": "yes"})), Policy::Fail)
            .answer(question(confirm()))
            .await
            .unwrap_err();
        assert_eq!(err, Usage("ok: expected true or false, got \"yes\"".into()));
    }

    #[tokio::test]
    async fn an_unrenderable_form_is_never_silently_declined() {
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        let reply = responder(None, Policy::Fail)
            .answer(question(nested))
            .await
            .unwrap();
        assert_eq!(reply, Reply::Pending("the form cannot be rendered (field \"a\": type \"object\" is not a primitive form field)".into()));
    }

    #[tokio::test]
    async fn sampling_modes() {
        let request: InputRequest = serde_json::from_value(json!({"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}))
        .unwrap();
        let q = Question {
            asking: Asking::default(),
            request,
        };
        let mut r = Responder::new(Sources::default(), Policy::Fail, false);
        assert!(
            matches!(Arc::new(Responder::new(Sources::default(), Policy::Fail, false)).answer(q.clone()).await.unwrap(),
            Reply::Refused(e) if e.message == "Sampling not supported")
        );
        r.sampling = Some("fixed:hello".parse().unwrap());
        let Reply::Answer(InputResponse::CreateMessage(result)) =
            Arc::new(r).answer(q.clone()).await.unwrap()
        else {
            panic!()
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap()["content"]["text"],
            "hello"
        );
        let mut r = Responder::new(Sources::default(), Policy::Fail, false);
        r.sampling = Some(SamplingMode::Exec(
            r#"grep -q '"maxTokens":5' && echo '{"role":"assistant","content":{"type":"text","text":"from exec"},"model":"stub"}'"#.into(),
        ));
        let Reply::Answer(InputResponse::CreateMessage(result)) =
            Arc::new(r).answer(q.clone()).await.unwrap()
        else {
            panic!()
        };
        assert_eq!(result.model, "stub");
        let mut r = Responder::new(Sources::default(), Policy::Fail, false);
        r.sampling = Some(SamplingMode::Exec("echo nope".into()));
        let Reply::Refused(e) = Arc::new(r).answer(q).await.unwrap() else {
            panic!()
        };
        assert!(
            e.message.starts_with(
                "the sampling command failed: its output is not a CreateMessageResult"
            ),
            "{}",
            e.message
        );
        assert!("bogus".parse::<SamplingMode>().is_err());
    }
}
