//! Paging of `*/list` results: a cursor is the index of the page's first item.

use mcp_types::ErrorObject;

use super::Registry;

impl Registry {
    /// The page of `items` starting at `cursor` (the first without one), and the cursor of
    /// the next page if there is one.
    pub(super) fn page<T: Clone>(
        &self,
        items: &[T],
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|start| *start <= items.len())
                .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {c:?}")))?,
        };
        let end = start.saturating_add(self.page_size).min(items.len());
        let next = (end < items.len()).then(|| end.to_string());
        Ok((items[start..end].to_vec(), next))
    }
}
