//! TLS on the bookie port end to end (docs/security.md): a v3 START_TLS answered in
//! plaintext, then v2 and v3 frames inside TLS 1.3 and 1.2; client certificates and roles;
//! `--tls-required`; bad files refused at start; a failed or stalled handshake closes only its
//! own connection; certificate rotation. Certificates are made by scripts/tls_certs.sh.

use crate::support::{
    body, http_get, metric, reply_owned, rss_bytes, uring_available, Reply, Server, TestDir, KEY,
};
use prost::Message;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::client::DecodedResponse;
use wire::code;
use wire::v3::{self, proto, Operation, Status};

const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The test certificates of scripts/tls_certs.sh (its header lists them) in a directory.
pub(crate) struct Certificates {
    dir: PathBuf,
}

impl Certificates {
    pub(crate) fn make(dir: &Path) -> Certificates {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/tls_certs.sh");
        let output = Command::new("bash").arg(&script).arg(dir).output().unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        Certificates {
            dir: dir.to_owned(),
        }
    }

    pub(crate) fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// A client configuration trusting `ca`, presenting `identity`'s certificate if given,
    /// limited to TLS 1.2 if `tls12`.
    fn client(&self, ca: &str, identity: Option<&str>, tls12: bool) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(self.dir.join(format!("{ca}.pem"))).unwrap())
            .unwrap();
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
            &[&rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS13]
        };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        let config = match identity {
            Some(name) => {
                let chain =
                    vec![
                        CertificateDer::from_pem_file(self.dir.join(format!("{name}.pem")))
                            .unwrap(),
                    ];
                let key =
                    PrivateKeyDer::from_pem_file(self.dir.join(format!("{name}.key"))).unwrap();
                builder.with_client_auth_cert(chain, key).unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        Arc::new(config)
    }
}

/// The flags of a bookie with TLS: the PKCS#8 EC certificate, `extra` besides.
fn tls_flags<'a>(certificates: &'a [String; 3], extra: &[&'a str]) -> Vec<&'a str> {
    let mut flags = vec![
        "--tls-cert",
        certificates[0].as_str(),
        "--tls-key",
        certificates[1].as_str(),
        "--tls-trust",
        certificates[2].as_str(),
    ];
    flags.extend_from_slice(extra);
    flags
}

fn v3_frame(request: &proto::Request) -> Vec<u8> {
    let message = request.encode_to_vec();
    let mut frame = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&message);
    frame
}

fn v3_request(operation: Operation, txn_id: u64) -> proto::Request {
    proto::Request {
        header: proto::BkPacketHeader {
            version: v3::PROTOCOL_VERSION_THREE,
            operation: operation as i32,
            txn_id,
            priority: None,
        },
        ..Default::default()
    }
}

/// The metric `series` once the shards have published it at `expected` (they publish every
/// 100 ms tick); panics with the last value after 5 s.
fn metric_reaches(server: &Server, series: &str, expected: f64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, text) = http_get(server.http.unwrap(), "/metrics");
        let value = metric(&text, series);
        if value == Some(expected) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{series} is {value:?}, not {expected}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// START_TLS as the Java client sends it: the operation and an empty `startTLSRequest`.
fn start_tls_request(txn_id: u64) -> proto::Request {
    let mut request = v3_request(Operation::StartTls, txn_id);
    request.start_tls_request = Some(proto::StartTlsRequest {});
    request
}

fn v3_add(ledger: i64, entry: i64, txn_id: u64) -> proto::Request {
    let mut request = v3_request(Operation::AddEntry, txn_id);
    request.add_request = Some(proto::AddRequest {
        flag: None,
        ledger_id: ledger,
        entry_id: entry,
        master_key: KEY.to_vec(),
        body: body(ledger, entry),
        write_flags: None,
    });
    request
}

/// Reads one length-prefixed frame from `stream`.
fn frame_read(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).ok()?;
    let mut frame = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut frame).ok()?;
    let mut whole = prefix.to_vec();
    whole.extend_from_slice(&frame);
    Some(whole)
}

fn v3_response(frame: &[u8]) -> proto::Response {
    proto::Response::decode(&frame[4..]).unwrap()
}

/// A v2 add or read answer.
struct V2 {
    code: i32,
    ledger: i64,
    entry: i64,
    body: Vec<u8>,
}

