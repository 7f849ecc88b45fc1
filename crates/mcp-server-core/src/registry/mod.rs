//! The high-level server most users write against: registries of tools, prompts, resources
//! and templates; JSON Schemas from `schemars`; resolvers that ask the user (or the client's
//! LLM, or its roots) on either era; and sealing on by default.
//!
//! ```
//! use mcp_server_core::registry::{ElicitationResult, McpServer, Resolution, Resolver, ToolDef};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct DeleteFolder {
//!     path: String,
//! }
//!
//! #[derive(Clone, Deserialize, JsonSchema)]
//! struct Confirm {
//!     ok: bool,
//! }
//!
//! // Ask only when the folder is not empty; `path` is the tool's own argument.
//! let confirm = Resolver::new("confirm_delete", |input| async move {
//!     let path: String = match input.argument("path") {
//!         Ok(path) => path,
//!         Err(e) => return Resolution::reject(e),
//!     };
//!     if path == "/tmp/empty" {
//!         Resolution::ready(Confirm { ok: true })
//!     } else {
//!         Resolution::elicit(format!("{path} has 2 file(s). Delete anyway?"))
//!     }
//! })
//! .reads(["path"]);
//!
//! let delete = ToolDef::new("delete_folder")
//!     .description("Delete a folder, asking for confirmation when it is not empty.")
//!     .arguments::<DeleteFolder>()
//!     .resolve::<ElicitationResult<Confirm>>("confirm", confirm)
//!     .handler_resolved(|_ctx, args: DeleteFolder, mut resolved| async move {
//!         match resolved.take::<ElicitationResult<Confirm>>("confirm")? {
//!             ElicitationResult::Accepted(Confirm { ok: true }) => Ok::<_, String>(format!("deleted {}", args.path)),
//!             ElicitationResult::Accepted(_) => Ok("kept the folder".to_owned()),
//!             ElicitationResult::Declined => Ok("declined: folder not deleted".to_owned()),
//!             ElicitationResult::Cancelled => Ok("cancelled: folder not deleted".to_owned()),
//!         }
//!     });
//! let service = McpServer::new("Files").tool(delete).into_service()?;
//! # Ok::<(), mcp_server_core::registry::BuildError>(())
//! ```

mod apps;
mod call;
#[doc(hidden)]
pub mod derive;
mod error;
mod extras;
mod handlers;
mod needs;
mod page;
mod policy;
mod prompt;
mod rerun;
mod resolve;
mod resource;
mod skills;
mod tool;

#[cfg(feature = "fuzzing")]
pub(crate) mod fuzzing {
    use std::collections::BTreeMap;

    use mcp_types::elicitation::ElicitationSchema;
    use serde_json::Value;

    /// Parses `template` and matches `uri` against it: the variables, `None` when it does not
    /// match, or the parse error.
    pub fn uri_template_matches(
        template: &str,
        uri: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String> {
        Ok(super::resource::UriTemplate::parse(template)?.matches(uri))
    }

    /// Renders a JSON Schema root as an elicitation form schema, as a model's schema is.
    pub fn render_elicitation_schema(root: &Value) -> Result<ElicitationSchema, String> {
        crate::elicit::render(root).map_err(|e| e.0)
    }
}

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_state_seal::RequestStateSecurity;
use mcp_types::common::PaginatedRequestParams;
use mcp_types::completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference,
};
use mcp_types::mrtr::Outcome;
use mcp_types::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate,
};
use mcp_types::tools::{ListToolsResult, Tool};
use mcp_types::{ErrorObject, JsonObject};
use serde_json::Value;

pub use crate::elicit::{ElicitModel, ElicitationResult, SchemaError, elicitation_schema};
pub use crate::refusal::Refusal;
pub use apps::AppDef;
pub use error::BuildError;
pub use mcp_types::ext::apps::{UiPermissions, Visibility as UiVisibility};
pub use prompt::{Completer, IntoPromptResult, PromptDef};
pub use resolve::{
    Accepted, FromResolved, Question, Ready, Resolution, ResolveError, Resolved, ResolvedValues,
    Resolver, ResolverInput,
};
pub use resource::{IntoReadResult, NotFound, ResourceDef, ResourceTemplateDef};
pub use skills::SkillsLimits;
pub use tool::{IntoToolResult, Json, ToolDef, ToolOutcome, ToolReply, schema_object};

