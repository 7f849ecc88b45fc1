//! Extensions of the 2026-07-28 revision, each in its own module, named by its identifier.
//!
//! - [`apps`]: `io.modelcontextprotocol/ui` (SEP-1865, MCP Apps), tools linked to an HTML app
//!   served as a `ui://` resource, which the host renders in a sandboxed frame.
//! - [`skills`]: `io.modelcontextprotocol/skills` (SEP-2640), skills (a `SKILL.md` and its
//!   files) listed with `skills/list`, fetched with `skills/get`, read as resources.
//! - [`tasks`]: `io.modelcontextprotocol/tasks` (SEP-2663), long-running `tools/call`s the
//!   client polls with `tasks/get`, answers with `tasks/update` and stops with `tasks/cancel`.

pub mod apps;
pub mod skills;
pub mod tasks;