fn v2_reply(frame: &[u8]) -> V2 {
    let reply = match wire::client::decode_response(frame, u32::MAX).unwrap() {
        DecodedResponse::Frame { response, .. } => reply_owned(response),
        DecodedResponse::NeedMore => panic!("a whole frame"),
    };
    match reply {
        Reply::Add {
            code,
            ledger,
            entry,
        } => V2 {
            code,
            ledger,
            entry,
            body: Vec::new(),
        },
        Reply::Read {
            code,
            ledger,
            entry,
            body,
            ..
        } => V2 {
            code,
            ledger,
            entry,
            body,
        },
        other => panic!("not an add or read answer: {other:?}"),
    }
}

/// Connects and asks for TLS in plaintext; returns the socket after the EOK answer.
fn start_tls(address: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.write_all(&v3_frame(&start_tls_request(1))).unwrap();
    let response = v3_response(&frame_read(&mut stream).expect("START_TLS answered"));
    assert_eq!(response.status, Status::Eok as i32);
    assert!(response.start_tls_response.is_some());
    assert_eq!(response.header.txn_id, 1);
    stream
}

type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// START_TLS, then a TLS session with `config`; `None` when the handshake fails.
fn tls_connect(address: SocketAddr, config: Arc<ClientConfig>) -> Option<TlsStream> {
    let stream = start_tls(address);
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let connection = ClientConnection::new(config, name).unwrap();
    let mut tls = StreamOwned::new(connection, stream);
    while tls.conn.is_handshaking() {
        if tls.conn.complete_io(&mut tls.sock).is_err() {
            return None;
        }
    }
    Some(tls)
}

fn v2_add(stream: &mut impl Write, ledger: i64, entry: i64) {
    let mut frame = Vec::new();
    wire::client::encode_add_request(&mut frame, 0, &KEY, &body(ledger, entry));
    stream.write_all(&frame).unwrap();
}

/// A v2 add of (ledger, entry) and its answer's code.
fn add_code(stream: &mut (impl Read + Write), ledger: i64, entry: i64) -> i32 {
    v2_add(stream, ledger, entry);
    v2_reply(&frame_read(stream).expect("an answer")).code
}

fn v2_read(stream: &mut impl Write, ledger: i64, entry: i64) {
    let mut frame = Vec::new();
    wire::client::encode_read_request(&mut frame, 0, ledger, entry, None);
    stream.write_all(&frame).unwrap();
}

/// A test directory with the certificates, and the PKCS#8 bookie's files; `None` (the test
/// returns) without io_uring.
fn tls_test(name: &str) -> Option<(TestDir, Certificates, [String; 3])> {
    if !uring_available() {
        return None;
    }
    let dir = TestDir::new(name);
    let certs = Certificates::make(&dir.0.join("certs"));
    let files = certificates_for(&certs, "bookie");
    Some((dir, certs, files))
}

fn certificates_for(certs: &Certificates, cert: &str) -> [String; 3] {
    [
        certs.path(&format!("{cert}.pem")),
        certs.path(&format!("{cert}.key")),
        certs.path("ca.pem"),
    ]
}