use crate::context::RequestContext;
use crate::server::Server;
use crate::service::{Service, resource_not_found};
use derive::ResourceEntry;
pub use derive::{IntoPromptDef, IntoResourceDef, IntoToolDef};
use resolve::{Graph, ResolvedParam, Step, check_resolvers, prepare};
use resource::UriTemplate;

/// The request context of a tool, prompt or resource body.
pub type Context = RequestContext;

/// How many items a list page holds unless configured.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The high-level MCP server: tools, prompts, resources and templates, built into a
/// [`Service`] that any transport serves, in both eras.
///
/// ```
/// use mcp_server_core::registry::{McpServer, ToolDef};
/// use mcp_server_core::{MemoryConnection, TransportContext};
/// use serde_json::{Value, json};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Greet {
///     name: String,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let greet = ToolDef::new("greet")
///     .description("Say hello.")
///     .arguments::<Greet>()
///     .handler(|_ctx, args: Greet| async move { format!("Hello, {}!", args.name) });
/// let service = McpServer::new("Greeter").version("1.0.0").tool(greet).into_service()?;
///
/// // One 2026-07-28 request over an in-process connection; the envelope rides in `_meta`.
/// let mut conn = MemoryConnection::connect(&service, TransportContext::default());
/// conn.send_raw(
///     json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
///         "name": "greet", "arguments": {"name": "Ada"},
///         "_meta": {
///             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
///             "io.modelcontextprotocol/clientCapabilities": {},
///             "io.modelcontextprotocol/clientInfo": {"name": "doc", "version": "1"}
///         }
///     }})
///     .to_string(),
/// );
/// let reply: Value = serde_json::from_str(&conn.recv().await.unwrap().to_string())?;
/// assert_eq!(reply["result"]["resultType"], "complete");
/// assert_eq!(reply["result"]["content"][0]["text"], "Hello, Ada!");
/// # Ok(())
/// # }
/// ```
pub struct McpServer {
    name: String,
    /// Set by [`McpServer::version`]; otherwise the version of the crate that defines the
    /// first annotated item, else this SDK's.
    version: Option<String>,
    title: Option<String>,
    instructions: Option<String>,
    tools: Vec<ToolDef>,
    prompts: Vec<PromptDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<ResourceTemplateDef>,
    security: Option<RequestStateSecurity>,
    page_size: usize,
    change_notifications: bool,
    logging: bool,
    request_timeout: Option<Duration>,
    limits: Option<crate::SessionLimits>,
    tasks: Option<crate::tasks::TaskConfig>,
    fleet: Option<crate::fleet::Fleet>,
    skills_dir: Option<std::path::PathBuf>,
    skills_limits: SkillsLimits,
    extensions: Vec<crate::Extension>,
    apps: Vec<AppDef>,
    policy: crate::policy::Policy,
    state: crate::state::StateMap,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field(
                "tools",
                &self.tools.iter().map(ToolDef::name).collect::<Vec<_>>(),
            )
            .field(
                "prompts",
                &self.prompts.iter().map(PromptDef::name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server named `name`. Sealing is on with a fresh process-local key until
    /// [`request_state_security`](Self::request_state_security) says otherwise.
    pub fn new(name: impl Into<String>) -> Self {
        McpServer {
            name: name.into(),
            version: None,
            title: None,
            instructions: None,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            security: None,
            page_size: DEFAULT_PAGE_SIZE,
            change_notifications: true,
            logging: false,
            request_timeout: None,
            fleet: None,
            limits: None,
            tasks: None,
            skills_dir: None,
            skills_limits: SkillsLimits::default(),
            extensions: Vec::new(),
            apps: Vec::new(),
            policy: crate::policy::Policy::default(),
            state: crate::state::StateMap::default(),
        }
    }

    /// Gives the server a value of application state (a database pool, a store, a client of
    /// another service). Tools, resolvers, prompts and resources take it as a parameter,
    /// `notes: State<Notes>`, and hand-written handlers ask `ctx.state::<Notes>()`. One value
    /// per type; the same type again replaces the value. A definition that takes a type the
    /// server was not given fails [`build`](Self::build).
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// The version in `serverInfo`: the one set, else that of the crate defining the first
    /// annotated tool, prompt or resource, else this SDK's.
    fn reported_version(&self) -> &str {
        let stamped = (self.tools.iter().map(|t| t.crate_version))
            .chain(self.prompts.iter().map(|p| p.crate_version))
            .chain(self.resources.iter().map(|r| r.crate_version))
            .chain(self.templates.iter().map(|t| t.crate_version))
            .flatten()
            .next();
        self.version
            .as_deref()
            .or(stamped)
            .unwrap_or(env!("CARGO_PKG_VERSION"))
    }

    /// Sets the version in `serverInfo`. Without it, the server reports the version of the
    /// crate that defines its first annotated tool, prompt or resource (your crate's
    /// `CARGO_PKG_VERSION`), else this SDK's; a server built by hand says
    /// `.version(env!("CARGO_PKG_VERSION"))`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the display title in `serverInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Registers a tool (a `#[mcp::tool]` function, or a [`ToolDef`]); `tools/list` lists tools
    /// in registration order.
    pub fn tool<M>(mut self, tool: impl IntoToolDef<M>) -> Self {
        self.tools.push(tool.into_tool_def());
        self
    }

    /// Registers a prompt (a `#[mcp::prompt]` function, or a [`PromptDef`]).
    pub fn prompt<M>(mut self, prompt: impl IntoPromptDef<M>) -> Self {
        self.prompts.push(prompt.into_prompt_def());
        self
    }

    /// Registers a resource or resource template (a `#[mcp::resource]` function, a
    /// [`ResourceDef`] or a [`ResourceTemplateDef`]).
    pub fn resource<M>(mut self, resource: impl IntoResourceDef<M>) -> Self {
        match resource.into_resource_def() {
            ResourceEntry::Static(r) => self.resources.push(r),
            ResourceEntry::Template(t) => self.templates.push(t),
        }
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: ResourceTemplateDef) -> Self {
        self.templates.push(template);
        self
    }

    /// Protects `requestState` with these keys (or codec), TTL, audience and principal binding.
    pub fn request_state_security(mut self, security: RequestStateSecurity) -> Self {
        self.security = Some(security);
        self
    }

    /// How many items a `*/list` page holds (default 100).
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Serves change notifications (default on).
    pub fn change_notifications(mut self, enabled: bool) -> Self {
        self.change_notifications = enabled;
        self
    }

    /// Advertises the (deprecated) `logging` capability.
    pub fn logging(mut self, enabled: bool) -> Self {
        self.logging = enabled;
        self
    }

    /// How long a legacy server-to-client request waits for its answer.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// What one session may make the server hold (see [`SessionLimits`](crate::SessionLimits)).
    pub fn session_limits(mut self, limits: crate::SessionLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Makes this server one instance of a fleet with nothing sticky (see
    /// [`Server::fleet`](crate::Server::fleet) and `docs/scale-out.md`).
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Serves the Tasks extension with these settings (store, TTL, limits). A server with a
    /// tool that supports tasks ([`ToolDef::task`], `#[mcp::tool(task = "...")]`) serves it
    /// with [`TaskConfig::new`](crate::tasks::TaskConfig::new) unless this says otherwise.
    pub fn tasks(mut self, config: crate::tasks::TaskConfig) -> Self {
        self.tasks = Some(config);
        self
    }

    /// Serves the skills below `path` through the Skills extension
    /// (`io.modelcontextprotocol/skills`, SEP-2640): every directory holding a `SKILL.md` is a
    /// skill, listed by `skills/list` and `skills/get` with its frontmatter and the digest and
    /// size of each of its files, which `resources/read` serves as `skill://<skill-path>/<file>`
    /// (the `SKILL.md`s are in `resources/list` too); `resources/directory/read` lists a skill's
    /// directories (`directoryRead: true`).
    ///
    /// The directory is read when the server is built, and a mistake fails the build with a
    /// [`BuildError`] naming the file: a `SKILL.md` without `---` frontmatter holding `name` and
    /// `description`, a `name` that differs from its directory's or breaks the naming rules, a
    /// symbolic link that leaves the directory, a directory over [`SkillsLimits`]. Nothing
    /// outside `path` is ever served: only the URIs the catalog published resolve.
    pub fn skills_dir(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.skills_dir = Some(path.into());
        self
    }

    /// What [`skills_dir`](Self::skills_dir) loads at most (see [`SkillsLimits`] for the
    /// defaults).
    pub fn skills_limits(mut self, limits: SkillsLimits) -> Self {
        self.skills_limits = limits;
        self
    }

    /// Registers an MCP App (`io.modelcontextprotocol/ui`): an HTML app served as its `ui://`
    /// resource, for the tools linked to it with [`ToolDef::ui`]. The app, and the links, are
    /// shown only to a client that declared the extension with the app MIME type; the server
    /// advertises the extension to those clients only.
    pub fn app(mut self, app: AppDef) -> Self {
        self.apps.retain(|a| a.uri() != app.uri());
        self.apps.push(app);
        self
    }

    /// Serves `extension` (see [`Extension`](crate::Extension)): its capability, its methods,
    /// its fields on the listed tools. Building checks that every tool and resource it binds
    /// is registered.
    pub fn extension(mut self, extension: crate::Extension) -> Self {
        self.extensions.retain(|e| e.id() != extension.id());
        self.extensions.push(extension);
        self
    }

    /// Checks that every tool and resource an extension binds is registered.
    fn check_extensions(&self) -> Result<(), BuildError> {
        for e in &self.extensions {
            if let Some(tool) = e
                .bound_tools()
                .find(|t| !self.tools.iter().any(|d| d.name() == *t))
            {
                return Err(BuildError(format!(
                    "the extension {} binds the tool '{tool}', which is not registered",
                    e.id()
                )));
            }
            if let Some(uri) = e
                .bound_resources()
                .find(|u| !self.resources.iter().any(|r| r.resource.uri == *u))
            {
                return Err(BuildError(format!(
                    "the extension {} binds the resource '{uri}', which is not registered",
                    e.id()
                )));
            }
        }
        Ok(())
    }

    /// Checks the definitions (resolver graphs, form schemas, names) and builds the low-level
    /// server.
    pub fn build(mut self) -> Result<Server, BuildError> {
        if let Some((resources, extension)) =
            apps::build(std::mem::take(&mut self.apps), &self.tools)?
        {
            self.resources.extend(resources);
            self = self.extension(extension);
        }
        self.check_extensions()?;
        self.check_policy()?;
        needs::check(needs::Defs {
            server: &self.name,
            state: &self.state,
            tools: &self.tools,
            prompts: &self.prompts,
            resources: &self.resources,
            templates: &self.templates,
        })?;
        let skills = match &self.skills_dir {
            Some(dir) => Some(Arc::new(skills::SkillCatalog::load(
                dir,
                &self.skills_limits,
            )?)),
            None => None,
        };
        let registry = Arc::new(Registry::build(&self, skills)?);
        let mut server = Server::new(&self.name)
            .version(self.reported_version())
            .change_notifications(self.change_notifications)
            .logging(self.logging);
        if let Some(title) = &self.title {
            server = server.title(title);
        }
        if let Some(instructions) = &self.instructions {
            server = server.instructions(instructions);
        }
        if let Some(fleet) = self.fleet.take() {
            server = server.fleet(fleet);
        }
        if let Some(timeout) = self.request_timeout {
            server = server.request_timeout(timeout);
        }
        if let Some(limits) = &self.limits {
            server = server.session_limits(limits.clone());
        }
        for tool in &registry.tool_list {
            server = server.tool_input_schema(&tool.name, &tool.input_schema);
        }
        let task_tools: Vec<_> = self
            .tools
            .iter()
            .filter(|t| t.task != crate::tasks::TaskSupport::Forbidden)
            .map(|t| (t.tool.name.clone(), t.task))
            .collect();
        if let Some(config) = self
            .tasks
            .clone()
            .or_else(|| (!task_tools.is_empty()).then(crate::tasks::TaskConfig::new))
        {
            server = server.tasks(config);
        }
        for (name, support) in task_tools {
            server = server.tool_task_support(name, support);
        }
        server.state = std::mem::take(&mut self.state);
        server.policy = self.take_policy();
        // A tool's layers live with the rest of its facts, in the tool table.
        for (tool, layers) in server.policy.take_targets(mcp_types::methods::TOOLS_CALL) {
            server.tools.update(tool, |t| t.layers.extend(layers));
        }
        for extension in self.extensions {
            server = server.with_extension(extension);
        }
        let security = self
            .security
            .unwrap_or_else(RequestStateSecurity::ephemeral);
        server = server
            .request_state_security(security)
            .map_err(|e| BuildError(e.to_string()))?;
        Ok(registry.install(server))
    }

    /// Builds the server and turns it into the service transports drive.
    pub fn into_service(self) -> Result<Service, BuildError> {
        self.build().map(Server::into_service)
    }
}

/// The Skills extension's capability and methods, answered from `catalog`.
fn install_skills(server: Server, catalog: &Arc<skills::SkillCatalog>, page_size: usize) -> Server {
    use mcp_types::ext::skills as wire;
    fn object<T: serde::Serialize>(value: T) -> Result<JsonObject, ErrorObject> {
        match serde_json::to_value(value) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(ErrorObject::internal("a skills result did not serialize")),
        }
    }
    let list = catalog.clone();
    let get = catalog.clone();
    let directory = catalog.clone();
    let extension = crate::Extension::unchecked(wire::EXTENSION_ID.to_owned())
        .settings(skills::capability())
        .cacheable_request(wire::SKILLS_LIST, move |_ctx, params| {
            let result = list.list(&params, page_size).and_then(object);
            async move { result }
        })
        .cacheable_request(wire::SKILLS_GET, move |_ctx, params| {
            let result = get.get(&params).and_then(object);
            async move { result }
        })
        .cacheable_request(wire::RESOURCES_DIRECTORY_READ, move |ctx, params| {
            let result = directory
                .directory(ctx.era(), &params, page_size)
                .and_then(object);
            async move { result }
        });
    server.with_extension(extension)
}

struct BuiltTool {
    def: ToolDef,
    graph: Graph,
}

struct BuiltPrompt {
    def: PromptDef,
    graph: Graph,
}

struct BuiltTemplate {
    def: ResourceTemplateDef,
    uri: UriTemplate,
    graph: Graph,
}

struct Registry {
    page_size: usize,
    tools: Vec<BuiltTool>,
    tool_list: Vec<Tool>,
    prompts: Vec<BuiltPrompt>,
    prompt_list: Vec<Prompt>,
    prompt_index: HashMap<String, usize>,
    resources: HashMap<String, ResourceDef>,
    resource_list: Vec<Resource>,
    templates: Vec<BuiltTemplate>,
    template_list: Vec<ResourceTemplate>,
    skills: Option<Arc<skills::SkillCatalog>>,
}

fn duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

/// What every handler that can ask (a tool, a prompt, a resource template) is checked for
/// when the server is built, on one path: it has a handler, it asks in one way only (through
/// its resolvers, or by returning an `InputRequiredResult` it built itself), and its
/// resolvers form a graph over its `arguments`.
fn check_asker(
    owner: &str,
    has_body: bool,
    hand_built: bool,
    resolvers: &[Resolver],
    params: &[ResolvedParam],
    arguments: &[String],
) -> Result<Graph, BuildError> {
    if !has_body {
        return Err(BuildError(format!("{owner} has no handler")));
    }
    if hand_built && !resolvers.is_empty() {
        return Err(BuildError(format!(
            "{owner} combines resolvers with a hand-built InputRequiredResult return; it asks either through its resolvers or by returning InputRequiredResult itself, not both"
        )));
    }
    check_resolvers(owner, resolvers.to_vec(), params, Some(arguments)).map_err(BuildError)
}

fn build_tool(def: &ToolDef) -> Result<BuiltTool, BuildError> {
    let mut def = def.clone();
    // Resolved parameters never appear in the input schema.
    if let Some(Value::Object(properties)) = def.tool.input_schema.get_mut("properties") {
        for p in &def.params {
            properties.remove(&p.param);
        }
    }
    let arguments: Vec<String> = def
        .tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let owner = format!("tool '{}'", def.tool.name);
    // Conforming HTTP clients leave out a tool whose header annotations are invalid.
    mcp_types::param_header::ParamHeader::read_all(&def.tool.input_schema)
        .map_err(|why| BuildError(format!("{owner}: {why}")))?;
    let graph = check_asker(
        &owner,
        def.body.is_some(),
        def.hand_built,
        &def.resolvers,
        &def.params,
        &arguments,
    )?;
    Ok(BuiltTool { def, graph })
}

fn build_prompt(def: &PromptDef) -> Result<BuiltPrompt, BuildError> {
    let arguments: Vec<String> = def
        .prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.clone())
        .collect();
    let owner = format!("prompt '{}'", def.prompt.name);
    let graph = check_asker(
        &owner,
        def.body.is_some(),
        def.hand_built,
        &def.resolvers,
        &def.params,
        &arguments,
    )?;
    Ok(BuiltPrompt {
        def: def.clone(),
        graph,
    })
}

fn build_template(def: &ResourceTemplateDef) -> Result<BuiltTemplate, BuildError> {
    let owner = format!("resource template '{}'", def.template.uri_template);
    // A template without a handler is refused before its URI is read.
    if def.body.is_none() {
        return Err(BuildError(format!("{owner} has no handler")));
    }
    let uri = UriTemplate::parse(&def.template.uri_template).map_err(BuildError)?;
    let graph = check_asker(
        &owner,
        true,
        def.hand_built,
        &def.resolvers,
        &def.params,
        &uri.variables(),
    )?;
    Ok(BuiltTemplate {
        def: def.clone(),
        uri,
        graph,
    })
}

impl Registry {
    fn build(
        server: &McpServer,
        skills: Option<Arc<skills::SkillCatalog>>,
    ) -> Result<Self, BuildError> {
        let err = |m: String| BuildError(m);
        if let Some(name) = duplicate(server.tools.iter().map(ToolDef::name)) {
            return Err(err(format!("two tools are named '{name}'")));
        }
        if let Some(name) = duplicate(server.prompts.iter().map(PromptDef::name)) {
            return Err(err(format!("two prompts are named '{name}'")));
        }
        let tools = server
            .tools
            .iter()
            .map(build_tool)
            .collect::<Result<Vec<_>, _>>()?;
        let prompts = server
            .prompts
            .iter()
            .map(build_prompt)
            .collect::<Result<Vec<_>, _>>()?;
        let mut resources = HashMap::new();
        for def in &server.resources {
            if def.body.is_none() {
                return Err(err(format!(
                    "resource '{}' has no handler",
                    def.resource.uri
                )));
            }
            if resources
                .insert(def.resource.uri.clone(), def.clone())
                .is_some()
            {
                return Err(err(format!(
                    "two resources have the URI '{}'",
                    def.resource.uri
                )));
            }
        }
        if let Some(catalog) = &skills
            && let Some(uri) = resources.keys().find(|uri| catalog.serves(uri))
        {
            return Err(err(format!(
                "the resource '{uri}' is also a file of the skills directory"
            )));
        }
        let templates = server
            .templates
            .iter()
            .map(build_template)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Registry {
            page_size: server.page_size,
            tool_list: tools.iter().map(|t| t.def.tool.clone()).collect(),
            tools,
            prompt_list: prompts.iter().map(|p| p.def.prompt.clone()).collect(),
            prompt_index: prompts
                .iter()
                .enumerate()
                .map(|(i, p)| (p.def.prompt.name.clone(), i))
                .collect(),
            prompts,
            resource_list: server
                .resources
                .iter()
                .map(|r| r.resource.clone())
                .chain(skills.iter().flat_map(|s| s.listed().iter().cloned()))
                .collect(),
            skills,
            resources,
            template_list: templates.iter().map(|t| t.def.template.clone()).collect(),
            templates,
        })
    }

    fn has_completions(&self) -> bool {
        self.prompts.iter().any(|p| !p.def.completers.is_empty())
            || self.templates.iter().any(|t| !t.def.completers.is_empty())
    }

    fn install(self: Arc<Self>, mut server: Server) -> Server {
        server.known_prompts = self.prompt_index.keys().cloned().collect();
        if !self.tools.is_empty() {
            let reg = self.clone();
            server = server.on_list_tools(move |_ctx, p: PaginatedRequestParams| {
                let reg = reg.clone();
                async move {
                    let (tools, next_cursor) = reg.page(&reg.tool_list, p.cursor.as_deref())?;
                    Ok(ListToolsResult {
                        tools,
                        next_cursor,
                        ..Default::default()
                    })
                }
            });
            server = self.install_tools(server);
        }
        if !self.prompts.is_empty() {
            let reg = self.clone();
            server = server.on_list_prompts(move |_ctx, p: PaginatedRequestParams| {
                let reg = reg.clone();
                async move {
                    let (prompts, next_cursor) = reg.page(&reg.prompt_list, p.cursor.as_deref())?;
                    Ok(ListPromptsResult {
                        prompts,
                        next_cursor,
                        ..Default::default()
                    })
                }
            });
            let reg = self.clone();
            server = server.on_get_prompt(move |ctx, p| {
                let reg = reg.clone();
                async move { reg.get_prompt(ctx, p).await }
            });
        }
        if let Some(catalog) = &self.skills {
            server = install_skills(server, catalog, self.page_size);
        }
        if !self.resources.is_empty() || !self.templates.is_empty() || self.skills.is_some() {
            let reg = self.clone();
            server = server.on_list_resources(move |_ctx, p: PaginatedRequestParams| {
                let reg = reg.clone();
                async move {
                    let (resources, next_cursor) =
                        reg.page(&reg.resource_list, p.cursor.as_deref())?;
                    Ok(ListResourcesResult {
                        resources,
                        next_cursor,
                        ..Default::default()
                    })
                }
            });
            let reg = self.clone();
            server = server.on_list_resource_templates(move |_ctx, p: PaginatedRequestParams| {
                let reg = reg.clone();
                async move {
                    let (resource_templates, next_cursor) =
                        reg.page(&reg.template_list, p.cursor.as_deref())?;
                    Ok(ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                        ..Default::default()
                    })
                }
            });
            let reg = self.clone();
            server = server.on_read_resource(move |ctx, p| {
                let reg = reg.clone();
                async move { reg.read_resource(ctx, p).await }
            });
        }
        if self.has_completions() {
            let reg = self.clone();
            server = server.on_complete(move |_ctx, p| {
                let reg = reg.clone();
                async move { reg.complete(p) }
            });
        }
        server
    }

