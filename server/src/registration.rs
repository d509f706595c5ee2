//! ZooKeeper registration: the control thread that lists this process as a BookKeeper
//! bookie, so that clients find it (protocol §6).
//!
//! It is the only thread with an async runtime (a tokio current-thread runtime) and the only
//! one that talks to ZooKeeper; no shard ever waits for it. The shards publish whether their
//! journal refuses adds through `Router::read_only_set` (one atomic each), and the thread
//! polls those flags, the stop flag and its session every `REGISTRATION_POLL_MS`.
//!
//! The procedure (§6.4), driven by `run` through `Registration`:
//! 1. at startup, in parallel with journal recovery: connect (retrying with backoff up to
//!    --zk-connect-timeout-ms) and create ROOT, ROOT/available and ROOT/available/readonly;
//! 2. once every shard serves: derive the bookie id, check or write the cookie, wait for a
//!    registration left by an earlier run to expire (up to the session timeout), and create
//!    the ephemeral ROOT/available/<id> (or readonly/<id>) with a `BookieServiceInfoFormat`;
//! 3. while serving: move between available/ and readonly/ as the journals change, and
//!    register again in a new session if ZooKeeper expired ours;
//! 4. when the server stops (signal, poisoned journal, failed startup): delete the znode and
//!    close the session, before `run` returns.

mod bookie_id;
mod control;
mod gc;
mod gc_metadata;
mod gc_overreplicated;
mod ledger_layout;
mod ledger_metadata;
mod peer_read;
mod read_rate;
mod repair;
mod session;
mod steps;
mod underreplication;
mod znode;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_gc;
#[cfg(test)]
mod tests_gc_overreplicated;
#[cfg(test)]
mod tests_ledger_metadata;

pub use bookie_id::BookieIdError;
pub use znode::{Cookie, CookieError};

use crate::config::RegistrationConfig;
use crate::router::Router;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// The main thread's handle on the registration thread.
#[derive(Debug)]
pub struct Registration {
    commands: mpsc::Sender<Command>,
    replies: mpsc::Receiver<Reply>,
    thread: std::thread::JoinHandle<()>,
}

/// A registration that is in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    /// The bookie id.
    pub id: String,
    /// The ephemeral znode.
    pub path: String,
}

/// Why the bookie could not register: exit 1.
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The registration thread or its runtime could not be created.
    Setup {
        what: &'static str,
        error: std::io::Error,
    },
    /// The registration thread ended without an answer (it panicked).
    ThreadExited,
    /// No ZooKeeper server answered within the connect timeout.
    Unreachable {
        servers: String,
        waited: Duration,
        attempts: u32,
        error: zookeeper_client::Error,
    },
    /// A ZooKeeper request failed.
    Request {
        operation: &'static str,
        path: String,
        error: zookeeper_client::Error,
    },
    /// No bookie id can be made from the addresses.
    BookieId(BookieIdError),
    /// The data directory's absolute path cannot be found (for the cookie).
    DataDir {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The stored cookie cannot be read.
    CookieInvalid { path: String, error: CookieError },
    /// The stored cookie names another journal directory or bookie: a different data
    /// directory (or disk) now answers for this bookie id.
    CookieMismatch {
        path: String,
        stored: Box<Cookie>,
        ours: Box<Cookie>,
    },
    /// Another session (owner 0: a persistent znode) holds our registration znode and it did
    /// not go away within the wait.
    RegistrationHeld {
        path: String,
        owner: i64,
        waited: Duration,
    },
}

impl std::fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistrationError::Setup { what, error } => {
                write!(f, "cannot create the registration {what}: {error}")
            }
            RegistrationError::ThreadExited => write!(f, "the registration thread exited"),
            RegistrationError::Unreachable {
                servers,
                waited,
                attempts,
                error,
            } => write!(
                f,
                "cannot reach ZooKeeper at {servers}: {error} ({attempts} attempts in {:.1} s; \
                 see --zk-connect-timeout-ms)",
                waited.as_secs_f64()
            ),
            RegistrationError::Request {
                operation,
                path,
                error,
            } => write!(f, "ZooKeeper {operation} {path} failed: {error}"),
            RegistrationError::BookieId(error) => write!(f, "{error}"),
            RegistrationError::DataDir { path, error } => {
                write!(
                    f,
                    "cannot resolve data directory {}: {error}",
                    path.display()
                )
            }
            RegistrationError::CookieInvalid { path, error } => {
                write!(f, "the cookie {path} cannot be read: {error}")
            }
            RegistrationError::CookieMismatch { .. } => self.cookie_mismatch(f),
            RegistrationError::RegistrationHeld {
                path,
                owner,
                waited,
            } => self.held(f, path, *owner, *waited),
        }
    }
}

