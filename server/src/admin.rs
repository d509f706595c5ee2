//! The admin commands (`ringlog ledgers`, `ledger`, `verify`, `segment`; docs/admin.md):
//! offline and read-only looks into the data directories. Each takes a shared lock on every
//! `ringlog.lock`, so it refuses to run while a server holds one and a server refuses to
//! start while it runs; it creates nothing (a missing directory is an error). The format is
//! read by `engine::inspect`, through the engine's own recovery; this module finds the
//! journals and prints.

mod ledger;
mod ledgers;
mod segment;
mod verify;

use crate::config::{self, ConfigError, DataDirList, ServeArgs, JOURNAL_DIR_PREFIX};
use crate::data_dirs::LOCK_FILE;
use clap::builder::TypedValueParser;
use clap::Args;
use engine::inspect::walk::WalkError;
use engine::OpenError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use self::ledger::LedgerArgs;
pub use self::ledgers::LedgersArgs;
pub use self::segment::SegmentArgs;
pub use self::verify::VerifyArgs;

/// How an admin command that ran ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and found nothing wrong.
    Clean,
    /// It ran and found damage (a bad record, index or checkpoint), which it printed.
    Damaged,
}

/// Which data directories, as `serve` is told (`--data-dir`, or `data_dir` in `--config`).
#[derive(Args, Debug, Clone)]
pub struct DataDirArgs {
    /// The data directory, or the comma-separated list of them, exactly as given to `ringlog
    /// serve` (shard K's journal is DIRS[K % N]/shard-K). Every shard-K found in them is read.
    #[arg(
        long,
        value_name = "DIR[,DIR..]",
        value_parser = clap::builder::PathBufValueParser::new().map(DataDirList::Joined)
    )]
    pub data_dir: Option<DataDirList>,
    /// Take `data_dir` from this TOML config file of `ringlog serve` (--data-dir wins).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only shard K.
    #[arg(long, value_name = "K")]
    pub shard: Option<usize>,
}

/// Why an admin command could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum AdminError {
    /// The flags or the config file do not name the data directories.
    Config(ConfigError),
    /// A data directory does not exist (it is never created here).
    DirectoryMissing { path: PathBuf },
    /// A server (or another process) holds the lock of `directory`.
    InUse { directory: PathBuf },
    /// A system call failed.
    Io {
        operation: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    /// No shard-K journal (of the one asked for) in the data directories.
    NoJournal,
    /// A journal the engine refuses to open (corruption, a missing file): `verify` says more.
    Open { journal: PathBuf, error: OpenError },
    /// A segment file that cannot be walked.
    Segment { path: PathBuf, error: WalkError },
    /// A file name that is not a segment's (`NNNNNNNNNN.segment`).
    SegmentName { path: PathBuf },
    /// The ledger is in no journal.
    LedgerMissing { ledger: i64 },
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdminError::Config(error) => write!(f, "{error}"),
            AdminError::DirectoryMissing { path } => {
                write!(f, "data directory {} does not exist", path.display())
            }
            AdminError::InUse { directory } => write!(
                f,
                "data directory {} is in use: a ringlog server holds its {LOCK_FILE}; the \
                 admin commands read a data directory only while no server runs on it (stop \
                 the server first)",
                directory.display()
            ),
            AdminError::Io {
                operation,
                path,
                error,
            } => write!(f, "cannot {operation} {}: {error}", path.display()),
            AdminError::NoJournal => write!(f, "no journal (shard-K directory) found"),
            AdminError::Open { journal, error } => write!(
                f,
                "{}: {error} (run `ringlog verify` for a full report)",
                journal.display()
            ),
            AdminError::Segment { path, error } => write!(f, "{}: {error}", path.display()),
            AdminError::SegmentName { path } => write!(
                f,
                "{} is not a segment file (NNNNNNNNNN.segment)",
                path.display()
            ),
            AdminError::LedgerMissing { ledger } => write!(f, "ledger {ledger} not found"),
        }
    }
}

impl std::error::Error for AdminError {}

impl From<ConfigError> for AdminError {
    fn from(error: ConfigError) -> Self {
        AdminError::Config(error)
    }
}

/// Shared locks on the data directories' lock files, released when dropped.
pub struct Locks {
    _files: Vec<File>,
}

/// One shard's journal found on disk.
#[derive(Clone, Debug)]
pub struct JournalDir {
    /// K of shard-K.
    pub shard: usize,
    /// DIR/shard-K.
    pub path: PathBuf,
}

