//! Change notifications: list changes and resource updates, fanned out to every open
//! `subscriptions/listen` stream (2026-07-28) and every legacy session.

use serde::{Deserialize, Serialize};
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
    let Some(change) = WireChange::of(event) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("a change raised outside a Tokio runtime reaches this instance only");
        return;
    };
    let message = ChangeMessage {
        from: fleet.member().to_owned(),
        event: change,
    };
    let Ok(plain) = serde_json::to_vec(&message) else {
        return;
    };
    let item = crate::fleet::FleetItem::BusMessage(crate::fleet::CHANGES);
    let payload = match fleet.seal(item, &plain) {
        Ok(payload) => payload,
        Err(e) => {
            tracing::warn!(error = %e, "a change notification was not sent to the other instances");
            return;
        }
    };
    let bus = fleet.bus().clone();
    runtime.spawn(async move {
        if let Err(e) = bus.publish(crate::fleet::CHANGES, &payload).await {
            tracing::warn!(error = %e, "a change notification did not reach the other instances");
        }
    });
}

/// A change notification on the [`CHANGES`] channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChangeMessage {
    pub(crate) from: String,
    #[serde(flatten)]
    pub(crate) event: WireChange,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "camelCase")]
pub(crate) enum WireChange {
    Tools,
    Prompts,
    Resources,
    Resource { uri: String },
}

impl WireChange {
    pub(crate) fn of(event: &ChangeEvent) -> Option<Self> {
        match event {
            ChangeEvent::ToolsListChanged => Some(WireChange::Tools),
            ChangeEvent::PromptsListChanged => Some(WireChange::Prompts),
            ChangeEvent::ResourcesListChanged => Some(WireChange::Resources),
            ChangeEvent::ResourceUpdated(uri) => Some(WireChange::Resource { uri: uri.clone() }),
            // Each instance drains on its own.
            ChangeEvent::Shutdown => None,
        }
    }

    pub(crate) fn event(self) -> ChangeEvent {
        match self {
            WireChange::Tools => ChangeEvent::ToolsListChanged,
            WireChange::Prompts => ChangeEvent::PromptsListChanged,
            WireChange::Resources => ChangeEvent::ResourcesListChanged,
            WireChange::Resource { uri } => ChangeEvent::ResourceUpdated(uri),
        }
    }
}