    /// Gives each tool's entry in the server's tool table its handler and its way to run a
    /// lost task again; a call then reaches its tool without looking its name up.
    fn install_tools(self: &Arc<Self>, mut server: Server) -> Server {
        for (index, tool) in self.tools.iter().enumerate() {
            let (reg, again) = (self.clone(), self.clone());
            let handler: crate::tools::ToolHandler =
                Arc::new(move |ctx, params| reg.clone().call_tool(index, ctx, params));
            let rerun: crate::tools::ToolRerun =
                Arc::new(move |ctx, arguments| again.clone().rerun(index, ctx, arguments));
            let never_asks = !tool.def.hand_built && tool.graph.order.is_empty();
            server.tools.update(tool.def.tool.name.clone(), |facts| {
                facts.registered = true;
                facts.never_asks = never_asks;
                facts.handler = Some(handler);
                facts.rerun = Some(rerun);
            });
        }
        server
    }

    async fn get_prompt(
        &self,
        ctx: Context,
        params: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, ErrorObject> {
        let Some(prompt) = self
            .prompt_index
            .get(&params.name)
            .map(|i| &self.prompts[*i])
        else {
            return Err(ErrorObject::invalid_params(format!(
                "Unknown prompt: {}",
                params.name
            )));
        };
        let arguments = params.arguments.unwrap_or_default();
        for arg in prompt.def.prompt.arguments.iter().flatten() {
            if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
                return Err(ErrorObject::invalid_params(format!(
                    "Missing required argument '{}' for prompt '{}'",
                    arg.name, params.name
                )));
            }
        }
        let json: JsonObject = arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let Some(body) = &prompt.def.body else {
            return Err(ErrorObject::internal(format!(
                "prompt '{}' has no handler",
                params.name
            )));
        };
        match prepare(&prompt.graph, &prompt.def.params, &ctx, Arc::new(json)).await? {
            Step::Ask(round) => Ok(Outcome::InputRequired(round)),
            Step::Fail(message) => Err(ErrorObject::invalid_params(format!(
                "Error rendering prompt {}: {message}",
                params.name
            ))),
            Step::Body(resolved) => body(ctx, arguments, resolved).await,
        }
    }