impl DataDirArgs {
    /// The data directories, from the flag or the config file.
    fn data_dirs(&self) -> Result<Vec<PathBuf>, AdminError> {
        let serve = ServeArgs {
            data_dir: self.data_dir.clone(),
            config: self.config.clone(),
            ..ServeArgs::default()
        }
        .merge_config_file()?;
        let list = serve.data_dir.ok_or(ConfigError::DataDirMissing)?;
        Ok(config::data_dirs_parse(&list)?)
    }

    /// Locks the data directories and lists their journals, by shard.
    pub fn open(&self) -> Result<(Locks, Vec<JournalDir>), AdminError> {
        let data_dirs = self.data_dirs()?;
        let locks = locks_take(&data_dirs)?;
        let mut journals = Vec::new();
        for directory in &data_dirs {
            journals.extend(journals_list(directory)?);
        }
        journals.sort_by_key(|journal| journal.shard);
        journals.retain(|journal| self.shard.is_none_or(|shard| shard == journal.shard));
        if journals.is_empty() {
            return Err(AdminError::NoJournal);
        }
        Ok((locks, journals))
    }
}

/// Takes a shared lock on each directory's lock file (absent: no server ever ran there, and
/// none is created). A server's exclusive lock makes this fail at once.
pub fn locks_take(data_dirs: &[PathBuf]) -> Result<Locks, AdminError> {
    let mut files = Vec::with_capacity(data_dirs.len());
    for directory in data_dirs {
        let metadata = std::fs::metadata(directory).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => AdminError::DirectoryMissing {
                path: directory.clone(),
            },
            _ => AdminError::Io {
                operation: "read data directory",
                path: directory.clone(),
                error,
            },
        })?;
        if !metadata.is_dir() {
            return Err(AdminError::DirectoryMissing {
                path: directory.clone(),
            });
        }
        if let Some(file) = lock_shared(directory)? {
            files.push(file);
        }
    }
    Ok(Locks { _files: files })
}

fn lock_shared(directory: &Path) -> Result<Option<File>, AdminError> {
    let path = directory.join(LOCK_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(AdminError::Io {
                operation: "open the lock file",
                path,
                error,
            })
        }
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(AdminError::InUse {
            directory: directory.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(error)) => Err(AdminError::Io {
            operation: "lock",
            path,
            error,
        }),
    }
}

fn journals_list(directory: &Path) -> Result<Vec<JournalDir>, AdminError> {
    let entries = std::fs::read_dir(directory).map_err(|error| AdminError::Io {
        operation: "list data directory",
        path: directory.to_path_buf(),
        error,
    })?;
    Ok(entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let name = entry.file_name();
            let shard = name
                .to_str()?
                .strip_prefix(JOURNAL_DIR_PREFIX)?
                .parse()
                .ok()?;
            Some(JournalDir {
                shard,
                path: entry.path(),
            })
        })
        .collect())
}

/// Opens a journal read-only (`engine::inspect::journal_view`).
fn journal_view(journal: &JournalDir) -> Result<engine::inspect::JournalView, AdminError> {
    engine::inspect::journal_view(&journal.path).map_err(|error| AdminError::Open {
        journal: journal.path.clone(),
        error,
    })
}

/// Writes a line to stdout; a closed pipe (`| head`) ends the output quietly.
fn line(out: &mut impl Write, text: std::fmt::Arguments<'_>) -> Result<(), AdminError> {
    out.write_fmt(text)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|error| AdminError::Io {
            operation: "write",
            path: PathBuf::from("stdout"),
            error,
        })
}

/// Runs an admin command.
pub fn run(command: &AdminCommand) -> Result<Outcome, AdminError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let outcome = match command {
        AdminCommand::Ledgers(args) => ledgers::run(args, &mut out),
        AdminCommand::Ledger(args) => ledger::run(args, &mut out),
        AdminCommand::Verify(args) => verify::run(args, &mut out),
        AdminCommand::Segment(args) => segment::run(args, &mut out),
    }?;
    out.flush().map_err(|error| AdminError::Io {
        operation: "write",
        path: PathBuf::from("stdout"),
        error,
    })?;
    Ok(outcome)
}

/// The admin commands, as `main.rs` hands them over.
#[derive(Debug)]
pub enum AdminCommand {
    /// `ringlog ledgers`.
    Ledgers(LedgersArgs),
    /// `ringlog ledger ID`.
    Ledger(LedgerArgs),
    /// `ringlog verify`.
    Verify(VerifyArgs),
    /// `ringlog segment FILE`.
    Segment(SegmentArgs),
}
