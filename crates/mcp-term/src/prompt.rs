//! The line renderer: a form, a URL request or a raw schema asked over any `BufRead` and
//! `Write` (stdin and stderr on a terminal, buffers in tests). Prompts go to the writer, never
//! to stdout, so `--format json` output stays clean.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use mcp::types::elicitation::ElicitValue;
use serde_json::Value;

use crate::browser::{BrowserUrl, Refused};
use crate::form::{Field, Form, Kind, show};
use crate::text::sanitize;

/// What the person decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Submit these values (empty for a URL consent).
    Accept(BTreeMap<String, ElicitValue>),
    /// Say no.
    Decline,
    /// Dismiss.
    Cancel,
}

/// Who asks, shown above every question.
#[derive(Debug, Clone, Default)]
pub struct Asking {
    /// The server's name.
    pub server: String,
    /// The protocol version.
    pub era: String,
    /// What the question is part of: `tools/call delete_folder`.
    pub during: String,
    /// 1-based round, and the cap.
    pub round: u32,
    /// `--max-rounds`.
    pub max_rounds: u32,
    /// The `inputRequests` key or the live request's id.
    pub key: String,
}

/// Field names that look like they ask for a secret.
fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "private_key",
        "credential",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// A line renderer over `input` and `output`.
pub struct Prompter<R, W> {
    input: R,
    output: W,
    /// Use ANSI emphasis (on a terminal).
    pub color: bool,
}

impl<R: BufRead, W: Write> Prompter<R, W> {
    /// A prompter; `color` turns on ANSI emphasis.
    pub fn new(input: R, output: W, color: bool) -> Self {
        Prompter {
            input,
            output,
            color,
        }
    }

    /// Writes one line of the screen. Every line passes through [`sanitize`], whatever it
    /// holds: a label, a description, a `format`, a choice, a reason quoting a value.
    fn say(&mut self, line: &str) -> io::Result<()> {
        writeln!(self.output, "{}", sanitize(line))
    }

    /// Writes `before`, `strong` emphasised (on a terminal) and `after` on one line: each part
    /// is sanitized before the emphasis is added, so only the tool's own escapes remain.
    fn say_emphasised(&mut self, before: &str, strong: &str, after: &str) -> io::Result<()> {
        let (before, strong, after) = (sanitize(before), sanitize(strong), sanitize(after));
        if self.color {
            writeln!(self.output, "{before}\u{1b}[1m{strong}\u{1b}[0m{after}")
        } else {
            writeln!(self.output, "{before}{strong}{after}")
        }
    }

