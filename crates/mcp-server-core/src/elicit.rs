//! Elicitation models: a Rust type that derives `JsonSchema` and `Deserialize` becomes a flat
//! form schema, checked once per type, and an accepted answer is validated back into it.

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_types::elicitation::{
    ElicitAction, ElicitResult, ElicitationSchema, PrimitiveSchemaDefinition,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A type that can be asked for with a form: derive `JsonSchema`, `Deserialize` and `Clone`;
/// every field must be a string, number, integer, boolean or an enum (or a list of enum
/// values), optionally wrapped in `Option`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be asked for with an elicitation form",
    label = "this type is used as an elicitation model",
    note = "derive `serde::Deserialize`, `schemars::JsonSchema` and `Clone` on `{Self}`; its fields must be flat primitives"
)]
pub trait ElicitModel: JsonSchema + DeserializeOwned + Clone + Send + Sync + 'static {}

impl<T: JsonSchema + DeserializeOwned + Clone + Send + Sync + 'static> ElicitModel for T {}

/// Why a type cannot be an elicitation form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(pub String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemaError {}

/// A form schema, and its Python-form rendering (what a question digest hashes).
pub(crate) type Form = (Arc<ElicitationSchema>, Arc<str>);

type Cache = Mutex<HashMap<TypeId, Result<Form, SchemaError>>>;

/// The flat form schema of `T`, rendered and checked once per type.
pub fn elicitation_schema<T: ElicitModel>() -> Result<Arc<ElicitationSchema>, SchemaError> {
    elicitation_form::<T>().map(|(schema, _)| schema)
}

/// The flat form schema of `T` and its [`mcp_state_seal::compact_json`] text, both made once
/// per type: a resolver that asks the same form on every call digests the question without
/// rendering the schema again.
pub(crate) fn elicitation_form<T: ElicitModel>() -> Result<Form, SchemaError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache
        .lock()
        .ok()
        .and_then(|c| c.get(&TypeId::of::<T>()).cloned())
    {
        return hit;
    }
    let rendered = render(&serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null))
        .and_then(|schema| {
            let text = mcp_state_seal::compact_json(&schema)
                .map_err(|e| SchemaError(format!("the form schema does not serialize: {e}")))?;
            Ok((Arc::new(schema), Arc::from(text)))
        });
    if let Ok(mut c) = cache.lock() {
        c.insert(TypeId::of::<T>(), rendered.clone());
    }
    rendered
}

/// Turns a schemars root schema into an elicitation form schema, or says which field is not
/// a primitive.
pub(crate) fn render(root: &Value) -> Result<ElicitationSchema, SchemaError> {
    let empty = Map::new();
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError(format!(
            "an elicitation model must be a struct with named fields; it rendered as {root}"
        )));
    }
    let mut properties = BTreeMap::new();
    for (name, schema) in root
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty)
    {
        let field = primitive(schema, defs)
            .ok_or_else(|| SchemaError(format!(
                "Elicitation schema field '{name}' rendered as {schema}, which is not a valid PrimitiveSchemaDefinition"
            )))?;
        properties.insert(name.clone(), field);
    }
    let required = root
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(ElicitationSchema::new(properties, required))
}

fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => defs.get(reference.strip_prefix("#/$defs/")?),
        None => Some(schema),
    }
}

/// `T | None` renders as `type: [T, "null"]` or `anyOf: [T, {type: null}]`; a form field is
/// simply optional, so keep `T`.
fn strip_null<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> Option<Value> {
    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array) {
        let non_null: Vec<&Value> = any_of
            .iter()
            .filter(|s| s.get("type") != Some(&Value::from("null")))
            .collect();
        if let [only] = non_null.as_slice() {
            let mut merged = resolve(only, defs)?.clone();
            copy_annotations(schema, &mut merged);
            return Some(merged);
        }
        return None;
    }
    let mut schema = resolve(schema, defs)?.clone();
    if let Some(types) = schema.get("type").and_then(Value::as_array).cloned() {
        let non_null: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        if let [only] = non_null.as_slice() {
            schema["type"] = only.clone();
        } else {
            return None;
        }
    }
    Some(schema)
}

