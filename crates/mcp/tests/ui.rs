//! Compile-time behaviour of the macros: every supported form compiles (`ui/pass`), and every
//! mistake is a readable error at the offending span (`ui/fail`, with `.stderr` snapshots).
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p keel-mcp --test ui` and review.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
