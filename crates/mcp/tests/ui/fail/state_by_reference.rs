use mcp::State;

struct Notes;

#[mcp::tool]
async fn count(notes: &State<Notes>) -> String {
    let _ = notes;
    String::new()
}

fn main() {}
