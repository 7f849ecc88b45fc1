//! Elicitation: asking the user for input, in form mode (a flat schema) or URL mode (an
//! out-of-band page).
//!
//! On 2026-07-28 an `elicitation/create` travels inside an `InputRequiredResult`; on 2025-11-25
//! it is a server-to-client request. The params and the result are the same in both.

use crate::prelude::*;

use alloc::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::meta::Meta;
use crate::tasks::TaskMetadata;

/// Params of `elicitation/create`: a form or a URL.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode (also when `mode` is absent).
    Form(ElicitRequestFormParams),
    /// URL mode.
    Url(ElicitRequestUrlParams),
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(f) => f.serialize(serializer),
            ElicitRequestParams::Url(u) => u.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = JsonObject::deserialize(deserializer)?;
        match object.get("mode") {
            None => ElicitRequestFormParams::deserialize(Value::Object(object))
                .map(ElicitRequestParams::Form)
                .map_err(D::Error::custom),
            Some(Value::String(mode)) if mode == "form" => {
                ElicitRequestFormParams::deserialize(Value::Object(object))
                    .map(ElicitRequestParams::Form)
                    .map_err(D::Error::custom)
            }
            Some(Value::String(mode)) if mode == "url" => {
                ElicitRequestUrlParams::deserialize(Value::Object(object))
                    .map(ElicitRequestParams::Url)
                    .map_err(D::Error::custom)
            }
            Some(other) => Err(D::Error::custom(format!(
                "elicitation mode must be \"form\" or \"url\", found {other}"
            ))),
        }
    }
}

/// Form-mode params: a message and a flat schema of primitive fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestFormParams {
    /// `"form"`, or absent (which means form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What is being asked.
    pub message: String,
    /// The fields to fill in.
    #[serde(rename = "requestedSchema")]
    pub requested_schema: ElicitationSchema,
    /// Task augmentation (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta` (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// URL-mode params: a page the user opens out of band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: String,
    /// Why the user should open the page.
    pub message: String,
    /// The page.
    pub url: String,
    /// Correlates a later `notifications/elicitation/complete` (2025-11-25 only).
    #[serde(
        rename = "elicitationId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub elicitation_id: Option<String>,
    /// Task augmentation (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta` (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The restricted JSON Schema of a form: an object of primitive properties, no nesting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// `$schema`.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The fields.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// The fields that must be filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationSchema {
    /// An object schema with the given properties and required names.
    pub fn new(
        properties: BTreeMap<String, PrimitiveSchemaDefinition>,
        required: Vec<String>,
    ) -> Self {
        ElicitationSchema {
            schema: None,
            type_: "object".to_owned(),
            properties,
            required: (!required.is_empty()).then_some(required),
            extra: JsonObject::new(),
        }
    }
}

/// One field of a form: a string, number, boolean or enum schema.
///
/// One flat struct covers every variant of the spec's `PrimitiveSchemaDefinition` union;
/// [`PrimitiveSchemaDefinition::kind`] says which one a value is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrimitiveSchemaDefinition {
    /// `string`, `number`, `integer`, `boolean` or `array` (multi-select).
    #[serde(rename = "type")]
    pub type_: String,
    /// A display label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A default value the client should pre-fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// String minimum length.
    #[serde(rename = "minLength", default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// String maximum length.
    #[serde(rename = "maxLength", default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// String format: `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Number minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Number maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Untitled single-select (and legacy) enum values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<String>>,
    /// Legacy display names of `enum` values.
    #[serde(rename = "enumNames", default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Titled single-select options.
    #[serde(rename = "oneOf", default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<EnumOption>>,
    /// Multi-select item schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<MultiSelectItems>,
    /// Multi-select minimum count.
    #[serde(rename = "minItems", default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Multi-select maximum count.
    #[serde(rename = "maxItems", default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// An option of a titled enum: a value and its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub const_: String,
    /// The label.
    pub title: String,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `items` of a multi-select enum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MultiSelectItems {
    /// `"string"` for an untitled multi-select.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Untitled values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<String>>,
    /// Titled options.
    #[serde(rename = "anyOf", default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<EnumOption>>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Which variant of the spec's `PrimitiveSchemaDefinition` a field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimitiveKind {
    /// `StringSchema`.
    String,
    /// `NumberSchema` (`number` or `integer`).
    Number,
    /// `BooleanSchema`.
    Boolean,
    /// `UntitledSingleSelectEnumSchema`.
    UntitledSingleSelect,
    /// `TitledSingleSelectEnumSchema`.
    TitledSingleSelect,
    /// `LegacyTitledEnumSchema` (`enum` with `enumNames`).
    LegacyTitledEnum,
    /// `UntitledMultiSelectEnumSchema`.
    UntitledMultiSelect,
    /// `TitledMultiSelectEnumSchema`.
    TitledMultiSelect,
}

