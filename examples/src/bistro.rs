//! Bistro: a tool that asks mid-call with `ctx.elicit` (2025-11-25 sessions), and a deposit
//! taken through URL elicitation whose completion the server announces later.

use std::future::Future;
use std::pin::Pin;

use mcp::types::elicitation::ElicitAction;
use mcp::{Context, ElicitationResult, McpServer};
use schemars::JsonSchema;
use serde::Deserialize;

/// The date the bistro is full.
pub const FULL_DATE: &str = "2025-12-25";

/// The form shown when the requested date is full.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AlternativeDate {
    /// Try another date?
    pub accept_alternative: bool,
    /// Alternative date (YYYY-MM-DD)
    #[serde(default = "default_date")]
    pub date: String,
}

fn default_date() -> String {
    "2025-12-26".into()
}

/// Books `date`, asking for another date while the one asked for is full.
fn book(
    ctx: Context,
    date: String,
    party_size: u32,
) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> {
    Box::pin(async move {
        if date != FULL_DATE {
            return Ok(format!("Booked a table for {party_size} on {date}."));
        }
        let question =
            format!("No tables for {party_size} on {date}. Would you like to try another date?");
        match ctx
            .elicit::<AlternativeDate>(question)
            .await
            .map_err(|e| e.message)?
        {
            ElicitationResult::Accepted(alt) if alt.accept_alternative => {
                book(ctx, alt.date, party_size).await
            }
            _ => Ok("No booking made.".into()),
        }
    })
}

/// Book a table at the bistro.
#[mcp::tool]
pub async fn book_table(
    /// The day, as YYYY-MM-DD.
    date: String,
    /// How many people.
    party_size: u32,
    ctx: Context,
) -> Result<String, String> {
    book(ctx, date, party_size).await
}

/// Take the deposit that confirms a booking.
#[mcp::tool]
pub async fn pay_deposit(booking_id: String, ctx: &Context) -> Result<String, String> {
    let action = ctx
        .elicit_url(
            "A 20 EUR deposit confirms your booking.",
            format!("https://pay.example.com/deposit/{booking_id}"),
            format!("deposit-{booking_id}"),
        )
        .await
        .map_err(|e| e.message)?;
    Ok(match action {
        ElicitAction::Accept => "Complete the payment in your browser.".into(),
        _ => "No deposit taken. The booking expires in one hour.".into(),
    })
}

/// Record a payment reported by the payment provider.
#[mcp::tool]
pub async fn confirm_deposit(booking_id: String, ctx: &Context) -> Result<String, String> {
    ctx.send_elicit_complete(format!("deposit-{booking_id}"))
        .await
        .map_err(|e| e.message)?;
    Ok(format!("Deposit received for booking {booking_id}."))
}

/// The Bistro server.
pub fn server() -> McpServer {
    McpServer::new("Bistro")
        .tool(book_table)
        .tool(pay_deposit)
        .tool(confirm_deposit)
}
