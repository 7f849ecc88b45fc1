//! The form engine: an elicitation schema becomes typed fields, and answers (typed by a
//! person, given on the command line or read from a file) become validated values. Nothing
//! here touches a terminal; [`crate::prompt`] renders it and [`crate::answers`] feeds it.

use std::collections::BTreeMap;

use mcp::types::elicitation::{
    ElicitValue, ElicitationSchema, PrimitiveKind, PrimitiveSchemaDefinition,
};
use serde_json::{Number, Value};

/// One choice of an enum field: the value sent and the label shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The value sent to the server.
    pub value: String,
    /// The label shown (the value itself for an untitled enum).
    pub label: String,
}

/// What kind of answer a field takes, with its constraints.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Free text with optional length limits (in code points) and format.
    Text {
        /// `minLength`.
        min_length: Option<u64>,
        /// `maxLength`.
        max_length: Option<u64>,
        /// `format`: `email`, `uri`, `date` or `date-time` (others are not checked).
        format: Option<String>,
    },
    /// A number; `integer` refuses fractions.
    Number {
        /// `type: integer`.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the choices (untitled `enum`, titled `oneOf`, legacy `enumNames`).
    Select(Vec<Choice>),
    /// Several of the choices, with item limits.
    MultiSelect {
        /// The choices.
        choices: Vec<Choice>,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name (the key of the answer).
    pub name: String,
    /// The label: `title`, else the name.
    pub label: String,
    /// Help text.
    pub description: Option<String>,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// The schema's default, when it is a valid answer.
    pub default: Option<ElicitValue>,
    /// What it takes.
    pub kind: Kind,
}

/// A form: the fields of a schema, in the order the schema's map gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The fields.
    pub fields: Vec<Field>,
}

/// Why a schema cannot be rendered as a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrenderable(pub String);

impl Form {
    /// Parses a requested schema; a schema with a field the spec does not allow is
    /// [`Unrenderable`] (and is then shown raw, never silently declined).
    pub fn from_schema(schema: &ElicitationSchema) -> Result<Form, Unrenderable> {
        if schema.type_ != "object" {
            return Err(Unrenderable(format!(
                "the schema's type is {:?}, not \"object\"",
                schema.type_
            )));
        }
        let required = schema.required.clone().unwrap_or_default();
        for name in &required {
            if !schema.properties.contains_key(name) {
                return Err(Unrenderable(format!(
                    "required field {name:?} is not among the properties"
                )));
            }
        }
        let mut fields = Vec::new();
        for (name, def) in &schema.properties {
            fields.push(Field::from_def(name, def, required.contains(name))?);
        }
        Ok(Form { fields })
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Checks a complete set of answers: every required field present, every value valid,
    /// no unknown names. Returns the content to send.
    pub fn check(
        &self,
        answers: &BTreeMap<String, ElicitValue>,
    ) -> Result<BTreeMap<String, ElicitValue>, String> {
        for name in answers.keys() {
            if self.field(name).is_none() {
                return Err(format!("the form has no field {name:?}"));
            }
        }
        let mut content = BTreeMap::new();
        for field in &self.fields {
            match answers.get(&field.name) {
                Some(value) => {
                    field
                        .validate(value)
                        .map_err(|why| format!("{}: {why}", field.name))?;
                    content.insert(field.name.clone(), value.clone());
                }
                None if field.required => {
                    return Err(format!("{}: required", field.name));
                }
                None => {}
            }
        }
        Ok(content)
    }

    /// The names of required fields that `answers` leaves open.
    pub fn missing(&self, answers: &BTreeMap<String, ElicitValue>) -> Vec<String> {
        self.fields
            .iter()
            .filter(|f| f.required && !answers.contains_key(&f.name))
            .map(|f| f.name.clone())
            .collect()
    }

    /// Every default of the form, for fields `answers` leaves open.
    pub fn with_defaults(
        &self,
        mut answers: BTreeMap<String, ElicitValue>,
    ) -> BTreeMap<String, ElicitValue> {
        for field in &self.fields {
            if let Some(default) = &field.default {
                answers
                    .entry(field.name.clone())
                    .or_insert_with(|| default.clone());
            }
        }
        answers
    }
}

fn choices_of(values: &[String], labels: Option<&[String]>) -> Vec<Choice> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| Choice {
            value: v.clone(),
            label: labels
                .and_then(|l| l.get(i))
                .cloned()
                .unwrap_or_else(|| v.clone()),
        })
        .collect()
}