#[test]
fn start_tls_then_v2_and_v3_frames_inside_tls_13_and_12_with_each_key_type() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("tls-frames");
    let certs = Certificates::make(&dir.0.join("certs"));
    for (round, bookie) in ["bookie", "bookie-rsa", "bookie-sec1"]
        .into_iter()
        .enumerate()
    {
        let files = certificates_for(&certs, bookie);
        let data = dir.0.join(format!("data-{round}"));
        let server = Server::start(&data, 2, &tls_flags(&files, &[]));
        for tls12 in [false, true] {
            let mut tls = tls_connect(server.address, certs.client("ca", None, tls12))
                .expect("handshake completes");
            let ledger = 10 + i64::try_from(round).unwrap() * 10 + i64::from(tls12);
            // v2 adds and a read, then v3 adds, on the same TLS connection.
            for entry in 0..50 {
                v2_add(&mut tls, ledger, entry);
            }
            for entry in 0..50 {
                let reply = v2_reply(&frame_read(&mut tls).unwrap());
                assert_eq!((reply.code, reply.entry), (code::EOK, entry));
            }
            v2_read(&mut tls, ledger, 7);
            let reply = v2_reply(&frame_read(&mut tls).unwrap());
            assert_eq!(reply.code, code::EOK);
            assert_eq!(reply.body, body(ledger, 7));
            for entry in 50..60 {
                tls.write_all(&v3_frame(&v3_add(ledger, entry, 100 + entry as u64)))
                    .unwrap();
            }
            for entry in 50..60 {
                let response = v3_response(&frame_read(&mut tls).unwrap());
                assert_eq!(response.status, Status::Eok as i32);
                assert_eq!(response.add_response.unwrap().entry_id, entry);
            }
            // A large read answer crosses many TLS records.
            let big = 600_000usize;
            let mut large = vec![0u8; 16];
            large[..8].copy_from_slice(&ledger.to_be_bytes());
            large[8..].copy_from_slice(&60i64.to_be_bytes());
            large.resize(big, 0x5A);
            let mut frame = Vec::new();
            wire::client::encode_add_request(&mut frame, 0, &KEY, &large);
            tls.write_all(&frame).unwrap();
            assert_eq!(v2_reply(&frame_read(&mut tls).unwrap()).code, code::EOK);
            v2_read(&mut tls, ledger, 60);
            let reply = v2_reply(&frame_read(&mut tls).unwrap());
            assert_eq!(reply.code, code::EOK);
            assert_eq!(reply.body, large);
            // A second START_TLS inside TLS: EBADREQ.
            tls.write_all(&v3_frame(&start_tls_request(9))).unwrap();
            assert_eq!(
                v3_response(&frame_read(&mut tls).unwrap()).status,
                Status::Ebadreq as i32
            );
        }
        metric_reaches(&server, "ringlog_tls_handshakes_total", 2.0);
    }
}

#[test]
fn plaintext_still_works_unless_tls_is_required_and_auth_is_always_answered() {
    let Some((dir, certs, files)) = tls_test("tls-required") else {
        return;
    };
    // TLS optional: a plaintext client is served as before.
    let server = Server::start(&dir.0.join("optional"), 1, &tls_flags(&files, &[]));
    let mut plain = server.connect();
    assert_eq!(plain.add(0, &KEY, 1, 0), code::EOK);
    drop(server);
    // Required: plaintext v2 and v3 requests get EUA, AUTH and START_TLS are served.
    let server = Server::start(
        &dir.0.join("required"),
        1,
        &tls_flags(&files, &["--tls-required", "true"]),
    );
    let mut plain = TcpStream::connect(server.address).unwrap();
    plain.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    v2_add(&mut plain, 2, 0);
    let reply = v2_reply(&frame_read(&mut plain).unwrap());
    assert_eq!((reply.code, reply.ledger, reply.entry), (code::EUA, 2, 0));
    v2_read(&mut plain, 2, 0);
    assert_eq!(v2_reply(&frame_read(&mut plain).unwrap()).code, code::EUA);
    plain.write_all(&v3_frame(&v3_add(2, 0, 5))).unwrap();
    let response = v3_response(&frame_read(&mut plain).unwrap());
    assert_eq!(
        (response.status, response.header.txn_id),
        (Status::Eua as i32, 5)
    );
    let mut auth = v3_request(Operation::Auth, 6);
    auth.auth_request = Some(proto::AuthMessage {
        auth_plugin_name: "x".into(),
        payload: vec![],
    });
    plain.write_all(&v3_frame(&auth)).unwrap();
    let response = v3_response(&frame_read(&mut plain).unwrap());
    assert_eq!(response.status, Status::Eok as i32);
    assert_eq!(
        response.auth_response.unwrap().auth_plugin_name,
        wire::AUTH_DISABLED_PLUGIN_NAME
    );
    // After START_TLS on a fresh connection the same add is served.
    let mut tls = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
    assert_eq!(add_code(&mut tls, 2, 0), code::EOK);
    metric_reaches(&server, "ringlog_requests_unauthorized_total", 3.0);
}

