//! The registration thread's work, on its own tokio current-thread runtime: connect, the
//! parents, the cookie, the wait for a stale registration, and the loop that keeps the
//! registration where the shards' state says it belongs.
//!
//! zookeeper-client runs its session (pings, reconnects within the session) as a task on this
//! runtime, so it progresses while this thread awaits; its sockets are async-io's, whose
//! reactor runs on async-io's own thread. Neither ever runs on a shard.

use super::bookie_id::{bookie_id, primary_ipv4, BookieId};
use super::control::{bounded, Control};
use super::control::{close, connect, deregister_bound, session_ended, sleep_unless_stopping};
use super::steps::{place_wanted, step_next, Held, Step};
use super::znode::{service_info_encode, Cookie, Place};
use super::{Command, Registered, RegistrationError, Reply};
use crate::limits;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc::TryRecvError;
use std::task::Poll;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// Steps `steps_apply` takes per call: create and delete, plus a retried create if the
/// znode vanished between our create and our look at its owner.
const STEPS_PER_CALL_MAX: usize = 4;

/// The bookie as registered by one session.
struct Bookie {
    id: BookieId,
    /// The `BookieServiceInfoFormat` both registration znodes hold.
    data: Vec<u8>,
    held: Held,
}

/// The thread: a current-thread runtime running `run`. A panic here is a bug, and a bookie
/// that silently stays registered (or never deregisters) would mislead clients, so the
/// process exits, as it does for a shard.
pub(super) fn thread_main(control: Control) {
    let _exit_on_panic = ExitOnPanic;
    // IO for the repairer's connections to other bookies (`repair.rs`); zookeeper-client
    // brings its own reactor.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(run(control)),
        Err(error) => control.reply(Reply::Failed(RegistrationError::Setup {
            what: "runtime",
            error,
        })),
    }
}

struct ExitOnPanic;

impl Drop for ExitOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("ringlog: the registration thread panicked; exiting");
            std::process::exit(101);
        }
    }
}

async fn run(control: Control) {
    let Some(mut client) = startup(&control).await else {
        return;
    };
    let Some(address) = register_command_wait(&control).await else {
        control.reply(Reply::Interrupted);
        close(client, deregister_bound()).await;
        return;
    };
    // Journal recovery can outlast a session cut off meanwhile.
    if session_ended(&client) {
        let Some(new) = reconnect(&control).await else {
            control.reply(Reply::Interrupted);
            return;
        };
        client = new;
    }
    match register(&control, &client, address).await {
        Ok(Some(bookie)) => {
            let place = place_of(bookie.held);
            control.reply(Reply::Registered(Registered {
                path: control.paths.registration(place, &bookie.id.id),
                id: bookie.id.id.clone(),
            }));
            // The collector and the repairer run beside the registration loop, on this
            // thread; they need the id to tell the ensembles that name this bookie.
            let id = bookie.id.id.clone();
            both(
                serve(&control, client, bookie),
                both(
                    super::gc::collect(&control, &id),
                    super::repair::repairs(&control, &id),
                ),
            )
            .await;
        }
        Ok(None) => {
            control.reply(Reply::Interrupted);
            close(client, deregister_bound()).await;
        }
        Err(error) => {
            control.reply(Reply::Failed(error));
            close(client, deregister_bound()).await;
        }
    }
}

/// Connects and creates the parents; tells the main thread how that went.
async fn startup(control: &Control) -> Option<Client> {
    let client = match connect(control).await {
        Ok(Some(client)) => client,
        Ok(None) => {
            control.reply(Reply::Interrupted);
            return None;
        }
        Err(error) => {
            control.reply(Reply::Failed(error));
            return None;
        }
    };
    if let Err(error) = parents_create(control, &client).await {
        control.reply(Reply::Failed(error));
        close(client, deregister_bound()).await;
        return None;
    }
    control.reply(Reply::Connected);
    Some(client)
}

/// Creates ROOT, ROOT/available and ROOT/available/readonly where missing (persistent,
/// empty). Clients watch readonly/ at startup and fail if it is missing.
async fn parents_create(control: &Control, client: &Client) -> Result<(), RegistrationError> {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let path = &control.paths.readonly;
    bounded(control.request_timeout(), client.mkdir(path, &options))
        .await
        .map_err(|error| RegistrationError::Request {
            operation: "create",
            path: path.clone(),
            error,
        })
}

