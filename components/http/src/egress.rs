//! Where a gateway may send requests: the egress policy shared by the control plane
//! (which refuses endpoints the policy would never allow), the gateway component (which
//! checks a backend URL before sending) and edge-gateway (which checks every address a
//! backend's name resolves to, so DNS cannot smuggle a refused address in).
//!
//! By default no loopback, link-local (cloud metadata at 169.254.169.254 included),
//! unspecified, multicast, broadcast or other cloud-metadata address is reached, nor a
//! name such as `localhost`, nor a Spin service-chaining name (`*.spin.internal`: the
//! application's own components, private ones included). An operator opens what is
//! needed with an allow-list (`APIM_EGRESS_ALLOW`, the component's `egress_allow`):
//! comma-separated CIDRs (`10.0.0.0/8`), addresses (`127.0.0.1`), addresses with a port
//! (`127.0.0.1:8290`) and host names (`backend.internal`, `dev-facade.spin.internal`,
//! optionally with a port). The control plane's listener and the gateway's own are
//! refused whatever the list says; the hosts check those, since only they know where
//! they listen.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::IpNet;

/// One entry of an allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// Addresses in a network, on any port or one.
    Network(IpNet, Option<u16>),
    /// A host name (lower-case), on any port or one.
    Name(String, Option<u16>),
}

/// An egress policy: the default refusals, opened by an allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allowed: Vec<Allowed>,
}

/// Why a destination is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl EgressPolicy {
    /// The policy of an allow-list (empty: the defaults alone).
    pub fn parse(list: &str) -> Result<Self, String> {
        let allowed = list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(parse_entry)
            .collect::<Result<_, _>>()?;
        Ok(Self { allowed })
    }

    /// Whether a URL's destination may be reached as far as its text tells: a literal
    /// address is checked as it is, a name that means this machine is refused unless
    /// listed; other names are for [`EgressPolicy::check_address`] once resolved.
    pub fn check_url(&self, url: &str) -> Result<(), Denied> {
        let (host, port) = host_and_port(url)
            .ok_or_else(|| Denied(format!("{url} is not an http(s) or ws(s) URL")))?;
        match parse_ip(&host) {
            Some(ip) => self.check_address(&host, ip, port),
            None if self.allows_name(&host, port) => Ok(()),
            None if is_local_name(&host) => Err(Denied(format!("{host} names this machine"))),
            None if is_spin_internal(&host) => Err(Denied(format!(
                "{host} names a component of this Spin application"
            ))),
            None => Ok(()),
        }
    }

    /// Whether `ip`, which `host` (as the URL names it) resolved to, may be reached on `port`.
    pub fn check_address(&self, host: &str, ip: IpAddr, port: u16) -> Result<(), Denied> {
        let ip = canonical_ip(ip);
        if self.allows_name(host, port) || self.allows_ip(ip, port) {
            return Ok(());
        }
        match refused_by_default(ip) {
            Some(why) => Err(Denied(format!("{ip} is {why}"))),
            None => Ok(()),
        }
    }

    fn allows_name(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.');
        self.allowed.iter().any(|entry| match entry {
            Allowed::Name(name, only) => {
                name.eq_ignore_ascii_case(host) && only.is_none_or(|p| p == port)
            }
            Allowed::Network(..) => false,
        })
    }

    fn allows_ip(&self, ip: IpAddr, port: u16) -> bool {
        self.allowed.iter().any(|entry| match entry {
            Allowed::Network(net, only) => net.contains(&ip) && only.is_none_or(|p| p == port),
            Allowed::Name(..) => false,
        })
    }
}

/// The network an entry of an address list names: a CIDR (`10.0.0.0/8`) or one address
/// (`127.0.0.1`, `::1`, `[::1]`; an IPv4 address inside IPv6 as the IPv4 address it is).
pub fn network(entry: &str) -> Option<IpNet> {
    if let Ok(net) = entry.parse::<IpNet>() {
        return Some(net);
    }
    let ip = entry.trim_matches(['[', ']']).parse::<IpAddr>().ok()?;
    Some(IpNet::from(canonical_ip(ip)))
}

