//! ZooKeeper registration against a real ZooKeeper: the znodes a BookKeeper client reads,
//! deregistration on SIGTERM, a SIGKILLed bookie's node living until its session expires,
//! a restart that waits for it, re-registration after expiry, and the read-only move.
//!
//! One ZooKeeper serves every test of this binary (scripts/zk.sh on a free loopback port,
//! stopped when the binary exits), or RINGLOG_TEST_ZK=HOST:PORT if set. Each test works under
//! its own --zk-root. Without Java or ZooKeeper the tests skip with the reason, except under
//! CI or REQUIRE_URING, where they fail.

use crate::support::{uring_available, Server, TestDir};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wire::code;
use zookeeper_client::{Acl, Acls, AuthId, Client, CreateMode, Permission, Stat};

/// Session timeout of the bookies under test: ZooKeeper (tick 200 ms) expires a killed one
/// about this long after its last ping.
const SESSION_TIMEOUT_MS: &str = "2000";
/// How long any expected change may take, with room for a slow machine and for an external
/// ZooKeeper on the default 2 s tick.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(20);
/// The test's own session: long, so a znode it holds outlives a bookie's wait for it.
const TEST_SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// The ZooKeeper of this test binary; `None` (after printing why) when tests may skip.
pub(crate) fn zookeeper() -> Option<&'static str> {
    static ADDRESS: OnceLock<Result<String, String>> = OnceLock::new();
    let address = ADDRESS.get_or_init(zookeeper_start);
    match address {
        Ok(address) => Some(address),
        Err(reason) => {
            let required =
                std::env::var_os("CI").is_some() || std::env::var_os("REQUIRE_URING").is_some();
            assert!(
                !required,
                "ZooKeeper required here but unavailable: {reason}"
            );
            println!("SKIP: ZooKeeper unavailable: {reason}");
            None
        }
    }
}

fn zookeeper_start() -> Result<String, String> {
    if let Ok(address) = std::env::var("RINGLOG_TEST_ZK") {
        return Ok(address);
    }
    let port = free_port();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("it-zk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    zk_script(&["start", &port.to_string(), &dir.display().to_string()])?;
    Ok(format!("127.0.0.1:{port}"))
}

/// Runs scripts/zk.sh; a server it starts is stopped when this test binary exits.
fn zk_script(args: &[&str]) -> Result<(), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/zk.sh");
    let output = Command::new(&script)
        .args(args)
        .env("ZK_WATCH_PID", std::process::id().to_string())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {args:?} failed: {}{}",
            script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// A port free now and below the kernel's ephemeral range: a bookie of these tests keeps its
/// port across restarts, and a port the kernel hands out for `:0` (another server's HTTP port)
/// or for a client's connection, in any of the tests running beside it, could otherwise take it
/// while the bookie is down or not yet bound. Each call moves on, so two tests never get the
/// same one.
pub(crate) fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 10_000;
    let high = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .map_or(32_768, |low| low.max(LOW + 1_000));
    let span = high - LOW;
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let port = LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(port).unwrap();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {LOW}..{high}");
}

/// A blocking ZooKeeper client for the checks. Its runtime has a worker thread, so that
/// its session keeps pinging (and its ephemeral znodes live) between calls.
pub(crate) struct Zk {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl Zk {
    pub(crate) fn connect(address: &str) -> Zk {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let connector = Client::connector().with_session_timeout(TEST_SESSION_TIMEOUT);
        let client = runtime.block_on(connector.connect(address)).unwrap();
        Zk { runtime, client }
    }

    fn stat(&self, path: &str) -> Option<Stat> {
        self.runtime.block_on(self.client.check_stat(path)).unwrap()
    }

    pub(crate) fn data(&self, path: &str) -> Vec<u8> {
        self.runtime.block_on(self.client.get_data(path)).unwrap().0
    }

    /// Creates `path` (and its missing parents, persistent) as `mode`.
    pub(crate) fn create(&self, path: &str, data: &[u8], mode: CreateMode) {
        let parent = &path[..path.rfind('/').unwrap()];
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        self.runtime
            .block_on(self.client.mkdir(parent, &persistent))
            .unwrap();
        let options = mode.with_acls(Acls::anyone_all());
        self.runtime
            .block_on(self.client.create(path, data, &options))
            .unwrap();
    }

