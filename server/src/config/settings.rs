//! `Config`, the validated server configuration, and the checks across its fields.

use super::data_dir_list::{journal_dir, shard_data_dir};
use super::error::ConfigError;
use crate::limits;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The validated server configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The data directories, in the order given: shard K's journal directory is
    /// `journal_dir(K)`. Never empty, no item twice (as written; `run` also compares them
    /// canonicalised), at most `DATA_DIRS_MAX`.
    pub data_dirs: Vec<PathBuf>,
    /// Address every shard binds.
    pub listen: SocketAddr,
    /// Address of the HTTP endpoint (`None`: off).
    pub http_listen: Option<SocketAddr>,
    /// The HTTP endpoint speaks TLS with the bookie port's certificate (`--http-tls`).
    pub http_tls: bool,
    /// Which log events are written (`--log`, else RUST_LOG, else info).
    pub log: tracing_subscriber::filter::Targets,
    /// The core each shard is pinned to; its length is the shard count.
    pub shard_cores: Vec<usize>,
    /// The engine's settings, the same for every shard.
    pub journal: engine::Config,
    /// O_DIRECT on journal files.
    pub direct_io: bool,
    /// Largest request frame, length prefix included.
    pub frame_size_max: u32,
    /// Connections per shard.
    pub connections_max: usize,
    /// Idle connection timeout.
    pub idle_timeout: Duration,
    /// How long a shard polls after its last work before it sleeps (0: never polls).
    pub busy_poll: Duration,
    /// The scheduler slice shard threads ask for (`None`: the kernel's default).
    pub shard_slice: Option<Duration>,
    /// A commit in flight longer than this is logged (`None`: the watchdog is off).
    pub commit_stall: Option<Duration>,
    /// Requests in flight per connection.
    pub requests_in_flight_max: usize,
    /// Frames decoded per connection per loop turn.
    pub frames_per_turn_max: usize,
    /// Bytes per second each shard's compaction may read and write.
    pub compaction_rate_bytes_per_s: u64,
    /// Percent of its commits' bytes each shard's compaction may read and write besides.
    pub compaction_commit_percent: u64,
    /// Sorting pauses while a shard's commits and reads move more bytes per second.
    pub sort_traffic_max_bytes_per_s: u64,
    /// Reads are paced over a tick whose commits took longer than this on average; `None`
    /// never paces (--read-pace-percent 0).
    pub read_pace_commit: Option<Duration>,
    /// ZooKeeper registration; `None` without --zk.
    pub registration: Option<RegistrationConfig>,
    /// TLS on the bookie port; `None` without --tls-cert.
    pub tls: Option<std::sync::Arc<crate::tls::TlsSettings>>,
}

/// Where and how the bookie registers in ZooKeeper (`registration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationConfig {
    /// The ZooKeeper connect string, `HOST:PORT[,HOST:PORT...]`.
    pub servers: String,
    /// The BookKeeper metadata root, such as `/ledgers`.
    pub root: String,
    /// The address published to clients (and the bookie id); `None`: from the listen address.
    pub advertised_address: Option<SocketAddr>,
    /// The session timeout asked of ZooKeeper.
    pub session_timeout: Duration,
    /// How long startup retries an unreachable ZooKeeper.
    pub connect_timeout: Duration,
    /// Time between garbage-collection rounds; `None`: collection is off.
    pub gc_interval: Option<Duration>,
    /// Metadata reads per second of a collection round, at least 1.
    pub gc_metadata_rate: u32,
    /// Time between over-replication checks, and the grace period of an over-replicated
    /// ledger; `None`: the check is off (always with collection off).
    pub gc_overreplicated_wait: Option<Duration>,
}

impl Config {
    /// The shard count.
    #[must_use]
    pub fn shards(&self) -> usize {
        self.shard_cores.len()
    }

    /// The data directory holding shard `shard`'s journal (`shard_data_dir`).
    #[must_use]
    pub fn shard_data_dir(&self, shard: usize) -> &Path {
        shard_data_dir(&self.data_dirs, shard)
    }

    /// Shard `shard`'s journal directory (`journal_dir`).
    #[must_use]
    pub fn journal_dir(&self, shard: usize) -> PathBuf {
        journal_dir(&self.data_dirs, shard)
    }

    /// The directory the ZooKeeper cookie names as the bookie's journal and ledger directory:
    /// the first of the list. A cookie names one; the first keeps a one-directory bookie's
    /// cookie what it was, and a list that only grows at its end keeps its cookie.
    #[must_use]
    pub fn data_dir_first(&self) -> &Path {
        shard_data_dir(&self.data_dirs, 0)
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, option, expected| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::OutOfBounds { option, expected })
            }
        };
        let frame = limits::FRAME_SIZE_MAX_MIN..=limits::FRAME_SIZE_MAX_LIMIT;
        check(
            frame.contains(&self.frame_size_max),
            "frame-size-max",
            "5253120..=67108864",
        )?;
        let connections = 1..=limits::CONNECTIONS_MAX_LIMIT;
        check(
            connections.contains(&self.connections_max),
            "connections-max",
            "1..=65536",
        )?;
        let idle_ms = u64::try_from(self.idle_timeout.as_millis()).unwrap_or(u64::MAX);
        let idle = limits::IDLE_TIMEOUT_MS_MIN..=limits::IDLE_TIMEOUT_MS_MAX;
        check(
            idle.contains(&idle_ms),
            "idle-timeout-ms",
            "100..=604800000",
        )?;
        let busy_us = u64::try_from(self.busy_poll.as_micros()).unwrap_or(u64::MAX);
        check(
            busy_us <= limits::BUSY_POLL_US_MAX,
            "busy-poll-us",
            "0..=10000",
        )?;
        let slice_us = self.shard_slice.map_or(0, |slice| {
            u64::try_from(slice.as_micros()).unwrap_or(u64::MAX)
        });
        check(
            slice_us == 0
                || (limits::SHARD_SLICE_US_MIN..=limits::SHARD_SLICE_US_MAX).contains(&slice_us),
            "shard-slice-us",
            "0 or 100..=100000",
        )?;
        let stall_ms = self.commit_stall.map_or(0, |stall| {
            u64::try_from(stall.as_millis()).unwrap_or(u64::MAX)
        });
        check(
            stall_ms <= limits::COMMIT_STALL_MS_MAX,
            "commit-stall-ms",
            "0..=3600000",
        )?;
        let requests = 1..=limits::REQUESTS_IN_FLIGHT_MAX_LIMIT;
        let in_flight = self.requests_in_flight_max;
        check(
            requests.contains(&in_flight),
            "requests-in-flight-max",
            "1..=1048576",
        )?;
        let frames = 1..=limits::FRAMES_PER_TURN_MAX_LIMIT;
        check(
            frames.contains(&self.frames_per_turn_max),
            "frames-per-turn-max",
            "1..=1000000",
        )?;
        let shards = 1..=limits::SHARDS_MAX;
        check(shards.contains(&self.shards()), "shards", "1..=64")?;
        Ok(())
    }
}
