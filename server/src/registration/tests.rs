//! The pure parts of the registration: bookie ids, the primary address, the znode contents
//! and the move steps. The ZooKeeper side runs in server/tests/it/registration.rs.

use super::bookie_id::{bookie_id, bookie_id_validate, primary_ipv4_from, BookieIdError};
use super::steps::{place_wanted, step_next, Held, Step};
use super::znode::{service_info_encode, Cookie, CookieError, Paths, Place};
use std::net::{Ipv4Addr, SocketAddr};

fn address(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

#[test]
fn bookie_id_comes_from_the_advertised_or_listen_address() {
    let primary = || Some(Ipv4Addr::new(192, 0, 2, 2));
    let check = |advertised: Option<&str>, listen: &str, expect: Result<&str, BookieIdError>| {
        let got = bookie_id(advertised.map(address), address(listen), primary);
        assert_eq!(
            got.map(|id| id.id),
            expect.map(str::to_string),
            "{advertised:?} {listen}"
        );
    };
    check(None, "127.0.0.1:3181", Ok("127.0.0.1:3181"));
    check(None, "0.0.0.0:3181", Ok("192.0.2.2:3181"));
    check(Some("10.1.2.3:4000"), "0.0.0.0:3181", Ok("10.1.2.3:4000"));
    check(Some("10.1.2.3:4000"), "[::1]:3181", Ok("10.1.2.3:4000"));
    check(
        None,
        "[::1]:3181",
        Err(BookieIdError::Ipv6 {
            address: address("[::1]:3181"),
        }),
    );
    let none = bookie_id(None, address("0.0.0.0:3181"), || None);
    assert_eq!(none, Err(BookieIdError::NoPrimaryIpv4));
}

#[test]
fn bookie_id_validation_follows_bookkeeper() {
    for good in [
        "127.0.0.1:3181",
        "bookie-1.example_x:3181",
        "a@b[c]^",
        "UPPER.lower",
    ] {
        assert_eq!(bookie_id_validate(good), Ok(()), "{good}");
    }
    for bad in ["", "readonly", "a b", "a/b", "a,b", "ä:1", "a\n"] {
        assert!(bookie_id_validate(bad).is_err(), "{bad:?} accepted");
    }
}

// /proc/net/route and the LOCAL part of /proc/net/fib_trie of a host with eth0 on
// 192.0.2.2/24 and a default route through it (as on the machine this was written on).
const ROUTE: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
";
const FIB_TRIE: &str = "\
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 10.9.0.0/16 2 0 2
           |-- 10.9.0.7
              /32 host LOCAL
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
";

#[test]
fn primary_ipv4_is_the_local_address_on_the_default_route() {
    // Only on little-endian hosts does the kernel print 192.0.2.0 as 000200C0.
    if cfg!(target_endian = "little") {
        assert_eq!(
            primary_ipv4_from(ROUTE, FIB_TRIE),
            Some(Ipv4Addr::new(192, 0, 2, 2))
        );
    }
    // No default route: the first non-loopback local address.
    let header_only = ROUTE.lines().next().unwrap();
    assert_eq!(
        primary_ipv4_from(header_only, FIB_TRIE),
        Some(Ipv4Addr::new(10, 9, 0, 7))
    );
    let loopback_only = "Local:\n  |-- 127.0.0.1\n     /32 host LOCAL\n";
    assert_eq!(primary_ipv4_from(ROUTE, loopback_only), None);
    assert_eq!(primary_ipv4_from("", ""), None);
}

#[test]
fn paths_follow_the_bookkeeper_layout() {
    let paths = Paths::new("/ledgers");
    assert_eq!(paths.available, "/ledgers/available");
    assert_eq!(paths.readonly, "/ledgers/available/readonly");
    assert_eq!(paths.cookies, "/ledgers/cookies");
    assert_eq!(paths.instance_id, "/ledgers/INSTANCEID");
    assert_eq!(
        paths.registration(Place::Available, "10.0.0.1:3181"),
        "/ledgers/available/10.0.0.1:3181"
    );
    assert_eq!(
        paths.registration(Place::ReadOnly, "10.0.0.1:3181"),
        "/ledgers/available/readonly/10.0.0.1:3181"
    );
    assert_eq!(paths.cookie("b:1"), "/ledgers/cookies/b:1");
}

#[test]
fn service_info_is_one_bookie_rpc_endpoint() {
    let mut expect = vec![0x32, 34];
    expect.extend([0x0a, 6]);
    expect.extend(b"bookie");
    // 3181 = 0x0c6d: varint 0xed 0x18.
    expect.extend([0x10, 0xed, 0x18]);
    expect.extend([0x1a, 9]);
    expect.extend(b"127.0.0.1");
    expect.extend([0x22, 10]);
    expect.extend(b"bookie-rpc");
    assert_eq!(expect.len(), 2 + 34);
    assert_eq!(service_info_encode("127.0.0.1", 3181), expect);
    // A one-byte port varint, a longer host.
    let small = service_info_encode("10.200.300.400", 80);
    assert_eq!(&small[..2], &[0x32, 38]);
    assert_eq!(&small[10..12], &[0x10, 80]);
}

#[test]
fn cookie_is_layout_5_and_text_format() {
    let cookie = Cookie::new("127.0.0.1:3181", "/var/lib/ringlog", None);
    let text = "5\nbookieHost: \"127.0.0.1:3181\"\njournalDir: \"/var/lib/ringlog\"\n\
                ledgerDirs: \"1\\t/var/lib/ringlog\"\n";
    assert_eq!(cookie.encode(), text);
    assert_eq!(Cookie::parse(text.as_bytes()), Ok(cookie));
    let with_instance = Cookie::new("b:1", "/d \"q\" \\ ä", Some("a1-b2".to_string()));
    let encoded = with_instance.encode();
    assert!(
        encoded.contains("journalDir: \"/d \\\"q\\\" \\\\ \\303\\244\"\n"),
        "{encoded}"
    );
    assert!(encoded.ends_with("instanceId: \"a1-b2\"\n"), "{encoded}");
    assert_eq!(Cookie::parse(encoded.as_bytes()), Ok(with_instance));
}

#[test]
fn cookie_parse_reads_java_cookies_and_refuses_others() {
    // Layout 4 from a Java bookie, with an index dir field and a trailing blank line.
    let java = "4\nbookieHost: \"10.0.0.1:3181\"\njournalDir: \"/j1,/j2\"\n\
                ledgerDirs: \"2\\t/l1\\t/l2\"\ninstanceId: \"x\"\nindexDirs: \"1\\t/i\"\n\n";
    let cookie = Cookie::parse(java.as_bytes()).unwrap();
    assert_eq!(cookie.journal_dirs, "/j1,/j2");
    assert_eq!(cookie.ledger_dirs, "2\t/l1\t/l2");
    assert_eq!(cookie.instance_id.as_deref(), Some("x"));
    let version_3 = "3\n10.0.0.1:3181\n/j\n1\t/l\n";
    assert_eq!(
        Cookie::parse(version_3.as_bytes()).unwrap().journal_dirs,
        "/j"
    );
    let check = |text: &str, expect: CookieError| {
        assert_eq!(Cookie::parse(text.as_bytes()), Err(expect), "{text:?}");
    };
    check("", CookieError::Version);
    check("2\na\nb\nc\n", CookieError::Version);
    check("5\nbookieHost \"a\"\n", CookieError::Syntax);
    check("5\nbookieHost: \"a\n", CookieError::Syntax);
    check("5\nbookieHost: \"\\x\"\n", CookieError::Syntax);
    check(
        "5\nbookieHost: \"a\"\nledgerDirs: \"1\\t/l\"\n",
        CookieError::FieldMissing("journalDir"),
    );
}

#[test]
fn steps_create_the_target_before_deleting_the_other() {
    let held = |available, read_only| Held {
        available,
        read_only,
    };
    let check = |from: Held, target: Option<Place>, expect: &[Step]| {
        let mut now = from;
        let mut steps = Vec::new();
        while let Some(step) = step_next(now, target) {
            assert!(steps.len() < 3, "{from:?} -> {target:?} does not settle");
            steps.push(step);
            match step {
                Step::Create(place) => now.set(place, true),
                Step::Delete(place) => now.set(place, false),
            }
        }
        assert_eq!(steps, expect, "{from:?} -> {target:?}");
    };
    let (available, read_only) = (Some(Place::Available), Some(Place::ReadOnly));
    check(
        held(false, false),
        available,
        &[Step::Create(Place::Available)],
    );
    check(held(true, false), available, &[]);
    check(
        held(true, false),
        read_only,
        &[
            Step::Create(Place::ReadOnly),
            Step::Delete(Place::Available),
        ],
    );
    check(
        held(false, true),
        available,
        &[
            Step::Create(Place::Available),
            Step::Delete(Place::ReadOnly),
        ],
    );
    // Halfway through a move whose delete failed.
    check(
        held(true, true),
        read_only,
        &[Step::Delete(Place::Available)],
    );
    check(
        held(true, true),
        None,
        &[
            Step::Delete(Place::Available),
            Step::Delete(Place::ReadOnly),
        ],
    );
    check(held(false, true), None, &[Step::Delete(Place::ReadOnly)]);
    check(held(false, false), None, &[]);
    assert_eq!(place_wanted(false), Place::Available);
    assert_eq!(place_wanted(true), Place::ReadOnly);
}

#[test]
fn errors_say_what_differs_and_what_to_do() {
    use super::RegistrationError;
    let mismatch = |stored: Cookie, ours: Cookie| {
        RegistrationError::CookieMismatch {
            path: "/ledgers/cookies/b:1".into(),
            stored: Box::new(stored),
            ours: Box::new(ours),
        }
        .to_string()
    };
    let message = mismatch(
        Cookie::new("b:1", "/old", None),
        Cookie::new("b:1", "/new", None),
    );
    assert!(message.starts_with(
        "the cookie /ledgers/cookies/b:1 was written for journal \
                                 directory \"/old\" but this bookie uses \"/new\": "
    ));
    assert!(message.contains("--data-dir"), "{message}");
    let message = mismatch(
        Cookie::new("c:2", "/d", Some("one".into())),
        Cookie::new("b:1", "/d", Some("two".into())),
    );
    assert!(message.contains("\"/d\" of bookie \"c:2\" in cluster instance Some(\"one\")"));
    assert!(message.contains("uses \"/d\" as \"b:1\" in cluster instance Some(\"two\")"));
    let held = |owner| {
        RegistrationError::RegistrationHeld {
            path: "/ledgers/available/b:1".into(),
            owner,
            waited: std::time::Duration::from_millis(12_000),
        }
        .to_string()
    };
    let message = held(0x1234);
    assert!(
        message.contains("held by ZooKeeper session 0x1234 after 12.0 s"),
        "{message}"
    );
    assert!(held(0).contains("persistent znode"));
}