fn as_f64(n: &Option<Number>) -> Option<f64> {
    n.as_ref().and_then(Number::as_f64)
}

impl Field {
    fn from_def(
        name: &str,
        def: &PrimitiveSchemaDefinition,
        required: bool,
    ) -> Result<Field, Unrenderable> {
        let unrenderable = |why: &str| Unrenderable(format!("field {name:?}: {why}"));
        let kind = match def.kind() {
            None => {
                return Err(unrenderable(&format!(
                    "type {:?} is not a primitive form field",
                    def.type_
                )));
            }
            Some(PrimitiveKind::String) => Kind::Text {
                min_length: def.min_length,
                max_length: def.max_length,
                format: def.format.clone(),
            },
            Some(PrimitiveKind::Number) => Kind::Number {
                integer: def.type_ == "integer",
                minimum: as_f64(&def.minimum),
                maximum: as_f64(&def.maximum),
            },
            Some(PrimitiveKind::Boolean) => Kind::Boolean,
            Some(PrimitiveKind::UntitledSingleSelect) => {
                Kind::Select(choices_of(def.enum_.as_deref().unwrap_or_default(), None))
            }
            Some(PrimitiveKind::LegacyTitledEnum) => {
                let values = def.enum_.as_deref().unwrap_or_default();
                let names = def.enum_names.as_deref().unwrap_or_default();
                if names.len() != values.len() {
                    return Err(unrenderable("enumNames and enum differ in length"));
                }
                Kind::Select(choices_of(values, Some(names)))
            }
            Some(PrimitiveKind::TitledSingleSelect) => Kind::Select(
                def.one_of
                    .iter()
                    .flatten()
                    .map(|o| Choice {
                        value: o.const_.clone(),
                        label: o.title.clone(),
                    })
                    .collect(),
            ),
            Some(
                kind @ (PrimitiveKind::UntitledMultiSelect | PrimitiveKind::TitledMultiSelect),
            ) => {
                let items = def.items.clone().unwrap_or_default();
                let choices = if kind == PrimitiveKind::TitledMultiSelect {
                    items
                        .any_of
                        .iter()
                        .flatten()
                        .map(|o| Choice {
                            value: o.const_.clone(),
                            label: o.title.clone(),
                        })
                        .collect()
                } else {
                    choices_of(items.enum_.as_deref().unwrap_or_default(), None)
                };
                Kind::MultiSelect {
                    choices,
                    min_items: def.min_items,
                    max_items: def.max_items,
                }
            }
        };
        if let Kind::Select(c) | Kind::MultiSelect { choices: c, .. } = &kind
            && c.is_empty()
        {
            return Err(unrenderable("an enum with no values"));
        }
        let mut field = Field {
            name: name.to_owned(),
            label: def.title.clone().unwrap_or_else(|| name.to_owned()),
            description: def.description.clone(),
            required,
            default: None,
            kind,
        };
        // A default that is not itself a valid answer is not offered.
        field.default = def.default.as_ref().and_then(|d| field.from_json(d).ok());
        Ok(field)
    }

    /// Parses what a person typed (`yes`, `42`, a choice's number, value or label; a
    /// multi-select as a comma-separated list) and validates it.
    pub fn parse(&self, input: &str) -> Result<ElicitValue, String> {
        let input = input.trim();
        let value = match &self.kind {
            Kind::Text { .. } => ElicitValue::String(input.to_owned()),
            Kind::Number { integer, .. } => parse_number(input, *integer)?,
            Kind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => ElicitValue::Bool(true),
                "n" | "no" | "false" | "0" => ElicitValue::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            Kind::Select(choices) => ElicitValue::String(pick(choices, input)?),
            Kind::MultiSelect { choices, .. } => {
                let mut picked = Vec::new();
                for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let value = pick(choices, part)?;
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                ElicitValue::Strings(picked)
            }
        };
        self.validate(&value)?;
        Ok(value)
    }

