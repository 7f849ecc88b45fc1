//! Capability gating: a server never sends an input request (or a legacy server-to-client
//! request) the client did not declare, and a call that needs one gets `-32021` with the
//! missing capabilities as a capabilities object.

use mcp_types::capabilities::{
    ClientCapabilities, ElicitationCapability, RootsCapability, SamplingCapability,
};
use mcp_types::elicitation::ElicitRequestParams;
use mcp_types::mrtr::InputRequest;
use mcp_types::{ErrorObject, JsonObject, ServerRequest};

/// A client capability a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Form-mode elicitation (`elicitation: {}` or `{form: {}}`).
    FormElicitation,
    /// URL-mode elicitation (`elicitation: {url: {}}`).
    UrlElicitation,
    /// Sampling (`sampling: {}`).
    Sampling,
    /// Sampling with tools (`sampling: {tools: {}}`).
    SamplingTools,
    /// Roots (`roots: {}`).
    Roots,
}

impl Requirement {
    /// What an input request needs, or `None` for a method the schema does not allow.
    pub fn of_input_request(request: &InputRequest) -> Option<Self> {
        Some(match request {
            InputRequest::Elicit(ElicitRequestParams::Form(_)) => Requirement::FormElicitation,
            InputRequest::Elicit(ElicitRequestParams::Url(_)) => Requirement::UrlElicitation,
            InputRequest::CreateMessage(p) if p.uses_tools() => Requirement::SamplingTools,
            InputRequest::CreateMessage(_) => Requirement::Sampling,
            InputRequest::ListRoots(_) => Requirement::Roots,
            InputRequest::Unknown { .. } => return None,
        })
    }

    /// What a legacy server-to-client request needs (`ping` and tasks need nothing).
    pub fn of_server_request(request: &ServerRequest) -> Option<Self> {
        match request {
            ServerRequest::Elicit(ElicitRequestParams::Form(_)) => {
                Some(Requirement::FormElicitation)
            }
            ServerRequest::Elicit(ElicitRequestParams::Url(_)) => Some(Requirement::UrlElicitation),
            ServerRequest::CreateMessage(p) if p.uses_tools() => Some(Requirement::SamplingTools),
            ServerRequest::CreateMessage(_) => Some(Requirement::Sampling),
            ServerRequest::ListRoots(_) => Some(Requirement::Roots),
            _ => None,
        }
    }

    /// Whether `caps` declares it.
    pub fn is_met(self, caps: &ClientCapabilities) -> bool {
        match self {
            Requirement::FormElicitation => caps.supports_form_elicitation(),
            Requirement::UrlElicitation => caps.supports_url_elicitation(),
            Requirement::Sampling => caps.supports_sampling(),
            Requirement::SamplingTools => caps.supports_sampling_tools(),
            Requirement::Roots => caps.supports_roots(),
        }
    }

    /// A human name for messages: "form elicitation", "sampling with tools"...
    pub fn describe(self) -> &'static str {
        match self {
            Requirement::FormElicitation => "form elicitation",
            Requirement::UrlElicitation => "URL elicitation",
            Requirement::Sampling => "sampling",
            Requirement::SamplingTools => "sampling with tools",
            Requirement::Roots => "roots",
        }
    }

    /// Adds this requirement to a `requiredCapabilities` object.
    pub fn add_to(self, caps: &mut ClientCapabilities) {
        match self {
            Requirement::FormElicitation => {
                caps.elicitation
                    .get_or_insert_with(ElicitationCapability::default)
                    .form = Some(JsonObject::new());
            }
            Requirement::UrlElicitation => {
                caps.elicitation
                    .get_or_insert_with(ElicitationCapability::default)
                    .url = Some(JsonObject::new());
            }
            Requirement::Sampling => {
                caps.sampling
                    .get_or_insert_with(SamplingCapability::default);
            }
            Requirement::SamplingTools => {
                caps.sampling
                    .get_or_insert_with(SamplingCapability::default)
                    .tools = Some(JsonObject::new());
            }
            Requirement::Roots => {
                caps.roots.get_or_insert_with(RootsCapability::default);
            }
        }
    }

    /// `-32021` naming this requirement and what needed it.
    pub fn error(self, what: &str) -> ErrorObject {
        let mut required = ClientCapabilities::default();
        self.add_to(&mut required);
        ErrorObject::missing_required_client_capability(
            format!(
                "Client did not declare the {} capability required by {what}",
                self.describe()
            ),
            required,
        )
    }
}

