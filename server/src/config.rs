//! Command line and TOML config file -> one validated `Config`, decided before any thread starts.
//!
//! Every flag of `ringlog serve` has a snake_case key of the same name in the config file;
//! a flag given on the command line overrides the file. Defaults live in `limits.rs`.
//!
//! One file per job: `serve_args.rs` (the flags and keys), `file.rs` (the config file),
//! `resolve.rs` (defaults and bounds), `settings.rs` (`Config`), `data_dir_list.rs` (the
//! --data-dir list and journal placement), `error.rs` (`ConfigError`). The command line
//! itself is `cli.rs`.

mod data_dir_list;
mod error;
mod file;
mod resolve;
mod serve_args;
mod settings;

pub use self::data_dir_list::{
    data_dirs_parse, journal_dir, shard_data_dir, DataDirList, JOURNAL_DIR_PREFIX,
};
pub use self::error::ConfigError;
pub use self::resolve::{
    cores_parse, http_listen_parse, log_parse, shard_cores, zk_path_valid, zk_servers_valid,
};
pub use self::serve_args::{ServeArgs, SyncModeName};
pub use self::settings::{Config, RegistrationConfig};
