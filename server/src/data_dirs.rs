//! The data directories at startup, before any shard opens a journal: create and lock each,
//! and refuse to start while a journal on disk is not where the list and the shard count
//! place it, or while a directory an earlier start used is gone.
//!
//! With two or more directories each one holds `ringlog.dirs`, the list of the last start
//! (a header line, then the canonical paths, each ended by a NUL byte: the one byte no path
//! holds). It is what makes a shortened list
//! visible: a directory dropped from --data-dir is still scanned for journals, and one that
//! vanished (an unmounted device) stops the start instead of its shards starting empty. With
//! one directory there is nothing to remember, since every journal is in it: no record is
//! kept and the directory looks exactly as before lists existed.

use crate::config::{self, Config, JOURNAL_DIR_PREFIX};
use crate::limits;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[cfg(test)]
mod tests;

/// The lock file in each data directory; every directory a record names has one, since
/// records are written only after every directory of the list was locked.
pub const LOCK_FILE: &str = "ringlog.lock";
/// The record of the list in each data directory (with two or more directories).
pub const RECORD_FILE: &str = "ringlog.dirs";
/// Written, synced and renamed over `RECORD_FILE`.
const RECORD_FILE_TEMPORARY: &str = "ringlog.dirs.tmp";
/// The first line of a record; another format would change it.
const RECORD_HEADER: &[u8] = b"ringlog data directories 1";
/// Largest record read: `DATA_DIRS_MAX` paths of at most PATH_MAX (4096) bytes, and the header.
const RECORD_SIZE_MAX: u64 = (limits::DATA_DIRS_MAX as u64 + 1) * 4096;

/// Why the data directories do not allow a start.
#[derive(Debug)]
#[non_exhaustive]
pub enum DataDirError {
    /// A data directory, its lock file or its record cannot be created, read or written.
    Io {
        operation: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    /// Another process holds the lock of `directory`.
    InUse { directory: PathBuf },
    /// Two items of --data-dir are the same directory once canonicalised.
    Duplicate {
        first: PathBuf,
        second: PathBuf,
        canonical: PathBuf,
    },
    /// `directory` holds the journal of shard `journals - 1`, beyond the configured count.
    ShardsFewerThanJournals {
        directory: PathBuf,
        journals: usize,
        shards: usize,
    },
    /// Shard `shard`'s journal is at `found`, but the list and shard count place it at
    /// `expected`.
    JournalMisplaced {
        shard: usize,
        shards: usize,
        found: PathBuf,
        expected: PathBuf,
    },
    /// `directory`, named by the record `record` of an earlier start, is gone (or is no
    /// longer a ringlog data directory: no lock file).
    RecordedMissing { directory: PathBuf, record: PathBuf },
    /// `path` is not a record as written here.
    RecordInvalid { path: PathBuf },
}

impl std::fmt::Display for DataDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataDirError::Io {
                operation,
                path,
                error,
            } => write!(f, "cannot {operation} {}: {error}", path.display()),
            DataDirError::InUse { directory } => write!(
                f,
                "data directory {} in use: another ringlog process holds its {LOCK_FILE}",
                directory.display()
            ),
            DataDirError::Duplicate {
                first,
                second,
                canonical,
            } => write!(
                f,
                "--data-dir lists {} and {}, which are the same directory {}: list each \
                 directory once",
                first.display(),
                second.display(),
                canonical.display()
            ),
            DataDirError::ShardsFewerThanJournals {
                directory,
                journals,
                shards,
            } => write!(
                f,
                "{} holds the journal {JOURNAL_DIR_PREFIX}{} but only {shards} shards are \
                 configured: start with --shards {journals} or more (a journal left unopened \
                 would make its ledgers unreadable)",
                directory.display(),
                journals - 1
            ),
            DataDirError::JournalMisplaced {
                shard,
                shards,
                found,
                expected,
            } => write!(
                f,
                "shard {shard}'s journal is {}, but this --data-dir list with --shards \
                 {shards} places it in {}: start with the --data-dir list (in the same order) \
                 and --shards of the run that wrote it, or, with ringlog stopped, move {} to \
                 {}; a shard started on an empty journal would answer its ledgers as absent",
                found.display(),
                expected.display(),
                found.display(),
                expected.display()
            ),
            DataDirError::RecordedMissing { directory, record } => write!(
                f,
                "data directory {} is missing (or has no {LOCK_FILE}), but {} lists it among \
                 the data directories of an earlier start: mount it and keep it in \
                 --data-dir; if its journals are lost for good, delete {RECORD_FILE} in every \
                 directory of --data-dir to start without them",
                directory.display(),
                record.display()
            ),
            DataDirError::RecordInvalid { path } => write!(
                f,
                "{} is not a list of data directories written by ringlog: restore it, or \
                 delete it to forget the directories of earlier starts",
                path.display()
            ),
        }
    }
}