    /// Takes READ away from everyone on `path`: listing its children fails with NoAuth.
    pub(crate) fn acl_deny_read(&self, path: &str) {
        let permission = Permission::WRITE | Permission::CREATE | Permission::DELETE;
        let acl = [Acl::new(
            permission | Permission::ADMIN,
            AuthId::new("world", "anyone"),
        )];
        self.runtime
            .block_on(self.client.set_acl(path, &acl, None))
            .unwrap();
    }

    /// Replaces `path`'s data (any version).
    pub(crate) fn set(&self, path: &str, data: &[u8]) {
        self.runtime
            .block_on(self.client.set_data(path, data, None))
            .unwrap();
    }

    /// Deletes `path` (any version).
    pub(crate) fn delete(&self, path: &str) {
        self.runtime
            .block_on(self.client.delete(path, None))
            .unwrap();
    }

    fn session(&self) -> i64 {
        self.client.session_id().0
    }

    /// Waits until `path`'s stat satisfies `ok`; returns that stat.
    fn wait(&self, path: &str, what: &str, ok: impl Fn(&Option<Stat>) -> bool) -> Option<Stat> {
        let deadline = Instant::now() + CHANGE_TIMEOUT;
        loop {
            let stat = self.stat(path);
            if ok(&stat) {
                return stat;
            }
            assert!(
                Instant::now() < deadline,
                "{path}: {what} within {CHANGE_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_present(&self, path: &str) -> Stat {
        self.wait(path, "created", Option::is_some).unwrap()
    }

    fn wait_absent(&self, path: &str) {
        self.wait(path, "deleted", Option::is_none);
    }
}

/// A test's metadata root, unique per test and run.
pub(crate) fn root(test: &str) -> String {
    format!("/it-{test}-{}", std::process::id())
}

pub(crate) fn zk_args<'a>(address: &'a str, root: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--zk", address, "--zk-root", root];
    args.extend_from_slice(extra);
    args
}

/// The (id, host, port, protocol) of each endpoint of a `BookieServiceInfoFormat`.
fn service_info_endpoints(bytes: &[u8]) -> Vec<(String, String, u64, String)> {
    let mut endpoints = Vec::new();
    for (field, value) in protobuf_fields(bytes) {
        assert_eq!(field, 6, "only endpoints are published");
        let ProtobufValue::Bytes(endpoint) = value else {
            panic!("endpoint is a message")
        };
        let (mut id, mut host, mut port, mut protocol) = Default::default();
        for (field, value) in protobuf_fields(&endpoint) {
            match (field, value) {
                (1, ProtobufValue::Bytes(text)) => id = String::from_utf8(text).unwrap(),
                (2, ProtobufValue::Varint(number)) => port = number,
                (3, ProtobufValue::Bytes(text)) => host = String::from_utf8(text).unwrap(),
                (4, ProtobufValue::Bytes(text)) => protocol = String::from_utf8(text).unwrap(),
                (field, _) => panic!("unexpected endpoint field {field}"),
            }
        }
        endpoints.push((id, host, port, protocol));
    }
    endpoints
}

enum ProtobufValue {
    Varint(u64),
    Bytes(Vec<u8>),
}

/// A minimal protobuf reader (varint and length-delimited fields), independent of the
/// server's encoder.
fn protobuf_fields(mut bytes: &[u8]) -> Vec<(u64, ProtobufValue)> {
    fn varint(bytes: &mut &[u8]) -> u64 {
        let mut value = 0;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = bytes.split_first().unwrap();
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
        }
        panic!("varint too long")
    }
    let mut fields = Vec::new();
    while !bytes.is_empty() {
        let tag = varint(&mut bytes);
        let value = match tag & 7 {
            0 => ProtobufValue::Varint(varint(&mut bytes)),
            2 => {
                let length = usize::try_from(varint(&mut bytes)).unwrap();
                let (value, rest) = bytes.split_at(length);
                bytes = rest;
                ProtobufValue::Bytes(value.to_vec())
            }
            wire => panic!("unexpected wire type {wire}"),
        };
        fields.push((tag >> 3, value));
    }
    fields
}

fn available(root: &str, id: &str) -> String {
    format!("{root}/available/{id}")
}

fn readonly(root: &str, id: &str) -> String {
    format!("{root}/available/readonly/{id}")
}

#[test]
fn registers_parents_node_and_cookie_and_sigterm_deregisters() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("basic");
    let dir = TestDir::new("registration-basic");
    let server = Server::start(&dir.0, 2, &zk_args(address, &root, &[]));
    let id = server.address.to_string();
    let node = zk.wait_present(&available(&root, &id));
    assert_ne!(node.ephemeral_owner, 0, "the registration is ephemeral");
    for parent in [
        root.clone(),
        format!("{root}/available"),
        format!("{root}/available/readonly"),
    ] {
        let stat = zk.stat(&parent).unwrap();
        assert_eq!(stat.ephemeral_owner, 0, "{parent} is persistent");
        assert!(zk.data(&parent).is_empty(), "{parent} is empty");
    }
    let endpoints = service_info_endpoints(&zk.data(&available(&root, &id)));
    let port = u64::from(server.address.port());
    let expect = (
        "bookie".into(),
        "127.0.0.1".into(),
        port,
        "bookie-rpc".into(),
    );
    assert_eq!(endpoints, vec![expect]);
    let cookie = String::from_utf8(zk.data(&format!("{root}/cookies/{id}"))).unwrap();
    let journal = std::fs::canonicalize(&dir.0).unwrap();
    let expect = format!(
        "5\nbookieHost: \"{id}\"\njournalDir: \"{0}\"\nledgerDirs: \"1\\t{0}\"\n",
        journal.display()
    );
    assert_eq!(cookie, expect);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    // Deleted before the process exited, not by a session expiry later.
    assert!(zk.stat(&available(&root, &id)).is_none());
    assert!(
        zk.stat(&format!("{root}/cookies/{id}")).is_some(),
        "the cookie stays"
    );
    assert!(exited
        .stdout
        .iter()
        .any(|line| line.starts_with("ringlog registered as ")));
}

