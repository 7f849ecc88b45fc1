//! Who a request comes from behind a reverse proxy (security review X3).
//!
//! Behind a proxy every connection comes from the proxy, so per-client shares (sessions, listen
//! streams) and rate limits keyed by address would count every user as one client. A proxy
//! the server is told to trust ([`McpHttpService::trusted_proxies`](crate::McpHttpService::trusted_proxies))
//! names the client it forwards for in `Forwarded` (RFC 7239) or `X-Forwarded-For`. The
//! server reads those headers only on connections from a trusted proxy, and walks them from
//! the right, skipping the trusted proxies' own entries: the first address left is the
//! client. Entries further left were written by whoever sent the request and are never
//! believed. Without a trusted proxy the headers are ignored.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use hyper::HeaderMap;

/// A range of proxy addresses: one address (`10.0.0.7`, `::1`) or a prefix (`10.0.0.0/8`,
/// `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyRange {
    network: IpAddr,
    prefix: u8,
}

/// A [`ProxyRange`] that does not parse, with what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRangeError(String);

impl fmt::Display for ProxyRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProxyRangeError {}

impl ProxyRange {
    /// The addresses that share the first `prefix` bits of `address` (at most 32 for IPv4,
    /// 128 for IPv6).
    pub fn new(address: IpAddr, prefix: u8) -> Result<Self, ProxyRangeError> {
        let bits = match address {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        if prefix > bits {
            return Err(ProxyRangeError(format!(
                "the prefix /{prefix} is longer than the {bits} bits of {address}"
            )));
        }
        Ok(ProxyRange {
            network: address,
            prefix,
        })
    }

    /// Whether `address` is in the range (an IPv4 address mapped into IPv6 is compared as
    /// the IPv4 address).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, canonical(address)) {
            (IpAddr::V4(net), IpAddr::V4(a)) => same_prefix(
                u128::from(u32::from(net)),
                u128::from(u32::from(a)),
                self.prefix,
                32,
            ),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                same_prefix(u128::from(net), u128::from(a), self.prefix, 128)
            }
            _ => false,
        }
    }
}

fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

fn same_prefix(a: u128, b: u128, prefix: u8, bits: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = u32::from(bits - prefix);
    (a >> shift) == (b >> shift)
}

impl FromStr for ProxyRange {
    type Err = ProxyRangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address.parse().map_err(|_| {
            ProxyRangeError(format!(
                "'{text}' is not an address or a prefix (e.g. 10.0.0.7, 10.0.0.0/8, fd00::/8)"
            ))
        })?;
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().map_err(|_| {
                ProxyRangeError(format!("'{text}': the prefix length '{p}' is not a number"))
            })?,
            None if address.is_ipv4() => 32,
            None => 128,
        };
        ProxyRange::new(canonical(address), prefix)
    }
}

/// The client a request comes from: `peer` itself, unless `peer` is a trusted proxy, and then
/// the rightmost address of `Forwarded` (or, without it, `X-Forwarded-For`) that is not a
/// trusted proxy. A header that does not parse, or names only trusted proxies, leaves the
/// nearest address that could be read (the proxy itself when none could).
pub(crate) fn client_address(trusted: &[ProxyRange], peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    let is_trusted = |a: IpAddr| trusted.iter().any(|r| r.contains(a));
    if !is_trusted(peer) {
        return peer;
    }
    let chain = forwarded_for(headers).or_else(|| x_forwarded_for(headers));
    let Some(chain) = chain else {
        return peer;
    };
    let mut client = peer;
    for hop in chain.into_iter().rev() {
        let Some(hop) = hop else {
            // An entry that is no address (`unknown`, an obfuscated name, garbage): nothing
            // to its left can be attributed.
            return client;
        };
        client = hop;
        if !is_trusted(hop) {
            return hop;
        }
    }
    client
}

/// The most hops read from one header: a longer chain is cut from the left (its entries there
/// are the sender's own words anyway).
const MAX_HOPS: usize = 32;

/// The `for=` addresses of every `Forwarded` header, in order; `None` when there is none.
fn forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut hops = Vec::new();
    let mut seen = false;
    for value in headers.get_all(hyper::header::FORWARDED) {
        seen = true;
        let Ok(value) = value.to_str() else {
            hops.push(None);
            continue;
        };
        for element in value.split(',') {
            let address = element.split(';').find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| node_address(value.trim()))
            });
            hops.push(address.flatten());
        }
    }
    seen.then(|| last(hops))
}

/// The addresses of every `X-Forwarded-For` header, in order; `None` when there is none.
fn x_forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut hops = Vec::new();
    let mut seen = false;
    for value in headers.get_all("x-forwarded-for") {
        seen = true;
        let Ok(value) = value.to_str() else {
            hops.push(None);
            continue;
        };
        hops.extend(value.split(',').map(|hop| node_address(hop.trim())));
    }
    seen.then(|| last(hops))
}

