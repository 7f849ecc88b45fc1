#[mcp::tool(scopes = "shop.checkout")]
async fn checkout() -> String {
    "bought".into()
}

#[mcp::resource("file:///orders/{id}", scopes = ["shop.orders"])]
async fn order(id: String) -> String {
    id
}

fn main() {}