#[test]
fn sigkill_leaves_the_node_until_the_session_expires() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("kill");
    let dir = TestDir::new("registration-kill");
    let extra = ["--zk-session-timeout-ms", SESSION_TIMEOUT_MS];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let path = available(&root, &server.address.to_string());
    let owner = zk.wait_present(&path).ephemeral_owner;
    server.kill();
    let killed = Instant::now();
    let stat = zk.stat(&path).expect("nothing deleted the node");
    assert_eq!(stat.ephemeral_owner, owner);
    zk.wait_absent(&path);
    // ZooKeeper, not ringlog, removed it: one session timeout after the last ping.
    assert!(
        killed.elapsed() >= Duration::from_millis(500),
        "{:?}",
        killed.elapsed()
    );
}

#[test]
fn restart_after_sigkill_waits_for_the_old_node_then_registers() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("restart");
    let dir = TestDir::new("registration-restart");
    // A fixed id across the two runs (their listen ports differ).
    let advertised = format!("127.0.0.1:{}", free_port());
    let extra = [
        "--zk-session-timeout-ms",
        SESSION_TIMEOUT_MS,
        "--advertised-address",
        advertised.as_str(),
    ];
    let args = zk_args(address, &root, &extra);
    let path = available(&root, &advertised);
    let first = Server::start(&dir.0, 1, &args);
    let owner_first = zk.wait_present(&path).ephemeral_owner;
    first.kill();
    let second = Server::start(&dir.0, 1, &args);
    let stat = zk.wait(&path, "taken over", |stat| {
        stat.as_ref()
            .is_some_and(|stat| stat.ephemeral_owner != owner_first)
    });
    assert_ne!(stat.unwrap().ephemeral_owner, 0);
    let exited = second.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    let waited = exited
        .stderr
        .iter()
        .any(|line| line.contains("waiting up to") && line.contains(&path));
    assert!(waited, "the restart waited: {:?}", exited.stderr);
    assert!(zk.stat(&path).is_none());
}

#[test]
fn a_node_held_by_a_live_session_fails_the_start_and_stays() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("held");
    let dir = TestDir::new("registration-held");
    let advertised = format!("127.0.0.1:{}", free_port());
    let path = available(&root, &advertised);
    zk.create(&path, b"", CreateMode::Ephemeral);
    let extra = [
        "--zk-session-timeout-ms",
        "500",
        "--advertised-address",
        advertised.as_str(),
    ];
    let args = crate::support::serve_args(&dir.0, 1, &zk_args(address, &root, &extra));
    let exited = Server::run_to_exit(&args);
    assert_eq!(exited.status.code(), Some(1), "{:?}", exited.stdout);
    let message = exited.stderr.join("\n");
    assert!(
        message.contains("is still held by ZooKeeper session"),
        "{message}"
    );
    assert!(message.contains(&path), "{message}");
    let stat = zk.stat(&path).expect("never deleted");
    assert_eq!(stat.ephemeral_owner, zk.session());
}

