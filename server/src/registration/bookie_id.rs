//! The bookie id: `IP:PORT`, from --advertised-address or the bound listen address, checked
//! like BookKeeper's `BookieId.validateBookieId` (protocol §6.2).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Why no bookie id can be made.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BookieIdError {
    /// The listen address is IPv6: `BookieSocketAddress` splits ids on `:`, so an IPv6
    /// literal cannot be an id.
    Ipv6 { address: SocketAddr },
    /// The listen address is 0.0.0.0 and the host has no non-loopback IPv4 address.
    NoPrimaryIpv4,
    /// The id has a character BookKeeper refuses, or is `readonly`.
    Invalid { id: String },
}

impl std::fmt::Display for BookieIdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BookieIdError::Ipv6 { address } => write!(
                f,
                "cannot make a bookie id from the IPv6 address {address}: pass \
                 --advertised-address IPV4:PORT"
            ),
            BookieIdError::NoPrimaryIpv4 => write!(
                f,
                "listening on 0.0.0.0 but this host has no non-loopback IPv4 address to \
                 advertise: pass --advertised-address IP:PORT"
            ),
            BookieIdError::Invalid { id } => write!(f, "{id:?} is not a valid bookie id"),
        }
    }
}

impl std::error::Error for BookieIdError {}

/// A bookie's id and the address it publishes (the id is that address, `IP:PORT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BookieId {
    /// The id, the last component of its znodes.
    pub id: String,
    /// The address clients are told to connect to.
    pub address: SocketAddr,
}

/// The id of a bookie listening on `listen` (its bound address, port resolved): the
/// advertised address if given, else `listen`, with an unspecified IPv4 replaced by `primary`
/// (the host's primary address, looked up only when needed).
pub fn bookie_id(
    advertised: Option<SocketAddr>,
    listen: SocketAddr,
    primary: impl FnOnce() -> Option<Ipv4Addr>,
) -> Result<BookieId, BookieIdError> {
    assert!(listen.port() != 0, "the listener is bound");
    let address = match advertised {
        Some(address) => address,
        None => match listen.ip() {
            IpAddr::V6(_) => return Err(BookieIdError::Ipv6 { address: listen }),
            IpAddr::V4(ip) if ip.is_unspecified() => {
                let ip = primary().ok_or(BookieIdError::NoPrimaryIpv4)?;
                SocketAddr::new(IpAddr::V4(ip), listen.port())
            }
            IpAddr::V4(_) => listen,
        },
    };
    let id = address.to_string();
    bookie_id_validate(&id)?;
    Ok(BookieId { id, address })
}

/// BookKeeper's rule, verbatim: `[a-zA-Z0-9:-_.\-]+` (where `:-_` is the range 0x3A..=0x5F,
/// so it also admits `;<=>?@[\]^`), and not `readonly`, which names the read-only directory.
pub fn bookie_id_validate(id: &str) -> Result<(), BookieIdError> {
    let allowed = |c: char| {
        c.is_ascii_alphanumeric() || ('\u{3a}'..='\u{5f}').contains(&c) || c == '.' || c == '-'
    };
    if id.is_empty() || id == "readonly" || !id.chars().all(allowed) {
        return Err(BookieIdError::Invalid { id: id.to_string() });
    }
    Ok(())
}

/// The host's primary IPv4: the local address on the interface of the default route, read
/// from `/proc/net/route` and `/proc/net/fib_trie` (no syscall beyond reading files, no
/// packet sent). `None` if there is no non-loopback IPv4 address.
#[must_use]
pub fn primary_ipv4() -> Option<Ipv4Addr> {
    let route = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let fib_trie = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    primary_ipv4_from(&route, &fib_trie)
}

/// `primary_ipv4` on the two files' text: among the non-loopback local addresses of
/// `fib_trie` (each `|-- A` line followed by `/32 host LOCAL`), the first inside a subnet
/// routed through the default route's interface, else the first of them.
#[must_use]
pub fn primary_ipv4_from(route: &str, fib_trie: &str) -> Option<Ipv4Addr> {
    let mut locals: Vec<Ipv4Addr> = Vec::new();
    let mut previous: Option<Ipv4Addr> = None;
    for line in fib_trie.lines() {
        let line = line.trim();
        if let Some(address) = line.strip_prefix("|-- ") {
            previous = address.parse().ok();
        } else if line.starts_with("/32 host LOCAL") {
            if let Some(address) = previous.take() {
                if !address.is_loopback() && !locals.contains(&address) {
                    locals.push(address);
                }
            }
        }
    }
    let routes = routes_parse(route);
    let default_interface = routes
        .iter()
        .find(|route| route.mask == 0 && route.destination == 0)
        .map(|route| route.interface);
    let on_default = |address: &Ipv4Addr| {
        let address = u32::from(*address);
        routes.iter().any(|route| {
            Some(route.interface) == default_interface
                && route.mask != 0
                && address & route.mask == route.destination & route.mask
        })
    };
    locals
        .iter()
        .copied()
        .find(on_default)
        .or_else(|| locals.first().copied())
}

struct Route<'a> {
    interface: &'a str,
    destination: u32,
    mask: u32,
}

/// The routes of `/proc/net/route`, addresses as host-order `u32`s.
fn routes_parse(route: &str) -> Vec<Route<'_>> {
    route
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let interface = *fields.first()?;
            let destination = hex_address(fields.get(1)?)?;
            let mask = hex_address(fields.get(7)?)?;
            Some(Route {
                interface,
                destination,
                mask,
            })
        })
        .collect()
}

/// The kernel prints each address as the `u32` it holds in memory (network byte order) in
/// host-order hex, so its native-endian bytes are the address's octets.
fn hex_address(field: &str) -> Option<u32> {
    let raw = u32::from_str_radix(field, 16).ok()?;
    Some(u32::from(Ipv4Addr::from(raw.to_ne_bytes())))
}