    async fn read_resource(
        &self,
        ctx: Context,
        params: ReadResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, ErrorObject> {
        let uri = params.uri;
        if let Some(result) = self.skills.as_ref().and_then(|s| s.read(&uri)) {
            return Ok(Outcome::Complete(result));
        }
        if let Some(body) = self.resources.get(&uri).and_then(|r| r.body.as_ref()) {
            return body(ctx, uri, BTreeMap::new(), ResolvedValues::default()).await;
        }
        let era = ctx.era();
        let Some((template, vars)) = self
            .templates
            .iter()
            .find_map(|t| t.uri.matches(&uri).map(|v| (t, v)))
        else {
            return Err(resource_not_found(era, &uri));
        };
        let Some(body) = &template.def.body else {
            return Err(resource_not_found(era, &uri));
        };
        if template.def.vars_ok.is_some_and(|ok| !ok(&vars)) {
            return Err(resource_not_found(era, &uri));
        }
        let json: JsonObject = vars
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        match prepare(&template.graph, &template.def.params, &ctx, Arc::new(json)).await? {
            Step::Ask(round) => Ok(Outcome::InputRequired(round)),
            Step::Fail(message) => Err(ErrorObject::invalid_params(format!(
                "Error reading resource {uri}: {message}"
            ))),
            Step::Body(resolved) => body(ctx, uri, vars, resolved).await,
        }
    }

    fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, ErrorObject> {
        let completer = match &params.reference {
            CompletionReference::Prompt { name, .. } => self
                .prompt_index
                .get(name)
                .and_then(|i| self.prompts[*i].def.completers.get(&params.argument.name)),
            CompletionReference::Resource { uri, .. } => self
                .templates
                .iter()
                .find(|t| &t.def.template.uri_template == uri)
                .and_then(|t| t.def.completers.get(&params.argument.name)),
        };
        let mut values = completer
            .map(|c| c(&params.argument.value))
            .unwrap_or_default();
        let total = values.len();
        values.truncate(100);
        Ok(CompleteResult {
            completion: Completion {
                has_more: Some(total > values.len()),
                total: Some(total as u64),
                values,
                extra: JsonObject::new(),
            },
            ..Default::default()
        })
    }
}
