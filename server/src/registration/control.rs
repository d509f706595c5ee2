//! What the registration thread's two tasks share: `Control`, what the thread owns, and the
//! session plumbing both the registration loop (`session.rs`) and the collector (`gc.rs`)
//! use: connecting with backoff, closing, bounded requests, and sleeps and waits that end
//! when the server stops. Both use this module and neither uses the other's helpers.

use super::znode::Paths;
use super::{Command, RegistrationError, Reply};
use crate::config::RegistrationConfig;
use crate::limits;
use crate::router::Router;
use crate::tls::TlsSettings;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};
use zookeeper_client::{Client, Error as ZkError, SessionState};

/// What the registration thread owns.
pub(super) struct Control {
    pub config: RegistrationConfig,
    pub paths: Paths,
    /// The directory the cookie names: the first of --data-dir.
    pub data_dir: PathBuf,
    pub router: Arc<Router>,
    /// The bookie's TLS settings: the repairer reads from the other bookies with them.
    pub tls: Option<Arc<TlsSettings>>,
    pub shutdown: &'static AtomicBool,
    pub commands: Receiver<Command>,
    pub replies: Sender<Reply>,
}

impl Control {
    /// The server is stopping (a signal, a poisoned journal or a failed startup).
    pub(super) fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst) || self.router.is_stopping()
    }

    pub(super) fn reply(&self, reply: Reply) {
        // The main thread is gone only if it is exiting anyway.
        let _ = self.replies.send(reply);
    }

    /// Each request waits at most a session timeout: longer, and the session is lost anyway.
    pub(super) fn request_timeout(&self) -> Duration {
        self.config.session_timeout
    }
}

/// Opens a session, retrying with backoff for at most --zk-connect-timeout-ms; `Ok(None)`
/// if the server began stopping first.
pub(super) async fn connect(control: &Control) -> Result<Option<Client>, RegistrationError> {
    let servers = &control.config.servers;
    let started = Instant::now();
    let deadline = started + control.config.connect_timeout;
    let mut backoff = Duration::from_millis(limits::ZK_RETRY_BACKOFF_MS_INITIAL);
    let mut attempts = 0_u32;
    loop {
        attempts += 1;
        // The last attempt, at the deadline, still gets the shortest backoff to run.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(limits::ZK_RETRY_BACKOFF_MS_INITIAL));
        // Fail eagerly: a refused connection is retried after the backoff instead of
        // cycling through the servers for a whole session timeout.
        let connector = Client::connector()
            .with_session_timeout(control.config.session_timeout)
            .with_fail_eagerly();
        let error = match tokio::time::timeout(left, connector.connect(servers)).await {
            Ok(Ok(client)) => return Ok(Some(client)),
            Ok(Err(error)) => error,
            Err(_) => ZkError::Timeout,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(RegistrationError::Unreachable {
                servers: servers.clone(),
                waited: now - started,
                attempts,
                error,
            });
        }
        if !sleep_unless_stopping(control, backoff.min(deadline - now)).await {
            return Ok(None);
        }
        backoff = (backoff * 2).min(Duration::from_millis(limits::ZK_RETRY_BACKOFF_MS_MAX));
    }
}

/// Sleeps for `duration` in polls; false if the server began stopping meanwhile.
pub(super) async fn sleep_unless_stopping(control: &Control, duration: Duration) -> bool {
    let deadline = Instant::now() + duration;
    loop {
        if control.stopping() {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        tokio::time::sleep(left.min(Duration::from_millis(limits::REGISTRATION_POLL_MS))).await;
    }
}

pub(super) fn session_ended(client: &Client) -> bool {
    matches!(
        client.state(),
        SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
    )
}

pub(super) fn deregister_bound() -> Duration {
    Duration::from_millis(limits::ZK_DEREGISTER_TIMEOUT_MS)
}

/// Closes the session (ZooKeeper then drops its ephemeral znodes at once) and waits up to
/// `bound` for the close to complete.
pub(super) async fn close(client: Client, bound: Duration) {
    if session_ended(&client) {
        return;
    }
    let mut state = client.state_watcher();
    // The last handle: the session task sends CloseSession and ends.
    drop(client);
    let closed = async {
        loop {
            if matches!(
                state.changed().await,
                SessionState::Closed | SessionState::Expired | SessionState::AuthFailed
            ) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(bound, closed).await;
}

/// `request`, failing with `Timeout` after `timeout`.
pub(super) async fn bounded<T>(
    timeout: Duration,
    request: impl Future<Output = Result<T, ZkError>>,
) -> Result<T, ZkError> {
    tokio::time::timeout(timeout, request)
        .await
        .unwrap_or(Err(ZkError::Timeout))
}

/// Runs `work` until it is done (`Some`) or the server begins stopping (`None`, `work`
/// dropped), looking at the stop flag every `REGISTRATION_POLL_MS`: a request stuck on an
/// unreachable ZooKeeper must not hold the thread's exit.
pub(super) async fn until_stopping<T>(
    control: &Control,
    work: impl Future<Output = T>,
) -> Option<T> {
    let poll = Duration::from_millis(limits::REGISTRATION_POLL_MS);
    let mut work = std::pin::pin!(work);
    let mut tick = std::pin::pin!(tokio::time::sleep(poll));
    std::future::poll_fn(|context| {
        if let Poll::Ready(value) = work.as_mut().poll(context) {
            return Poll::Ready(Some(value));
        }
        while tick.as_mut().poll(context).is_ready() {
            if control.stopping() {
                return Poll::Ready(None);
            }
            tick.as_mut().reset(tokio::time::Instant::now() + poll);
        }
        Poll::Pending
    })
    .await
}
