struct Id;

#[mcp::resource("notes://{id}")]
async fn note(id: Id) -> String {
    let _ = id;
    String::new()
}

fn main() {}