fn copy_annotations(from: &Value, to: &mut Value) {
    for key in ["description", "title", "default"] {
        if let Some(v) = from.get(key) {
            to[key] = v.clone();
        }
    }
}

fn primitive(schema: &Value, defs: &Map<String, Value>) -> Option<PrimitiveSchemaDefinition> {
    let mut schema = strip_null(schema, defs)?;
    let object = schema.as_object_mut()?;
    // Formats the spec does not list (`double`, `uint32`...) are type hints only.
    match object.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(format) = object.get("format").and_then(Value::as_str)
                && !matches!(format, "email" | "uri" | "date" | "date-time")
            {
                object.remove("format");
            }
        }
        Some("number" | "integer") => {
            object.remove("format");
        }
        Some("boolean") => {}
        Some("array") => {
            let items = object.get("items")?;
            let items = resolve(items, defs)?.clone();
            object.insert("items".into(), items);
        }
        _ => return None,
    }
    if let Some(Value::Array(options)) = object.get_mut("oneOf") {
        // Documented enum variants render as `oneOf: [{const, description}]`; a form option
        // needs a title.
        for option in options.iter_mut() {
            if option.get("title").is_none() {
                let title = option
                    .get("description")
                    .or_else(|| option.get("const"))
                    .cloned()?;
                option["title"] = title;
            }
            if let Some(o) = option.as_object_mut() {
                o.remove("description");
                o.remove("type");
            }
        }
    }
    let definition: PrimitiveSchemaDefinition =
        serde_json::from_value(Value::Object(object.clone())).ok()?;
    definition.kind()?;
    // Anything left that the form schema does not define means nesting.
    definition.extra.is_empty().then_some(definition)
}

/// What the user did with a form: accepted with data, declined, or cancelled.
///
/// A parameter of this type asks the user a form built from `T`'s JSON Schema; the body sees
/// all three answers, on either era. Here a 2026-07-28 client declines on the retry:
///
/// ```
/// use mcp_server_core::registry::{ElicitationResult, McpServer, Resolution, Resolver, ToolDef};
/// use mcp_server_core::{MemoryConnection, TransportContext};
/// use serde_json::{Value, json};
///
/// #[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     ok: bool,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let confirm = Resolver::new("confirm", |_input| async { Resolution::<Confirm>::elicit("Delete /tmp/a?") });
/// let delete = ToolDef::new("delete")
///     .resolve::<ElicitationResult<Confirm>>("confirm", confirm)
///     .handler_resolved(|_ctx, _args: Value, mut resolved| async move {
///         Ok::<_, String>(match resolved.take::<ElicitationResult<Confirm>>("confirm")? {
///             ElicitationResult::Accepted(Confirm { ok: true }) => "deleted",
///             ElicitationResult::Accepted(_) => "kept",
///             ElicitationResult::Declined => "declined: nothing deleted",
///             ElicitationResult::Cancelled => "cancelled: nothing deleted",
///         })
///     });
/// let service = McpServer::new("Files").tool(delete).into_service()?;
/// let mut conn = MemoryConnection::connect(&service, TransportContext::default());
/// // A 2026-07-28 `tools/call` line; the envelope rides in `_meta`.
/// let line = |id: u32, mut params: Value| {
///     params["_meta"] = json!({
///         "io.modelcontextprotocol/protocolVersion": "2026-07-28",
///         "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
///         "io.modelcontextprotocol/clientInfo": {"name": "doc", "version": "1"}
///     });
///     json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
/// };
/// conn.send_raw(line(1, json!({"name": "delete", "arguments": {}})));
/// let first: Value = serde_json::from_str(&conn.recv().await.unwrap().to_string())?;
/// assert_eq!(first["result"]["resultType"], "input_required");
///
/// // The retry answers the question by its key and echoes the state byte for byte.
/// conn.send_raw(line(2, json!({
///     "name": "delete", "arguments": {},
///     "inputResponses": {"confirm": {"action": "decline"}},
///     "requestState": first["result"]["requestState"]
/// })));
/// let second: Value = serde_json::from_str(&conn.recv().await.unwrap().to_string())?;
/// assert_eq!(second["result"]["content"][0]["text"], "declined: nothing deleted");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationResult<T> {
    /// The user submitted the form.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the request.
    Cancelled,
}

