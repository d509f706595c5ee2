//! `ServeArgs::resolve`: defaults applied and every bound checked, one value at a time,
//! into a `Config`.

use super::data_dir_list::data_dirs_parse;
use super::error::ConfigError;
use super::serve_args::{ServeArgs, SyncModeName};
use super::settings::{Config, RegistrationConfig};
use crate::limits;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

impl ServeArgs {
    /// Applies defaults and checks every bound. `cores_available` is the set of cores this
    /// process may run on (passed in so the rules can be tested without the machine).
    pub fn resolve(self, cores_available: &[usize]) -> Result<Config, ConfigError> {
        let registration = self.registration()?;
        let tls = self.tls()?;
        let data_dir = self.data_dir.as_ref().ok_or(ConfigError::DataDirMissing)?;
        let data_dirs = data_dirs_parse(data_dir)?;
        let listen = self.listen.unwrap_or(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            limits::LISTEN_PORT_DEFAULT,
        ));
        let http_listen = http_listen_parse(self.http_listen.as_deref())?;
        let http_tls = self.http_tls.unwrap_or(false);
        if http_tls && tls.is_none() {
            return Err(ConfigError::TlsMissing { option: "http-tls" });
        }
        if http_tls && http_listen.is_none() {
            return Err(ConfigError::TlsNeeds {
                option: "http-tls",
                needs: "an --http-listen address (it is off)",
            });
        }
        let log = log_parse(self.log.clone().or_else(|| std::env::var("RUST_LOG").ok()))?;
        let cores = self.cores.as_deref().map(cores_parse).transpose()?;
        let shard_cores = shard_cores(self.shards, cores, cores_available)?;
        let segment_size = self
            .segment_size
            .unwrap_or(engine::Config::default().segment_size);
        let journal = engine::Config {
            segment_size,
            commits_in_flight_max: self
                .commits_in_flight
                .unwrap_or(engine::Config::default().commits_in_flight_max),
            commit_overlap_bytes_min: commit_overlap_bytes_min(self.commit_overlap_min_kib)?,
            commit_block: commit_block(self.commit_block_bytes)?,
            sync_mode: match self.sync_mode.unwrap_or(SyncModeName::Dsync) {
                SyncModeName::LinkedFdatasync => engine::SyncMode::LinkedFdatasync,
                SyncModeName::Dsync => engine::SyncMode::Dsync,
            },
            segment_zero_fill: self
                .segment_zero_fill
                .unwrap_or(engine::config::SEGMENT_ZERO_FILL_DEFAULT),
            zero_ahead: self
                .zero_ahead
                .unwrap_or(engine::Config::default().zero_ahead),
            index_cache_pages: index_cache_pages(self.index_cache_mib)?,
            compaction_threshold_minor_per_mille: per_mille(
                "--compaction-threshold-minor",
                self.compaction_threshold_minor,
                engine::Config::default().compaction_threshold_minor_per_mille,
            )?,
            compaction_threshold_major_per_mille: per_mille(
                "--compaction-threshold-major",
                self.compaction_threshold_major,
                engine::Config::default().compaction_threshold_major_per_mille,
            )?,
            disk_reserve: disk_reserve(self.disk_reserve_mib)?,
            disk_pressure_percent: disk_pressure_percent(self.disk_pressure_percent)?,
            segment_recycle_max: segment_recycle_max(self.segment_recycle_max, segment_size)?,
            read_ahead_windows: read_ahead_windows(self.read_ahead_mib, shard_cores.len())?,
            sort_sealed: self
                .sort_sealed_segments
                .unwrap_or(engine::Config::default().sort_sealed),
            read_pace_percent: self
                .read_pace_percent
                .unwrap_or(engine::Config::default().read_pace_percent),
            scrub_rate_max: scrub_rate_mib(self.scrub_rate_mib)? * 1024 * 1024,
            scrub_cycle_ms: scrub_cycle_ms(self.scrub_cycle_hours)?,
            scrub_seed: scrub_seed(),
            verify_digest_on_add: self.verify_digest_on_add.unwrap_or(false),
            ..engine::Config::default()
        };
        let compaction_rate_mib = self
            .compaction_rate_mib
            .unwrap_or(limits::COMPACTION_RATE_MIB_DEFAULT);
        if !(1..=limits::COMPACTION_RATE_MIB_MAX).contains(&compaction_rate_mib) {
            return Err(ConfigError::OutOfBounds {
                option: "--compaction-rate-mib",
                expected: "1..=4096",
            });
        }
        let compaction_commit_percent = self
            .compaction_commit_percent
            .unwrap_or(limits::COMPACTION_COMMIT_PERCENT_DEFAULT);
        if compaction_commit_percent > limits::COMPACTION_COMMIT_PERCENT_MAX {
            return Err(ConfigError::OutOfBounds {
                option: "--compaction-commit-percent",
                expected: "0..=1000",
            });
        }
        let sort_traffic_max_mib = self
            .sort_traffic_max_mib
            .unwrap_or(limits::SORT_TRAFFIC_MAX_MIB_DEFAULT);
        if sort_traffic_max_mib > limits::SORT_TRAFFIC_MAX_MIB_MAX {
            return Err(ConfigError::OutOfBounds {
                option: "--sort-traffic-max-mib",
                expected: "0..=4096",
            });
        }
        let read_pace_commit_us = self
            .read_pace_commit_us
            .unwrap_or(limits::READ_PACE_COMMIT_US_DEFAULT);
        if !(limits::READ_PACE_COMMIT_US_MIN..=limits::READ_PACE_COMMIT_US_MAX)
            .contains(&read_pace_commit_us)
        {
            return Err(ConfigError::OutOfBounds {
                option: "--read-pace-commit-us",
                expected: "100..=1000000",
            });
        }
        journal.validate().map_err(ConfigError::Journal)?;
        let read_pace_commit =
            (journal.read_pace_percent != 0).then(|| Duration::from_micros(read_pace_commit_us));
        let config = Config {
            data_dirs,
            listen,
            http_listen,
            http_tls,
            log,
            shard_cores,
            journal,
            direct_io: self.direct_io.unwrap_or(true),
            frame_size_max: self.frame_size_max.unwrap_or(limits::FRAME_SIZE_MAX_MIN),
            connections_max: self
                .connections_max
                .unwrap_or(limits::CONNECTIONS_MAX_DEFAULT),
            idle_timeout: Duration::from_millis(
                self.idle_timeout_ms
                    .unwrap_or(limits::IDLE_TIMEOUT_MS_DEFAULT),
            ),
            busy_poll: Duration::from_micros(
                self.busy_poll_us.unwrap_or(limits::BUSY_POLL_US_DEFAULT),
            ),
            shard_slice: match self
                .shard_slice_us
                .unwrap_or(limits::SHARD_SLICE_US_DEFAULT)
            {
                0 => None,
                us => Some(Duration::from_micros(us)),
            },
            commit_stall: match self
                .commit_stall_ms
                .unwrap_or(limits::COMMIT_STALL_MS_DEFAULT)
            {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            },
            requests_in_flight_max: self
                .requests_in_flight_max
                .unwrap_or(limits::REQUESTS_IN_FLIGHT_MAX_DEFAULT),
            frames_per_turn_max: self
                .frames_per_turn_max
                .unwrap_or(limits::FRAMES_PER_TURN_MAX_DEFAULT),
            compaction_rate_bytes_per_s: compaction_rate_mib * 1024 * 1024,
            compaction_commit_percent,
            sort_traffic_max_bytes_per_s: sort_traffic_max_mib * 1024 * 1024,
            read_pace_commit,
            registration,
            tls,
        };
        config.validate()?;
        Ok(config)
    }

    /// The TLS settings, checked: `None` without --tls-cert, and then no other TLS option may
    /// be set (it would silently do nothing). The files themselves are read at start
    /// (`tls::TlsContext::load`), where a bad one fails the start.
    fn tls(&self) -> Result<Option<std::sync::Arc<crate::tls::TlsSettings>>, ConfigError> {
        let Some(cert) = self.tls_cert.clone() else {
            let options = [
                ("tls-key", self.tls_key.is_some()),
                ("tls-trust", self.tls_trust.is_some()),
                ("tls-client-auth", self.tls_client_auth.is_some()),
                ("tls-authorized-roles", self.tls_authorized_roles.is_some()),
                ("tls-required", self.tls_required.is_some()),
                ("tls-refresh-s", self.tls_refresh_s.is_some()),
                (
                    "tls-handshake-timeout-ms",
                    self.tls_handshake_timeout_ms.is_some(),
                ),
            ];
            if let Some((option, _)) = options.iter().find(|(_, set)| *set) {
                return Err(ConfigError::TlsMissing { option });
            }
            return Ok(None);
        };
        let key = self.tls_key.clone().ok_or(ConfigError::TlsKeyMissing)?;
        let client_auth = self.tls_client_auth.unwrap_or(false);
        if client_auth && self.tls_trust.is_none() {
            return Err(ConfigError::TlsNeeds {
                option: "tls-client-auth",
                needs:
                    "--tls-trust FILE (the CA certificates client certificates are checked against)",
            });
        }
        let authorized_roles = match self.tls_authorized_roles.as_deref() {
            None => Vec::new(),
            Some(list) => tls_roles_parse(list)?,
        };
        if !authorized_roles.is_empty() && !client_auth {
            return Err(ConfigError::TlsNeeds {
                option: "tls-authorized-roles",
                needs: "--tls-client-auth true (roles are read from the client's certificate)",
            });
        }
        let refresh_s = self.tls_refresh_s.unwrap_or(limits::TLS_REFRESH_S_DEFAULT);
        if refresh_s > limits::TLS_REFRESH_S_MAX {
            return Err(ConfigError::OutOfBounds {
                option: "tls-refresh-s",
                expected: "0..=86400",
            });
        }
        let handshake_timeout_ms = self
            .tls_handshake_timeout_ms
            .unwrap_or(limits::TLS_HANDSHAKE_TIMEOUT_MS_DEFAULT);
        if !(limits::TLS_HANDSHAKE_TIMEOUT_MS_MIN..=limits::TLS_HANDSHAKE_TIMEOUT_MS_MAX)
            .contains(&handshake_timeout_ms)
        {
            return Err(ConfigError::OutOfBounds {
                option: "tls-handshake-timeout-ms",
                expected: "100..=600000",
            });
        }
        Ok(Some(std::sync::Arc::new(crate::tls::TlsSettings {
            cert,
            key,
            trust: self.tls_trust.clone(),
            client_auth,
            authorized_roles,
            required: self.tls_required.unwrap_or(false),
            refresh: Duration::from_secs(refresh_s),
            handshake_timeout: Duration::from_millis(handshake_timeout_ms),
        })))
    }

    /// The registration settings, checked: `None` without --zk, and then no other ZooKeeper
    /// option may be set (it would silently do nothing).
    fn registration(&self) -> Result<Option<RegistrationConfig>, ConfigError> {
        let Some(servers) = self.zk.clone() else {
            let options = [
                ("zk-root", self.zk_root.is_some()),
                ("advertised-address", self.advertised_address.is_some()),
                (
                    "zk-session-timeout-ms",
                    self.zk_session_timeout_ms.is_some(),
                ),
                (
                    "zk-connect-timeout-ms",
                    self.zk_connect_timeout_ms.is_some(),
                ),
                ("gc-interval-ms", self.gc_interval_ms.is_some()),
                ("gc-metadata-rate", self.gc_metadata_rate.is_some()),
                (
                    "gc-overreplicated-wait-ms",
                    self.gc_overreplicated_wait_ms.is_some(),
                ),
            ];
            return match options.iter().find(|(_, set)| *set) {
                Some(&(option, _)) => Err(ConfigError::ZkMissing { option }),
                None => Ok(None),
            };
        };
        if !zk_servers_valid(&servers) {
            return Err(ConfigError::ZkServers { servers });
        }
        let root = self
            .zk_root
            .clone()
            .unwrap_or_else(|| limits::ZK_ROOT_DEFAULT.to_string());
        if !zk_path_valid(&root) {
            return Err(ConfigError::ZkRoot { root });
        }
        if let Some(address) = self.advertised_address {
            let ipv4 = matches!(address.ip(), IpAddr::V4(ip) if !ip.is_unspecified());
            if !ipv4 || address.port() == 0 {
                return Err(ConfigError::AdvertisedAddress { address });
            }
        }
        let session_ms = self
            .zk_session_timeout_ms
            .unwrap_or(limits::ZK_SESSION_TIMEOUT_MS_DEFAULT);
        let session = limits::ZK_SESSION_TIMEOUT_MS_MIN..=limits::ZK_SESSION_TIMEOUT_MS_MAX;
        if !session.contains(&session_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "zk-session-timeout-ms",
                expected: "100..=600000",
            });
        }
        let connect_ms = self
            .zk_connect_timeout_ms
            .unwrap_or(limits::ZK_CONNECT_TIMEOUT_MS_DEFAULT);
        let connect = limits::ZK_CONNECT_TIMEOUT_MS_MIN..=limits::ZK_CONNECT_TIMEOUT_MS_MAX;
        if !connect.contains(&connect_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "zk-connect-timeout-ms",
                expected: "100..=3600000",
            });
        }
        let (gc_interval, gc_metadata_rate) = self.gc()?;
        let gc_overreplicated_wait = self.gc_overreplicated(gc_interval.is_some())?;
        Ok(Some(RegistrationConfig {
            servers,
            root,
            advertised_address: self.advertised_address,
            session_timeout: Duration::from_millis(session_ms),
            connect_timeout: Duration::from_millis(connect_ms),
            gc_interval,
            gc_metadata_rate,
            gc_overreplicated_wait,
        }))
    }

    /// The garbage-collection settings, checked: the interval (`None`: off) and the rate.
    fn gc(&self) -> Result<(Option<Duration>, u32), ConfigError> {
        let interval_ms = self
            .gc_interval_ms
            .unwrap_or(limits::GC_INTERVAL_MS_DEFAULT);
        let interval = limits::GC_INTERVAL_MS_MIN..=limits::GC_INTERVAL_MS_MAX;
        if interval_ms != 0 && !interval.contains(&interval_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-interval-ms",
                expected: "0 (off) or 100..=604800000",
            });
        }
        let rate = self
            .gc_metadata_rate
            .unwrap_or(limits::GC_METADATA_RATE_DEFAULT);
        if !(1..=limits::GC_METADATA_RATE_MAX).contains(&rate) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-metadata-rate",
                expected: "1..=100000",
            });
        }
        let interval = (interval_ms != 0).then(|| Duration::from_millis(interval_ms));
        Ok((interval, rate))
    }

    /// The over-replication wait, checked (`None`: off). Off by default when collection is
    /// off; asked for explicitly there, it is refused, since it would silently do nothing.
    fn gc_overreplicated(&self, collecting: bool) -> Result<Option<Duration>, ConfigError> {
        let wait_ms = match (self.gc_overreplicated_wait_ms, collecting) {
            // Off unless asked for: ringlog keeps no local record of its bookie id (the Java
            // bookie's cookie in its data directory), so a bookie restarted under a new
            // address would find every closed ledger over-replicated and delete it.
            (Some(0) | None, _) => return Ok(None),
            (Some(_), false) => {
                return Err(ConfigError::OutOfBounds {
                    option: "gc-overreplicated-wait-ms",
                    expected: "0 (off) while --gc-interval-ms is 0",
                })
            }
            (Some(wait_ms), true) => wait_ms,
        };
        let bounds = limits::GC_OVERREPLICATED_WAIT_MS_MIN..=limits::GC_OVERREPLICATED_WAIT_MS_MAX;
        if !bounds.contains(&wait_ms) {
            return Err(ConfigError::OutOfBounds {
                option: "gc-overreplicated-wait-ms",
                expected: "0 (off) or 100..=604800000",
            });
        }
        Ok(Some(Duration::from_millis(wait_ms)))
    }
}

