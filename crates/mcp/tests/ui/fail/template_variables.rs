#[mcp::resource("vault://{item}")]
async fn vault(itm: String) -> String {
    itm
}

fn main() {}
