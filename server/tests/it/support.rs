//! Test harness: a real `ringlog serve` process per test, and a blocking v2 client.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wire::client::{DecodedResponse, Response};
use wire::MasterKey;

/// Segments small enough that a fresh journal starts fast and tests roll over segments.
pub const SEGMENT_SIZE_TEST: &str = "4194304";
/// A master key for test ledgers.
pub const KEY: MasterKey = wire::MASTER_KEY_BENCH_PASSWORD;
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// True when io_uring works; otherwise prints why and skips, unless CI or REQUIRE_URING is
/// set, where a skip would hide a broken build and so fails.
pub fn uring_available() -> bool {
    engine::uring::uring_available_for_test()
}

/// A fresh directory on the target's file system (O_DIRECT needs ext4/xfs, not tmpfs),
/// removed on drop.
pub struct TestDir(pub PathBuf);

impl TestDir {
    pub fn new(name: &str) -> TestDir {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("it-data")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TestDir(path)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running server; killed (SIGKILL) on drop if still running.
pub struct Server {
    child: Child,
    pub address: SocketAddr,
    /// The HTTP endpoint's address, from its "ringlog http on ADDR" line (`None`: off).
    pub http: Option<SocketAddr>,
    stdout: Lines,
    stderr: Lines,
}

/// Output of a server run that ended (or failed to start).
pub struct Exited {
    pub status: ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Exited {
    /// The shutdown summary lines, one per shard.
    pub fn summaries(&self) -> Vec<String> {
        self.stdout
            .iter()
            .filter(|line| line.contains(" summary: "))
            .cloned()
            .collect()
    }

    /// Sum of `key=value` over the summary lines.
    pub fn summary_total(&self, key: &str) -> u64 {
        let prefix = format!("{key}=");
        self.summaries()
            .iter()
            .flat_map(|line| {
                line.split(' ')
                    .filter_map(|field| field.strip_prefix(&prefix))
            })
            .map(|value| value.parse::<u64>().unwrap())
            .sum()
    }
}

/// Lines a child printed so far, filled by a reader thread.
type Lines = Arc<Mutex<Vec<String>>>;

fn spawn(args: &[String]) -> (Child, Lines, Lines, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringlog"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (lines_sender, lines) = mpsc::channel();
    let pipe = child.stdout.take().unwrap();
    let sink = Arc::clone(&stdout);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line.clone());
            let _ = lines_sender.send(line);
        }
    });
    let pipe = child.stderr.take().unwrap();
    let sink = Arc::clone(&stderr);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    (child, stdout, stderr, lines)
}

/// The standard test flags: loopback, ephemeral ports (the HTTP endpoint's too), small
/// segments; `extra` may override any of them.
pub fn serve_args(dir: &Path, shards: usize, extra: &[&str]) -> Vec<String> {
    let dir = dir.display().to_string();
    let shards = shards.to_string();
    let defaults = [
        ("--listen", "127.0.0.1:0"),
        ("--http-listen", "127.0.0.1:0"),
        ("--segment-size", SEGMENT_SIZE_TEST),
        ("--data-dir", dir.as_str()),
        ("--shards", shards.as_str()),
    ];
    let mut args = vec!["serve".to_string()];
    for (flag, value) in defaults {
        if !extra.contains(&flag) {
            args.extend([flag.to_string(), value.to_string()]);
        }
    }
    args.extend(extra.iter().map(|arg| (*arg).to_string()));
    args
}

impl Server {
    /// Starts `ringlog serve` on `dir` and waits for its "listening" line.
    pub fn start(dir: &Path, shards: usize, extra: &[&str]) -> Server {
        Server::start_args(&serve_args(dir, shards, extra))
    }