    /// Takes a JSON value (an answer file, `--answer k:=JSON`, a schema default) and
    /// validates it.
    pub fn from_json(&self, value: &Value) -> Result<ElicitValue, String> {
        let converted = match (&self.kind, value) {
            (Kind::Text { .. } | Kind::Select(_), Value::String(s)) => {
                ElicitValue::String(s.clone())
            }
            (Kind::Number { .. }, Value::Number(n)) => ElicitValue::Number(n.clone()),
            (Kind::Boolean, Value::Bool(b)) => ElicitValue::Bool(*b),
            (Kind::MultiSelect { .. }, Value::Array(items)) => ElicitValue::Strings(
                items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| "every item must be a string".to_owned())
                    })
                    .collect::<Result<_, _>>()?,
            ),
            (_, other) => {
                return Err(format!("expected {}, got {other}", self.kind.describe()));
            }
        };
        self.validate(&converted)?;
        Ok(converted)
    }

    /// Checks a value against the field's kind and every constraint; the error says why, in
    /// words a person can act on.
    pub fn validate(&self, value: &ElicitValue) -> Result<(), String> {
        match (&self.kind, value) {
            (
                Kind::Text {
                    min_length,
                    max_length,
                    format,
                },
                ElicitValue::String(s),
            ) => {
                let len = s.chars().count() as u64;
                if let Some(min) = min_length
                    && len < *min
                {
                    return Err(format!("at least {min} character(s), got {len}"));
                }
                if let Some(max) = max_length
                    && len > *max
                {
                    return Err(format!("at most {max} character(s), got {len}"));
                }
                if self.required && s.is_empty() && min_length.is_none() {
                    return Err("required".into());
                }
                match format.as_deref() {
                    Some("email") if !is_email(s) => Err("not an email address (name@host)".into()),
                    Some("uri") if !is_uri(s) => {
                        Err("not a URI (scheme:rest, e.g. https://host/path)".into())
                    }
                    Some("date") if !is_date(s) => Err("not a date (YYYY-MM-DD)".into()),
                    Some("date-time") if !is_date_time(s) => {
                        Err("not a date-time (YYYY-MM-DDThh:mm:ssZ or with an offset)".into())
                    }
                    _ => Ok(()),
                }
            }
            (
                Kind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                ElicitValue::Number(n),
            ) => {
                let x = n.as_f64().ok_or("not a number")?;
                if *integer && !(n.is_i64() || n.is_u64()) {
                    return Err("a whole number is required".into());
                }
                if let Some(min) = minimum
                    && x < *min
                {
                    return Err(format!("must be at least {}", fmt_bound(*min)));
                }
                if let Some(max) = maximum
                    && x > *max
                {
                    return Err(format!("must be at most {}", fmt_bound(*max)));
                }
                Ok(())
            }
            (Kind::Boolean, ElicitValue::Bool(_)) => Ok(()),
            (Kind::Select(choices), ElicitValue::String(s)) => {
                if choices.iter().any(|c| &c.value == s) {
                    Ok(())
                } else {
                    Err(format!("{s:?} is not one of {}", list(choices)))
                }
            }
            (
                Kind::MultiSelect {
                    choices,
                    min_items,
                    max_items,
                },
                ElicitValue::Strings(items),
            ) => {
                for item in items {
                    if !choices.iter().any(|c| &c.value == item) {
                        return Err(format!("{item:?} is not one of {}", list(choices)));
                    }
                }
                let n = items.len() as u64;
                if let Some(min) = min_items
                    && n < *min
                {
                    return Err(format!("choose at least {min}, got {n}"));
                }
                if let Some(max) = max_items
                    && n > *max
                {
                    return Err(format!("choose at most {max}, got {n}"));
                }
                Ok(())
            }
            _ => Err(format!("expected {}", self.kind.describe())),
        }
    }
}

impl Kind {
    /// A short description of what the kind takes.
    pub fn describe(&self) -> String {
        match self {
            Kind::Text {
                format: Some(f), ..
            } => format!("a string ({f})"),
            Kind::Text { .. } => "a string".into(),
            Kind::Number { integer: true, .. } => "an integer".into(),
            Kind::Number { .. } => "a number".into(),
            Kind::Boolean => "true or false".into(),
            Kind::Select(_) => "one of the choices".into(),
            Kind::MultiSelect { .. } => "a list of choices".into(),
        }
    }