#[test]
fn client_certificates_are_verified_and_the_first_role_must_be_authorized() {
    let Some((dir, certs, files)) = tls_test("tls-roles") else {
        return;
    };
    let flags = tls_flags(
        &files,
        &[
            "--tls-client-auth",
            "true",
            "--tls-authorized-roles",
            "broker,admin",
        ],
    );
    let server = Server::start(&dir.0.join("data"), 1, &flags);
    // Role broker (first of "broker,admin"): served.
    let mut broker =
        tls_connect(server.address, certs.client("ca", Some("broker"), false)).unwrap();
    assert_eq!(add_code(&mut broker, 3, 0), code::EOK);
    // First role reader (broker second): EUA; so does an OU without roles.
    for name in ["reader", "no-role"] {
        let mut tls = tls_connect(server.address, certs.client("ca", Some(name), false)).unwrap();
        assert_eq!(add_code(&mut tls, 3, 1), code::EUA, "{name}");
        tls.write_all(&v3_frame(&v3_add(3, 1, 7))).unwrap();
        assert_eq!(
            v3_response(&frame_read(&mut tls).unwrap()).status,
            Status::Eua as i32
        );
    }
    // No certificate, or one from a CA the bookie does not trust: the handshake fails (TLS
    // 1.3 reports a refused client certificate after the client's Finished, as an alert on
    // the first read).
    for identity in [None, Some("foreign")] {
        let refused = match tls_connect(server.address, certs.client("ca", identity, false)) {
            None => true,
            Some(mut tls) => {
                v2_add(&mut tls, 3, 2);
                frame_read(&mut tls).is_none()
            }
        };
        assert!(refused, "{identity:?} was served");
    }
    // A plaintext client gets EUA: only a certificate authorizes.
    let mut plain = TcpStream::connect(server.address).unwrap();
    plain.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    assert_eq!(add_code(&mut plain, 3, 3), code::EUA);
    // The bookie still serves its authorized client.
    assert_eq!(add_code(&mut broker, 3, 1), code::EOK);
    metric_reaches(&server, "ringlog_tls_unauthorized_total", 2.0);
    metric_reaches(&server, "ringlog_tls_handshake_failures_total", 2.0);
}

#[test]
fn bad_tls_files_fail_the_start_naming_the_file() {
    let dir = TestDir::new("tls-bad-files");
    let certs = Certificates::make(&dir.0.join("certs"));
    std::fs::write(dir.0.join("garbage.pem"), "not a certificate\n").unwrap();
    let data = dir.0.join("data");
    let data = data.display().to_string();
    let garbage = dir.0.join("garbage.pem").display().to_string();
    let missing = dir.0.join("missing.pem").display().to_string();
    let (cert, key, ca) = (
        certs.path("bookie.pem"),
        certs.path("bookie.key"),
        certs.path("ca.pem"),
    );
    let (other_key, encrypted) = (certs.path("broker.key"), certs.path("encrypted.key"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--tls-cert", &missing, "--tls-key", &key],
            "missing.pem",
        ),
        (
            vec!["--tls-cert", &garbage, "--tls-key", &key],
            "no certificate found",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &garbage],
            "no private key found",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &encrypted],
            "encrypted",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &other_key],
            "broker.key: refused",
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-trust",
                &garbage,
            ],
            "garbage.pem",
        ),
        (vec!["--tls-cert", &cert], "--tls-cert needs --tls-key"),
        (vec!["--tls-key", &key], "--tls-key needs --tls-cert"),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-client-auth",
                "true",
            ],
            "--tls-trust",
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-trust",
                &ca,
                "--tls-authorized-roles",
                "a",
            ],
            "--tls-client-auth",
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-trust",
                &ca,
                "--tls-client-auth",
                "true",
                "--tls-authorized-roles",
                "a,,b",
            ],
            "no empty item",
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-handshake-timeout-ms",
                "5",
            ],
            "100..=600000",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec![
            "serve",
            "--data-dir",
            &data,
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "off",
        ];
        args.extend_from_slice(&flags);
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_string()).collect();
        let exited = Server::run_to_exit(&args);
        assert_eq!(exited.status.code(), Some(1), "{flags:?}");
        let stderr = exited.stderr.join("\n");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
}