impl std::error::Error for DataDirError {}

/// The data directories' locks. Held until the process exits: two servers appending to one
/// journal would corrupt it. The kernel releases them at exit, even after SIGKILL.
pub struct Locks {
    _files: Vec<File>,
}

/// Checks, creates and locks the data directories, and records the list; on `Ok` every
/// journal on disk is where `config.journal_dir` places it, or beyond the shard count.
pub fn prepare(config: &Config) -> Result<Locks, DataDirError> {
    // Read before anything is created: a recorded directory that is missing now must not
    // be created empty (on the root file system, under an unmounted device's mount point).
    let recorded = records_read(&config.data_dirs)?;
    if let Some((directory, record)) = recorded
        .iter()
        .find(|(directory, _)| !directory.join(LOCK_FILE).is_file())
    {
        return Err(DataDirError::RecordedMissing {
            directory: directory.clone(),
            record: record.clone(),
        });
    }
    let canonical = directories_create(&config.data_dirs)?;
    let files = canonical
        .iter()
        .map(|directory| lock(directory))
        .collect::<Result<Vec<File>, DataDirError>>()?;
    let mut dropped: Vec<PathBuf> = Vec::new();
    for (directory, _) in &recorded {
        let directory = canonicalize(directory)?;
        if !canonical.contains(&directory) && !dropped.contains(&directory) {
            dropped.push(directory);
        }
    }
    shard_directories_check(&canonical, &dropped, config.shards())?;
    records_write(&canonical)?;
    Ok(Locks { _files: files })
}

/// Every directory named by the records of the listed directories that exist, with the
/// record naming it. A listed directory that does not exist yet has no record.
fn records_read(data_dirs: &[PathBuf]) -> Result<Vec<(PathBuf, PathBuf)>, DataDirError> {
    let mut recorded = Vec::new();
    for data_dir in data_dirs {
        let path = data_dir.join(RECORD_FILE);
        let bytes = record_read(&path).map_err(|error| DataDirError::Io {
            operation: "read",
            path: path.clone(),
            error,
        })?;
        let Some(bytes) = bytes else {
            continue;
        };
        let directories = record_parse(&bytes)
            .ok_or_else(|| DataDirError::RecordInvalid { path: path.clone() })?;
        for directory in directories {
            recorded.push((directory, path.clone()));
        }
    }
    Ok(recorded)
}

/// The directories of a record; `None` unless it is the header line and then 1 to
/// `DATA_DIRS_MAX` absolute paths, each ended by a NUL byte.
fn record_parse(bytes: &[u8]) -> Option<Vec<PathBuf>> {
    let body = bytes.strip_prefix(RECORD_HEADER)?.strip_prefix(b"\n")?;
    let paths: Vec<&[u8]> = body.strip_suffix(b"\0")?.split(|&byte| byte == 0).collect();
    let absolute = |path: &&[u8]| path.first() == Some(&b'/');
    if paths.len() > limits::DATA_DIRS_MAX || !paths.iter().all(absolute) {
        return None;
    }
    Some(
        paths
            .iter()
            .map(|path| PathBuf::from(OsStr::from_bytes(path)))
            .collect(),
    )
}

/// The record of `canonical`, as `record_parse` reads it.
fn record_encode(canonical: &[PathBuf]) -> Vec<u8> {
    let mut bytes = RECORD_HEADER.to_vec();
    bytes.push(b'\n');
    for directory in canonical {
        let path = directory.as_os_str().as_bytes();
        assert!(path.first() == Some(&b'/'), "canonical paths are absolute");
        assert!(!path.contains(&0), "paths hold no NUL");
        bytes.extend_from_slice(path);
        bytes.push(0);
    }
    bytes
}

/// Creates every listed directory that is missing and returns them canonicalised, refusing
/// two items that are one directory (`..`, symbolic links, relative and absolute spellings).
fn directories_create(data_dirs: &[PathBuf]) -> Result<Vec<PathBuf>, DataDirError> {
    let mut canonical: Vec<PathBuf> = Vec::with_capacity(data_dirs.len());
    for data_dir in data_dirs {
        std::fs::create_dir_all(data_dir).map_err(|error| DataDirError::Io {
            operation: "create data directory",
            path: data_dir.clone(),
            error,
        })?;
        let directory = canonicalize(data_dir)?;
        if let Some(index) = canonical.iter().position(|listed| *listed == directory) {
            return Err(DataDirError::Duplicate {
                first: data_dirs[index].clone(),
                second: data_dir.clone(),
                canonical: directory,
            });
        }
        canonical.push(directory);
    }
    Ok(canonical)
}

fn canonicalize(directory: &Path) -> Result<PathBuf, DataDirError> {
    std::fs::canonicalize(directory).map_err(|error| DataDirError::Io {
        operation: "resolve data directory",
        path: directory.to_path_buf(),
        error,
    })
}