fn last(mut hops: Vec<Option<IpAddr>>) -> Vec<Option<IpAddr>> {
    if hops.len() > MAX_HOPS {
        hops.drain(..hops.len() - MAX_HOPS);
    }
    hops
}

/// A node as `Forwarded` and `X-Forwarded-For` write it: `192.0.2.60`, `"[2001:db8::1]:4711"`,
/// `192.0.2.60:80`, `2001:db8::1`.
fn node_address(node: &str) -> Option<IpAddr> {
    let node = node.trim_matches('"');
    if let Ok(address) = node.parse::<IpAddr>() {
        return Some(canonical(address));
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (address, _) = rest.split_once(']')?;
        return address.parse::<IpAddr>().ok().map(canonical);
    }
    let (address, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    address.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[&str]) -> Vec<ProxyRange> {
        list.iter().map(|r| r.parse().unwrap()).collect()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_parse_and_contain() {
        let r: ProxyRange = "10.0.0.0/8".parse().unwrap();
        assert!(r.contains(ip("10.200.3.4")));
        assert!(!r.contains(ip("11.0.0.1")));
        assert!(r.contains(ip("::ffff:10.1.2.3")), "IPv4 mapped into IPv6");
        let one: ProxyRange = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6: ProxyRange = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        let all: ProxyRange = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")));
        assert_eq!(
            "10.0.0.0/33".parse::<ProxyRange>().unwrap_err().to_string(),
            "the prefix /33 is longer than the 32 bits of 10.0.0.0"
        );
        assert_eq!(
            "proxy".parse::<ProxyRange>().unwrap_err().to_string(),
            "'proxy' is not an address or a prefix (e.g. 10.0.0.7, 10.0.0.0/8, fd00::/8)"
        );
        assert_eq!(
            "10.0.0.0/x".parse::<ProxyRange>().unwrap_err().to_string(),
            "'10.0.0.0/x': the prefix length 'x' is not a number"
        );
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let trusted = ranges(&["127.0.0.1"]);
        let said = headers(&[
            ("x-forwarded-for", "198.51.100.1"),
            ("forwarded", "for=198.51.100.2"),
        ]);
        assert_eq!(
            client_address(&trusted, ip("203.0.113.5"), &said),
            ip("203.0.113.5")
        );
        assert_eq!(client_address(&[], ip("127.0.0.1"), &said), ip("127.0.0.1"));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_and_a_forged_left_part_is_ignored() {
        let trusted = ranges(&["127.0.0.1", "10.0.0.0/8"]);
        // nginx's `$proxy_add_x_forwarded_for`: what the client sent, then its address.
        let forged = headers(&[("x-forwarded-for", "192.0.2.66, 203.0.113.5")]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &forged),
            ip("203.0.113.5")
        );
        // Two trusted proxies in a row.
        let chain = headers(&[("x-forwarded-for", "192.0.2.66, 203.0.113.5, 10.1.1.1")]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &chain),
            ip("203.0.113.5")
        );
        // Two header lines are one list.
        let split = headers(&[
            ("x-forwarded-for", "192.0.2.66"),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &split),
            ip("203.0.113.9")
        );
        // No header: the proxy itself.
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &HeaderMap::new()),
            ip("127.0.0.1")
        );
        // Garbage at the right: nothing further left is believed.
        let garbage = headers(&[("x-forwarded-for", "203.0.113.5, not-an-address")]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &garbage),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn forwarded_wins_over_x_forwarded_for_and_its_forms_parse() {
        let trusted = ranges(&["127.0.0.1"]);
        let both = headers(&[
            (
                "forwarded",
                "for=192.0.2.60;proto=http, for=\"[2001:db8:cafe::17]:4711\"",
            ),
            ("x-forwarded-for", "198.51.100.1"),
        ]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &both),
            ip("2001:db8:cafe::17")
        );
        let port = headers(&[("forwarded", "For=192.0.2.43:8080")]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &port),
            ip("192.0.2.43")
        );
        let unknown = headers(&[("forwarded", "for=192.0.2.43, for=unknown")]);
        assert_eq!(
            client_address(&trusted, ip("127.0.0.1"), &unknown),
            ip("127.0.0.1")
        );
    }

    #[test]
    fn a_long_chain_is_read_from_its_right_end_only() {
        let trusted = ranges(&["10.0.0.0/8"]);
        let mut hops: Vec<String> = vec!["203.0.113.5".into()];
        hops.extend((0..100).map(|i| format!("10.0.0.{}", i % 250)));
        let long = headers(&[("x-forwarded-for", &hops.join(", "))]);
        // 100 trusted hops: past the 32 read, the last one read is the answer.
        assert!(trusted[0].contains(client_address(&trusted, ip("10.9.9.9"), &long)));
    }
}
