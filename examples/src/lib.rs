//! The runnable examples' shared pieces: the command line every example server accepts
//! (`--stdio`, the default, or `--http ADDR`), and the seed documents' servers, which the
//! example programs, the README demo and the interop tests all reuse.

pub mod bistro;
pub mod bistro_app;
pub mod briefing;
pub mod builds;
pub mod cli;
pub mod deployer;
pub mod files;
pub mod fleet;
pub mod otlp;
pub mod protected;
pub mod provisioner;
pub mod shop;