    /// One line, without its end; `None` at end of input.
    fn line(&mut self, prompt: &str) -> io::Result<Option<String>> {
        write!(self.output, "{}", sanitize(prompt))?;
        self.output.flush()?;
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            writeln!(self.output)?;
            return Ok(None);
        }
        Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
    }

    fn header(&mut self, asking: &Asking, message: &str) -> io::Result<()> {
        let title = format!(
            "{} asks ({}, round {} of {}, {})",
            asking.server, asking.during, asking.round, asking.max_rounds, asking.era
        );
        self.say_emphasised("── ", &title, " ──")?;
        for line in sanitize(message).lines() {
            self.say(&format!("  {line}"))?;
        }
        Ok(())
    }

    fn describe(&self, field: &Field, value: Option<&ElicitValue>) -> String {
        let mut s = format!("{}{}", field.label, if field.required { "*" } else { "" });
        if field.label != field.name {
            s.push_str(&format!(" [{}]", field.name));
        }
        s.push_str(&format!(" ({})", field.kind.describe()));
        if let Some(d) = &field.description {
            s.push_str(&format!(": {d}"));
        }
        if let Some(v) = value {
            s.push_str(&format!(" = {}", show(v)));
        }
        s
    }

    /// Asks a form: preview, accept/decline/cancel, each field (re-asked with the reason
    /// while invalid), then a review with edit by name. `prefill` holds answers given on the
    /// command line or in a file; defaults fill the rest.
    pub fn form(
        &mut self,
        asking: &Asking,
        message: &str,
        form: &Form,
        prefill: BTreeMap<String, ElicitValue>,
    ) -> io::Result<Decision> {
        self.header(asking, message)?;
        self.say("  fields (* required):")?;
        for field in &form.fields {
            let line = self.describe(field, field.default.as_ref());
            self.say(&format!("    {line}"))?;
            if looks_secret(&field.name) {
                self.say(&format!(
                    "    ! {} looks like a secret: servers must not ask for secrets in a form",
                    field.name
                ))?;
            }
        }
        loop {
            match self.line("  [a]nswer, [d]ecline, [c]ancel? ")? {
                None => return Ok(Decision::Cancel),
                Some(l) => match l.trim().to_ascii_lowercase().as_str() {
                    "a" | "accept" | "answer" | "" => break,
                    "d" | "decline" => return Ok(Decision::Decline),
                    "c" | "cancel" => return Ok(Decision::Cancel),
                    _ => self.say("  ! answer a, d or c")?,
                },
            }
        }
        let mut values = form.with_defaults(prefill.clone());
        for field in &form.fields {
            if prefill.contains_key(&field.name) {
                continue;
            }
            if !self.ask_field(field, &mut values)? {
                return Ok(Decision::Cancel);
            }
        }
        loop {
            self.say("  review:")?;
            for field in &form.fields {
                let shown = values
                    .get(&field.name)
                    .map(show)
                    .unwrap_or_else(|| "(empty)".into());
                self.say(&format!("    {} = {shown}", field.name))?;
            }
            let Some(l) = self.line("  [s]ubmit, [e]dit NAME, [d]ecline, [c]ancel? ")? else {
                return Ok(Decision::Cancel);
            };
            let l = l.trim();
            match l.to_ascii_lowercase().as_str() {
                "s" | "submit" | "" => match form.check(&values) {
                    Ok(content) => return Ok(Decision::Accept(content)),
                    Err(why) => self.say(&format!("  ! {why}"))?,
                },
                "d" | "decline" => return Ok(Decision::Decline),
                "c" | "cancel" => return Ok(Decision::Cancel),
                _ => {
                    let name = l
                        .strip_prefix("e ")
                        .or_else(|| l.strip_prefix("edit "))
                        .map(str::trim);
                    match name.and_then(|n| form.field(n)) {
                        Some(field) => {
                            if !self.ask_field(field, &mut values)? {
                                return Ok(Decision::Cancel);
                            }
                        }
                        None => self.say("  ! answer s, e NAME, d or c")?,
                    }
                }
            }
        }
    }

    /// Asks one field until the answer is valid; `false` at end of input.
    fn ask_field(
        &mut self,
        field: &Field,
        values: &mut BTreeMap<String, ElicitValue>,
    ) -> io::Result<bool> {
        if let Kind::Select(choices) | Kind::MultiSelect { choices, .. } = &field.kind {
            self.say(&format!("    {}:", field.label))?;
            for (i, c) in choices.iter().enumerate() {
                let label = if c.label == c.value {
                    c.value.clone()
                } else {
                    format!("{} ({})", c.label, c.value)
                };
                self.say(&format!("      {}. {label}", i + 1))?;
            }
        }
        loop {
            let current = values.get(&field.name).map(show);
            let mut prompt = format!("  {}{}", field.label, if field.required { "*" } else { "" });
            if let Some(hint) = field.kind.hint() {
                prompt.push_str(&format!(" ({hint})"));
            }
            if let Some(c) = &current {
                prompt.push_str(&format!(" [{c}]"));
            }
            prompt.push_str(": ");
            let Some(input) = self.line(&prompt)? else {
                return Ok(false);
            };
            if input.trim().is_empty() {
                if current.is_some() {
                    return Ok(true);
                }
                if !field.required {
                    values.remove(&field.name);
                    return Ok(true);
                }
            }
            match field.parse(&input) {
                Ok(value) => {
                    values.insert(field.name.clone(), value);
                    return Ok(true);
                }
                Err(why) => self.say(&format!("  ! {why}; try again"))?,
            }
        }
    }

    /// Asks for consent to a URL: the address a browser would open (its WHATWG serialization)
    /// with its host highlighted, the host on its own line, and every warning. A refused URL
    /// is shown with the reason and can only be declined or cancelled. Opening is the
    /// caller's business (only with `--open`, and only the address shown).
    pub fn url(
        &mut self,
        asking: &Asking,
        message: &str,
        raw: &str,
        page: &Result<BrowserUrl, Refused>,
    ) -> io::Result<Decision> {
        self.header(asking, message)?;
        let page = match page {
            Ok(page) => page,
            Err(why) => {
                self.say(&format!("  url: {raw}"))?;
                self.say(&format!("  ! mcp-term will not open this: {why}"))?;
                loop {
                    match self.line("  [d]ecline, [c]ancel? ")? {
                        None => return Ok(Decision::Cancel),
                        Some(l) => match l.trim().to_ascii_lowercase().as_str() {
                            "d" | "decline" => return Ok(Decision::Decline),
                            "c" | "cancel" => return Ok(Decision::Cancel),
                            _ => self.say("  ! answer d or c")?,
                        },
                    }
                }
            }
        };
        let (a, b) = page.host_range;
        self.say_emphasised(
            &format!("  open: {}", &page.href[..a]),
            &page.href[a..b],
            &page.href[b..],
        )?;
        self.say_emphasised("  host: ", &page.host, "")?;
        for warning in page.warnings(raw) {
            self.say(&format!("  ! {warning}"))?;
        }
        loop {
            match self.line("  [a]ccept (open it yourself), [d]ecline, [c]ancel? ")? {
                None => return Ok(Decision::Cancel),
                Some(l) => match l.trim().to_ascii_lowercase().as_str() {
                    "a" | "accept" => return Ok(Decision::Accept(BTreeMap::new())),
                    "d" | "decline" => return Ok(Decision::Decline),
                    "c" | "cancel" => return Ok(Decision::Cancel),
                    _ => self.say("  ! answer a, d or c")?,
                },
            }
        }
    }

    /// A schema the form engine cannot render: shown raw, with decline, cancel, or a JSON
    /// object typed by hand.
    pub fn raw(
        &mut self,
        asking: &Asking,
        message: &str,
        schema: &Value,
        why: &str,
    ) -> io::Result<Decision> {
        self.header(asking, message)?;
        self.say(&format!(
            "  this form cannot be shown field by field ({why})"
        ))?;
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
        for line in sanitize(&pretty).lines() {
            self.say(&format!("    {line}"))?;
        }
        loop {
            match self.line("  [j]son answer, [d]ecline, [c]ancel? ")? {
                None => return Ok(Decision::Cancel),
                Some(l) => match l.trim().to_ascii_lowercase().as_str() {
                    "d" | "decline" => return Ok(Decision::Decline),
                    "c" | "cancel" => return Ok(Decision::Cancel),
                    "j" | "json" => loop {
                        let Some(text) = self.line("  content (one JSON object): ")? else {
                            return Ok(Decision::Cancel);
                        };
                        match serde_json::from_str::<BTreeMap<String, ElicitValue>>(&text) {
                            Ok(content) => return Ok(Decision::Accept(content)),
                            Err(e) => self.say(&format!("  ! not a JSON object of values: {e}"))?,
                        }
                    },
                    _ => self.say("  ! answer j, d or c")?,
                },
            }
        }
    }

    /// A yes-or-no question after a heading and its lines: only `y` or `yes` is yes, and end of
    /// input is no.
    pub fn confirm(&mut self, heading: &str, lines: &[String], question: &str) -> io::Result<bool> {
        self.say_emphasised("── ", heading, " ──")?;
        for line in lines {
            self.say(&format!("  {line}"))?;
        }
        loop {
            match self.line(&format!("  {question} [y]es, [n]o? "))? {
                None => return Ok(false),
                Some(l) => match l.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => return Ok(true),
                    "n" | "no" => return Ok(false),
                    _ => self.say("  ! answer y or n")?,
                },
            }
        }
    }

    /// A free-text answer (sampling): `None` when the person declines with an empty line or
    /// input ends.
    pub fn text(
        &mut self,
        asking: &Asking,
        shown: &str,
        prompt: &str,
    ) -> io::Result<Option<String>> {
        self.header(asking, shown)?;
        Ok(self.line(prompt)?.filter(|l| !l.trim().is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, input: &str) -> (Decision, String) {
        let form = Form::from_schema(&serde_json::from_value(schema).unwrap()).unwrap();
        let mut out = Vec::new();
        let decision = Prompter::new(input.as_bytes(), &mut out, false)
            .form(&Asking::default(), "Delete?", &form, BTreeMap::new())
            .unwrap();
        (decision, String::from_utf8(out).unwrap())
    }

    fn confirm() -> Value {
        json!({"type": "object", "properties": {"ok": {"type": "boolean", "description": "Delete it"}}, "required": ["ok"]})
    }

    #[test]
    fn an_invalid_answer_is_asked_again_with_the_reason() {
        let (decision, out) = run(confirm(), "a\nmaybe\ny\ns\n");
        assert_eq!(
            decision,
            Decision::Accept(BTreeMap::from([("ok".into(), ElicitValue::Bool(true))]))
        );
        assert!(out.contains("  ! answer yes or no; try again\n"), "{out}");
        assert!(
            out.contains("    ok* (true or false): Delete it\n"),
            "{out}"
        );
        assert!(out.contains("    ok = yes\n"), "{out}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        assert_eq!(run(confirm(), "d\n").0, Decision::Decline);
        assert_eq!(run(confirm(), "c\n").0, Decision::Cancel);
        assert_eq!(run(confirm(), "a\n").0, Decision::Cancel);
        assert_eq!(run(confirm(), "a\ny\nd\n").0, Decision::Decline);
    }

    #[test]
    fn defaults_are_prefilled_and_kept_on_enter() {
        let schema = json!({"type": "object", "properties": {
            "date": {"type": "string", "format": "date", "default": "2025-12-26"},
            "size": {"type": "integer", "minimum": 1, "maximum": 8}}, "required": ["size"]});
        let (decision, out) = run(schema, "a\n\n9\n4\n\n");
        assert_eq!(
            decision,
            Decision::Accept(BTreeMap::from([
                ("date".into(), ElicitValue::String("2025-12-26".into())),
                ("size".into(), ElicitValue::Number(4.into())),
            ]))
        );
        assert!(out.contains("  date (date) [2025-12-26]: "), "{out}");
        assert!(out.contains("  ! must be at most 8; try again"), "{out}");
    }

    #[test]
    fn the_review_edits_a_field_by_name() {
        let schema = json!({"type": "object", "properties": {
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}}});
        let (decision, out) = run(schema, "a\n1\ne color\nGreen\ns\n");
        assert_eq!(
            decision,
            Decision::Accept(BTreeMap::from([(
                "color".into(),
                ElicitValue::String("g".into())
            )]))
        );
        assert!(out.contains("      2. Green (g)\n"), "{out}");
    }

    #[test]
    fn a_forms_every_server_text_loses_its_escapes() {
        // Title, description, format, choices, a default and the reason quoting a choice: each
        // reaches the screen through `say` or `line`, so none keeps an escape.
        let esc = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let schema = json!({"type": "object", "properties": {
            "code": {"type": "string", "title": format!("Code{esc}"), "format": format!("x{esc}"),
                     "description": format!("the{esc} code"), "default": format!("d{esc}")},
            "pick": {"type": "string", "enum": [format!("a{esc}"), "b"]}}});
        let form = Form::from_schema(&serde_json::from_value(schema).unwrap()).unwrap();
        let mut out = Vec::new();
        let asking = Asking {
            server: format!("srv{esc}"),
            during: format!("tools/call t{esc}"),
            era: format!("2026-07-28{esc}"),
            round: 1,
            max_rounds: 10,
            ..Asking::default()
        };
        let decision = Prompter::new("a\n\nz\nd\n".as_bytes(), &mut out, false)
            .form(&asking, &format!("Hi{esc}\nthere"), &form, BTreeMap::new())
            .unwrap();
        assert_eq!(decision, Decision::Cancel);
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains(['\u{1b}', '\u{7}']), "{out:?}");
        assert!(
            out.starts_with(
                "── srv asks (tools/call t, round 1 of 10, 2026-07-28) ──\n  Hi\n  there\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("    Code [code] (a string (x)): the code = d\n"),
            "{out}"
        );
        assert!(out.contains("  Code (x) [d]: "), "{out}");
        assert!(out.contains("      1. a\n      2. b\n"), "{out}");
        assert!(
            out.contains("  ! \"z\" is not one of a, b; try again\n"),
            "{out}"
        );
    }

    #[test]
    fn a_confirmation_takes_only_yes_as_yes() {
        let ask = |input: &str| {
            let mut out = Vec::new();
            let yes = Prompter::new(input.as_bytes(), &mut out, false)
                .confirm(
                    "a heading\u{1b}[2J",
                    &["a line".into(), "another\u{1b}]0;t\u{7}".into()],
                    "go on?",
                )
                .unwrap();
            (yes, String::from_utf8(out).unwrap())
        };
        let (yes, out) = ask("maybe\ny\n");
        assert!(yes);
        assert_eq!(
            out,
            "── a heading ──\n  a line\n  another\n  go on? [y]es, [n]o?   ! answer y or n\n  go on? [y]es, [n]o? "
        );
        assert!(!ask("n\n").0);
        assert!(!ask("").0, "end of input is no");
        assert!(ask("YES\n").0);
    }

    #[test]
    fn a_secret_looking_field_is_flagged() {
        let schema = json!({"type": "object", "properties": {"api_token": {"type": "string"}}});
        let (_, out) = run(schema, "d\n");
        assert!(out.contains("! api_token looks like a secret"), "{out}");
    }

    fn consent(raw: &str, input: &str) -> (Decision, String) {
        let mut out = Vec::new();
        let page = crate::browser::parse(raw);
        let decision = Prompter::new(input.as_bytes(), &mut out, false)
            .url(&Asking::default(), "Pay", raw, &page)
            .unwrap();
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_url_shows_the_host_a_browser_opens() {
        let (decision, out) = consent("https://evil.example\\@bank.example/login", "a\n");
        assert_eq!(decision, Decision::Accept(BTreeMap::new()));
        assert!(
            out.contains(
                "  Pay\n  open: https://evil.example/@bank.example/login\n  host: evil.example\n  \
                 ! the server wrote it as https://evil.example\\@bank.example/login; a browser reads that as the address above\n"
            ),
            "{out}"
        );
        assert!(!out.contains("host: bank.example"), "{out}");
        let (_, out) = consent("https://xn--pypal-4ve.com/pay?x=1", "d\n");
        assert!(out.contains("  host: xn--pypal-4ve.com\n"), "{out}");
        assert!(out.contains("punycode"), "{out}");
    }

    #[test]
    fn a_refused_url_can_only_be_declined_or_cancelled() {
        let (decision, out) = consent("https://bank.example@evil.example/", "a\nd\n");
        assert_eq!(decision, Decision::Decline);
        assert!(
            out.contains(
                "  url: https://bank.example@evil.example/\n  \
                 ! mcp-term will not open this: it has a user name or password before the host (user@host), a classic disguise\n  \
                 [d]ecline, [c]ancel?   ! answer d or c\n"
            ),
            "{out}"
        );
        assert!(!out.contains("host:"), "{out}");
        let (decision, out) = consent("http://pay.example/\u{1b}]0;x\u{7}", "c\n");
        assert_eq!(decision, Decision::Cancel);
        assert!(out.contains("  url: http://pay.example/\n"), "{out}");
        assert!(out.contains("it is plain http to pay.example"), "{out}");
    }

    #[test]
    fn a_raw_schema_takes_json_or_declines() {
        let mut out = Vec::new();
        let decision = Prompter::new("j\nnot json\n{\"a\": 1}\n".as_bytes(), &mut out, false)
            .raw(
                &Asking::default(),
                "Nested",
                &json!({"type": "object"}),
                "nested",
            )
            .unwrap();
        assert_eq!(
            decision,
            Decision::Accept(BTreeMap::from([(
                "a".into(),
                ElicitValue::Number(1.into())
            )]))
        );
        let mut out = Vec::new();
        let decision = Prompter::new("d\n".as_bytes(), &mut out, false)
            .raw(&Asking::default(), "Nested", &json!({}), "nested")
            .unwrap();
        assert_eq!(decision, Decision::Decline);
    }
}
