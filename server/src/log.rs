//! Logging: `tracing` events written to stderr, one line per event, with the level, the
//! thread (`ringlog-shard-K`, `ringlog-registration`, ...), the module and the event's
//! fields as `key=value`, filtered by `--log` (or RUST_LOG). What is logged: startup and stop,
//! the registration, read-only changes, poisoning, stalled commits, recovery repairs, and
//! connection errors at most once per `CONNECTION_ERRORS_LOG_MS` per shard. Nothing is
//! logged per request: the numbers per request are /metrics' job.
//!
//! The lines a script reads (`ringlog listening on`, `ringlog http on`, the shutdown
//! summaries) stay plain stdout lines, whatever the filter.

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the stderr subscriber for the whole process. A second call (a test that runs the
/// server twice in one process) keeps the first.
pub fn init(filter: &Targets) {
    let format = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_thread_names(true);
    let _ = tracing_subscriber::registry()
        .with(format)
        .with(filter.clone())
        .try_init();
}