    pub fn start_args(args: &[String]) -> Server {
        let (mut child, stdout, stderr, lines) = spawn(args);
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut http = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("ringlog http on ") {
                        http = Some(rest.trim().parse().unwrap());
                    }
                    if let Some(rest) = line.strip_prefix("ringlog listening on ") {
                        let address = rest.split(' ').next().unwrap().parse().unwrap();
                        return Server {
                            child,
                            address,
                            http,
                            stdout,
                            stderr,
                        };
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "server did not start: stdout {:?} stderr {:?}",
                        stdout.lock().unwrap(),
                        stderr.lock().unwrap()
                    );
                }
            }
        }
    }

    /// Runs `ringlog` with `args` to completion (for startup errors), with a timeout.
    pub fn run_to_exit(args: &[String]) -> Exited {
        let (child, stdout, stderr, _lines) = spawn(args);
        let mut server = Server {
            child,
            address: "0.0.0.0:0".parse().unwrap(),
            http: None,
            stdout,
            stderr,
        };
        server.wait_exit(STARTUP_TIMEOUT)
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.address)
    }

    /// The process id, to send it signals.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown path runs at all.
    pub fn kill(mut self) -> Exited {
        self.child.kill().unwrap();
        self.wait_exit(STARTUP_TIMEOUT)
    }

    /// SIGTERM, then wait for the exit.
    pub fn terminate(mut self) -> Exited {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait_exit(Duration::from_secs(20))
    }

    fn wait_exit(&mut self, timeout: Duration) -> Exited {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit in {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // Let the pipe readers reach EOF.
        std::thread::sleep(Duration::from_millis(100));
        Exited {
            status,
            stdout: self.stdout.lock().unwrap().clone(),
            stderr: self.stderr.lock().unwrap().clone(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A decoded response that owns its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Add {
        code: i32,
        ledger: i64,
        entry: i64,
    },
    Read {
        version: u8,
        code: i32,
        ledger: i64,
        entry: i64,
        body: Vec<u8>,
    },
    Batch {
        code: i32,
        ledger: i64,
        start: i64,
        request_id: i64,
        entries: Vec<Vec<u8>>,
    },
    Auth {
        auth_message: Vec<u8>,
    },
}

/// The entry body of (ledger, entry) in these tests: a real CRC32C BookKeeper body whose
/// payload size and bytes depend on the ids.
pub fn body(ledger: i64, entry: i64) -> Vec<u8> {
    let size = usize::try_from((ledger * 31 + entry * 7) % 300).unwrap() + 1;
    let payload: Vec<u8> = (0..size)
        .map(|i| u8::try_from((i as i64 + ledger + entry) % 251).unwrap())
        .collect();
    let mut out = Vec::new();
    let length = i64::try_from(size).unwrap() * (entry + 1);
    wire::encode_entry_body_crc32c(&mut out, ledger, entry, entry - 1, length, &payload);
    out
}

/// A blocking v2 client on one TCP connection.
pub struct Client {
    pub stream: TcpStream,
    received: Vec<u8>,
}

impl Client {
    pub fn connect(address: SocketAddr) -> Client {
        Client::from_stream(TcpStream::connect(address).unwrap())
    }

    pub fn from_stream(stream: TcpStream) -> Client {
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            received: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub fn send_add(&mut self, flags: u16, key: &MasterKey, ledger: i64, entry: i64) {
        assert!(self.try_send_add(flags, key, ledger, entry), "send failed");
    }

    /// Sends an add; false if the connection is gone.
    pub fn try_send_add(&mut self, flags: u16, key: &MasterKey, ledger: i64, entry: i64) -> bool {
        let mut frame = Vec::new();
        wire::client::encode_add_request(&mut frame, flags, key, &body(ledger, entry));
        self.stream.write_all(&frame).is_ok()
    }

    pub fn send_read(&mut self, flags: u16, ledger: i64, entry: i64, key: Option<&MasterKey>) {
        let mut frame = Vec::new();
        wire::client::encode_read_request(&mut frame, flags, ledger, entry, key);
        self.send(&frame);
    }

    /// The next response; panics on a timeout or a closed connection.
    pub fn recv(&mut self) -> Reply {
        self.try_recv()
            .expect("server closed the connection or timed out")
    }

    /// The next response, or `None` once the connection is closed, reset or timed out.
    pub fn try_recv(&mut self) -> Option<Reply> {
        loop {
            let decoded = wire::client::decode_response(&self.received, u32::MAX).unwrap();
            if let DecodedResponse::Frame {
                response,
                frame_size,
            } = decoded
            {
                let reply = reply_owned(response);
                self.received.drain(..frame_size);
                return Some(reply);
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                // A blocking read with a timeout is never restarted after a signal (or a
                // stop and continue of this process): EINTR is not the server's answer.
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => return None,
                Ok(count) => self.received.extend_from_slice(&chunk[..count]),
            }
        }
    }

    pub fn add(&mut self, flags: u16, key: &MasterKey, ledger: i64, entry: i64) -> i32 {
        self.send_add(flags, key, ledger, entry);
        match self.recv() {
            Reply::Add {
                code,
                ledger: l,
                entry: e,
            } if l == ledger && e == entry => code,
            other => panic!("unexpected reply to add ({ledger}, {entry}): {other:?}"),
        }
    }

    /// (code, entry id echoed, body).
    pub fn read(
        &mut self,
        flags: u16,
        ledger: i64,
        entry: i64,
        key: Option<&MasterKey>,
    ) -> (i32, i64, Vec<u8>) {
        self.send_read(flags, ledger, entry, key);
        match self.recv() {
            Reply::Read {
                code,
                ledger: l,
                entry: e,
                body,
                ..
            } if l == ledger => (code, e, body),
            other => panic!("unexpected reply to read ({ledger}, {entry}): {other:?}"),
        }
    }

    /// A batch read: (code, entries).
    pub fn batch_read(
        &mut self,
        ledger: i64,
        start: i64,
        count: i32,
        size: i64,
    ) -> (i32, Vec<Vec<u8>>) {
        let mut frame = Vec::new();
        let request_id = ledger ^ start;
        wire::client::encode_batch_read_request(
            &mut frame, 0, ledger, start, request_id, count, size, None,
        );
        self.send(&frame);
        match self.recv() {
            Reply::Batch {
                code,
                ledger: l,
                start: s,
                request_id: r,
                entries,
            } if l == ledger && s == start && r == request_id => (code, entries),
            other => panic!("unexpected reply to batch read ({ledger}, {start}): {other:?}"),
        }
    }

    /// True if the server closes the connection (EOF or reset) within the I/O timeout,
    /// discarding anything it still sends.
    pub fn is_closed_by_server(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::ConnectionReset => return true,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return false
                }
                Err(error) => panic!("read failed: {error}"),
            }
        }
    }
}

pub fn reply_owned(response: Response<'_>) -> Reply {
    match response {
        Response::Add {
            code,
            ledger_id,
            entry_id,
            ..
        } => Reply::Add {
            code,
            ledger: ledger_id,
            entry: entry_id,
        },
        Response::Read {
            version,
            code,
            ledger_id,
            entry_id,
            body,
        } => Reply::Read {
            version,
            code,
            ledger: ledger_id,
            entry: entry_id,
            body: body.to_vec(),
        },
        Response::BatchRead {
            code,
            ledger_id,
            start_entry_id,
            request_id,
            entries,
            ..
        } => Reply::Batch {
            code,
            ledger: ledger_id,
            start: start_entry_id,
            request_id,
            entries: entries.map(|entry| entry.unwrap().to_vec()).collect(),
        },
        Response::Auth { auth_message, .. } => Reply::Auth {
            auth_message: auth_message.to_vec(),
        },
    }
}

/// One HTTP/1.1 request (`METHOD path`, a Host header) to the server's HTTP endpoint:
/// (status, body).
pub fn http_request(address: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    http_raw(address, head.as_bytes())
}

/// GET `path`: (status, body).
pub fn http_get(address: SocketAddr, path: &str) -> (u16, String) {
    http_request(address, "GET", path)
}

/// Sends `bytes` as they are and reads the answer to the end: (status, body); status 0 when
/// the server closed without one.
pub fn http_raw(address: SocketAddr, bytes: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    // The server may answer (and close) before taking every byte of an oversized request.
    let _ = stream.write_all(bytes);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8(answer).unwrap();
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        return (0, answer);
    };
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// The value of the sample `series` (name with its labels, exactly as exposed) in a scrape.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Waits, polling every 100 ms, until `ok`; fails the test after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The entry records of a segment file's bytes, in order: (header position, ledger, entry).
/// Commit padding is skipped to the next 4 KiB boundary, as recovery does.
pub fn segment_entry_records(image: &[u8]) -> Vec<(usize, i64, i64)> {
    use engine::record::{self, RecordKind};
    let mut records = Vec::new();
    let mut position = 4096;
    while position + 64 <= image.len() {
        match record::decode_header(&image[position..]) {
            Ok((header, _)) => {
                if header.kind == RecordKind::Entry {
                    records.push((position, header.ledger.0, header.entry.0));
                }
                position += record::record_size(header.payload_size as usize);
            }
            Err(_) => position = (position / 4096 + 1) * 4096,
        }
    }
    records
}

/// The resident memory of process `pid`, from /proc.
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}
