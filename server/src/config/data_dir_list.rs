//! The --data-dir list: `DataDirList` as given (flag or TOML), split and checked by
//! `data_dirs_parse`, and where shard K's journal lies in it (`journal_dir`).

use super::error::ConfigError;
use crate::limits;
use serde::Deserialize;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The name of shard K's journal directory in its data directory is this prefix and K.
pub const JOURNAL_DIR_PREFIX: &str = "shard-";

/// `--data-dir` or `data_dir` as given, before `resolve` splits and checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataDirList {
    /// One string: the flag, or a TOML string; a comma-separated list of directories.
    Joined(PathBuf),
    /// A TOML array of strings, one directory each.
    Items(Vec<PathBuf>),
}

impl<'de> Deserialize<'de> for DataDirList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DataDirListVisitor)
    }
}

/// A hand-written visitor rather than `#[serde(untagged)]`, whose error for a wrong type
/// ("data did not match any variant") would not say what the key takes.
struct DataDirListVisitor;

impl<'de> serde::de::Visitor<'de> for DataDirListVisitor {
    type Value = DataDirList;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a directory, a comma-separated list of directories, or an array of directories"
        )
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<DataDirList, E> {
        Ok(DataDirList::Joined(PathBuf::from(value)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<DataDirList, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<PathBuf>()? {
            items.push(item);
        }
        Ok(DataDirList::Items(items))
    }
}

/// Splits and checks the --data-dir list: its items in order, spaces around each ignored.
/// Refused: an empty item or list, a comma inside an item of an array, more than
/// `DATA_DIRS_MAX` items, and a directory listed twice. Twice is compared as written, up to
/// `.` components and repeated or trailing slashes (`Path`'s equality); the directories need
/// not exist yet, so `run` compares them again canonicalised (symbolic links, `..`).
pub fn data_dirs_parse(list: &DataDirList) -> Result<Vec<PathBuf>, ConfigError> {
    let items: Vec<&[u8]> = match list {
        DataDirList::Joined(joined) => joined
            .as_os_str()
            .as_bytes()
            .split(|&byte| byte == b',')
            .collect(),
        DataDirList::Items(items) => items
            .iter()
            .map(|item| item.as_os_str().as_bytes())
            .collect(),
    };
    if items.is_empty() {
        return Err(ConfigError::DataDirMissing);
    }
    if items.len() > limits::DATA_DIRS_MAX {
        return Err(ConfigError::OutOfBounds {
            option: "data-dir",
            expected: "a list of at most 64 directories",
        });
    }
    let mut data_dirs: Vec<PathBuf> = Vec::with_capacity(items.len());
    for item in items {
        let directory = PathBuf::from(OsStr::from_bytes(item.trim_ascii()));
        if directory.as_os_str().is_empty() {
            return Err(ConfigError::DataDirEmpty {
                list: data_dirs_display(list),
            });
        }
        if directory.as_os_str().as_bytes().contains(&b',') {
            return Err(ConfigError::DataDirComma { item: directory });
        }
        if data_dirs.contains(&directory) {
            return Err(ConfigError::DataDirDuplicate {
                list: data_dirs_display(list),
                directory,
            });
        }
        data_dirs.push(directory);
    }
    Ok(data_dirs)
}

/// The list as the flag would spell it, for messages.
fn data_dirs_display(list: &DataDirList) -> String {
    match list {
        DataDirList::Joined(joined) => joined.to_string_lossy().into_owned(),
        DataDirList::Items(items) => items
            .iter()
            .map(|item| item.to_string_lossy())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The data directory holding shard `shard`'s journal: `data_dirs[shard % N]`, round-robin
/// like BookKeeper's journalDirectories, so N directories on N devices share the shards
/// evenly and one directory holds them all, as before lists existed.
#[must_use]
pub fn shard_data_dir(data_dirs: &[PathBuf], shard: usize) -> &Path {
    assert!(
        !data_dirs.is_empty(),
        "data_dirs_parse refuses an empty list"
    );
    &data_dirs[shard % data_dirs.len()]
}

/// Shard `shard`'s journal directory: `data_dirs[shard % N]/shard-K`.
#[must_use]
pub fn journal_dir(data_dirs: &[PathBuf], shard: usize) -> PathBuf {
    shard_data_dir(data_dirs, shard).join(format!("{JOURNAL_DIR_PREFIX}{shard}"))
}