#[test]
fn a_bad_or_stalled_handshake_closes_only_its_own_connection() {
    let Some((dir, certs, files)) = tls_test("tls-hostile") else {
        return;
    };
    let flags = tls_flags(&files, &["--tls-handshake-timeout-ms", "500"]);
    let server = Server::start(&dir.0.join("data"), 1, &flags);
    let mut good = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
    // Garbage instead of a ClientHello: that connection is closed.
    let mut garbage = start_tls(server.address);
    garbage
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5, 0xFF, 0xFF])
        .unwrap();
    let mut byte = [0u8; 1];
    let closed = matches!(garbage.read(&mut byte), Ok(0) | Err(_))
        || matches!(garbage.read(&mut byte), Ok(0) | Err(_));
    assert!(closed, "garbage ClientHello left the connection open");
    // Many connections that stop after START_TLS, one mid-ClientHello: the good one is served
    // meanwhile, and they are closed at the handshake timeout.
    let stalled: Vec<TcpStream> = (0..200).map(|_| start_tls(server.address)).collect();
    let mut partial = start_tls(server.address);
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    let started = Instant::now();
    for entry in 0..100 {
        assert_eq!(add_code(&mut good, 4, entry), code::EOK);
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(1200));
    metric_reaches(&server, "ringlog_tls_handshake_timeouts_total", 201.0);
    metric_reaches(&server, "ringlog_tls_handshake_failures_total", 1.0);
    for mut stream in stalled {
        assert!(matches!(stream.read(&mut byte), Ok(0) | Err(_)));
    }
    assert_eq!(add_code(&mut good, 4, 100), code::EOK);
}

/// The server's resident memory, from /proc.
/// Half-open handshakes held at once (issue 34: as after a broker fleet's restart, or an
/// attacker's flood).
const HALF_OPEN: usize = 10_000;
/// What each may cost the server at most: its connection slot, receive buffer and rustls
/// session waiting for (the rest of) a ClientHello. Measured at about 26 KiB (2026-12-07).
const HALF_OPEN_BYTES_MAX: u64 = 64 * 1024;

