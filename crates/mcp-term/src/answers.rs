//! Answers without a person: `--answer field=value` / `field:=JSON`, and `--answers FILE`.
//!
//! An answers file is a JSON object. At the top level, or in `rounds[n-1]` for round `n`:
//! - `"FIELD": value` answers that field in any question of the round;
//! - `"KEY": {"FIELD": value, …}` answers the question under that `inputRequests` key;
//! - `"KEY": {"action": "decline"}` (or `"cancel"`, or `"accept"` with `"content"`) gives the
//!   whole answer to that question;
//! - `"_url": "accept"` (or `decline`, `cancel`) answers every URL request of the round.

use std::collections::BTreeMap;

use mcp::types::elicitation::{ElicitAction, ElicitValue};
use serde_json::Value;

use crate::form::Form;

/// One `--answer`.
#[derive(Debug, Clone, PartialEq)]
pub enum CliAnswer {
    /// `field=value`: parsed by the field's kind.
    Text(String, String),
    /// `field:=JSON`.
    Json(String, Value),
}

impl CliAnswer {
    /// Parses `field=value` or `field:=JSON`.
    pub fn parse(s: &str) -> Result<CliAnswer, String> {
        if let Some((k, v)) = s.split_once(":=")
            && !k.contains('=')
        {
            let json =
                serde_json::from_str(v).map_err(|e| format!("--answer {k}:= takes JSON: {e}"))?;
            return Ok(CliAnswer::Json(k.to_owned(), json));
        }
        match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok(CliAnswer::Text(k.to_owned(), v.to_owned())),
            _ => Err(format!("--answer {s:?}: write field=value or field:=JSON")),
        }
    }

    fn name(&self) -> &str {
        match self {
            CliAnswer::Text(k, _) | CliAnswer::Json(k, _) => k,
        }
    }
}

/// What the sources say about one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// Field values (maybe only some).
    Fields(BTreeMap<String, ElicitValue>),
    /// A whole answer: an action, with content for an accept.
    Action(ElicitAction, Option<BTreeMap<String, ElicitValue>>),
}

/// Every answer source of the command line.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--answer`s.
    pub cli: Vec<CliAnswer>,
    /// The parsed `--answers` file.
    pub file: Option<Value>,
}

fn action(s: &str) -> Result<ElicitAction, String> {
    match s {
        "accept" => Ok(ElicitAction::Accept),
        "decline" => Ok(ElicitAction::Decline),
        "cancel" => Ok(ElicitAction::Cancel),
        other => Err(format!("{other:?} is not accept, decline or cancel")),
    }
}

impl Sources {
    /// The file's part for round `round` (1-based).
    fn entry(&self, round: u32) -> Option<&serde_json::Map<String, Value>> {
        let file = self.file.as_ref()?;
        match file.get("rounds") {
            Some(Value::Array(rounds)) => rounds.get(round as usize - 1)?.as_object(),
            _ => file.as_object(),
        }
    }

    /// The answer to a URL request of round `round` under `key`, if any source gives one.
    pub fn url(&self, round: u32, key: &str) -> Result<Option<ElicitAction>, String> {
        let Some(entry) = self.entry(round) else {
            return Ok(None);
        };
        if let Some(a) = entry
            .get(key)
            .and_then(|k| k.get("action"))
            .and_then(Value::as_str)
        {
            return action(a).map(Some);
        }
        match entry.get("_url").and_then(Value::as_str) {
            Some(a) => action(a).map(Some),
            None => Ok(None),
        }
    }