fn parse_entry(entry: &str) -> Result<Allowed, String> {
    if let Some(net) = network(entry) {
        return Ok(Allowed::Network(net, None));
    }
    if let Ok(addr) = entry.parse::<std::net::SocketAddr>() {
        return Ok(Allowed::Network(
            IpNet::from(canonical_ip(addr.ip())),
            Some(addr.port()),
        ));
    }
    let (name, port) = match entry.rsplit_once(':') {
        Some((name, port)) => (
            name,
            Some(
                port.parse::<u16>()
                    .map_err(|_| format!("bad port in egress entry {entry:?}"))?,
            ),
        ),
        None => (entry, None),
    };
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !valid {
        return Err(format!(
            "egress entry {entry:?} is not a CIDR, an address or a host name"
        ));
    }
    Ok(Allowed::Name(
        name.trim_end_matches('.').to_ascii_lowercase(),
        port,
    ))
}

/// Whether a connection to `ip`:`port` may reach the listener at `listener`: the same
/// address, or both of this machine's own (loopback or unspecified) on the same port.
pub fn reaches_listener(ip: IpAddr, port: u16, listener: SocketAddr) -> bool {
    let local = |ip: IpAddr| ip.is_loopback() || ip.is_unspecified();
    let (ip, listening) = (canonical_ip(ip), canonical_ip(listener.ip()));
    port == listener.port() && (ip == listening || (local(ip) && local(listening)))
}

/// The host (without brackets) and port of an http(s) or ws(s) URL.
pub fn host_and_port(url: &str) -> Option<(String, u16)> {
    let (scheme, authority, _) = crate::split_endpoint_url(url)?;
    let default_port = if matches!(scheme, "https" | "wss") {
        443
    } else {
        80
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (authority, default_port),
        }
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// An address written in a URL host, in any of the forms resolvers accept for IPv4
/// (`127.1`, `0x7f.0.0.1`, `2130706433`) as well as the usual ones.
fn parse_ip(host: &str) -> Option<IpAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip);
    }
    legacy_ipv4(host).map(IpAddr::V4)
}

/// inet_aton's forms: one to four parts, each decimal, octal (leading 0) or hex (0x).
fn legacy_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = host
        .trim_end_matches('.')
        .split('.')
        .map(|part| {
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).ok()
            } else if part.len() > 1 && part.starts_with('0') {
                u64::from_str_radix(&part[1..], 8).ok()
            } else {
                part.parse().ok()
            }
        })
        .collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|p| *p > 255) {
        return None;
    }
    let last_bits = 8 * (4 - leading.len() as u32);
    if *last >= 1u64 << last_bits {
        return None;
    }
    let value = leading
        .iter()
        .enumerate()
        .fold(*last, |acc, (i, part)| acc | (part << (24 - 8 * i as u64)));
    Some(Ipv4Addr::from(value as u32))
}

/// An IPv4 address inside IPv6 (mapped or compatible) as the IPv4 address it is.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Names that mean this machine.
fn is_local_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host == "localhost" || host.ends_with(".localhost") || host == "localhost.localdomain"
}

/// Spin's service-chaining names (`<component>.spin.internal`): they reach the
/// application's own components in memory, private ones included, never the network, and
/// no address check can see them (Spin resolves them itself); like this machine's names
/// they are refused unless the allow-list names them (`dev-facade.spin.internal`).
fn is_spin_internal(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host == "spin.internal" || host.ends_with(".spin.internal")
}

/// Cloud metadata services outside the link-local range.
const METADATA: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

