//! The HTTP endpoint (`--http-listen`): `/metrics` and the Java bookie's state endpoints,
//! served by one control thread, `ringlog-http`, on `std::net`, never by a shard.
//!
//! A minimal HTTP/1.1 server: GET (and HEAD) only, one request per connection
//! (`Connection: close`), one connection at a time. Prometheus and probes make one small
//! request every few seconds; serving them in turn keeps memory bounded by one request
//! (`HTTP_REQUEST_BYTES_MAX`) and one response, and a slow or silent client is cut off at
//! `HTTP_REQUEST_MS_MAX` while the others wait in the kernel's accept queue. The thread
//! blocks in `accept` and ends with the process.
//!
//! With `--http-tls` every connection is TLS with the bookie port's certificate (the Java
//! bookie's `httpServerTlsEnable`), rustls over the blocking socket; the handshake counts
//! against the same deadline, and a rotated certificate is picked up for the next
//! connection (`tls::TlsContext::refresh`).

use super::exposition::{self, QuantileWindow, ServerFlags};
use super::{Metrics, ServerState, ShardValues};
use crate::limits::{
    HTTP_ACCEPT_RETRY_MS, HTTP_LINGER_BYTES_MAX, HTTP_LINGER_MS, HTTP_REQUEST_BYTES_MAX,
    HTTP_REQUEST_MS_MAX,
};
use crate::router::Router;
use crate::tls::TlsContext;
use rustls::{ServerConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A parsed request line: what the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/metrics`.
    Metrics,
    /// `/heartbeat`.
    Heartbeat,
    /// `/api/v1/bookie/state`.
    State,
    /// `/api/v1/bookie/is_ready`.
    IsReady,
    /// `/api/v1/bookie/info`.
    Info,
    /// `/api/v1/bookie/scrub`: each shard's scrubber (docs/scrub.md).
    Scrub,
}

/// A request the server refuses, with its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 400: not an HTTP/1.x request line, or headers past `HTTP_REQUEST_BYTES_MAX`.
    BadRequest,
    /// 404: no such path.
    NotFound,
    /// 405: a method other than GET or HEAD.
    MethodNotAllowed,
}

/// A parsed request: its route, and whether the body is left out (HEAD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// What is asked for.
    pub route: Route,
    /// HEAD: status and headers only.
    pub head: bool,
}

/// Parses the head of a request (request line and headers, up to the blank line). The
/// headers are not used: every answer is the same whatever they say.
pub fn request_parse(head: &[u8]) -> Result<Request, Refusal> {
    let line_end = head
        .windows(2)
        .position(|pair| pair == b"\r\n")
        .ok_or(Refusal::BadRequest)?;
    let line = std::str::from_utf8(&head[..line_end]).map_err(|_| Refusal::BadRequest)?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::BadRequest);
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || method.is_empty() {
        return Err(Refusal::BadRequest);
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Err(Refusal::MethodNotAllowed),
    };
    // A query string changes nothing (Prometheus may add none; probes sometimes do).
    let path = target.split('?').next().unwrap_or(target);
    let route = match path.trim_end_matches('/') {
        "/metrics" => Route::Metrics,
        "/heartbeat" => Route::Heartbeat,
        "/api/v1/bookie/state" => Route::State,
        "/api/v1/bookie/is_ready" => Route::IsReady,
        "/api/v1/bookie/info" => Route::Info,
        "/api/v1/bookie/scrub" => Route::Scrub,
        _ => return Err(Refusal::NotFound),
    };
    Ok(Request {
        route,
        head: head_only,
    })
}

/// The end of a request's head (the blank line) in `bytes`, if it has arrived.
#[must_use]
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|position| position + 4)
}

/// A response: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code and reason.
    pub status: (u16, &'static str),
    /// Content-Type.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Response {
    fn text(status: (u16, &'static str), body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.to_string(),
        }
    }

    fn json(body: String) -> Response {
        Response {
            status: (200, "OK"),
            content_type: "application/json",
            body,
        }
    }

    /// The answer to a refused request.
    #[must_use]
    pub fn refusal(refusal: Refusal) -> Response {
        match refusal {
            Refusal::BadRequest => Response::text((400, "Bad Request"), "bad request\n"),
            Refusal::NotFound => Response::text((404, "Not Found"), "not found\n"),
            Refusal::MethodNotAllowed => {
                Response::text((405, "Method Not Allowed"), "only GET is supported\n")
            }
        }
    }
}

/// The state endpoints' view of the server, from the shards' published flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookieState {
    /// Every shard serves (Java: `isRunning`).
    pub running: bool,
    /// Some journal refuses adds: disk full or poisoned.
    pub read_only: bool,
    /// A journal is poisoned: the server is stopping with status 2.
    pub poisoned: bool,
    /// A stop was asked.
    pub shutting_down: bool,
}

impl BookieState {
    /// `/api/v1/bookie/state`, with the Java bookie's field names (`BookieStateService`).
    #[must_use]
    pub fn json(self) -> String {
        format!(
            "{{\"running\":{},\"readOnly\":{},\"shuttingDown\":{},\
             \"availableForHighPriorityWrites\":{}}}",
            self.running,
            self.read_only,
            self.shutting_down,
            // A read-only journal refuses recovery adds too.
            self.running && !self.read_only && !self.shutting_down
        )
    }

    /// `/api/v1/bookie/is_ready`: OK while serving, 503 while starting, stopping or
    /// poisoned (the Java bookie's `BookieIsReadyService`; a read-only bookie is ready, as
    /// there: it still serves reads).
    #[must_use]
    pub fn is_ready(self) -> Response {
        if self.running && !self.shutting_down && !self.poisoned {
            Response::text((200, "OK"), "")
        } else {
            Response::text(
                (503, "Service Unavailable"),
                "Bookie is not fully started yet",
            )
        }
    }
}

/// What the HTTP thread reads: the shards' blocks, the router's flags, the data directories.
struct Endpoint {
    metrics: Arc<Metrics>,
    router: Arc<Router>,
    data_dirs: Vec<PathBuf>,
    window: QuantileWindow,
    /// Reused for every scrape: the exposition is built here, then written.
    exposition: String,
    /// `--http-tls`: the certificate connections are served with.
    tls: Option<TlsContext>,
}

/// A connection the endpoint reads a request from and answers on: the socket itself, or TLS
/// over it.
trait HttpStream: Read + Write {
    /// The socket under it, for timeouts and shutdown.
    fn socket(&self) -> &TcpStream;
}

impl HttpStream for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl HttpStream for StreamOwned<ServerConnection, TcpStream> {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}

/// Binds `address` and starts the `ringlog-http` thread; returns the bound address (port 0
/// picks one).
pub fn start(
    address: SocketAddr,
    metrics: Arc<Metrics>,
    router: Arc<Router>,
    data_dirs: Vec<PathBuf>,
    tls: Option<TlsContext>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(address)?;
    let bound = listener.local_addr()?;
    let mut endpoint = Endpoint {
        metrics,
        router,
        data_dirs,
        window: QuantileWindow::new(Instant::now()),
        exposition: String::new(),
        tls,
    };
    std::thread::Builder::new()
        .name("ringlog-http".to_string())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(stream) => endpoint.accepted(stream),
                    // An accept error (a connection reset before accept, EMFILE) ends only
                    // that connection, but EMFILE would repeat at once: pause first.
                    Err(_) => std::thread::sleep(Duration::from_millis(HTTP_ACCEPT_RETRY_MS)),
                }
            }
        })?;
    Ok(bound)
}

impl Endpoint {
    /// Serves one accepted connection, in TLS with `--http-tls`.
    fn accepted(&mut self, stream: TcpStream) {
        let Some(context) = self.tls.as_mut() else {
            return self.serve(stream);
        };
        if let Some(crate::tls::Refresh::Failed(error)) = context.refresh(Instant::now()) {
            tracing::warn!(
                "http tls files changed but cannot be used ({error}); keeping the previous ones"
            );
        }
        let Ok(session) = ServerConnection::new(context.server_config()) else {
            return;
        };
        self.serve(StreamOwned::new(session, stream));
    }

    /// Reads one request within the bounds, answers it, closes.
    fn serve(&mut self, mut stream: impl HttpStream) {
        let deadline = Instant::now() + Duration::from_millis(HTTP_REQUEST_MS_MAX);
        let mut head = [0u8; HTTP_REQUEST_BYTES_MAX];
        let mut filled = 0;
        let parsed = loop {
            if let Some(end) = head_end(&head[..filled]) {
                break request_parse(&head[..end]);
            }
            if filled == head.len() {
                break Err(Refusal::BadRequest);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            // A zero timeout would mean "none": a client past its deadline is dropped.
            if left.is_zero() || stream.socket().set_read_timeout(Some(left)).is_err() {
                return;
            }
            match stream.read(&mut head[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(read) => filled += read,
            }
        };
        let refused = parsed.is_err();
        let (response, head_only) = match parsed {
            Ok(request) => (self.answer(request.route), request.head),
            Err(refusal) => (Response::refusal(refusal), false),
        };
        let _ = stream
            .socket()
            .set_write_timeout(Some(Duration::from_millis(HTTP_REQUEST_MS_MAX)));
        let header = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            response.status.0,
            response.status.1,
            response.content_type,
            response.body.len()
        );
        // A client that went away gets nothing more; there is no one to tell.
        let _ = stream.write_all(header.as_bytes());
        if !head_only {
            let _ = stream.write_all(response.body.as_bytes());
        }
        let _ = stream.flush();
        if refused {
            linger(&mut stream, &mut head);
        }
    }

    fn answer(&mut self, route: Route) -> Response {
        match route {
            Route::Metrics => Response {
                status: (200, "OK"),
                content_type: "text/plain; version=0.0.4; charset=utf-8",
                body: self.scrape(),
            },
            // The Java bookie's `HeartbeatService`.
            Route::Heartbeat => Response::text((200, "OK"), "OK\n"),
            Route::State => Response::json(self.state().json()),
            Route::IsReady => self.state().is_ready(),
            Route::Info => Response::json(self.info()),
            Route::Scrub => Response::json(self.scrub()),
        }
    }

    fn state(&self) -> BookieState {
        BookieState {
            running: self.metrics.state() != ServerState::Starting,
            read_only: self.router.any_read_only(),
            poisoned: self.router.is_poisoned(),
            shutting_down: self.metrics.state() == ServerState::Stopping
                || self.router.is_stopping(),
        }
    }

    fn scrape(&mut self) -> String {
        let shards: Vec<ShardValues> = self.metrics.shards().collect();
        let mut total = ShardValues::default();
        for values in &shards {
            total.merge(values);
        }
        let directories = self.data_dirs.len();
        let writable_dirs = (0..directories)
            .filter(|&directory| {
                (directory..shards.len())
                    .step_by(directories)
                    .all(|shard| shards[shard].scalars.read_only == 0)
                    && (directory..shards.len())
                        .step_by(directories)
                        .all(|shard| shards[shard].scalars.poisoned == 0)
            })
            .count();
        let flags = ServerFlags {
            read_only: self.router.any_read_only(),
            writable_dirs: u64::try_from(writable_dirs).expect("at most DATA_DIRS_MAX"),
            gc_rounds_forced: self.router.gc_rounds_forced(),
            repairs: self.router.repair_counts(),
        };
        let since = self.window.advance(&total, Instant::now());
        let mut out = std::mem::take(&mut self.exposition);
        out.clear();
        exposition::render(&mut out, &total, &shards, since, flags);
        let body = out.clone();
        self.exposition = out;
        body
    }

    /// `/api/v1/bookie/scrub`: each shard's scrubber, as its last tick published it.
    fn scrub(&self) -> String {
        let shards: Vec<String> = self
            .metrics
            .shards()
            .enumerate()
            .map(|(shard, values)| scrub_json(shard, &values.scalars))
            .collect();
        format!("{{\"shards\":[{}]}}", shards.join(","))
    }

    /// `/api/v1/bookie/info` (`BookieInfoService`): free and total bytes of the file
    /// systems holding the data directories, each file system counted once.
    fn info(&self) -> String {
        let mut devices = Vec::with_capacity(self.data_dirs.len());
        let (mut free, mut total) = (0u64, 0u64);
        for directory in &self.data_dirs {
            let Ok(metadata) = std::fs::metadata(directory) else {
                continue;
            };
            if devices.contains(&metadata.dev()) {
                continue;
            }
            devices.push(metadata.dev());
            if let Ok(space) = engine::uring::disk_space(directory) {
                free = free.saturating_add(space.free_bytes);
                total = total.saturating_add(space.total_bytes);
            }
        }
        format!("{{\"freeSpace\":{free},\"totalSpace\":{total}}}")
    }
}

/// After refusing a request whose bytes may not all have been read: closing a socket with
/// unread input sends a reset, which can destroy the answer before the client reads it. So
/// the write side is shut first and what the client still sends is read and dropped, bounded
/// in bytes and time.
fn linger(stream: &mut impl HttpStream, scratch: &mut [u8]) {
    let _ = stream.socket().shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_millis(HTTP_LINGER_MS);
    let mut drained = 0;
    while drained < HTTP_LINGER_BYTES_MAX {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.socket().set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(scratch) {
            Ok(0) | Err(_) => return,
            Ok(read) => drained += read,
        }
    }
}

/// One shard's scrubber as JSON (`/api/v1/bookie/scrub`, docs/metrics.md).
fn scrub_json(shard: usize, s: &crate::metrics::ShardScalars) -> String {
    let current = s
        .scrub_segment_current_plus_one
        .checked_sub(1)
        .map_or_else(|| "null".to_owned(), |segment| segment.to_string());
    format!(
        "{{\"shard\":{shard},\"enabled\":{},\"segmentNext\":{},\"cycleStart\":{},\
         \"segmentCurrent\":{current},\"cyclesCompleted\":{},\"rateBytesPerSecond\":{},\
         \"bytesScrubbed\":{},\"segmentsChecked\":{},\"damageRecords\":{},\
         \"damageIndex\":{},\"readFailures\":{}}}",
        s.scrub_enabled == 1,
        s.scrub_segment_next,
        s.scrub_cycle_start,
        s.scrub_cycles_completed,
        s.scrub_rate_bytes_per_s,
        s.scrub_bytes,
        s.scrub_segments,
        s.scrub_damage_records,
        s.scrub_damage_index,
        s.scrub_read_failures,
    )
}