    /// What the sources give for the form under `key` in round `round`; an invalid value is
    /// an error naming the field and the reason.
    pub fn form(&self, round: u32, key: &str, form: &Form) -> Result<Given, String> {
        let mut fields = BTreeMap::new();
        if let Some(entry) = self.entry(round) {
            match entry.get(key) {
                Some(Value::Object(per_key)) => {
                    if let Some(a) = per_key.get("action").and_then(Value::as_str) {
                        let a = action(a).map_err(|e| format!("answers for {key:?}: {e}"))?;
                        let content = match per_key.get("content") {
                            Some(c) => Some(
                                serde_json::from_value(c.clone())
                                    .map_err(|e| format!("answers for {key:?}: content: {e}"))?,
                            ),
                            None => None,
                        };
                        if a != ElicitAction::Accept {
                            return Ok(Given::Action(a, None));
                        }
                        if let Some(content) = content {
                            let content = form.check(&form.with_defaults(content))?;
                            return Ok(Given::Action(a, Some(content)));
                        }
                    } else {
                        for (name, value) in per_key {
                            let field = form.field(name).ok_or_else(|| {
                                format!("answers for {key:?}: the form has no field {name:?}")
                            })?;
                            fields.insert(
                                name.clone(),
                                field.from_json(value).map_err(|e| format!("{name}: {e}"))?,
                            );
                        }
                    }
                }
                _ => {
                    for field in &form.fields {
                        if let Some(value) = entry.get(&field.name) {
                            let v = field
                                .from_json(value)
                                .map_err(|e| format!("{}: {e}", field.name))?;
                            fields.insert(field.name.clone(), v);
                        }
                    }
                }
            }
        }
        for answer in &self.cli {
            let Some(field) = form.field(answer.name()) else {
                continue;
            };
            let value = match answer {
                CliAnswer::Text(_, v) => field.parse(v),
                CliAnswer::Json(_, v) => field.from_json(v),
            }
            .map_err(|e| format!("--answer {}: {e}", field.name))?;
            fields.insert(field.name.clone(), value);
        }
        Ok(Given::Fields(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form::from_schema(
            &serde_json::from_value(json!({"type": "object", "properties": {
                "ok": {"type": "boolean"}, "n": {"type": "integer", "maximum": 3}}, "required": ["ok"]}))
            .unwrap(),
        )
        .unwrap()
    }

    fn with_file(file: Value) -> Sources {
        Sources {
            cli: Vec::new(),
            file: Some(file),
        }
    }

    #[test]
    fn top_level_fields_answer_any_question() {
        let s = with_file(json!({"ok": true, "other": 1}));
        assert_eq!(
            s.form(1, "confirm", &form()),
            Ok(Given::Fields(BTreeMap::from([(
                "ok".into(),
                ElicitValue::Bool(true)
            )])))
        );
    }

    #[test]
    fn per_key_and_per_round_answers() {
        let s = with_file(
            json!({"rounds": [{"confirm": {"ok": false}}, {"confirm": {"action": "decline"}}]}),
        );
        assert_eq!(
            s.form(1, "confirm", &form()),
            Ok(Given::Fields(BTreeMap::from([(
                "ok".into(),
                ElicitValue::Bool(false)
            )])))
        );
        assert_eq!(
            s.form(2, "confirm", &form()),
            Ok(Given::Action(ElicitAction::Decline, None))
        );
        assert_eq!(
            s.form(3, "confirm", &form()),
            Ok(Given::Fields(BTreeMap::new()))
        );
        let s = with_file(json!({"confirm": {"action": "accept", "content": {"ok": true}}}));
        assert_eq!(
            s.form(1, "confirm", &form()),
            Ok(Given::Action(
                ElicitAction::Accept,
                Some(BTreeMap::from([("ok".into(), ElicitValue::Bool(true))]))
            ))
        );
    }

    #[test]
    fn invalid_answers_name_the_field_and_reason() {
        let s = with_file(json!({"n": 9}));
        assert_eq!(s.form(1, "k", &form()), Err("n: must be at most 3".into()));
        let s = with_file(json!({"k": {"nope": 1}}));
        assert_eq!(
            s.form(1, "k", &form()),
            Err("answers for \"k\": the form has no field \"nope\"".into())
        );
        let s = Sources {
            cli: vec![CliAnswer::parse("ok=perhaps").unwrap()],
            file: None,
        };
        assert_eq!(
            s.form(1, "k", &form()),
            Err("--answer ok: answer yes or no".into())
        );
    }

    #[test]
    fn cli_answers_override_the_file() {
        let s = Sources {
            cli: vec![
                CliAnswer::parse("ok=no").unwrap(),
                CliAnswer::parse("n:=2").unwrap(),
            ],
            file: Some(json!({"ok": true})),
        };
        assert_eq!(
            s.form(1, "k", &form()),
            Ok(Given::Fields(BTreeMap::from([
                ("ok".into(), ElicitValue::Bool(false)),
                ("n".into(), ElicitValue::Number(2.into()))
            ])))
        );
        assert!(CliAnswer::parse("novalue").is_err());
        assert!(CliAnswer::parse("n:=[").is_err());
    }

    #[test]
    fn url_answers() {
        let s = with_file(json!({"_url": "accept", "pay": {"action": "cancel"}}));
        assert_eq!(s.url(1, "pay"), Ok(Some(ElicitAction::Cancel)));
        assert_eq!(s.url(1, "other"), Ok(Some(ElicitAction::Accept)));
        assert_eq!(Sources::default().url(1, "x"), Ok(None));
        assert!(with_file(json!({"_url": "yes"})).url(1, "x").is_err());
    }
}
