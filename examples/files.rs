//! Files: `delete_folder` asks for confirmation through a resolver, only when the folder is
//! not empty (`/tmp/empty` is, `/tmp/project` holds two files).
//!
//! ```sh
//! cargo run --example files                          # stdio
//! cargo run --example files -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```

use mcp_examples::{cli, files};

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    cli::run(files::server()).await
}