impl RegistrationError {
    fn cookie_mismatch(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let RegistrationError::CookieMismatch { path, stored, ours } = self else {
            unreachable!("called for CookieMismatch");
        };
        let hosts_differ = stored.bookie_host != ours.bookie_host;
        let instances_differ = stored.instance_id != ours.instance_id;
        write!(
            f,
            "the cookie {path} was written for journal directory {:?}",
            stored.journal_dirs
        )?;
        if hosts_differ {
            write!(f, " of bookie {:?}", stored.bookie_host)?;
        }
        if instances_differ {
            write!(f, " in cluster instance {:?}", stored.instance_id)?;
        }
        write!(f, " but this bookie uses {:?}", ours.journal_dirs)?;
        if hosts_differ {
            write!(f, " as {:?}", ours.bookie_host)?;
        }
        if instances_differ {
            write!(f, " in cluster instance {:?}", ours.instance_id)?;
        }
        write!(
            f,
            ": another data directory already answers for this bookie id. Start with the \
             original --data-dir, use another --advertised-address, or delete the cookie if \
             the old data is gone for good"
        )
    }

    fn held(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        path: &str,
        owner: i64,
        waited: Duration,
    ) -> std::fmt::Result {
        if owner == 0 {
            return write!(
                f,
                "{path} exists as a persistent znode, so it never expires: another bookie \
                 with this id, or a mistake; delete it by hand if no bookie uses it"
            );
        }
        write!(
            f,
            "{path} is still held by ZooKeeper session {owner:#x} after {:.1} s: another \
             bookie with this id is running (or its session outlives ours: raise \
             --zk-session-timeout-ms)",
            waited.as_secs_f64()
        )
    }
}

impl std::error::Error for RegistrationError {}

/// From the main thread to the registration thread.
#[derive(Debug)]
enum Command {
    /// Every shard serves on `address`: register.
    Register { address: SocketAddr },
}

/// From the registration thread to the main thread.
#[derive(Debug)]
enum Reply {
    /// The session is up and the parent znodes exist.
    Connected,
    /// The registration is in place.
    Registered(Registered),
    /// The server began stopping first: nothing more to do.
    Interrupted,
    /// The registration failed: the server must not start.
    Failed(RegistrationError),
}

impl Registration {
    /// Starts the registration thread; it connects at once. It stops (deregistering first)
    /// when `router` stops or `shutdown` is set. `data_dir` is the directory the cookie names
    /// (`Config::data_dir_first`).
    pub fn start(
        config: RegistrationConfig,
        data_dir: &Path,
        router: Arc<Router>,
        tls: Option<Arc<crate::tls::TlsSettings>>,
        shutdown: &'static AtomicBool,
    ) -> Result<Registration, RegistrationError> {
        let (commands, commands_receiver) = mpsc::channel();
        let (replies_sender, replies) = mpsc::channel();
        let control = control::Control {
            paths: znode::Paths::new(&config.root),
            config,
            data_dir: data_dir.to_path_buf(),
            router,
            tls,
            shutdown,
            commands: commands_receiver,
            replies: replies_sender,
        };
        let thread = std::thread::Builder::new()
            .name("ringlog-registration".to_string())
            .spawn(move || session::thread_main(control))
            .map_err(|error| RegistrationError::Setup {
                what: "thread",
                error,
            })?;
        Ok(Registration {
            commands,
            replies,
            thread,
        })
    }

    /// Waits until the session is up and the parents exist; `Ok(false)` if the server began
    /// stopping first.
    pub fn connected(&self) -> Result<bool, RegistrationError> {
        match self.replies.recv() {
            Ok(Reply::Connected) => Ok(true),
            Ok(Reply::Interrupted) => Ok(false),
            Ok(Reply::Failed(error)) => Err(error),
            Ok(Reply::Registered(_)) => unreachable!("registered before asked to"),
            Err(_) => Err(RegistrationError::ThreadExited),
        }
    }

    /// Registers the bookie serving on `address` (the bound listen address); waits for the
    /// znode, including up to a session timeout for one left by an earlier run. `Ok(None)` if
    /// the server began stopping first.
    pub fn register(&self, address: SocketAddr) -> Result<Option<Registered>, RegistrationError> {
        if self.commands.send(Command::Register { address }).is_err() {
            return Err(RegistrationError::ThreadExited);
        }
        match self.replies.recv() {
            Ok(Reply::Registered(registered)) => Ok(Some(registered)),
            Ok(Reply::Interrupted) => Ok(None),
            Ok(Reply::Failed(error)) => Err(error),
            Ok(Reply::Connected) => unreachable!("connected is answered once"),
            Err(_) => Err(RegistrationError::ThreadExited),
        }
    }

    /// Waits for the thread to end. The caller has stopped the router (or seen it stop): the
    /// thread then deletes the registration and closes the session, bounded by
    /// `ZK_DEREGISTER_TIMEOUT_MS`.
    pub fn finish(self) {
        drop(self.commands);
        // A panic already exited the process (see `session::thread_main`).
        let _ = self.thread.join();
    }
}
