//! The TOML config file (`--config`): read it and fill in every option the flags left out.

use super::error::ConfigError;
use super::serve_args::ServeArgs;

impl ServeArgs {
    /// Reads `--config FILE` if given and fills every option the flags left out from it.
    pub fn merge_config_file(self) -> Result<ServeArgs, ConfigError> {
        let Some(path) = self.config.clone() else {
            return Ok(self);
        };
        let text = std::fs::read_to_string(&path).map_err(|error| ConfigError::FileRead {
            path: path.clone(),
            error,
        })?;
        let file: ServeArgs =
            toml::from_str(&text).map_err(|error| ConfigError::FileParse { path, error })?;
        Ok(self.or(file))
    }

    /// Field by field: `self` if set, else `file`.
    fn or(self, file: ServeArgs) -> ServeArgs {
        ServeArgs {
            data_dir: self.data_dir.or(file.data_dir),
            listen: self.listen.or(file.listen),
            http_listen: self.http_listen.or(file.http_listen),
            http_tls: self.http_tls.or(file.http_tls),
            log: self.log.or(file.log),
            shards: self.shards.or(file.shards),
            cores: self.cores.or(file.cores),
            config: self.config,
            segment_size: self.segment_size.or(file.segment_size),
            commits_in_flight: self.commits_in_flight.or(file.commits_in_flight),
            commit_overlap_min_kib: self.commit_overlap_min_kib.or(file.commit_overlap_min_kib),
            commit_block_bytes: self.commit_block_bytes.or(file.commit_block_bytes),
            sync_mode: self.sync_mode.or(file.sync_mode),
            frame_size_max: self.frame_size_max.or(file.frame_size_max),
            connections_max: self.connections_max.or(file.connections_max),
            direct_io: self.direct_io.or(file.direct_io),
            segment_zero_fill: self.segment_zero_fill.or(file.segment_zero_fill),
            zero_ahead: self.zero_ahead.or(file.zero_ahead),
            index_cache_mib: self.index_cache_mib.or(file.index_cache_mib),
            disk_reserve_mib: self.disk_reserve_mib.or(file.disk_reserve_mib),
            disk_pressure_percent: self.disk_pressure_percent.or(file.disk_pressure_percent),
            segment_recycle_max: self.segment_recycle_max.or(file.segment_recycle_max),
            read_ahead_mib: self.read_ahead_mib.or(file.read_ahead_mib),
            sort_sealed_segments: self.sort_sealed_segments.or(file.sort_sealed_segments),
            sort_traffic_max_mib: self.sort_traffic_max_mib.or(file.sort_traffic_max_mib),
            scrub_rate_mib: self.scrub_rate_mib.or(file.scrub_rate_mib),
            scrub_cycle_hours: self.scrub_cycle_hours.or(file.scrub_cycle_hours),
            verify_digest_on_add: self.verify_digest_on_add.or(file.verify_digest_on_add),
            read_pace_percent: self.read_pace_percent.or(file.read_pace_percent),
            read_pace_commit_us: self.read_pace_commit_us.or(file.read_pace_commit_us),
            idle_timeout_ms: self.idle_timeout_ms.or(file.idle_timeout_ms),
            busy_poll_us: self.busy_poll_us.or(file.busy_poll_us),
            commit_stall_ms: self.commit_stall_ms.or(file.commit_stall_ms),
            shard_slice_us: self.shard_slice_us.or(file.shard_slice_us),
            requests_in_flight_max: self.requests_in_flight_max.or(file.requests_in_flight_max),
            frames_per_turn_max: self.frames_per_turn_max.or(file.frames_per_turn_max),
            zk: self.zk.or(file.zk),
            zk_root: self.zk_root.or(file.zk_root),
            advertised_address: self.advertised_address.or(file.advertised_address),
            zk_session_timeout_ms: self.zk_session_timeout_ms.or(file.zk_session_timeout_ms),
            zk_connect_timeout_ms: self.zk_connect_timeout_ms.or(file.zk_connect_timeout_ms),
            gc_interval_ms: self.gc_interval_ms.or(file.gc_interval_ms),
            gc_metadata_rate: self.gc_metadata_rate.or(file.gc_metadata_rate),
            compaction_threshold_minor: self
                .compaction_threshold_minor
                .or(file.compaction_threshold_minor),
            compaction_threshold_major: self
                .compaction_threshold_major
                .or(file.compaction_threshold_major),
            compaction_rate_mib: self.compaction_rate_mib.or(file.compaction_rate_mib),
            compaction_commit_percent: self
                .compaction_commit_percent
                .or(file.compaction_commit_percent),
            gc_overreplicated_wait_ms: self
                .gc_overreplicated_wait_ms
                .or(file.gc_overreplicated_wait_ms),
            tls_cert: self.tls_cert.or(file.tls_cert),
            tls_key: self.tls_key.or(file.tls_key),
            tls_trust: self.tls_trust.or(file.tls_trust),
            tls_client_auth: self.tls_client_auth.or(file.tls_client_auth),
            tls_authorized_roles: self.tls_authorized_roles.or(file.tls_authorized_roles),
            tls_required: self.tls_required.or(file.tls_required),
            tls_refresh_s: self.tls_refresh_s.or(file.tls_refresh_s),
            tls_handshake_timeout_ms: self
                .tls_handshake_timeout_ms
                .or(file.tls_handshake_timeout_ms),
        }
    }
}
