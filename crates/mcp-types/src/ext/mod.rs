//! Extensions of the 2026-07-28 revision, each in its own module, named by its identifier.
//!
//! - [`tasks`]: `io.modelcontextprotocol/tasks` (SEP-2663), long-running `tools/call`s the
//!   client polls with `tasks/get`, answers with `tasks/update` and stops with `tasks/cancel`.

pub mod tasks;