/// What a client declared it can answer, in five flags: all that a task keeps of the
/// capabilities its creating request carried (review W1). Arbitrary JSON a client put in its
/// capabilities is not kept for the task's life, nor copied on every poll and lease renewal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ClientSupport {
    /// Form-mode elicitation.
    #[serde(default)]
    pub form_elicitation: bool,
    /// URL-mode elicitation.
    #[serde(default)]
    pub url_elicitation: bool,
    /// Sampling.
    #[serde(default)]
    pub sampling: bool,
    /// Sampling with tools.
    #[serde(default)]
    pub sampling_tools: bool,
    /// Roots.
    #[serde(default)]
    pub roots: bool,
}

impl ClientSupport {
    const REQUIREMENTS: [Requirement; 5] = [
        Requirement::FormElicitation,
        Requirement::UrlElicitation,
        Requirement::Sampling,
        Requirement::SamplingTools,
        Requirement::Roots,
    ];

    /// The flags of `caps`.
    pub fn of(caps: &ClientCapabilities) -> Self {
        ClientSupport {
            form_elicitation: caps.supports_form_elicitation(),
            url_elicitation: caps.supports_url_elicitation(),
            sampling: caps.supports_sampling(),
            sampling_tools: caps.supports_sampling_tools(),
            roots: caps.supports_roots(),
        }
    }

    /// Whether `requirement` is declared.
    pub fn meets(self, requirement: Requirement) -> bool {
        match requirement {
            Requirement::FormElicitation => self.form_elicitation,
            Requirement::UrlElicitation => self.url_elicitation,
            Requirement::Sampling => self.sampling,
            Requirement::SamplingTools => self.sampling_tools,
            Requirement::Roots => self.roots,
        }
    }

    /// Capabilities that declare exactly these flags, each with an empty settings object.
    pub fn to_capabilities(self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        for requirement in Self::REQUIREMENTS {
            if self.meets(requirement) {
                requirement.add_to(&mut caps);
            }
        }
        caps
    }
}

/// Checks every input request of a round against the declared capabilities. On a gap, the
/// `-32021` error lists every missing capability.
pub(crate) fn check_input_requests<'a>(
    requests: impl IntoIterator<Item = (&'a String, &'a InputRequest)>,
    caps: &ClientCapabilities,
) -> Result<(), ErrorObject> {
    let mut required = ClientCapabilities::default();
    let mut first: Option<(Requirement, &str)> = None;
    for (key, request) in requests {
        let Some(requirement) = Requirement::of_input_request(request) else {
            return Err(ErrorObject::internal(format!(
                "the handler asked for '{}' in input request '{key}', which is not an input request method",
                request.method()
            )));
        };
        if !requirement.is_met(caps) {
            requirement.add_to(&mut required);
            first.get_or_insert((requirement, key));
        }
    }
    match first {
        None => Ok(()),
        Some((requirement, key)) => {
            let mut error = requirement.error(&format!("input request '{key}'"));
            if let Ok(data) =
                serde_json::to_value(mcp_types::error::MissingRequiredClientCapabilityData {
                    required_capabilities: required,
                    extra: JsonObject::new(),
                })
            {
                error.data = Some(data);
            }
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_elicitation_declares_form_only_and_errors_are_capability_objects() {
        let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        assert!(Requirement::FormElicitation.is_met(&caps));
        assert!(!Requirement::UrlElicitation.is_met(&caps));
        let e = Requirement::SamplingTools.error("tool 'plan'");
        assert_eq!(e.code.0, -32021);
        assert_eq!(
            e.message,
            "Client did not declare the sampling with tools capability required by tool 'plan'"
        );
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"sampling": {"tools": {}}}}))
        );
    }
}
