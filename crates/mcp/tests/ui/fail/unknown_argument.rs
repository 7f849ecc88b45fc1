use mcp::Resolution;

#[mcp::resolver]
async fn confirm_delete(path: &str) -> Resolution<String> {
    Resolution::ready(path.to_owned())
}

#[mcp::tool]
async fn delete_folder(folder: String, #[resolve(confirm_delete)] confirm: mcp::Ready<String>) -> String {
    format!("{folder} {}", confirm.0)
}

fn main() {}
