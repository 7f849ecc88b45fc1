//! Change notifications: list changes and resource updates, fanned out to every open
//! `subscriptions/listen` stream (2026-07-28) and every legacy session.

use tokio::sync::broadcast;

/// How many change events a slow subscriber may lag behind before it skips some.
const CHANGE_BUFFER: usize = 64;

/// A change a server announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeEvent {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// The resource at this URI changed.
    ResourceUpdated(String),
    /// The server is shutting down: listen streams end with their result.
    Shutdown,
}

/// A cheap, clonable handle to announce changes.
#[derive(Debug, Clone)]
pub struct ChangeNotifier {
    tx: broadcast::Sender<ChangeEvent>,
}

impl Default for ChangeNotifier {
    fn default() -> Self {
        ChangeNotifier {
            tx: broadcast::channel(CHANGE_BUFFER).0,
        }
    }
}

impl ChangeNotifier {
    /// Announces that the tool list changed.
    pub fn tools_list_changed(&self) {
        self.send(ChangeEvent::ToolsListChanged);
    }

    /// Announces that the prompt list changed.
    pub fn prompts_list_changed(&self) {
        self.send(ChangeEvent::PromptsListChanged);
    }

    /// Announces that the resource list changed.
    pub fn resources_list_changed(&self) {
        self.send(ChangeEvent::ResourcesListChanged);
    }

    /// Announces that the resource at `uri` changed.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.send(ChangeEvent::ResourceUpdated(uri.into()));
    }

    pub(crate) fn send(&self, event: ChangeEvent) {
        // No subscriber is not an error: nobody is listening.
        let _ = self.tx.send(event);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ChangeEvent> {
        self.tx.subscribe()
    }
}