/// Why an address is refused unless allowed; `None` when it is not.
pub fn refused_by_default(ip: IpAddr) -> Option<&'static str> {
    if METADATA.contains(&ip) {
        return Some("a cloud metadata service");
    }
    match canonical_ip(ip) {
        IpAddr::V4(v4) => {
            if v4.is_loopback() {
                Some("a loopback address")
            } else if v4.is_link_local() {
                Some("a link-local address")
            } else if v4.is_unspecified() || v4.octets()[0] == 0 {
                Some("an unspecified address")
            } else if v4.is_multicast() || v4.is_broadcast() {
                Some("a multicast or broadcast address")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unicast_link_local() {
                Some("a link-local address")
            } else if v6.is_unspecified() {
                Some("an unspecified address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else if let Some(v4) = v6.to_ipv4() {
                // IPv4-compatible (::a.b.c.d) forms reach the same hosts.
                refused_by_default(IpAddr::V4(v4))
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_refuse_this_machine_and_metadata() {
        let policy = EgressPolicy::default();
        for url in [
            "http://127.0.0.1:9763/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://017700000001/",
            "http://localhost:8080/",
            "http://api.localhost/",
            "http://[::1]:80/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://0.0.0.0:8280/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.100.100.200/",
            "http://[fd00:ec2::254]/",
            "http://[fe80::1]/",
            "http://224.0.0.1/",
            "http://user@127.0.0.1/",
            "http://dev-facade.spin.internal/devs",
            "http://GATEWAY.Spin.Internal./",
            "http://spin.internal/",
        ] {
            assert!(policy.check_url(url).is_err(), "{url}");
        }
        for url in [
            "http://10.1.2.3:8080/",
            "https://backend.example/api",
            "http://192.168.1.10/",
            "http://[2001:db8::1]:8443/",
        ] {
            assert_eq!(policy.check_url(url), Ok(()), "{url}");
        }
        assert!(policy.check_url("ftp://x/").is_err());
    }

    #[test]
    fn an_allow_list_opens_networks_addresses_ports_and_names() {
        let policy =
            EgressPolicy::parse("127.0.0.1:8290, 10.9.0.0/16, internal.svc, localhost:9000, ::1")
                .unwrap();
        assert_eq!(policy.check_url("http://127.0.0.1:8290/devs"), Ok(()));
        assert!(policy.check_url("http://127.0.0.1:8291/").is_err());
        assert_eq!(policy.check_url("http://localhost:9000/"), Ok(()));
        assert!(policy.check_url("http://localhost:9001/").is_err());
        assert_eq!(policy.check_url("http://[::1]:1/"), Ok(()));
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        // A name is checked on what it resolves to, unless the name itself is allowed.
        assert!(policy.check_address("evil.example", loopback, 80).is_err());
        assert_eq!(policy.check_address("internal.svc", loopback, 80), Ok(()));
        assert_eq!(
            policy.check_address("x", "10.9.1.1".parse().unwrap(), 80),
            Ok(())
        );
        assert!(EgressPolicy::parse("not a host!").is_err());
        assert!(EgressPolicy::parse("host:99999").is_err());
        assert_eq!(EgressPolicy::parse(" , ").unwrap(), EgressPolicy::default());
    }

    /// The facade behind the gateway on Spin: its chaining name is opened by name alone.
    #[test]
    fn spin_internal_names_are_opened_one_by_one() {
        let policy = EgressPolicy::parse("dev-facade.spin.internal").unwrap();
        assert_eq!(
            policy.check_url("http://dev-facade.spin.internal/devs/alice"),
            Ok(())
        );
        assert_eq!(
            policy.check_url("http://Dev-Facade.spin.internal./"),
            Ok(())
        );
        for url in [
            "http://gateway.spin.internal/",
            "http://other.spin.internal/",
            "http://dev-facade.spin.internal.evil.example/",
        ] {
            let verdict = policy.check_url(url);
            assert_eq!(
                verdict.is_err(),
                url.contains(".spin.internal/"),
                "{url}: {verdict:?}"
            );
        }
    }

    #[test]
    fn listeners_are_reached_by_their_address_or_this_machine_on_their_port() {
        let listener: SocketAddr = "127.0.0.1:9763".parse().unwrap();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(reaches_listener(ip("127.0.0.1"), 9763, listener));
        assert!(reaches_listener(ip("127.0.0.2"), 9763, listener));
        assert!(reaches_listener(ip("::ffff:127.0.0.1"), 9763, listener));
        assert!(reaches_listener(ip("0.0.0.0"), 9763, listener));
        assert!(!reaches_listener(ip("127.0.0.1"), 9764, listener));
        assert!(!reaches_listener(ip("10.0.0.1"), 9763, listener));
        let everywhere: SocketAddr = "0.0.0.0:8280".parse().unwrap();
        assert!(reaches_listener(ip("::1"), 8280, everywhere));
        assert!(reaches_listener(
            ip("10.0.0.1"),
            8280,
            "10.0.0.1:8280".parse().unwrap()
        ));
    }

    #[test]
    fn urls_give_host_and_port() {
        assert_eq!(host_and_port("http://H:81/x"), Some(("h".into(), 81)));
        assert_eq!(host_and_port("https://h/x"), Some(("h".into(), 443)));
        assert_eq!(host_and_port("wss://h/x"), Some(("h".into(), 443)));
        assert_eq!(host_and_port("ws://h:81/x"), Some(("h".into(), 81)));
        assert_eq!(host_and_port("http://[::1]/"), Some(("::1".into(), 80)));
        assert_eq!(host_and_port("http://h:x/"), None);
    }
}