impl<T> ElicitationResult<T> {
    /// The data, if accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            ElicitationResult::Accepted(t) => Some(t),
            _ => None,
        }
    }

    /// The action's wire name: `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitationResult::Accepted(_) => "accept",
            ElicitationResult::Declined => "decline",
            ElicitationResult::Cancelled => "cancel",
        }
    }
}

/// Reads an `ElicitResult` into `T`, validating accepted content against the model.
pub(crate) fn parse_elicit_result<T: ElicitModel>(
    result: &ElicitResult,
) -> Result<ElicitationResult<T>, String> {
    match result.action {
        ElicitAction::Decline => Ok(ElicitationResult::Declined),
        ElicitAction::Cancel => Ok(ElicitationResult::Cancelled),
        ElicitAction::Accept => match &result.content {
            Some(content) => {
                let value = serde_json::to_value(content).map_err(|e| e.to_string())?;
                parse_content(value)
            }
            // A URL elicitation's accept carries nothing: `()` (or any model that reads
            // `null`) takes it; a form model cannot.
            None => serde_json::from_value::<T>(Value::Null)
                .map(ElicitationResult::Accepted)
                .map_err(|_| "an accepted elicitation with no content".to_owned()),
        },
    }
}

pub(crate) fn parse_content<T: ElicitModel>(
    content: Value,
) -> Result<ElicitationResult<T>, String> {
    serde_json::from_value::<T>(content)
        .map(ElicitationResult::Accepted)
        .map_err(|e| format!("content that does not match the requested schema ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Clone, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct AlternativeDate {
        /// Try another date?
        accept_alternative: bool,
        /// Alternative date (YYYY-MM-DD)
        #[serde(default = "default_date")]
        date: String,
    }

    fn default_date() -> String {
        "2025-12-26".into()
    }

    #[derive(Clone, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Seat {
        Window,
        Aisle,
    }

    #[derive(Clone, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Flat {
        n: Option<u32>,
        ratio: f64,
        seat: Seat,
        seats: Vec<Seat>,
        email: Option<String>,
    }

    #[derive(Clone, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        street: String,
    }

    #[derive(Clone, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        address: Address,
    }

    #[test]
    fn the_bistro_model_renders_as_the_seed_documents_show() {
        let schema = elicitation_schema::<AlternativeDate>().unwrap();
        assert_eq!(
            serde_json::to_value(&*schema).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "accept_alternative": {"type": "boolean", "description": "Try another date?"},
                    "date": {"type": "string", "description": "Alternative date (YYYY-MM-DD)", "default": "2025-12-26"}
                },
                "required": ["accept_alternative"]
            })
        );
    }

    #[test]
    fn options_enums_and_numbers_flatten() {
        let schema = serde_json::to_value(&*elicitation_schema::<Flat>().unwrap()).unwrap();
        assert_eq!(
            schema["properties"]["n"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(schema["properties"]["ratio"], json!({"type": "number"}));
        assert_eq!(
            schema["properties"]["seat"],
            json!({"type": "string", "enum": ["Window", "Aisle"]})
        );
        assert_eq!(
            schema["properties"]["seats"],
            json!({"type": "array", "items": {"type": "string", "enum": ["Window", "Aisle"]}})
        );
        assert_eq!(schema["required"], json!(["ratio", "seat", "seats"]));
    }

    #[test]
    fn a_nested_model_is_rejected_naming_the_field() {
        let e = elicitation_schema::<Nested>().unwrap_err();
        assert_eq!(
            e.0,
            r##"Elicitation schema field 'address' rendered as {"$ref":"#/$defs/Address"}, which is not a valid PrimitiveSchemaDefinition"##
        );
    }
}
