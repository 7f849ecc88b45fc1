//! Helpers shared by the integration tests: where the repository's fixtures are.

use std::path::PathBuf;

/// The repository's `fixtures/` folder (recorded captures and official schemas; see its
/// README for where each file came from).
pub(crate) fn fixtures_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    assert!(
        dir.is_dir(),
        "the fixtures folder is expected at {}",
        dir.display()
    );
    dir
}
