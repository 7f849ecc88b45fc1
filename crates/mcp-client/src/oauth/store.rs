//! Where client credentials and tokens live: the [`TokenStore`] trait and the in-memory store.

use std::sync::Mutex;

use super::metadata::{ClientCredentials, Tokens};

/// Where client credentials and tokens are kept, keyed by the issuer of the authorization
/// server that issued them.
pub trait TokenStore: Send + Sync + 'static {
    /// The client registered with `issuer`.
    fn client(&self, issuer: &str) -> Option<ClientCredentials>;
    /// Remembers a registration.
    fn save_client(&self, credentials: ClientCredentials);
    /// Tokens from `issuer`.
    fn tokens(&self, issuer: &str) -> Option<Tokens>;
    /// Remembers tokens from `issuer`.
    fn save_tokens(&self, issuer: &str, tokens: Tokens);
    /// Forgets the tokens from `issuer` (refused, or the resource moved).
    fn forget_tokens(&self, issuer: &str);
}

/// A [`TokenStore`] in memory: nothing survives the process.
#[derive(Default)]
pub struct MemoryTokenStore {
    clients: Mutex<Vec<ClientCredentials>>,
    tokens: Mutex<Vec<(String, Tokens)>>,
}

impl TokenStore for MemoryTokenStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        let clients = self.clients.lock().ok()?;
        clients.iter().find(|c| c.issuer == issuer).cloned()
    }

    fn save_client(&self, credentials: ClientCredentials) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.retain(|c| c.issuer != credentials.issuer);
            clients.push(credentials);
        }
    }

    fn tokens(&self, issuer: &str) -> Option<Tokens> {
        let tokens = self.tokens.lock().ok()?;
        tokens
            .iter()
            .find(|(i, _)| i == issuer)
            .map(|(_, t)| t.clone())
    }

    fn save_tokens(&self, issuer: &str, tokens: Tokens) {
        if let Ok(mut all) = self.tokens.lock() {
            all.retain(|(i, _)| i != issuer);
            all.push((issuer.to_owned(), tokens));
        }
    }

    fn forget_tokens(&self, issuer: &str) {
        if let Ok(mut all) = self.tokens.lock() {
            all.retain(|(i, _)| i != issuer);
        }
    }
}