/// `HOST:PORT[,HOST:PORT...]`: at most `ZK_SERVERS_MAX` entries, each a non-empty host
/// without `/` (no chroot suffix: the root is --zk-root) and a port from 1 to 65535.
#[must_use]
pub fn zk_servers_valid(servers: &str) -> bool {
    let entries: Vec<&str> = servers.split(',').collect();
    entries.len() <= limits::ZK_SERVERS_MAX
        && entries.iter().all(|entry| {
            let Some((host, port)) = entry.trim().rsplit_once(':') else {
                return false;
            };
            let host_ok = !host.is_empty() && !host.contains(['/', ' ']);
            host_ok && port.parse::<u16>().is_ok_and(|port| port != 0)
        })
}

/// An absolute ZooKeeper path other than `/`: no empty, `.` or `..` component, no trailing
/// `/`, and no character ZooKeeper refuses (NUL and other control characters).
#[must_use]
pub fn zk_path_valid(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    path.len() <= limits::ZK_ROOT_SIZE_MAX
        && !path.chars().any(char::is_control)
        && rest
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Parses `0,1` / `0-3,6` into a list of cores, in order, without duplicates.
pub fn cores_parse(list: &str) -> Result<Vec<usize>, ConfigError> {
    let error = || ConfigError::CoresSyntax {
        list: list.to_string(),
    };
    let mut cores = Vec::new();
    for part in list.split(',').map(str::trim) {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (first.trim(), last.trim()),
            None => (part, part),
        };
        let first: usize = first.parse().map_err(|_| error())?;
        let last: usize = last.parse().map_err(|_| error())?;
        // Bounded so a typo such as 0-1000000 fails here instead of building a huge list.
        if first > last || last - first >= limits::SHARDS_MAX {
            return Err(error());
        }
        for core in first..=last {
            if cores.contains(&core) || cores.len() == limits::SHARDS_MAX {
                return Err(error());
            }
            cores.push(core);
        }
    }
    Ok(cores)
}