/// Waits for the main thread's `Register`; `None` if the server stops first.
async fn register_command_wait(control: &Control) -> Option<SocketAddr> {
    loop {
        match control.commands.try_recv() {
            Ok(Command::Register { address }) => return Some(address),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if control.stopping() {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(limits::REGISTRATION_POLL_MS)).await;
    }
}

/// The first registration of this process; `Ok(None)` if the server began stopping.
async fn register(
    control: &Control,
    client: &Client,
    address: SocketAddr,
) -> Result<Option<Bookie>, RegistrationError> {
    let id = bookie_id(control.config.advertised_address, address, primary_ipv4)
        .map_err(RegistrationError::BookieId)?;
    cookie_ensure(control, client, &id.id).await?;
    if !stale_wait(control, client, &id.id).await? {
        return Ok(None);
    }
    let host = id.address.ip().to_string();
    let mut bookie = Bookie {
        data: service_info_encode(&host, id.address.port()),
        id,
        held: Held::default(),
    };
    let target = place_wanted(control.router.any_read_only());
    steps_apply(control, client, &mut bookie, Some(target)).await?;
    if !bookie.held.get(target) {
        // Only if the znode kept appearing and vanishing under us: someone else is at it.
        return Err(RegistrationError::Request {
            operation: "create",
            path: control.paths.registration(target, &bookie.id.id),
            error: ZkError::NodeExists,
        });
    }
    Ok(Some(bookie))
}

/// Writes our cookie if there is none; fails if the stored one names another journal
/// directory or bookie (protocol §6.3).
async fn cookie_ensure(
    control: &Control,
    client: &Client,
    id: &str,
) -> Result<(), RegistrationError> {
    let data_dir =
        std::fs::canonicalize(&control.data_dir).map_err(|error| RegistrationError::DataDir {
            path: control.data_dir.clone(),
            error,
        })?;
    let instance_id = instance_id_read(control, client).await?;
    let ours = Cookie::new(id, &data_dir.to_string_lossy(), instance_id);
    let path = control.paths.cookie(id);
    let request = |operation, error| RegistrationError::Request {
        operation,
        path: path.clone(),
        error,
    };
    // Twice at most: if another process creates the cookie between our read and our create,
    // the second read compares with it.
    for _ in 0..2 {
        match bounded(control.request_timeout(), client.get_data(&path)).await {
            Ok((data, _)) => {
                let stored =
                    Cookie::parse(&data).map_err(|error| RegistrationError::CookieInvalid {
                        path: path.clone(),
                        error,
                    })?;
                return cookie_compare(&path, &stored, &ours);
            }
            Err(ZkError::NoNode) => {}
            Err(error) => return Err(request("read", error)),
        }
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        bounded(
            control.request_timeout(),
            client.mkdir(&control.paths.cookies, &options),
        )
        .await
        .map_err(|error| request("create the parent of", error))?;
        let create = client.create(&path, ours.encode().as_bytes(), &options);
        match bounded(control.request_timeout(), create).await {
            Ok(_) => return Ok(()),
            Err(ZkError::NodeExists) => {}
            Err(error) => return Err(request("create", error)),
        }
    }
    Err(request("create", ZkError::NodeExists))
}

/// ROOT/INSTANCEID if the cluster has one (written by `metaformat`).
async fn instance_id_read(
    control: &Control,
    client: &Client,
) -> Result<Option<String>, RegistrationError> {
    let path = &control.paths.instance_id;
    match bounded(control.request_timeout(), client.get_data(path)).await {
        Ok((data, _)) => Ok(Some(String::from_utf8_lossy(&data).trim().to_string())),
        Err(ZkError::NoNode) => Ok(None),
        Err(error) => Err(RegistrationError::Request {
            operation: "read",
            path: path.clone(),
            error,
        }),
    }
}

/// Java compares the whole cookie; the journal directory and the bookie id are what tell a
/// swapped disk or a reused id. The instance id counts only when both sides have one.
fn cookie_compare(path: &str, stored: &Cookie, ours: &Cookie) -> Result<(), RegistrationError> {
    let instances_differ = matches!(
        (&stored.instance_id, &ours.instance_id),
        (Some(stored), Some(ours)) if stored != ours
    );
    if stored.journal_dirs == ours.journal_dirs
        && stored.bookie_host == ours.bookie_host
        && !instances_differ
    {
        return Ok(());
    }
    Err(RegistrationError::CookieMismatch {
        path: path.to_string(),
        stored: Box::new(stored.clone()),
        ours: Box::new(ours.clone()),
    })
}

/// Waits while another session holds one of our registration znodes (left by an earlier
/// run that was killed): up to the session timeout plus a tick's grace, then fails. Never
/// deletes it: its owner may be alive. False if the server began stopping.
async fn stale_wait(
    control: &Control,
    client: &Client,
    id: &str,
) -> Result<bool, RegistrationError> {
    let grace = Duration::from_millis(limits::ZK_STALE_REGISTRATION_GRACE_MS);
    let wait = client.session_timeout().max(control.config.session_timeout) + grace;
    let started = Instant::now();
    let session = client.session_id().0;
    let mut announced = false;
    loop {
        let mut foreign = None;
        for place in [Place::Available, Place::ReadOnly] {
            let path = control.paths.registration(place, id);
            match owner_of(control, client, &path).await? {
                Some(owner) if owner != session => foreign = Some((path, owner)),
                _ => {}
            }
        }
        let Some((path, owner)) = foreign else {
            return Ok(true);
        };
        if !announced {
            announced = true;
            tracing::info!(
                "{path} is held by ZooKeeper session {owner:#x} (an earlier run?); \
                 waiting up to {:.1} s for it to expire",
                wait.as_secs_f64()
            );
        }
        if started.elapsed() >= wait {
            let waited = started.elapsed();
            return Err(RegistrationError::RegistrationHeld {
                path,
                owner,
                waited,
            });
        }
        if !sleep_unless_stopping(control, Duration::from_millis(limits::REGISTRATION_POLL_MS))
            .await
        {
            return Ok(false);
        }
    }
}

/// The session owning the znode at `path` (0 for a persistent one), or `None` if absent.
async fn owner_of(
    control: &Control,
    client: &Client,
    path: &str,
) -> Result<Option<i64>, RegistrationError> {
    bounded(control.request_timeout(), client.check_stat(path))
        .await
        .map(|stat| stat.map(|stat| stat.ephemeral_owner))
        .map_err(|error| RegistrationError::Request {
            operation: "stat",
            path: path.to_string(),
            error,
        })
}

/// Applies `step_next` until the session holds exactly `target` (`None`: nothing), or
/// `STEPS_PER_CALL_MAX` steps were taken (the next call goes on).
async fn steps_apply(
    control: &Control,
    client: &Client,
    bookie: &mut Bookie,
    target: Option<Place>,
) -> Result<(), RegistrationError> {
    for _ in 0..STEPS_PER_CALL_MAX {
        let Some(step) = step_next(bookie.held, target) else {
            return Ok(());
        };
        step_apply(control, client, bookie, step).await?;
    }
    Ok(())
}

async fn step_apply(
    control: &Control,
    client: &Client,
    bookie: &mut Bookie,
    step: Step,
) -> Result<(), RegistrationError> {
    let (operation, place) = match step {
        Step::Create(place) => ("create", place),
        Step::Delete(place) => ("delete", place),
    };
    let path = control.paths.registration(place, &bookie.id.id);
    let timeout = control.request_timeout();
    let result = match step {
        Step::Create(_) => {
            let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            bounded(timeout, client.create(&path, &bookie.data, &options))
                .await
                .map(|_| true)
        }
        Step::Delete(_) => bounded(timeout, client.delete(&path, None))
            .await
            .map(|()| false),
    };
    match (step, result) {
        (_, Ok(held)) => bookie.held.set(place, held),
        (Step::Delete(_), Err(ZkError::NoNode)) => bookie.held.set(place, false),
        // Ours if our create reached the server but its answer was lost; else someone
        // else's, which we never delete.
        (Step::Create(_), Err(ZkError::NodeExists)) => {
            match owner_of(control, client, &path).await? {
                Some(owner) if owner == client.session_id().0 => bookie.held.set(place, true),
                Some(owner) => {
                    return Err(RegistrationError::RegistrationHeld {
                        path,
                        owner,
                        waited: Duration::ZERO,
                    })
                }
                None => {}
            }
        }
        (_, Err(error)) => {
            return Err(RegistrationError::Request {
                operation,
                path,
                error,
            })
        }
    }
    Ok(())
}

/// Where a settled registration is.
fn place_of(held: Held) -> Place {
    if held.available {
        Place::Available
    } else {
        Place::ReadOnly
    }
}

/// Until the server stops: follow the shards' read-only state, and register again in a new
/// session after an expiry. Then deregister.
async fn serve(control: &Control, mut client: Client, mut bookie: Bookie) {
    let mut target = place_of(bookie.held);
    let mut warning_last = String::new();
    loop {
        tokio::time::sleep(Duration::from_millis(limits::REGISTRATION_POLL_MS)).await;
        if control.stopping() {
            break;
        }
        if session_ended(&client) {
            tracing::warn!(
                "ZooKeeper session {:#x} ended ({}): registering again in a new one",
                client.session_id().0,
                client.state()
            );
            let Some(new) = reconnect(control).await else {
                return;
            };
            client = new;
            bookie.held = Held::default();
        }
        let wanted = place_wanted(control.router.any_read_only());
        if wanted != target {
            target = wanted;
            println!(
                "ringlog: registration moves to {} ({})",
                control.paths.registration(target, &bookie.id.id),
                match target {
                    Place::ReadOnly => "a journal refuses adds",
                    Place::Available => "every journal accepts adds again",
                }
            );
        }
        match steps_apply(control, &client, &mut bookie, Some(target)).await {
            Ok(()) => warning_last.clear(),
            Err(error) => {
                // Retried next poll; said once per distinct failure, not every 100 ms.
                let warning = error.to_string();
                if warning != warning_last {
                    tracing::warn!("registration: {warning}; retrying");
                    warning_last = warning;
                }
            }
        }
    }
    deregister(control, client, bookie).await;
}

/// A new session, with the parents in place. A serving bookie keeps trying (each attempt
/// bounded by the connect timeout) until it succeeds or the server stops (`None`): giving
/// up would leave it serving but unlisted for good.
async fn reconnect(control: &Control) -> Option<Client> {
    loop {
        match connect(control).await {
            Ok(Some(client)) => match parents_create(control, &client).await {
                Ok(()) => return Some(client),
                Err(error) => {
                    tracing::warn!("registration: {error}; retrying");
                    close(client, deregister_bound()).await;
                }
            },
            Ok(None) => return None,
            Err(error) => tracing::warn!("registration: {error}; retrying"),
        }
        if control.stopping() {
            return None;
        }
    }
}

/// Deletes our znodes and closes the session, both within `ZK_DEREGISTER_TIMEOUT_MS`.
async fn deregister(control: &Control, client: Client, mut bookie: Bookie) {
    let bound = deregister_bound();
    let deadline = Instant::now() + bound;
    let place = place_of(bookie.held);
    let path = control.paths.registration(place, &bookie.id.id);
    let steps = steps_apply(control, &client, &mut bookie, None);
    match tokio::time::timeout(bound, steps).await {
        Ok(Ok(())) => println!("ringlog: deregistered {path}"),
        Ok(Err(error)) => tracing::warn!("cannot deregister: {error}"),
        Err(_) => tracing::warn!(
            "cannot deregister {path} within {} ms; it goes when the session expires",
            limits::ZK_DEREGISTER_TIMEOUT_MS
        ),
    }
    close(client, deadline.saturating_duration_since(Instant::now())).await;
}

/// Runs two futures on this thread until both are done (what `tokio::join!` does, without
/// its macros feature).
async fn both(first: impl Future<Output = ()>, second: impl Future<Output = ()>) {
    let mut first = std::pin::pin!(first);
    let mut second = std::pin::pin!(second);
    let (mut first_done, mut second_done) = (false, false);
    std::future::poll_fn(|context| {
        if !first_done {
            first_done = first.as_mut().poll(context).is_ready();
        }
        if !second_done {
            second_done = second.as_mut().poll(context).is_ready();
        }
        if first_done && second_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}
