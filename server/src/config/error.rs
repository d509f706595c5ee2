//! `ConfigError`: why the flags and config file do not make a configuration, and its
//! messages.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the flags and config file do not make a configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    FileRead {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The config file is not valid TOML for these keys.
    FileParse {
        path: PathBuf,
        error: toml::de::Error,
    },
    /// Neither --data-dir nor `data_dir` was given.
    DataDirMissing,
    /// An item of the --data-dir list is empty: two commas in a row, a comma at either end,
    /// or `""` in a TOML array.
    DataDirEmpty { list: String },
    /// An item of a TOML `data_dir` array holds a comma: the flag could not spell the list.
    DataDirComma { item: PathBuf },
    /// The --data-dir list names one directory twice: its journals would be placed twice.
    DataDirDuplicate { list: String, directory: PathBuf },
    /// A value is out of its bounds.
    OutOfBounds {
        option: &'static str,
        expected: &'static str,
    },
    /// The --cores list does not parse.
    CoresSyntax { list: String },
    /// A listed core is not available to this process.
    CoreUnavailable { core: usize, available: Vec<usize> },
    /// --shards and --cores disagree.
    ShardsCoresMismatch { shards: usize, cores: usize },
    /// The engine rejected its settings.
    Journal(engine::config::ConfigError),
    /// A ZooKeeper option was given without --zk.
    ZkMissing { option: &'static str },
    /// The --zk list is not `HOST:PORT[,HOST:PORT...]`.
    ZkServers { servers: String },
    /// The --zk-root path is not an absolute ZooKeeper path.
    ZkRoot { root: String },
    /// The --advertised-address cannot be a bookie id.
    AdvertisedAddress { address: SocketAddr },
    /// The --http-listen value is neither an address nor `off`.
    HttpListen { value: String },
    /// The --log (or RUST_LOG) value is not a level or a list of `target=level`.
    Log { value: String },
    /// A TLS option was given without --tls-cert.
    TlsMissing { option: &'static str },
    /// --tls-cert without --tls-key.
    TlsKeyMissing,
    /// A TLS option needs another one.
    TlsNeeds {
        option: &'static str,
        needs: &'static str,
    },
    /// The --tls-authorized-roles list has an empty item.
    TlsRoles { list: String },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::FileRead { path, error } => {
                write!(f, "cannot read config file {}: {error}", path.display())
            }
            ConfigError::FileParse { path, error } => {
                write!(f, "invalid config file {}: {error}", path.display())
            }
            ConfigError::DataDirMissing => {
                write!(
                    f,
                    "no data directory: pass --data-dir DIR (or data_dir in --config)"
                )
            }
            ConfigError::DataDirEmpty { list } => write!(
                f,
                "invalid --data-dir {list:?}: an item is empty (two commas in a row, a comma \
                 at either end, or \"\" in an array); expected DIR[,DIR...]"
            ),
            ConfigError::DataDirComma { item } => write!(
                f,
                "invalid data_dir item {:?}: a data directory's path may not hold a comma",
                item.display()
            ),
            ConfigError::DataDirDuplicate { list, directory } => write!(
                f,
                "invalid --data-dir {list:?}: {} is listed twice; list each directory once",
                directory.display()
            ),
            ConfigError::OutOfBounds { option, expected } => {
                // Some callers name the flag with its dashes, some without.
                let option = option.trim_start_matches("--");
                write!(f, "invalid --{option}: must be {expected}")
            }
            ConfigError::CoresSyntax { list } => write!(
                f,
                "invalid --cores {list:?}: expected a list of cores and ranges such as 0,1 or 0-3"
            ),
            ConfigError::CoreUnavailable { core, available } => {
                write!(
                    f,
                    "core {core} is not available to this process (available: {available:?})"
                )
            }
            ConfigError::ShardsCoresMismatch { shards, cores } => {
                write!(
                    f,
                    "--shards {shards} but --cores lists {cores} cores: one shard per core"
                )
            }
            ConfigError::Journal(error) => write!(f, "{error}"),
            ConfigError::ZkMissing { option } => {
                write!(f, "--{option} needs --zk (or zk in --config)")
            }
            ConfigError::ZkServers { servers } => write!(
                f,
                "invalid --zk {servers:?}: expected HOST:PORT[,HOST:PORT...] with ports 1-65535 \
                 and no chroot (use --zk-root)"
            ),
            ConfigError::Log { value } => write!(
                f,
                "invalid --log (or RUST_LOG) {value:?}: expected a level (error, warn, info, \
                 debug, trace, off) or target=level pairs such as info,server::shard=debug"
            ),
            ConfigError::HttpListen { value } => write!(
                f,
                "invalid --http-listen {value:?}: expected IP:PORT (such as 0.0.0.0:8000) or off"
            ),
            ConfigError::ZkRoot { root } => write!(
                f,
                "invalid --zk-root {root:?}: expected an absolute ZooKeeper path such as /ledgers"
            ),
            ConfigError::TlsMissing { option } => write!(
                f,
                "--{option} needs --tls-cert FILE and --tls-key FILE (or tls_cert and tls_key in --config)"
            ),
            ConfigError::TlsKeyMissing => write!(
                f,
                "--tls-cert needs --tls-key FILE: the certificate's private key, PEM"
            ),
            ConfigError::TlsNeeds { option, needs } => write!(f, "--{option} needs {needs}"),
            ConfigError::TlsRoles { list } => write!(
                f,
                "invalid --tls-authorized-roles {list:?}: expected ROLE[,ROLE...] with no empty item"
            ),
            ConfigError::AdvertisedAddress { address } => write!(
                f,
                "invalid --advertised-address {address}: a bookie id needs an IPv4 address \
                 other than 0.0.0.0 and a port other than 0"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