/// A fraction flag as the engine's thousandths, or `default` when not given.
fn per_mille(option: &'static str, value: Option<f64>, default: u32) -> Result<u32, ConfigError> {
    let Some(fraction) = value else {
        return Ok(default);
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(ConfigError::OutOfBounds {
            option,
            expected: "a fraction from 0 to 1",
        });
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((fraction * 1000.0).round() as u32)
}

/// The journal's index page cache from `--index-cache-mib` (4 KiB pages).
fn index_cache_pages(mib: Option<u64>) -> Result<usize, ConfigError> {
    let mib = mib.unwrap_or(limits::INDEX_CACHE_MIB_DEFAULT);
    if mib > limits::INDEX_CACHE_MIB_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--index-cache-mib",
            expected: "0..=4096",
        });
    }
    Ok(usize::try_from(mib * 256).expect("bounded above"))
}

/// The journal's free-space reserve from `--disk-reserve-mib`, in bytes.
fn disk_reserve(mib: Option<u64>) -> Result<u64, ConfigError> {
    let mib = mib.unwrap_or(limits::DISK_RESERVE_MIB_DEFAULT);
    if mib > limits::DISK_RESERVE_MIB_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--disk-reserve-mib",
            expected: "0..=1048576",
        });
    }
    Ok(mib << 20)
}

