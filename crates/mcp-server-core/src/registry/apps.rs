//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) on the high-level server: an [`AppDef`]
//! is an HTML app served as a `ui://` resource, and [`ToolDef::ui`](super::ToolDef::ui) links a
//! tool to it. Both become one [`Extension`] when the server is built, so a client that did not
//! declare the extension (with the app MIME type among its `mimeTypes`) sees neither the app
//! nor the links: exactly what the same server without apps answers.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(test)]
use mcp_types::JsonObject;
use mcp_types::content::ResourceContents;
use mcp_types::ext::apps::{
    self as wire, UiCsp, UiPermissions, UiResourceMeta, UiToolMeta, Visibility,
};
use mcp_types::meta::Meta;
use serde_json::Value;

use super::error::BuildError;
use super::resource::ResourceDef;
use super::tool::ToolDef;
use crate::Extension;

/// Where an app's HTML comes from.
#[derive(Clone)]
enum Html {
    Text(Arc<str>),
    File(PathBuf),
    With(Arc<dyn Fn() -> String + Send + Sync>),
}

/// An HTML app for [`McpServer::app`](super::McpServer::app): a `ui://` resource with the MIME
/// type `text/html;profile=mcp-app`, its CSP origins and the permissions it asks for.
///
/// ```
/// use mcp_server_core::registry::{AppDef, McpServer, ToolDef};
///
/// let app = AppDef::new("ui://bistro/booking", "Booking")
///     .html("<!doctype html><html><body>Book a table</body></html>")
///     .connect_domain("https://api.bistro.example");
/// let book = ToolDef::new("book_table")
///     .ui("ui://bistro/booking")
///     .handler(|_ctx, _args: serde_json::Map<String, serde_json::Value>| async { "booked".to_owned() });
/// let server = McpServer::new("bistro").app(app).tool(book).build()?;
/// # Ok::<(), mcp_server_core::registry::BuildError>(())
/// ```
#[derive(Clone)]
pub struct AppDef {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    html: Option<Html>,
    meta: UiResourceMeta,
}

impl fmt::Debug for AppDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppDef")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

fn push(list: &mut Option<Vec<String>>, origin: impl Into<String>) {
    list.get_or_insert_with(Vec::new).push(origin.into());
}

impl AppDef {
    /// An app at `uri` (which must start with `ui://`) named `name`, with no HTML yet.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        AppDef {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            html: None,
            meta: UiResourceMeta::default(),
        }
    }

    /// The app's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The HTML, as a string.
    pub fn html(mut self, html: impl Into<String>) -> Self {
        self.html = Some(Html::Text(Arc::from(html.into())));
        self
    }

    /// The HTML, read from `path` on every `resources/read` (an edit shows at the next read).
    /// Building checks that the file can be read.
    pub fn html_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.html = Some(Html::File(path.into()));
        self
    }

    /// The HTML, made by `render` on every `resources/read`.
    pub fn html_with(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.html = Some(Html::With(Arc::new(render)));
        self
    }

    /// Lets the app reach `origin` with `fetch`, XHR or WebSocket (`csp.connectDomains`).
    pub fn connect_domain(mut self, origin: impl Into<String>) -> Self {
        push(&mut self.csp().connect_domains, origin);
        self
    }

    /// Lets the app load scripts, styles, images, fonts and media from `origin`
    /// (`csp.resourceDomains`).
    pub fn resource_domain(mut self, origin: impl Into<String>) -> Self {
        push(&mut self.csp().resource_domains, origin);
        self
    }

    /// Lets the app embed frames from `origin` (`csp.frameDomains`).
    pub fn frame_domain(mut self, origin: impl Into<String>) -> Self {
        push(&mut self.csp().frame_domains, origin);
        self
    }

    /// Lets the document's base URI be `origin` (`csp.baseUriDomains`).
    pub fn base_uri_domain(mut self, origin: impl Into<String>) -> Self {
        push(&mut self.csp().base_uri_domains, origin);
        self
    }

    fn csp(&mut self) -> &mut UiCsp {
        self.meta.csp.get_or_insert_with(UiCsp::default)
    }

    /// The browser permissions the app asks for (a host may grant them).
    pub fn permissions(mut self, permissions: UiPermissions) -> Self {
        self.meta.permissions = Some(permissions);
        self
    }

    /// Asks the host for a border and background around the app, or for none.
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.meta.prefers_border = Some(border);
        self
    }

    /// A dedicated sandbox origin (its format is the host's).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.meta.domain = Some(domain.into());
        self
    }

    /// The `_meta` the app's listing and contents carry: `{"ui": …}` when anything is set.
    fn wire_meta(&self) -> Option<Meta> {
        if self.meta.is_empty() {
            return None;
        }
        let mut meta = Meta::default();
        meta.extra.insert(
            wire::META_KEY.to_owned(),
            serde_json::to_value(&self.meta).unwrap_or_default(),
        );
        Some(meta)
    }

    /// The resource serving the app, checked: a `ui://` URI and HTML that can be had.
    fn into_resource(self) -> Result<ResourceDef, BuildError> {
        if !self.uri.starts_with(wire::SCHEME) {
            return Err(BuildError(format!(
                "the app '{}' must have a ui:// URI",
                self.uri
            )));
        }
        let Some(html) = self.html.clone() else {
            return Err(BuildError(format!(
                "the app '{}' has no HTML: give it with html, html_file or html_with",
                self.uri
            )));
        };
        if let Html::File(path) = &html
            && let Err(e) = std::fs::metadata(path)
        {
            return Err(BuildError(format!(
                "the app '{}': {}: {e}",
                self.uri,
                path.display()
            )));
        }
        let meta = self.wire_meta();
        let mut def = ResourceDef::new(&self.uri, &self.name).mime_type(wire::MIME_TYPE);
        if let Some(title) = &self.title {
            def = def.title(title);
        }
        if let Some(description) = &self.description {
            def = def.description(description);
        }
        def.resource.meta = meta.clone();
        let uri = self.uri;
        Ok(def.handler(move |_ctx| {
            let (html, uri, meta) = (html.clone(), uri.clone(), meta.clone());
            async move {
                let text = match html {
                    Html::Text(text) => text.to_string(),
                    Html::With(render) => render(),
                    Html::File(path) => read_file(path, &uri).await?,
                };
                let mut contents =
                    ResourceContents::text(&uri, text).with_mime_type(wire::MIME_TYPE);
                contents.meta = meta;
                Ok::<_, String>(vec![contents])
            }
        }))
    }
}

