//! The guides in this folder, the repository README and every crate's README, compiled and run
//! (unless a block is marked `no_run`) as doc tests: `cargo test -p mcp-guides --doc`. The
//! published crates stay self-contained; this crate holds the documents that span them.

macro_rules! guides {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(
            #[cfg(doctest)]
            #[doc = include_str!($file)]
            struct $name;
        )*
    };
}

guides! {
    FirstServer => "first-server.md",
    MultiRoundTrip => "multi-round-trip.md",
    Elicitation => "elicitation.md",
    Dependencies => "dependencies.md",
    RequestState => "request-state.md",
    Handles => "handles.md",
    Policy => "policy.md",
    ClientGuide => "client.md",
    Tasks => "tasks.md",
    Skills => "skills.md",
    Extensions => "extensions.md",
    Apps => "apps.md",
    Transports => "transports.md",
    Authorization => "authorization.md",
    LowLevelServer => "low-level-server.md",
    WireTypes => "wire-types.md",
    Architecture => "architecture.md",
    McpTerm => "mcp-term.md",
    Observability => "observability.md",
    ScaleOut => "scale-out.md",
    Readme => "../README.md",
    McpReadme => "../crates/mcp/README.md",
    TypesReadme => "../crates/mcp-types/README.md",
    SealReadme => "../crates/mcp-state-seal/README.md",
    CoreReadme => "../crates/mcp-server-core/README.md",
    MacrosReadme => "../crates/mcp-server-macros/README.md",
    ClientReadme => "../crates/mcp-client/README.md",
    HttpReadme => "../crates/mcp-transport-http/README.md",
    StdioReadme => "../crates/mcp-transport-stdio/README.md",
    TermReadme => "../crates/mcp-term/README.md",
    SkillsReadme => "../crates/mcp-skills/README.md",
    RedisReadme => "../crates/mcp-store-redis/README.md",
}