#[test]
fn ten_thousand_half_open_handshakes_leave_others_served_and_memory_bounded() {
    let Some((dir, certs, files)) = tls_test("tls-half-open") else {
        return;
    };
    let flags = tls_flags(
        &files,
        &[
            "--tls-handshake-timeout-ms",
            "10000",
            "--connections-max",
            "12000",
        ],
    );
    let server = Server::start(&dir.0.join("data"), 1, &flags);
    let mut good = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
    assert_eq!(add_code(&mut good, 5, 0), code::EOK);
    let rss_before = rss_bytes(server.pid());
    // START_TLS answered, then nothing (every other one stops a few bytes into its
    // ClientHello): each holds a TLS session waiting for its peer.
    // Opened by 8 threads, as a fleet of clients would: one after another, each a round
    // trip, took 9 s here.
    let started = Instant::now();
    let address = server.address;
    let half_open: Vec<TcpStream> = std::thread::scope(|scope| {
        let openers: Vec<_> = (0..8)
            .map(|opener| {
                scope.spawn(move || {
                    (opener..HALF_OPEN)
                        .step_by(8)
                        .map(|index| {
                            let mut stream = start_tls(address);
                            if index % 2 == 1 {
                                stream.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).unwrap();
                            }
                            stream
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        openers
            .into_iter()
            .flat_map(|opener| opener.join().unwrap())
            .collect()
    });
    let opened_in = started.elapsed();
    // The handshake timeout (10 s) counts from each one's START_TLS: all are still open here.
    assert!(opened_in < Duration::from_millis(8000), "{opened_in:?}");
    let rss_held = rss_bytes(server.pid());
    let per_connection = rss_held.saturating_sub(rss_before) / HALF_OPEN as u64;
    println!(
        "{HALF_OPEN} half-open handshakes in {opened_in:?}: server RSS {} -> {} MiB, \
         {per_connection} bytes each",
        rss_before >> 20,
        rss_held >> 20
    );
    assert!(
        per_connection <= HALF_OPEN_BYTES_MAX,
        "{per_connection} bytes per half-open handshake"
    );
    // The connection already served goes on being served, at once.
    let adds = Instant::now();
    for entry in 1..=100 {
        assert_eq!(add_code(&mut good, 5, entry), code::EOK);
    }
    assert!(
        adds.elapsed() < Duration::from_secs(2),
        "{:?}",
        adds.elapsed()
    );
    // All are closed at their timeout (10 s after each one's START_TLS); a new client is
    // served after.
    std::thread::sleep(
        (started + opened_in + Duration::from_millis(11_000))
            .saturating_duration_since(Instant::now()),
    );
    metric_reaches(
        &server,
        "ringlog_tls_handshake_timeouts_total",
        HALF_OPEN as f64,
    );
    let mut byte = [0u8; 1];
    for mut stream in half_open {
        assert!(matches!(stream.read(&mut byte), Ok(0) | Err(_)));
    }
    let mut late = tls_connect(server.address, certs.client("ca", None, true)).unwrap();
    assert_eq!(add_code(&mut late, 5, 101), code::EOK);
}

#[test]
fn rotated_certificates_reach_new_connections_and_open_ones_keep_working() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("tls-rotation");
    let certs = Certificates::make(&dir.0.join("certs"));
    // The bookie's files live where the rotation replaces them.
    let live = dir.0.join("live");
    std::fs::create_dir_all(&live).unwrap();
    for (from, to) in [("bookie.pem", "cert.pem"), ("bookie.key", "cert.key")] {
        std::fs::copy(certs.dir.join(from), live.join(to)).unwrap();
    }
    let files = [
        live.join("cert.pem").display().to_string(),
        live.join("cert.key").display().to_string(),
        certs.path("ca.pem"),
    ];
    let server = Server::start(
        &dir.0.join("data"),
        1,
        &tls_flags(&files, &["--tls-refresh-s", "1"]),
    );
    let mut before = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
    assert_eq!(add_code(&mut before, 5, 0), code::EOK);
    let peer = |tls: &TlsStream| tls.conn.peer_certificates().unwrap()[0].as_ref().to_vec();
    let first = peer(&before);
    // A bad rotation (garbage) is refused and the old files stay in use.
    std::fs::write(live.join("cert.pem"), "garbage").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mut during = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
    assert_eq!(peer(&during), first);
    assert_eq!(add_code(&mut during, 5, 1), code::EOK);
    // The RSA certificate and key replace them (renamed in, as a renewal tool does).
    std::fs::copy(certs.dir.join("bookie-rsa.key"), live.join("next.key")).unwrap();
    std::fs::copy(certs.dir.join("bookie-rsa.pem"), live.join("next.pem")).unwrap();
    std::fs::rename(live.join("next.key"), live.join("cert.key")).unwrap();
    std::fs::rename(live.join("next.pem"), live.join("cert.pem")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let rotated = loop {
        let tls = tls_connect(server.address, certs.client("ca", None, false)).unwrap();
        if peer(&tls) != first {
            break tls;
        }
        assert!(Instant::now() < deadline, "the rotation was not picked up");
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut rotated = rotated;
    assert_eq!(add_code(&mut rotated, 5, 2), code::EOK);
    // The connection opened before the rotation still works.
    assert_eq!(add_code(&mut before, 5, 3), code::EOK);
    // One refused rotation (the garbage), one picked up (the shard checks every second).
    metric_reaches(&server, "ringlog_tls_reload_failures_total", 1.0);
    metric_reaches(&server, "ringlog_tls_reloads_total", 1.0);
}

#[test]
fn the_http_endpoint_serves_https_with_the_bookie_certificate() {
    let Some((dir, certs, files)) = tls_test("tls-http") else {
        return;
    };
    // Client authentication on the bookie port is not asked of scrapers.
    let flags = tls_flags(&files, &["--tls-client-auth", "true", "--http-tls", "true"]);
    let server = Server::start(&dir.0.join("data"), 1, &flags);
    let http = server.http.unwrap();
    let connection = ClientConnection::new(
        certs.client("ca", None, false),
        ServerName::try_from("127.0.0.1").unwrap(),
    )
    .unwrap();
    let socket = TcpStream::connect(http).unwrap();
    socket.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut tls = StreamOwned::new(connection, socket);
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: bookie\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    // The server closes after its answer; a missing close_notify is not an error here.
    let _ = tls.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("ringlog_connections_tls"));
    // Plaintext HTTP on that port gets nothing useful.
    let mut plain = TcpStream::connect(http).unwrap();
    plain.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    plain
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: bookie\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"));
    // --http-tls needs TLS configured.
    let data = dir.0.join("data2").display().to_string();
    let args: Vec<String> = [
        "serve",
        "--data-dir",
        &data,
        "--listen",
        "127.0.0.1:0",
        "--http-tls",
        "true",
    ]
    .iter()
    .map(|arg| (*arg).to_string())
    .collect();
    let exited = Server::run_to_exit(&args);
    assert_eq!(exited.status.code(), Some(1));
    assert!(exited
        .stderr
        .join("\n")
        .contains("--http-tls needs --tls-cert"));
}
