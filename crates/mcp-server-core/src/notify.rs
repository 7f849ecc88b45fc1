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
    /// The fleet every change raised here is also published to.
    fleet: Option<crate::fleet::Fleet>,
}

impl Default for ChangeNotifier {
    fn default() -> Self {
        ChangeNotifier {
            tx: broadcast::channel(CHANGE_BUFFER).0,
            fleet: None,
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
        if let Some(fleet) = &self.fleet {
            publish(fleet, &event);
        }
        self.raise_here(event);
    }

    /// Raises `event` for this process's subscribers only (one another instance published).
    pub(crate) fn raise_here(&self, event: ChangeEvent) {
        // No subscriber is not an error: nobody is listening.
        let _ = self.tx.send(event);
    }

    /// A notifier whose changes also reach every instance of `fleet`.
    pub(crate) fn for_fleet(fleet: Option<crate::fleet::Fleet>) -> Self {
        ChangeNotifier {
            fleet,
            ..Self::default()
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ChangeEvent> {
        self.tx.subscribe()
    }
}

/// Publishes a change raised here to the fleet, in the background (raising one is not async).
/// A change the bus cannot take is logged: this instance's subscribers still get it.
fn publish(fleet: &crate::fleet::Fleet, event: &ChangeEvent) {
    let Some(change) = crate::fleet::WireChange::of(event) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("a change raised outside a Tokio runtime reaches this instance only");
        return;
    };
    let message = crate::fleet::ChangeMessage {
        from: fleet.member().to_owned(),
        event: change,
    };
    let Ok(payload) = serde_json::to_vec(&message) else {
        return;
    };
    let bus = fleet.bus().clone();
    runtime.spawn(async move {
        if let Err(e) = bus.publish(crate::fleet::CHANGES, &payload).await {
            tracing::warn!(error = %e, "a change notification did not reach the other instances");
        }
    });
}
