//! Skills (SEP-2640): a server that offers the skills in `examples/skills/` and a client that
//! lists them, loads one (its `SKILL.md`, verified against the listing) and reads a file it
//! refers to.
//!
//! ```sh
//! cargo run --example skills                              # server in-process, over HTTP
//! cargo run --example skills -- http://127.0.0.1:8000/mcp # or a skills server you started
//! ```

use mcp::ClientBuilderExt;
use mcp::McpServer;
use mcp::client::Client;
use mcp::types::ext::skills::SkillResources;
use mcp_examples::cli;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            let server =
                McpServer::new("skills").skills_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/skills"));
            cli::serve_in_background(server).await?
        }
    };
    println!("skills server at {url}");
    let client = Client::builder().connect_http(&url).await?;

    // Listing reads no file: a host loads a skill only when it needs it.
    let skills = client.list_all_skills().await?;
    for skill in &skills {
        let description = skill.frontmatter["description"].as_str().unwrap_or("");
        println!("- {}: {}", skill.name().unwrap_or("?"), description.trim());
    }

    let Some(pdf) = skills.iter().find(|s| s.name() == Some("pdf-processing")) else {
        return Err("the server has no pdf-processing skill".into());
    };
    let loaded = client.load_skill(pdf).await?;
    println!(
        "\nloaded {} ({} bytes verified)",
        pdf.uri,
        loaded.file.bytes.len()
    );
    println!("{}", loaded.body.trim());

    if let SkillResources::Files(files) = &pdf.resources
        && let Some(forms) = files.iter().find(|f| f.uri.ends_with("/FORMS.md"))
    {
        let file = client.read_skill_file(pdf, &forms.uri).await?;
        println!("\n{} ({}):", file.uri, forms.digest);
        println!("{}", file.text().unwrap_or("(binary)").trim());
    }
    client.close().await;
    Ok(())
}