impl PrimitiveSchemaDefinition {
    /// A field of the given JSON type (`string`, `number`, `integer`, `boolean`).
    pub fn of_type(type_: &str) -> Self {
        PrimitiveSchemaDefinition {
            type_: type_.to_owned(),
            ..Default::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the default.
    pub fn with_default(mut self, default: Value) -> Self {
        self.default = Some(default);
        self
    }

    /// Which union variant this is, or `None` if it matches none of them.
    pub fn kind(&self) -> Option<PrimitiveKind> {
        match self.type_.as_str() {
            "string" if self.one_of.is_some() => Some(PrimitiveKind::TitledSingleSelect),
            "string" if self.enum_names.is_some() => Some(PrimitiveKind::LegacyTitledEnum),
            "string" if self.enum_.is_some() => Some(PrimitiveKind::UntitledSingleSelect),
            "string" => Some(PrimitiveKind::String),
            "number" | "integer" => Some(PrimitiveKind::Number),
            "boolean" => Some(PrimitiveKind::Boolean),
            "array" => match &self.items {
                Some(items) if items.any_of.is_some() => Some(PrimitiveKind::TitledMultiSelect),
                Some(items) if items.enum_.is_some() => Some(PrimitiveKind::UntitledMultiSelect),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted (form) or consented (URL).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// A value of a submitted form field: string, number (integer or float), boolean or a list of
/// strings (multi-select). `null` is accepted from peers that send it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A boolean.
    Bool(bool),
    /// A number, integer or float, kept exactly as sent.
    Number(Number),
    /// A string.
    String(String),
    /// Multi-select values.
    Strings(Vec<String>),
    /// `null`.
    Null,
}

/// The result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// Accept, decline or cancel.
    pub action: ElicitAction,
    /// The submitted fields: only on accept in form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// `_meta` (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// An accept with form content.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// An accept with no content (URL mode).
    pub fn accept_url() -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A decline.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A cancel.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of the legacy `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCompleteParams {
    /// The id of the URL elicitation that completed.
    #[serde(rename = "elicitationId")]
    pub elicitation_id: String,
    /// Members this crate does not know, kept as sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elicit_content_accepts_integers_and_floats() {
        let r: ElicitResult = serde_json::from_value(
            json!({"action":"accept","content":{"n":2,"f":2.5,"s":"x","b":true,"m":["a"]}}),
        )
        .unwrap();
        let c = r.content.as_ref().unwrap();
        assert_eq!(c["n"], ElicitValue::Number(2.into()));
        assert_eq!(c["f"], ElicitValue::Number(Number::from_f64(2.5).unwrap()));
        assert_eq!(c["m"], ElicitValue::Strings(vec!["a".into()]));
        assert_eq!(
            serde_json::to_value(&r).unwrap()["content"]["f"],
            json!(2.5)
        );
    }

    #[test]
    fn missing_mode_means_form_and_unknown_mode_is_named() {
        let p: ElicitRequestParams = serde_json::from_value(json!({
            "message":"m","requestedSchema":{"type":"object","properties":{}}}))
        .unwrap();
        assert!(matches!(p, ElicitRequestParams::Form(_)));
        let e =
            serde_json::from_value::<ElicitRequestParams>(json!({"mode":"voice","message":"m"}))
                .unwrap_err();
        assert!(e.to_string().contains("\"form\" or \"url\""), "{e}");
    }
}
