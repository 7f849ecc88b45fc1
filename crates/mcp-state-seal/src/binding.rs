//! The request a `requestState` belongs to: method, target and a digest of the
//! arguments. A token replayed on another tool, prompt, resource or with other
//! arguments carries claims that no longer match, and is rejected.

use serde_json::Value;

use crate::canonical::ArgsDigest;
use crate::error::JsonSyntaxError;

/// `tools/call`: the target is the tool name.
pub const TOOLS_CALL: &str = "tools/call";
/// `prompts/get`: the target is the prompt name.
pub const PROMPTS_GET: &str = "prompts/get";
/// `resources/read`: the target is the resource URI, and there are no arguments.
pub const RESOURCES_READ: &str = "resources/read";

/// The methods whose results may carry a `requestState`: the only ones the
/// sealing boundary acts on. Every other method passes `requestState` through.
pub const CARRIER_METHODS: [&str; 3] = [TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];

/// Whether `method` is one of the [`CARRIER_METHODS`].
pub fn is_carrier_method(method: &str) -> bool {
    CARRIER_METHODS.contains(&method)
}

/// The identity of one request that sealed state is bound to (claims `m`, `t`, `a`).
///
/// Only the name or URI and the arguments are bound; `_meta`, `inputResponses`
/// and `requestState` are not, so a retry with answers still matches.
///
/// ```
/// use mcp_state_seal::RequestBinding;
/// use serde_json::json;
///
/// let args = json!({"date": "2026-08-01", "party": 2});
/// let binding = RequestBinding::new("tools/call", "book_table", Some(&args));
/// assert_eq!(binding.args_digest(), "mSmFTmBaoC2yxh031hriRg");
///
/// // The same request, from its raw params text (exact for integers beyond 64 bits).
/// let raw = RequestBinding::from_raw_arguments("tools/call", "book_table", Some(r#"{"party":2,"date":"2026-08-01"}"#))?;
/// assert_eq!(raw, binding);
///
/// // resources/read binds the URI and digests no arguments.
/// let params = json!({"uri": "demo://docs/readme"});
/// let read = RequestBinding::from_params("resources/read", Some(&params));
/// assert_eq!(read.target(), "demo://docs/readme");
/// assert_eq!(read.args_digest(), "RBNvo1WzZ4oRRq0W9-hkng");
/// # Ok::<(), mcp_state_seal::JsonSyntaxError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestBinding<'a> {
    method: &'a str,
    target: &'a str,
    args_digest: ArgsDigest,
}

impl<'a> RequestBinding<'a> {
    /// Binds `method` (`tools/call`, `prompts/get` or `resources/read`), `target`
    /// (the tool or prompt name, or the resource URI) and the request's arguments.
    ///
    /// In a fleet that mixes Python and Rust instances, prefer
    /// [`from_raw_arguments`](Self::from_raw_arguments) for arguments parsed from
    /// the wire: see [`ArgsDigest::of_value`] for the numbers a `Value` can change.
    pub fn new(method: &'a str, target: &'a str, arguments: Option<&Value>) -> Self {
        Self::with_args_digest(method, target, ArgsDigest::of_value(arguments))
    }

    /// As [`new`](Self::new), from the raw JSON text of `arguments`: integers
    /// beyond 64 bits digest exactly as Python digests them.
    ///
    /// # Errors
    ///
    /// [`JsonSyntaxError`] if `arguments` is not a JSON document.
    pub fn from_raw_arguments(
        method: &'a str,
        target: &'a str,
        arguments: Option<&str>,
    ) -> Result<Self, JsonSyntaxError> {
        Ok(Self::with_args_digest(
            method,
            target,
            ArgsDigest::of_json_text(arguments)?,
        ))
    }

    /// Binds a request from its `params` object, as the Python SDK does: for
    /// `resources/read` the target is `params.uri` and no arguments are bound;
    /// otherwise the target is `params.name` and the arguments `params.arguments`.
    /// A missing or non-string target binds as the empty string.
    pub fn from_params(method: &'a str, params: Option<&'a Value>) -> Self {
        let field = |name: &str| params.and_then(|p| p.get(name));
        if method == RESOURCES_READ {
            let target = field("uri").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, None)
        } else {
            let target = field("name").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, field("arguments"))
        }
    }

    /// Binds a request whose argument digest is already known.
    pub fn with_args_digest(method: &'a str, target: &'a str, args_digest: ArgsDigest) -> Self {
        Self {
            method,
            target,
            args_digest,
        }
    }

    /// The method (`m` claim).
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The tool or prompt name, or the resource URI (`t` claim).
    pub fn target(&self) -> &'a str {
        self.target
    }

    /// The argument digest (`a` claim).
    pub fn args_digest(&self) -> ArgsDigest {
        self.args_digest
    }
}