/// Where disk pressure starts, from `--disk-pressure-percent`.
fn disk_pressure_percent(percent: Option<u32>) -> Result<u32, ConfigError> {
    let percent = percent.unwrap_or(engine::constants::DISK_PRESSURE_PERCENT_DEFAULT);
    if percent > engine::constants::DISK_PRESSURE_PERCENT_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--disk-pressure-percent",
            expected: "0..=90",
        });
    }
    Ok(percent)
}

/// Bytes of records a commit needs to go beside another in flight, from
/// `--commit-overlap-min-kib`.
fn commit_overlap_bytes_min(kib: Option<u64>) -> Result<usize, ConfigError> {
    let max_kib = engine::constants::COMMIT_OVERLAP_BYTES_MIN_MAX / 1024;
    let Some(kib) = kib else {
        return Ok(engine::constants::COMMIT_OVERLAP_BYTES_MIN_DEFAULT);
    };
    match usize::try_from(kib) {
        Ok(kib) if kib <= max_kib => Ok(kib * 1024),
        _ => Err(ConfigError::OutOfBounds {
            option: "--commit-overlap-min-kib",
            expected: "0..=8192",
        }),
    }
}

/// What commits are padded to, from `--commit-block-bytes`.
fn commit_block(bytes: Option<u64>) -> Result<engine::CommitBlock, ConfigError> {
    let Some(bytes) = bytes else {
        return Ok(engine::CommitBlock::default());
    };
    usize::try_from(bytes)
        .ok()
        .and_then(engine::CommitBlock::of_size)
        .ok_or(ConfigError::OutOfBounds {
            option: "--commit-block-bytes",
            expected: "4096 or 512",
        })
}