    /// The constraints, for the field's hint line (`1-10 characters`, `0..=5`).
    pub fn hint(&self) -> Option<String> {
        let mut parts = Vec::new();
        match self {
            Kind::Text {
                min_length,
                max_length,
                format,
            } => {
                if let Some(f) = format {
                    parts.push(f.clone());
                }
                match (min_length, max_length) {
                    (Some(a), Some(b)) => parts.push(format!("{a}-{b} characters")),
                    (Some(a), None) => parts.push(format!("at least {a} characters")),
                    (None, Some(b)) => parts.push(format!("at most {b} characters")),
                    (None, None) => {}
                }
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                parts.push(if *integer { "integer" } else { "number" }.into());
                match (minimum, maximum) {
                    (Some(a), Some(b)) => {
                        parts.push(format!("{} to {}", fmt_bound(*a), fmt_bound(*b)))
                    }
                    (Some(a), None) => parts.push(format!(">= {}", fmt_bound(*a))),
                    (None, Some(b)) => parts.push(format!("<= {}", fmt_bound(*b))),
                    (None, None) => {}
                }
            }
            Kind::Boolean => parts.push("y/n".into()),
            Kind::Select(_) => parts.push("number or value".into()),
            Kind::MultiSelect {
                min_items,
                max_items,
                ..
            } => {
                parts.push("comma-separated numbers or values".into());
                match (min_items, max_items) {
                    (Some(a), Some(b)) => parts.push(format!("{a} to {b} items")),
                    (Some(a), None) => parts.push(format!("at least {a} items")),
                    (None, Some(b)) => parts.push(format!("at most {b} items")),
                    (None, None) => {}
                }
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

fn fmt_bound(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn list(choices: &[Choice]) -> String {
    choices
        .iter()
        .map(|c| c.value.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_number(input: &str, integer: bool) -> Result<ElicitValue, String> {
    if let Ok(i) = input.parse::<i64>() {
        return Ok(ElicitValue::Number(i.into()));
    }
    if integer {
        return Err("a whole number is required".into());
    }
    let f: f64 = input.parse().map_err(|_| "not a number".to_owned())?;
    Number::from_f64(f)
        .map(ElicitValue::Number)
        .ok_or_else(|| "not a finite number".into())
}

/// A choice by its 1-based number, its value, or its label (case-insensitive).
fn pick(choices: &[Choice], input: &str) -> Result<String, String> {
    if let Ok(n) = input.parse::<usize>()
        && (1..=choices.len()).contains(&n)
        && !choices.iter().any(|c| c.value == input)
    {
        return Ok(choices[n - 1].value.clone());
    }
    choices
        .iter()
        .find(|c| c.value == input)
        .or_else(|| choices.iter().find(|c| c.label.eq_ignore_ascii_case(input)))
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("{input:?} is not one of {}", list(choices)))
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !local.contains('@')
}

fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn is_time(s: &str) -> bool {
    // hh:mm:ss[.frac]
    let (hms, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    if let Some(frac) = frac
        && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let parts: Vec<&str> = hms.split(':').collect();
    let [h, m, sec] = parts.as_slice() else {
        return false;
    };
    matches!((digits(h, 2), digits(m, 2), digits(sec, 2)),
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s <= 60)
}

fn is_date_time(s: &str) -> bool {
    let Some(t) = s.find(['T', 't']) else {
        return false;
    };
    let (date, rest) = (&s[..t], &s[t + 1..]);
    if !is_date(date) {
        return false;
    }
    if let Some(time) = rest.strip_suffix(['Z', 'z']) {
        return is_time(time);
    }
    let Some(sign) = rest.rfind(['+', '-']) else {
        return false;
    };
    let (time, offset) = (&rest[..sign], &rest[sign + 1..]);
    let Some((oh, om)) = offset.split_once(':') else {
        return false;
    };
    is_time(time)
        && matches!((digits(oh, 2), digits(om, 2)), (Some(h), Some(m)) if h < 24 && m < 60)
}

/// Shows a value the way a person would type it.
pub fn show(value: &ElicitValue) -> String {
    match value {
        ElicitValue::Bool(true) => "yes".into(),
        ElicitValue::Bool(false) => "no".into(),
        ElicitValue::Number(n) => n.to_string(),
        ElicitValue::String(s) => s.clone(),
        ElicitValue::Strings(items) => items.join(", "),
        ElicitValue::Null => "null".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Result<Form, Unrenderable> {
        Form::from_schema(&serde_json::from_value(schema).unwrap())
    }

    fn one(def: Value) -> Field {
        form(json!({"type": "object", "properties": {"f": def}, "required": ["f"]}))
            .unwrap()
            .fields
            .remove(0)
    }

    #[test]
    fn a_string_field_checks_length_in_code_points() {
        let f = one(json!({"type": "string", "minLength": 2, "maxLength": 3, "title": "Name"}));
        assert_eq!(f.label, "Name");
        assert!(f.required);
        assert_eq!(f.parse("é"), Err("at least 2 character(s), got 1".into()));
        assert_eq!(f.parse("éé"), Ok(ElicitValue::String("éé".into())));
        assert_eq!(f.parse("abcd"), Err("at most 3 character(s), got 4".into()));
        assert_eq!(f.kind.hint().as_deref(), Some("2-3 characters"));
    }

    #[test]
    fn a_required_string_is_not_empty() {
        let f = one(json!({"type": "string"}));
        assert_eq!(f.parse(""), Err("required".into()));
    }

    #[test]
    fn string_formats_are_checked() {
        let email = one(json!({"type": "string", "format": "email"}));
        assert!(email.parse("ada@example.com").is_ok());
        assert_eq!(
            email.parse("ada"),
            Err("not an email address (name@host)".into())
        );
        assert!(email.parse("ada@localhost").is_err());
        let uri = one(json!({"type": "string", "format": "uri"}));
        assert!(uri.parse("https://example.com/x").is_ok());
        assert!(uri.parse("urn:isbn:123").is_ok());
        assert!(uri.parse("example.com").is_err());
        assert!(uri.parse("https://exa mple.com").is_err());
        let date = one(json!({"type": "string", "format": "date"}));
        assert!(date.parse("2024-02-29").is_ok());
        assert_eq!(
            date.parse("2023-02-29"),
            Err("not a date (YYYY-MM-DD)".into())
        );
        assert!(date.parse("2024-13-01").is_err());
        assert!(date.parse("24-01-01").is_err());
        let dt = one(json!({"type": "string", "format": "date-time"}));
        assert!(dt.parse("2025-12-25T19:30:00Z").is_ok());
        assert!(dt.parse("2025-12-25T19:30:00.250+01:00").is_ok());
        assert!(dt.parse("2025-12-25 19:30").is_err());
        assert!(dt.parse("2025-12-25T25:00:00Z").is_err());
    }

    #[test]
    fn numbers_and_integers_check_bounds() {
        let n = one(json!({"type": "number", "minimum": 0.5, "maximum": 10}));
        assert_eq!(
            n.parse("2.5"),
            Ok(ElicitValue::Number(Number::from_f64(2.5).unwrap()))
        );
        assert_eq!(n.parse("0.1"), Err("must be at least 0.5".into()));
        assert_eq!(n.parse("11"), Err("must be at most 10".into()));
        assert_eq!(n.parse("ten"), Err("not a number".into()));
        let i = one(json!({"type": "integer", "minimum": 1}));
        assert_eq!(i.parse("3"), Ok(ElicitValue::Number(3.into())));
        assert_eq!(i.parse("2.5"), Err("a whole number is required".into()));
        assert_eq!(i.parse("0"), Err("must be at least 1".into()));
        assert_eq!(
            i.from_json(&json!(2.5)),
            Err("a whole number is required".into())
        );
        assert_eq!(i.kind.hint().as_deref(), Some("integer, >= 1"));
    }

    #[test]
    fn booleans_take_yes_and_no() {
        let b = one(json!({"type": "boolean", "default": false}));
        assert_eq!(b.default, Some(ElicitValue::Bool(false)));
        assert_eq!(b.parse("Y"), Ok(ElicitValue::Bool(true)));
        assert_eq!(b.parse("no"), Ok(ElicitValue::Bool(false)));
        assert_eq!(b.parse("maybe"), Err("answer yes or no".into()));
        assert_eq!(
            b.from_json(&json!("yes")),
            Err("expected true or false, got \"yes\"".into())
        );
    }

    #[test]
    fn every_single_select_form_is_a_select() {
        let plain = one(json!({"type": "string", "enum": ["red", "green"]}));
        let titled = one(json!({"type": "string", "oneOf": [
            {"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}]}));
        let legacy =
            one(json!({"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]}));
        for f in [&plain, &titled, &legacy] {
            assert_eq!(f.parse("2"), Ok(ElicitValue::String("green".into())));
            assert_eq!(f.parse("red"), Ok(ElicitValue::String("red".into())));
            assert_eq!(
                f.parse("blue"),
                Err("\"blue\" is not one of red, green".into())
            );
            assert_eq!(f.parse("3"), Err("\"3\" is not one of red, green".into()));
        }
        assert_eq!(
            titled.parse("GREEN"),
            Ok(ElicitValue::String("green".into()))
        );
        let Kind::Select(choices) = &legacy.kind else {
            panic!()
        };
        assert_eq!(choices[1].label, "Green");
        assert!(
            form(json!({"type": "object", "properties": {"f":
            {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}}}))
            .is_err()
        );
    }

    #[test]
    fn a_numeric_value_is_a_value_before_a_position() {
        let f = one(json!({"type": "string", "enum": ["10", "1"]}));
        assert_eq!(f.parse("1"), Ok(ElicitValue::String("1".into())));
        assert_eq!(f.parse("2"), Ok(ElicitValue::String("1".into())));
    }

    #[test]
    fn multi_selects_check_items_and_counts() {
        let untitled = one(
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
            "minItems": 1, "maxItems": 2, "default": ["a"]}),
        );
        assert_eq!(
            untitled.default,
            Some(ElicitValue::Strings(vec!["a".into()]))
        );
        assert_eq!(
            untitled.parse("1, c"),
            Ok(ElicitValue::Strings(vec!["a".into(), "c".into()]))
        );
        assert_eq!(untitled.parse(""), Err("choose at least 1, got 0".into()));
        assert_eq!(
            untitled.parse("a,b,c"),
            Err("choose at most 2, got 3".into())
        );
        assert_eq!(
            untitled.from_json(&json!(["z"])),
            Err("\"z\" is not one of a, b, c".into())
        );
        let titled = one(json!({"type": "array", "items": {"anyOf": [
            {"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}}));
        assert_eq!(
            titled.parse("beta,1"),
            Ok(ElicitValue::Strings(vec!["b".into(), "a".into()]))
        );
    }

    #[test]
    fn an_invalid_default_is_not_offered() {
        let f = one(json!({"type": "integer", "maximum": 5, "default": 9}));
        assert_eq!(f.default, None);
        let f = one(json!({"type": "string", "default": 3}));
        assert_eq!(f.default, None);
    }

    #[test]
    fn a_form_checks_required_unknown_and_fills_defaults() {
        let form = form(json!({"type": "object", "properties": {
            "ok": {"type": "boolean"},
            "note": {"type": "string", "default": "none"}}, "required": ["ok"]}))
        .unwrap();
        assert_eq!(form.missing(&BTreeMap::new()), ["ok"]);
        assert_eq!(form.check(&BTreeMap::new()), Err("ok: required".into()));
        let answers = BTreeMap::from([("ok".to_owned(), ElicitValue::Bool(true))]);
        let full = form.with_defaults(answers.clone());
        assert_eq!(full.get("note"), Some(&ElicitValue::String("none".into())));
        assert_eq!(form.check(&full), Ok(full.clone()));
        let bad = BTreeMap::from([("nope".to_owned(), ElicitValue::Bool(true))]);
        assert_eq!(
            form.check(&bad),
            Err("the form has no field \"nope\"".into())
        );
        let wrong = BTreeMap::from([("ok".to_owned(), ElicitValue::String("x".into()))]);
        assert_eq!(form.check(&wrong), Err("ok: expected true or false".into()));
    }

    #[test]
    fn schemas_outside_the_spec_are_unrenderable() {
        assert_eq!(
            form(
                json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}})
            ),
            Err(Unrenderable(
                "field \"a\": type \"object\" is not a primitive form field".into()
            ))
        );
        assert!(form(json!({"type": "array", "properties": {}})).is_err());
        assert!(form(json!({"type": "object", "properties": {}, "required": ["x"]})).is_err());
        assert!(
            form(json!({"type": "object", "properties": {"a": {"type": "string", "enum": []}}}))
                .is_err()
        );
    }
}
