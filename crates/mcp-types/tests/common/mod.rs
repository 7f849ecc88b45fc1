//! Helpers shared by the integration tests: where `../shared` is.

use std::path::PathBuf;

/// The `shared/` folder beside the repository (override with `MCP_SHARED_DIR`).
pub(crate) fn shared_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("MCP_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = here.join("../../../shared");
    assert!(
        dir.is_dir(),
        "the shared/ folder is expected beside the repository at {}",
        dir.display()
    );
    dir
}
