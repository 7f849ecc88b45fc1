//! The Bistro's booking as an MCP App: `book_table` is linked to `ui://bistro/booking`, an HTML
//! page with a date picker and a party size that calls `book_table` through the host and shows
//! the answer. A host without MCP Apps still gets the tool and its full text result.

use mcp::{AppDef, McpServer};

/// The app's URI.
pub const BOOKING_APP: &str = "ui://bistro/booking";

/// The app's HTML, built into the binary.
pub const BOOKING_HTML: &str = include_str!("../apps/booking.html");

/// Book a table at the bistro.
#[mcp::tool(ui = "ui://bistro/booking")]
pub async fn book_table(
    /// The day, as YYYY-MM-DD.
    date: String,
    /// How many people.
    party_size: u32,
) -> Result<String, String> {
    if party_size == 0 || party_size > 12 {
        return Err(format!(
            "A table seats 1 to 12 people; {party_size} cannot be booked."
        ));
    }
    Ok(format!("Booked a table for {party_size} on {date}."))
}

/// The Bistro with its booking app.
pub fn server() -> McpServer {
    let booking = AppDef::new(BOOKING_APP, "booking")
        .title("Book a table")
        .description("Pick a date and a party size; the booking is made through the host.")
        .html(BOOKING_HTML)
        .prefers_border(true);
    McpServer::new("Bistro").app(booking).tool(book_table)
}