#[test]
fn the_cookie_names_the_first_data_directory() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("cookie-dirs");
    let dir = TestDir::new("registration-cookie-dirs");
    let (first, second) = (dir.0.join("first"), dir.0.join("second"));
    let list = format!("{},{}", first.display(), second.display());
    let extra = ["--data-dir", list.as_str()];
    let server = Server::start(&first, 2, &zk_args(address, &root, &extra));
    let id = server.address.to_string();
    zk.wait_present(&available(&root, &id));
    let cookie = String::from_utf8(zk.data(&format!("{root}/cookies/{id}"))).unwrap();
    let journal = std::fs::canonicalize(&first).unwrap();
    let expect = format!(
        "5\nbookieHost: \"{id}\"\njournalDir: \"{0}\"\nledgerDirs: \"1\\t{0}\"\n",
        journal.display()
    );
    assert_eq!(cookie, expect);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
}

#[test]
fn a_cookie_for_another_journal_fails_the_start() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("cookie");
    let dir = TestDir::new("registration-cookie");
    let advertised = format!("127.0.0.1:{}", free_port());
    let cookie = format!(
        "5\nbookieHost: \"{advertised}\"\njournalDir: \"/elsewhere\"\n\
         ledgerDirs: \"1\\t/elsewhere\"\n"
    );
    let cookie_path = format!("{root}/cookies/{advertised}");
    zk.create(&cookie_path, cookie.as_bytes(), CreateMode::Persistent);
    let extra = ["--advertised-address", advertised.as_str()];
    let args = crate::support::serve_args(&dir.0, 1, &zk_args(address, &root, &extra));
    let exited = Server::run_to_exit(&args);
    assert_eq!(exited.status.code(), Some(1), "{:?}", exited.stdout);
    let message = exited.stderr.join("\n");
    assert!(message.contains("\"/elsewhere\""), "{message}");
    assert!(message.contains(&cookie_path), "{message}");
    assert!(zk.stat(&available(&root, &advertised)).is_none());
    assert_eq!(
        zk.data(&cookie_path),
        cookie.as_bytes(),
        "the cookie is kept"
    );
}

#[test]
fn an_unreachable_zookeeper_exits_1_naming_it() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("registration-unreachable");
    // Nothing listens there: connections are refused at once.
    let address = format!("127.0.0.1:{}", free_port());
    let extra = ["--zk", address.as_str(), "--zk-connect-timeout-ms", "1000"];
    let started = Instant::now();
    let exited = Server::run_to_exit(&crate::support::serve_args(&dir.0, 1, &extra));
    assert_eq!(exited.status.code(), Some(1), "{:?}", exited.stdout);
    let message = exited.stderr.join("\n");
    assert!(
        message.contains(&format!("cannot reach ZooKeeper at {address}")),
        "{message}"
    );
    assert!(started.elapsed() >= Duration::from_millis(1000));
    assert!(
        !exited
            .stdout
            .iter()
            .any(|line| line.starts_with("ringlog listening")),
        "no port opened: {:?}",
        exited.stdout
    );
}

#[test]
fn an_expired_session_registers_again() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("expiry");
    let dir = TestDir::new("registration-expiry");
    let extra = ["--zk-session-timeout-ms", "1000"];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let path = available(&root, &server.address.to_string());
    let owner = zk.wait_present(&path).ephemeral_owner;
    // Frozen past its session timeout (a long pause of the whole process): ZooKeeper
    // expires the session and drops the node.
    signal(&server, "-STOP");
    zk.wait_absent(&path);
    signal(&server, "-CONT");
    let stat = zk.wait(&path, "registered again", |stat| {
        stat.as_ref()
            .is_some_and(|stat| stat.ephemeral_owner != owner)
    });
    assert_ne!(stat.unwrap().ephemeral_owner, 0);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    assert!(zk.stat(&path).is_none());
}