/// Takes an exclusive lock on `DIRECTORY/ringlog.lock`.
fn lock(directory: &Path) -> Result<File, DataDirError> {
    let path = directory.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|error| DataDirError::Io {
            operation: "open the lock file",
            path: path.clone(),
            error,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(DataDirError::InUse {
            directory: directory.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(error)) => Err(DataDirError::Io {
            operation: "lock",
            path,
            error,
        }),
    }
}

/// Refuses a journal for a shard beyond the count (its ledgers would answer ENOLEDGER, and
/// acked data must never read as absent), then a journal in another directory than
/// `canonical[K % N]` (its shard would start empty while its ledgers lie elsewhere).
/// `dropped` are directories of an earlier list, no longer in `canonical`: any journal in
/// them is misplaced.
fn shard_directories_check(
    canonical: &[PathBuf],
    dropped: &[PathBuf],
    shards: usize,
) -> Result<(), DataDirError> {
    let mut found: Vec<(usize, &Path)> = Vec::new();
    for directory in canonical.iter().chain(dropped) {
        for shard in journals_list(directory)? {
            found.push((shard, directory));
        }
    }
    if let Some(&(shard, directory)) = found.iter().max_by_key(|(shard, _)| *shard) {
        if shard >= shards {
            return Err(DataDirError::ShardsFewerThanJournals {
                directory: directory.to_path_buf(),
                journals: shard + 1,
                shards,
            });
        }
    }
    for (shard, directory) in found {
        if config::shard_data_dir(canonical, shard) != directory {
            return Err(DataDirError::JournalMisplaced {
                shard,
                shards,
                found: directory.join(format!("{JOURNAL_DIR_PREFIX}{shard}")),
                expected: config::journal_dir(canonical, shard),
            });
        }
    }
    Ok(())
}

/// The shards whose journal directory (`shard-K`) `directory` holds, in ascending order.
fn journals_list(directory: &Path) -> Result<Vec<usize>, DataDirError> {
    let entries = std::fs::read_dir(directory).map_err(|error| DataDirError::Io {
        operation: "list data directory",
        path: directory.to_path_buf(),
        error,
    })?;
    let mut shards: Vec<usize> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            name.to_str()?
                .strip_prefix(JOURNAL_DIR_PREFIX)?
                .parse::<usize>()
                .ok()
        })
        .collect();
    shards.sort_unstable();
    Ok(shards)
}

/// With two or more directories, writes the list into each whose record differs; with one,
/// removes a record left by an earlier list (its directories were checked just now, and a
/// stale record would refuse a later start once one of them is removed).
fn records_write(canonical: &[PathBuf]) -> Result<(), DataDirError> {
    let record = record_encode(canonical);
    let mut stale = Vec::new();
    for directory in canonical {
        let path = directory.join(RECORD_FILE);
        let current = record_read(&path).map_err(|error| DataDirError::Io {
            operation: "read",
            path,
            error,
        })?;
        let wanted = (canonical.len() > 1).then_some(&record);
        if current.as_ref() != wanted {
            stale.push(directory.as_path());
        }
    }
    if canonical.len() > 1 && !stale.is_empty() {
        // A record must never outlive, across a crash, a directory it names: first every
        // directory's creation (in its parent) and lock file are made durable.
        for directory in canonical {
            let parent = directory.parent().unwrap_or(directory);
            for path in [parent, directory.as_path()] {
                directory_sync(path).map_err(|error| DataDirError::Io {
                    operation: "sync directory",
                    path: path.to_path_buf(),
                    error,
                })?;
            }
        }
    }
    for directory in stale {
        let path = directory.join(RECORD_FILE);
        let written = if canonical.len() > 1 {
            record_replace(directory, &record)
        } else {
            std::fs::remove_file(&path).and_then(|()| directory_sync(directory))
        };
        written.map_err(|error| DataDirError::Io {
            operation: "write",
            path,
            error,
        })?;
    }
    Ok(())
}

/// The record at `path`, `None` if there is none, at most `RECORD_SIZE_MAX` bytes of it.
fn record_read(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    match File::open(path).and_then(|file| file.take(RECORD_SIZE_MAX).read_to_end(&mut bytes)) {
        Ok(_) => Ok(Some(bytes)),
        // No record: a new directory (or none yet), or a list of one directory.
        Err(error) if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Replaces `DIRECTORY/ringlog.dirs` atomically: temporary file, fsync, rename, directory
/// fsync. A crash leaves the old record or the new one, never a torn one.
fn record_replace(directory: &Path, record: &[u8]) -> std::io::Result<()> {
    let temporary = directory.join(RECORD_FILE_TEMPORARY);
    let mut file = File::create(&temporary)?;
    file.write_all(record)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, directory.join(RECORD_FILE))?;
    directory_sync(directory)
}

fn directory_sync(directory: &Path) -> std::io::Result<()> {
    File::open(directory)?.sync_all()
}
