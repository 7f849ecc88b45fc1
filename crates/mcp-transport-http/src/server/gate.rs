//! What a request passes before anything else of it is read: `Origin` and `Host`
//! (DNS-rebinding protection), a CORS preflight and the CORS headers of the answer, the
//! protected resource metadata document, and bearer authentication.

use std::sync::Arc;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Response, StatusCode};
use mcp_server_core::seal::Principal;

use super::body::McpBody;
use super::config::Config;
use super::reply::{not_allowed, plain};
use crate::auth::AuthError;
use crate::headers;

fn local_origin(origin: &str) -> bool {
    let host = origin.split("://").nth(1).unwrap_or(origin);
    let host = host.split('/').next().unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

fn local_host(host: &str) -> bool {
    let name = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

/// DNS-rebinding protection: a browser page elsewhere must not reach a local server. A
/// value that is not text, or a missing `Host`, is refused like a foreign one. Answers the
/// origin to echo in CORS headers, when origins are configured and this one is listed.
pub(crate) fn check_origin_and_host(
    config: &Config,
    parts: &hyper::http::request::Parts,
) -> Result<Option<String>, Response<McpBody>> {
    let mut cors = None;
    // A second Origin or Host is refused rather than ignored (review W23): whoever reads
    // the other one would decide on another value than this check did. Scheme and host
    // compare without regard to case, as browsers and DNS treat them.
    let repeated = |name| parts.headers.get_all(name).iter().nth(1).is_some();
    if let Some(origin) = parts.headers.get(header::ORIGIN) {
        let refused = || plain(StatusCode::FORBIDDEN, "Invalid Origin header");
        if repeated(header::ORIGIN) {
            return Err(refused());
        }
        let origin = origin.to_str().map_err(|_| refused())?;
        let allowed = match &config.allowed_origins {
            Some(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
            None => local_origin(&origin.to_ascii_lowercase()),
        };
        if !allowed {
            return Err(refused());
        }
        if config.allowed_origins.is_some() {
            cors = Some(origin.to_owned());
        }
    }
    let refused = || plain(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    if repeated(header::HOST) {
        return Err(refused());
    }
    let host = match parts.headers.get(header::HOST) {
        Some(host) => host.to_str().map_err(|_| refused())?,
        None => match parts.uri.authority() {
            Some(authority) => authority.as_str(),
            None => {
                return Err(plain(
                    StatusCode::MISDIRECTED_REQUEST,
                    "Missing Host header",
                ));
            }
        },
    };
    let allowed = match &config.allowed_hosts {
        Some(list) => list.iter().any(|h| h.eq_ignore_ascii_case(host)),
        None => local_host(&host.to_ascii_lowercase()),
    };
    if !allowed {
        return Err(refused());
    }
    Ok(cors)
}

/// The protected resource metadata document, when this request asks for it.
pub(crate) fn metadata(
    config: &Config,
    parts: &hyper::http::request::Parts,
) -> Option<Response<McpBody>> {
    let protected = config.protected.as_ref()?;
    if parts.uri.path() != protected.metadata_path() {
        return None;
    }
    Some(match parts.method {
        Method::GET | Method::HEAD => {
            let mut response = Response::new(McpBody::full(protected.document().to_string()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        _ => not_allowed(),
    })
}

/// The bearer check, before anything else of the request is looked at. The verifier's
/// reason is logged at debug only: it may name internal hosts.
/// Who a request comes from, once its token was verified: the principal and the scopes the
/// token grants.
pub(crate) struct Caller {
    pub(crate) principal: Principal,
    pub(crate) scopes: Arc<[String]>,
}

pub(crate) async fn authenticate(
    config: &Config,
    method: &str,
    headers: &HeaderMap,
) -> Result<Option<Caller>, Response<McpBody>> {
    let (Some(verifier), Some(protected)) = (&config.verifier, &config.protected) else {
        return Ok(None);
    };
    // Bearer or DPoP (RFC 9449) tokens; the verifier's own words stay in the log.
    let verified = crate::auth::authenticate(
        verifier.as_ref(),
        protected,
        &config.dpop_replay,
        method,
        headers,
    )
    .await;
    match verified {
        Ok(token) => Ok(Some(Caller {
            principal: token.principal,
            scopes: token.scopes.into(),
        })),
        Err(e) => Err(refuse(protected, &e)),
    }
}

/// A request whose method or tool needs scopes its token lacks: 403 with the
/// `insufficient_scope` challenge naming every scope the operation needs (RFC 6750 §3.1, the
/// MCP authorization spec's step-up), so the client can ask its authorization server for them.
/// `None` when the request may go on: it needs nothing, or its token grants all of it, or
/// the endpoint verifies no tokens (the engine then refuses it, failing closed).
pub(crate) fn check_scopes(
    config: &Config,
    required: &[String],
    granted: Option<&[String]>,
) -> Option<Response<McpBody>> {
    let protected = config.protected.as_ref()?;
    let granted = granted?;
    if required.iter().all(|r| granted.contains(r)) {
        return None;
    }
    tracing::debug!(required = %required.join(" "), "a token lacks a scope this operation needs");
    Some(refuse(
        protected,
        &AuthError::InsufficientScope(required.join(" ")),
    ))
}

/// 401, or 403 for a missing scope, with the `WWW-Authenticate` challenge for `e`.
fn refuse(protected: &crate::auth::ProtectedResource, e: &AuthError) -> Response<McpBody> {
    tracing::debug!(reason = %e, "request refused");
    let status = match e {
        AuthError::InsufficientScope(_) => StatusCode::FORBIDDEN,
        _ => StatusCode::UNAUTHORIZED,
    };
    let mut response = plain(
        status,
        if status == StatusCode::FORBIDDEN {
            "Forbidden"
        } else {
            "Unauthorized"
        },
    );
    if let Ok(value) = HeaderValue::from_str(&protected.challenge(e)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The request headers a browser client of this endpoint sends.
const CORS_REQUEST_HEADERS: [&str; 9] = [
    "content-type",
    "accept",
    "authorization",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "last-event-id",
    "cache-control",
];

pub(crate) fn cors_headers(headers: &mut HeaderMap, origin: &str) {
    if let Ok(origin) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Mcp-Session-Id, WWW-Authenticate"),
        );
    }
}

/// The answer to a CORS preflight from a configured origin: the methods, and the requested
/// headers when each is one MCP uses (including any `Mcp-Param-*`).
pub(crate) fn preflight(headers: &HeaderMap) -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let out = response.headers_mut();
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, GET, DELETE"),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    let requested = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let known = requested
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .all(|h| {
            CORS_REQUEST_HEADERS.contains(&h.as_str()) || h.starts_with(headers::PARAM_PREFIX)
        });
    let allowed = if known && !requested.trim().is_empty() {
        HeaderValue::from_str(requested).ok()
    } else {
        None
    };
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        allowed.unwrap_or_else(|| HeaderValue::from_static("content-type, accept, authorization, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id")),
    );
    response
}