/// Dead segments a journal keeps for reuse, from `--segment-recycle-max`; by default 4 GiB of
/// segments of `segment_size` (`engine::config::segment_recycle_default`).
fn segment_recycle_max(count: Option<usize>, segment_size: u64) -> Result<usize, ConfigError> {
    let count = count.unwrap_or(engine::config::segment_recycle_default(segment_size));
    if count > engine::constants::SEGMENT_RECYCLE_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--segment-recycle-max",
            expected: "0..=64",
        });
    }
    Ok(count)
}

/// Each journal's read-ahead windows (1 MiB each): `--read-ahead-mib`, the server's total,
/// shared evenly by `shards`.
fn read_ahead_windows(mib: Option<usize>, shards: usize) -> Result<usize, ConfigError> {
    const _: () = assert!(engine::constants::READ_AHEAD_WINDOW_SIZE == 1 << 20);
    let mib = mib.unwrap_or(limits::READ_AHEAD_MIB_DEFAULT);
    let windows = mib / shards.max(1);
    if mib > limits::READ_AHEAD_MIB_MAX || windows > engine::constants::READ_AHEAD_WINDOWS_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--read-ahead-mib",
            expected: "0..=16384, and at most 1024 per shard",
        });
    }
    // A non-zero total too small to give every shard a window still reads ahead.
    Ok(if mib > 0 { windows.max(1) } else { 0 })
}

