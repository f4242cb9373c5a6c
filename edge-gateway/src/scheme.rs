//! The scheme each request came on, which decides the APIs that serve it (their
//! transports, as WSO2's gateway applies them): decided here from the connection, never
//! from the request's own text.
//!
//! A TLS listener's requests came over TLS. A plain listener's came in clear, unless the
//! connection comes from an address of `APIM_TRUSTED_PROXIES` (a TLS-terminating load
//! balancer in front) whose `X-Forwarded-Proto` says `https`. The scheme a client writes
//! in its request target (an absolute-form target, HTTP/2's `:scheme`) is replaced by the
//! one decided here, which the component reads from the URI (`wasi:http`'s scheme, or the
//! policy's request head); `X-Forwarded-Proto` from any other address is removed, so that
//! no backend takes a client's claim for the gateway's. A trusted proxy's passes on.

use std::net::IpAddr;

use http::header::HOST;
use http::uri::{Authority, PathAndQuery, Scheme as UriScheme, Uri};
use http::{HeaderMap, HeaderName, Request};
use ipnet::IpNet;

use crate::wit_host::bindings::exports::apim::gateway::policy;

/// The header a TLS-terminating proxy says the client's scheme in.
pub const FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// The addresses whose `X-Forwarded-Proto` is believed (`APIM_TRUSTED_PROXIES`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// The networks of a comma-separated list of CIDRs and addresses (empty: none).
    pub fn parse(list: &str) -> Result<Self, String> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                apim_http::egress::network(entry)
                    .ok_or_else(|| format!("{entry:?} is neither an address nor a CIDR network"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether a connection from `peer` comes from a listed address (an IPv4 peer of a
    /// dual-stack listener, `::ffff:a.b.c.d`, as the IPv4 address it is).
    pub fn trust(&self, peer: IpAddr) -> bool {
        let peer = apim_http::egress::canonical_ip(peer);
        self.0.iter().any(|net| net.contains(&peer))
    }
}

/// How a connection's requests arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrival {
    /// Over TLS, on a TLS listener.
    pub tls: bool,
    /// From a trusted proxy, whose `X-Forwarded-Proto` is believed.
    pub from_trusted_proxy: bool,
}

impl Arrival {
    /// How requests of a connection from `peer` arrive, on a TLS listener or not.
    pub fn of(tls: bool, peer: IpAddr, trusted: &TrustedProxies) -> Self {
        Self {
            tls,
            from_trusted_proxy: trusted.trust(peer),
        }
    }

    /// Whether a request with `headers` came over TLS.
    fn is_https(self, headers: &HeaderMap) -> bool {
        self.tls || (self.from_trusted_proxy && forwarded_https(headers))
    }
}

/// Whether `X-Forwarded-Proto` says `https`: its last value, which the proxy next to us
/// appended (earlier ones, from further away, may be the client's own).
fn forwarded_https(headers: &HeaderMap) -> bool {
    let last = headers
        .get_all(FORWARDED_PROTO)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .next_back();
    last.is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

/// Sets `request`'s scheme to the one it arrived on, whatever the client wrote, and
/// removes an `X-Forwarded-Proto` that is not believed. Its `Host` is set already.
pub fn settle<B>(request: &mut Request<B>, arrival: Arrival) {
    let https = arrival.is_https(request.headers());
    if !arrival.from_trusted_proxy {
        request.headers_mut().remove(FORWARDED_PROTO);
    }
    let wanted = if https {
        UriScheme::HTTPS
    } else {
        UriScheme::HTTP
    };
    // An origin-form target in clear, the common case, has no scheme and means `http`.
    let already = match request.uri().scheme() {
        Some(scheme) => *scheme == wanted,
        None => !https,
    };
    if !already {
        *request.uri_mut() = with_scheme(request.uri(), request.headers(), wanted);
    }
}

/// `uri` with `scheme`, its authority kept (else the `Host`'s; the component never reads
/// it, but a URI with a scheme needs one).
fn with_scheme(uri: &Uri, headers: &HeaderMap, scheme: UriScheme) -> Uri {
    let authority = uri
        .authority()
        .cloned()
        .or_else(|| Authority::try_from(headers.get(HOST)?.as_bytes()).ok())
        .unwrap_or_else(|| Authority::from_static("localhost"));
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let mut parts = http::uri::Parts::default();
    (parts.scheme, parts.authority, parts.path_and_query) =
        (Some(scheme), Some(authority), Some(path));
    // Cannot fail with all three parts set; were it to, the request would reach no API.
    Uri::from_parts(parts).unwrap_or_default()
}

/// Whether a settled request ([`settle`]) came over TLS.
pub fn is_https(uri: &Uri) -> bool {
    uri.scheme() == Some(&UriScheme::HTTPS)
}

/// The scheme of a settled request, as the policy's request head carries it.
pub fn policy_scheme(uri: &Uri) -> policy::Scheme {
    if is_https(uri) {
        policy::Scheme::Https
    } else {
        policy::Scheme::Http
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(target: &str, headers: &[(&str, &str)], arrival: Arrival) -> Request<()> {
        let mut request = Request::get(target).body(()).unwrap();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().append(name, value.parse().unwrap());
        }
        settle(&mut request, arrival);
        request
    }

    const PLAIN: Arrival = Arrival {
        tls: false,
        from_trusted_proxy: false,
    };
    const TLS: Arrival = Arrival {
        tls: true,
        from_trusted_proxy: false,
    };
    const PROXIED: Arrival = Arrival {
        tls: false,
        from_trusted_proxy: true,
    };

    #[test]
    fn the_listener_decides_whatever_the_target_says() {
        let host = [("host", "gw.example:8280")];
        let plain = settled("/pets/v1/a?b=c", &host, PLAIN);
        assert_eq!(plain.uri(), "/pets/v1/a?b=c", "left as it came");
        assert!(!is_https(plain.uri()));
        let tls = settled("/pets/v1/a?b=c", &host, TLS);
        assert_eq!(tls.uri(), "https://gw.example:8280/pets/v1/a?b=c");
        assert_eq!(policy_scheme(tls.uri()), policy::Scheme::Https);
        // An absolute-form target (or HTTP/2's `:scheme`) is the client's word.
        let forged = settled("https://gw.example/pets/v1/a", &[], PLAIN);
        assert_eq!(forged.uri(), "http://gw.example/pets/v1/a");
        assert_eq!(policy_scheme(forged.uri()), policy::Scheme::Http);
        let odd = settled("/a", &[("host", "not a host")], TLS);
        assert_eq!(odd.uri(), "https://localhost/a");
    }

    /// A request whose `X-Forwarded-Proto` lines are `values`, settled.
    fn forwarded(values: &[&str], arrival: Arrival) -> Request<()> {
        let headers: Vec<(&str, &str)> = values.iter().map(|v| ("x-forwarded-proto", *v)).collect();
        settled("/a", &headers, arrival)
    }

    #[test]
    fn forwarded_proto_is_believed_from_trusted_proxies_only() {
        let kept = |request: &Request<()>| request.headers().contains_key(FORWARDED_PROTO);
        let believed = forwarded(&["https"], PROXIED);
        assert!(is_https(believed.uri()));
        assert!(kept(&believed), "a trusted proxy's passes on");
        let ignored = forwarded(&["https"], PLAIN);
        assert!(!is_https(ignored.uri()));
        assert!(!kept(&ignored), "nobody else's does");
        assert!(!kept(&forwarded(&["https"], TLS)));
        // The last value is the trusted proxy's: a client's earlier claim counts for nothing.
        assert!(!is_https(forwarded(&["https, http"], PROXIED).uri()));
        assert!(is_https(forwarded(&["http,HTTPS"], PROXIED).uri()));
        assert!(is_https(forwarded(&["http", " https "], PROXIED).uri()));
        for odd in ["", "ftp", "https;x", "https/1.1", ",", "\u{e9}"] {
            assert!(!is_https(forwarded(&[odd], PROXIED).uri()), "{odd:?}");
        }
        assert!(!is_https(forwarded(&[], PROXIED).uri()));
    }

    #[test]
    fn trusted_proxies_are_addresses_and_networks() {
        let trusted = TrustedProxies::parse(" 10.0.0.0/8, 127.0.0.2,[::1] ,").unwrap();
        for (peer, trust) in [
            ("10.1.2.3", true),
            ("127.0.0.2", true),
            ("::ffff:127.0.0.2", true),
            ("::1", true),
            ("127.0.0.1", false),
            ("11.0.0.1", false),
        ] {
            assert_eq!(trusted.trust(peer.parse().unwrap()), trust, "{peer}");
        }
        assert_eq!(
            TrustedProxies::parse("").unwrap(),
            TrustedProxies::default()
        );
        assert!(!TrustedProxies::default().trust("127.0.0.1".parse().unwrap()));
        for bad in ["proxy.example", "10.0.0.0/33", "127.0.0.1:80", "1.2.3"] {
            let err = TrustedProxies::parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }
}