fn signal(server: &Server, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// `chattr +i` on a directory while alive: even root cannot create files in it, so the
/// journal's next segment cannot be made and the journal turns read-only.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Result<Immutable, String> {
        let output = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .output()
            .map_err(|error| format!("cannot run chattr: {error}"))?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        Ok(Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_journal_moves_the_registration_and_back() {
    let (true, Some(address)) = (uring_available(), zookeeper()) else {
        return;
    };
    let zk = Zk::connect(address);
    let root = root("readonly");
    let dir = TestDir::new("registration-readonly");
    // Small segments: a few hundred adds roll over to the spare and need a new segment.
    let extra = ["--segment-size", "65536"];
    let server = Server::start(&dir.0, 1, &zk_args(address, &root, &extra));
    let id = server.address.to_string();
    zk.wait_present(&available(&root, &id));
    let immutable = match Immutable::set(&dir.0.join("shard-0")) {
        Ok(immutable) => immutable,
        Err(reason) => {
            let required =
                std::env::var_os("CI").is_some() || std::env::var_os("REQUIRE_URING").is_some();
            assert!(!required, "chattr +i needed here: {reason}");
            println!("SKIP: cannot make the journal read-only with chattr +i: {reason}");
            return;
        }
    };
    let mut client = server.connect();
    let key = crate::support::KEY;
    let refused = (0..5000).find(|&entry| client.add(0, &key, 7, entry) == code::EREADONLY);
    assert!(refused.is_some(), "the journal never turned read-only");
    zk.wait_present(&readonly(&root, &id));
    zk.wait_absent(&available(&root, &id));
    drop(immutable);
    // The journal retries segment creation every few hundred loop turns: drive turns.
    let deadline = Instant::now() + CHANGE_TIMEOUT;
    while zk.stat(&available(&root, &id)).is_none() {
        assert!(Instant::now() < deadline, "never writable again");
        for _ in 0..100 {
            client.read(0, 7, 0, None);
        }
    }
    zk.wait_absent(&readonly(&root, &id));
    assert_eq!(client.add(0, &key, 7, refused.unwrap()), code::EOK);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    let moved = exited
        .stdout
        .iter()
        .filter(|line| line.starts_with("ringlog: registration moves to "))
        .count();
    assert_eq!(moved, 2, "{:?}", exited.stdout);
}

#[test]
fn a_zookeeper_outage_does_not_stop_the_shards() {
    // Its own ZooKeeper, to stop and restart (the shared one serves the other tests).
    let (true, Some(_)) = (uring_available(), zookeeper()) else {
        return;
    };
    let port = free_port().to_string();
    let zk_dir = TestDir::new("registration-outage-zk");
    let zk_dir_name = zk_dir.0.display().to_string();
    zk_script(&["start", &port, &zk_dir_name]).unwrap();
    let address = format!("127.0.0.1:{port}");
    let root = root("outage");
    let dir = TestDir::new("registration-outage");
    // The collector runs too: its rounds fail while ZooKeeper is down, and delete nothing
    // once it is back (ledger 3 has its metadata).
    {
        let zk = Zk::connect(&address);
        let layout = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";
        zk.create(&format!("{root}/LAYOUT"), layout, CreateMode::Persistent);
        zk.create(
            &format!("{root}/00/0000/L0003"),
            b"",
            CreateMode::Persistent,
        );
    }
    let extra = ["--zk-session-timeout-ms", "4000", "--gc-interval-ms", "200"];
    let server = Server::start(&dir.0, 1, &zk_args(&address, &root, &extra));
    let path = available(&root, &server.address.to_string());
    let zk = Zk::connect(&address);
    let owner = zk.wait_present(&path).ephemeral_owner;
    drop(zk);
    zk_script(&["stop", &zk_dir_name]).unwrap();
    let mut client = server.connect();
    let key = crate::support::KEY;
    for entry in 0..100 {
        assert_eq!(client.add(0, &key, 3, entry), code::EOK);
    }
    // Back: the node is there again, in the same session if the restart beat the session
    // timeout, else in a new one.
    zk_script(&["start", &port, &zk_dir_name]).unwrap();
    let zk = Zk::connect(&address);
    zk.wait_present(&path);
    // A node found at once may be the old session's, restored by ZooKeeper from its log
    // and about to expire while ringlog registers again: look after that settles.
    std::thread::sleep(Duration::from_secs(5));
    let stat = zk.wait_present(&path);
    if stat.ephemeral_owner != owner {
        println!("the ZooKeeper restart outlasted the session: registered again");
    }
    assert_eq!(client.add(0, &key, 3, 100), code::EOK);
    // Down again at shutdown: the exit is bounded, and the node expires with the session.
    drop(zk);
    zk_script(&["stop", &zk_dir_name]).unwrap();
    let stopping = Instant::now();
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    assert!(
        stopping.elapsed() < Duration::from_secs(15),
        "{:?}",
        stopping.elapsed()
    );
    let message = exited.stderr.join("\n");
    assert!(message.contains("cannot deregister"), "{message}");
    assert!(
        message.contains("server::registration::gc: gc: "),
        "{message}"
    );
    assert_eq!(exited.summary_total("ledgers_deleted"), 0);
}