/// One core per shard. With --cores, one shard per listed core; without, shards cycle over
/// the available cores (more shards than cores is allowed, for tests, but shares cores).
pub fn shard_cores(
    shards: Option<usize>,
    cores: Option<Vec<usize>>,
    available: &[usize],
) -> Result<Vec<usize>, ConfigError> {
    // A process that cannot list its cores still runs, on a nominal core 0.
    let available = if available.is_empty() {
        &[0][..]
    } else {
        available
    };
    match cores {
        Some(cores) => {
            if let Some(&core) = cores.iter().find(|core| !available.contains(core)) {
                return Err(ConfigError::CoreUnavailable {
                    core,
                    available: available.to_vec(),
                });
            }
            match shards {
                Some(shards) if shards != cores.len() => Err(ConfigError::ShardsCoresMismatch {
                    shards,
                    cores: cores.len(),
                }),
                _ => Ok(cores),
            }
        }
        None => {
            let shards = shards.unwrap_or(available.len());
            if !(1..=limits::SHARDS_MAX).contains(&shards) {
                return Err(ConfigError::OutOfBounds {
                    option: "shards",
                    expected: "1..=64",
                });
            }
            Ok((0..shards)
                .map(|shard| available[shard % available.len()])
                .collect())
        }
    }
}

/// `--http-listen`: an address, or `off` (`None`); absent, `HTTP_LISTEN_DEFAULT`.
pub fn http_listen_parse(value: Option<&str>) -> Result<Option<SocketAddr>, ConfigError> {
    let value = value.map_or(limits::HTTP_LISTEN_DEFAULT, str::trim);
    if value == "off" {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| ConfigError::HttpListen {
            value: value.to_string(),
        })
}

/// `--log`: a `Targets` filter (`info`, `warn,server::shard=debug`); absent, `info`.
pub fn log_parse(
    value: Option<String>,
) -> Result<tracing_subscriber::filter::Targets, ConfigError> {
    let value = value.unwrap_or_else(|| limits::LOG_FILTER_DEFAULT.to_string());
    value.trim().parse().map_err(|_| ConfigError::Log { value })
}

/// The --tls-authorized-roles list: comma-separated, items trimmed, none empty.
pub fn tls_roles_parse(list: &str) -> Result<Vec<String>, ConfigError> {
    let roles: Vec<String> = list.split(',').map(|role| role.trim().to_owned()).collect();
    if roles.iter().any(String::is_empty) {
        return Err(ConfigError::TlsRoles {
            list: list.to_owned(),
        });
    }
    Ok(roles)
}

/// `--scrub-rate-mib`.
fn scrub_rate_mib(value: Option<u64>) -> Result<u64, ConfigError> {
    let mib = value.unwrap_or(limits::SCRUB_RATE_MIB_DEFAULT);
    if mib > limits::SCRUB_RATE_MIB_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "--scrub-rate-mib",
            expected: "0..=1024",
        });
    }
    Ok(mib)
}

/// `--scrub-cycle-hours`, in milliseconds.
fn scrub_cycle_ms(value: Option<f64>) -> Result<u64, ConfigError> {
    let hours = value.unwrap_or(limits::SCRUB_CYCLE_HOURS_DEFAULT);
    let bounds = limits::SCRUB_CYCLE_HOURS_MIN..=limits::SCRUB_CYCLE_HOURS_MAX;
    if !bounds.contains(&hours) {
        return Err(ConfigError::OutOfBounds {
            option: "--scrub-cycle-hours",
            expected: "0.0001..=8760",
        });
    }
    // Bounded above, so the product fits; at least 1 ms by the lower bound.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ms = (hours * 3_600_000.0).round() as u64;
    Ok(ms.max(1))
}

/// Where each journal's first scrub cycle starts: random per start, so bookies holding the
/// same ledgers do not all check the same segments first (std's hasher keys are random).
fn scrub_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    hasher.finish()
}
