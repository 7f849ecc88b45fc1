//! What the gateway's handlers share: the mounts, what each listed last, and the catalog
//! snapshot built from that. A mount that stops answering loses its tools from the catalog
//! (and `notifications/tools/list_changed` goes out); one that answers again gets them back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use mcp_server_core::ChangeNotifier;
use mcp_types::ErrorObject;
use mcp_types::tools::{ListToolsResult, Tool};

use crate::catalog::{Catalog, fetch, merge};
use crate::failure::UpstreamFailure;
use crate::upstream::Mounted;

/// The gateway's state, behind its two handlers.
pub(crate) struct Shared {
    /// The mounts, in mount order.
    pub mounts: Vec<Arc<Mounted>>,
    /// What each mount listed last (`None`: it did not answer). Held while the catalog changes.
    listed: std::sync::Mutex<Vec<Option<Vec<Tool>>>>,
    catalog: RwLock<Arc<Catalog>>,
    /// The gateway service's notifier, once it exists.
    pub notifier: OnceLock<ChangeNotifier>,
    /// How many tools a `tools/list` page holds.
    pub page_size: usize,
    /// A background refresh started by a list runs (one at a time, however many lists come).
    refreshing: AtomicBool,
}

impl Shared {
    /// The state for `mounts`, which listed `listed`, as merged into `catalog`.
    pub(crate) fn new(
        mounts: Vec<Arc<Mounted>>,
        listed: Vec<Option<Vec<Tool>>>,
        catalog: Catalog,
        page_size: usize,
    ) -> Shared {
        Shared {
            mounts,
            listed: std::sync::Mutex::new(listed),
            catalog: RwLock::new(Arc::new(catalog)),
            notifier: OnceLock::new(),
            page_size,
            refreshing: AtomicBool::new(false),
        }
    }

    /// The current snapshot.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        match self.catalog.read() {
            Ok(catalog) => catalog.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// A page of the gateway's `tools/list`. The first page of a list also starts, in the
    /// background, asking the missing mounts whose wait is over for their tools again.
    pub(crate) fn list(
        self: &Arc<Self>,
        cursor: Option<&str>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let catalog = self.catalog();
        if cursor.is_none() && !catalog.missing.is_empty() {
            let names: Vec<&str> = catalog
                .missing
                .iter()
                .map(|&i| self.mounts[i].ns.label())
                .collect();
            tracing::warn!(missing = %names.join(", "), "tools/list answers without the tools of upstreams that did not answer");
            let due: Vec<usize> = catalog
                .missing
                .iter()
                .copied()
                .filter(|&i| self.mounts[i].may_try())
                .collect();
            if !due.is_empty() && !self.refreshing.swap(true, Ordering::SeqCst) {
                let shared = self.clone();
                tokio::spawn(async move {
                    drop(shared.refresh(&due).await);
                    shared.refreshing.store(false, Ordering::SeqCst);
                });
            }
        }
        catalog.page(cursor, self.page_size)
    }

    /// Asks mounts `which` for their tools again, at once, and takes what they answer;
    /// returns why those that did not answer failed. No lock is held while they are asked:
    /// a slow upstream delays no other change to the catalog.
    pub(crate) async fn refresh(&self, which: &[usize]) -> Vec<(usize, UpstreamFailure)> {
        // Another refresh may have brought some back already.
        let due: Vec<usize> = {
            let listed = self.listed();
            which
                .iter()
                .copied()
                .filter(|&i| listed[i].is_none())
                .collect()
        };
        let mut fetches = tokio::task::JoinSet::new();
        for i in due {
            let mount = self.mounts[i].clone();
            fetches.spawn(async move { (i, fetch(&mount).await) });
        }
        let mut answers = Vec::new();
        let mut failures = Vec::new();
        while let Some(done) = fetches.join_next().await {
            let Ok((i, result)) = done else {
                continue;
            };
            match result {
                Ok(tools) => answers.push((i, tools)),
                Err(failure) => {
                    tracing::warn!(upstream = self.mounts[i].ns.label(), why = %describe(&failure), "an upstream did not list its tools");
                    failures.push((i, failure));
                }
            }
        }
        let mut listed = self.listed();
        let mut changed = false;
        for (i, tools) in answers {
            let now = Some(tools);
            changed |= listed[i] != now;
            listed[i] = now;
        }
        if changed {
            self.rebuild(&listed);
        }
        failures
    }

    /// Takes mount `i`'s tools out of the catalog after its connection was lost.
    pub(crate) fn lost(&self, i: usize) {
        let mut listed = self.listed();
        if listed[i].take().is_some() {
            self.rebuild(&listed);
        }
    }

    /// What each mount listed last, locked (briefly: nothing waits while it is held).
    fn listed(&self) -> std::sync::MutexGuard<'_, Vec<Option<Vec<Tool>>>> {
        self.listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new snapshot from `listed` (the first mount keeps a name two expose), announced to
    /// the gateway's listeners.
    fn rebuild(&self, listed: &[Option<Vec<Tool>>]) {
        let generation = self.catalog().generation + 1;
        let Ok(catalog) = merge(&self.mounts, listed, generation, false) else {
            return;
        };
        match self.catalog.write() {
            Ok(mut slot) => *slot = Arc::new(catalog),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(catalog),
        }
        if let Some(notifier) = self.notifier.get() {
            notifier.tools_list_changed();
        }
    }
}

/// A failure in words, for the log.
pub(crate) fn describe(failure: &UpstreamFailure) -> String {
    match failure {
        UpstreamFailure::Client(e) => e.to_string(),
        UpstreamFailure::Unavailable(why) => format!("unavailable: {why}"),
        UpstreamFailure::Deadline(after) => format!("no answer within {} ms", after.as_millis()),
        UpstreamFailure::NotPassedThrough(what) => what.clone(),
    }
}