/// Reads an app's file off the async threads; a failure is logged with the path, which the
/// client is not told.
async fn read_file(path: PathBuf, uri: &str) -> Result<String, String> {
    let read =
        tokio::task::spawn_blocking(move || std::fs::read_to_string(&path).map_err(|e| (path, e)))
            .await;
    match read {
        Ok(Ok(text)) => Ok(text),
        Ok(Err((path, e))) => {
            tracing::warn!(%uri, path = %path.display(), error = %e, "an app's HTML could not be read");
            Err(format!("the app {uri} could not be read"))
        }
        Err(_) => Err(format!("the app {uri} could not be read")),
    }
}

/// The apps' resources and the one extension that binds them and the linked tools, or `None`
/// when the server has no app and no linked tool.
pub(super) fn build(
    apps: Vec<AppDef>,
    tools: &[ToolDef],
) -> Result<Option<(Vec<ResourceDef>, Extension)>, BuildError> {
    let linked: Vec<(&str, &UiToolMeta)> = tools
        .iter()
        .filter_map(|t| t.ui.as_ref().map(|ui| (t.name(), ui)))
        .collect();
    if apps.is_empty() && linked.is_empty() {
        return Ok(None);
    }
    let mut extension = Extension::unchecked(wire::EXTENSION_ID.to_owned())
        .accepts(wire::renders_html)
        .advertise_to_declaring_clients_only();
    for app in &apps {
        extension = extension.resource_for_declaring_clients_only(app.uri());
    }
    for (tool, ui) in linked {
        let uri = ui.resource_uri.as_deref().unwrap_or_default();
        if !apps.iter().any(|a| a.uri == uri) {
            return Err(BuildError(format!(
                "the tool '{tool}' is linked to the app '{uri}', which is not registered (McpServer::app)"
            )));
        }
        extension = extension
            .tool_meta(
                tool,
                wire::META_KEY,
                serde_json::to_value(ui).unwrap_or_default(),
            )
            // Hosts written before `_meta.ui` find the app under the flat key.
            .tool_meta(tool, wire::LEGACY_RESOURCE_URI_KEY, Value::from(uri));
        if !ui.model_visible() {
            extension = extension.tool_for_declaring_clients_only(tool);
        }
    }
    let resources = apps
        .into_iter()
        .map(AppDef::into_resource)
        .collect::<Result<_, _>>()?;
    Ok(Some((resources, extension)))
}

impl ToolDef {
    /// Links the tool to the app at `uri` (`_meta.ui.resourceUri`), shown only to a client
    /// that declared MCP Apps; the app must be registered with
    /// [`McpServer::app`](super::McpServer::app). The tool still answers its full result,
    /// for hosts that render no app.
    pub fn ui(mut self, uri: impl Into<String>) -> Self {
        self.ui.get_or_insert_with(UiToolMeta::default).resource_uri = Some(uri.into());
        self
    }

    /// Who may call a linked tool (`_meta.ui.visibility`; default `["model", "app"]`). A tool
    /// only its app calls (`&[Visibility::App]`) is not listed to a client that did not
    /// declare MCP Apps.
    pub fn ui_visibility(mut self, visibility: &[Visibility]) -> Self {
        self.ui.get_or_insert_with(UiToolMeta::default).visibility = Some(visibility.to_vec());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linked(uri: &str) -> ToolDef {
        ToolDef::new("book")
            .ui(uri)
            .handler(|_ctx, _a: JsonObject| async { "ok".to_owned() })
    }

    #[test]
    fn build_refuses_links_to_missing_apps_and_apps_without_html_or_scheme() {
        let err = build(vec![], &[linked("ui://x/y")]).err().unwrap();
        assert_eq!(
            err.to_string(),
            "the tool 'book' is linked to the app 'ui://x/y', which is not registered (McpServer::app)"
        );
        let err = build(vec![AppDef::new("ui://x/y", "y")], &[])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "the app 'ui://x/y' has no HTML: give it with html, html_file or html_with"
        );
        let err = build(vec![AppDef::new("https://x/y", "y").html("<p>")], &[])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "the app 'https://x/y' must have a ui:// URI"
        );
        let err = build(
            vec![AppDef::new("ui://x/y", "y").html_file("/nonexistent/app.html")],
            &[],
        )
        .err()
        .unwrap();
        assert!(
            err.to_string()
                .starts_with("the app 'ui://x/y': /nonexistent/app.html: "),
            "{err}"
        );
        assert!(build(vec![], &[]).unwrap().is_none());
    }
}
