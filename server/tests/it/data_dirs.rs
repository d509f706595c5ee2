//! Several data directories: journals spread round-robin over them, each one locked, and a
//! start refused while its list would leave a journal where its shard does not look for it.

use crate::support::{body, serve_args, uring_available, Exited, Server, TestDir, KEY};
use std::path::{Path, PathBuf};
use wire::code;

/// One ledger per connection: 16 connections over 2 shards put ledgers on both (all 16 on
/// one shard has probability 2^-15).
const CONNECTIONS: i64 = 16;
const ENTRIES_PER_LEDGER: i64 = 4;
const LEDGER_FIRST: i64 = 7_000;

/// Adds `ENTRIES_PER_LEDGER` entries to each of `CONNECTIONS` ledgers, one per connection.
fn write(server: &Server) {
    let mut clients: Vec<_> = (0..CONNECTIONS).map(|_| server.connect()).collect();
    for (ledger, client) in (LEDGER_FIRST..).zip(clients.iter_mut()) {
        for entry in 0..ENTRIES_PER_LEDGER {
            assert_eq!(client.add(0, &KEY, ledger, entry), code::EOK);
        }
    }
}

/// Reads every entry `write` added back, through one connection (other shards' ledgers are
/// forwarded).
fn read_back(server: &Server) {
    let mut client = server.connect();
    for ledger in LEDGER_FIRST..LEDGER_FIRST + CONNECTIONS {
        for entry in 0..ENTRIES_PER_LEDGER {
            let (status, _, read) = client.read(0, ledger, entry, None);
            assert_eq!((status, read), (code::EOK, body(ledger, entry)), "{ledger}");
        }
    }
}

/// `entries_durable` of each shard's journal, by shard id, from the shutdown summary.
fn entries_durable(exited: &Exited) -> Vec<u64> {
    let mut shards: Vec<(u64, u64)> = exited
        .summaries()
        .iter()
        .map(|line| {
            let field = |key: &str| -> u64 {
                let prefix = format!("{key}=");
                let value = line
                    .split(' ')
                    .find_map(|field| field.strip_prefix(&prefix));
                value.unwrap().parse().unwrap()
            };
            let id = line
                .strip_prefix("shard ")
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            (id.parse().unwrap(), field("entries_durable"))
        })
        .collect();
    shards.sort_unstable();
    shards.into_iter().map(|(_, entries)| entries).collect()
}

/// A start that must fail: exit status 1, and its error line (the last; warnings such as
/// the open-files limit's may come before it).
fn refused(args: &[String]) -> String {
    let exited = Server::run_to_exit(args);
    assert_eq!(exited.status.code(), Some(1), "{:?}", exited.stderr);
    exited.stderr.last().cloned().unwrap_or_default()
}

fn list(dirs: &[&Path]) -> String {
    let dirs: Vec<String> = dirs.iter().map(|dir| dir.display().to_string()).collect();
    dirs.join(",")
}

fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap()
}

#[test]
fn two_data_dirs_hold_one_journal_each_and_a_moved_journal_is_refused() {
    if !uring_available() {
        return;
    }
    let dir = TestDir::new("data-dirs");
    let (a, b) = (dir.0.join("a"), dir.0.join("b"));
    let both = list(&[&a, &b]);
    let server = Server::start(&a, 2, &["--data-dir", &both]);
    write(&server);
    read_back(&server);
    // A second server on either directory refuses, naming it.
    let message = refused(&serve_args(&b, 1, &[]));
    let expect = format!(
        "ringlog: data directory {} in use: another ringlog process holds its ringlog.lock",
        canonical(&b).display()
    );
    assert_eq!(message, expect);
    let exited = server.terminate();
    assert_eq!(exited.status.code(), Some(0), "{:?}", exited.stderr);
    let entries = entries_durable(&exited);
    assert_eq!(entries.iter().sum::<u64>(), 64, "{entries:?}");
    assert!(entries.iter().all(|&count| count > 0), "{entries:?}");
    // Shard K's journal is in DIRS[K % 2]/shard-K, and each directory keeps the list.
    assert!(a.join("shard-0").is_dir() && b.join("shard-1").is_dir());
    assert!(!a.join("shard-1").exists() && !b.join("shard-0").exists());
    assert!(a.join("ringlog.dirs").is_file() && b.join("ringlog.dirs").is_file());
    // The same list finds both journals again.
    let server = Server::start(&a, 2, &["--data-dir", &both]);
    read_back(&server);
    assert_eq!(server.terminate().status.code(), Some(0));
    refusals_check(&dir.0, &a, &b);
    // Nothing refused changed a byte: the list of the run that wrote them serves them.
    let server = Server::start(&a, 2, &["--data-dir", &both]);
    read_back(&server);
    assert_eq!(server.terminate().status.code(), Some(0));
    // The way out the refusal names: move the journal, and one directory serves both.
    std::fs::rename(b.join("shard-1"), a.join("shard-1")).unwrap();
    let server = Server::start(&a, 2, &[]);
    read_back(&server);
    assert_eq!(server.terminate().status.code(), Some(0));
    assert!(
        !a.join("ringlog.dirs").exists(),
        "one directory keeps no list"
    );
}

/// Every start below is refused before any journal opens, and leaves the directories as
/// they were.
fn refusals_check(dir: &Path, a: &Path, b: &Path) {
    let (a_canonical, b_canonical) = (canonical(a), canonical(b));
    let misplaced = |found: &Path, expected: &Path| {
        let (found, expected) = (found.join("shard-1"), expected.join("shard-1"));
        format!(
            "ringlog: shard 1's journal is {0}, but this --data-dir list with --shards 2 \
             places it in {1}: start with the --data-dir list (in the same order) and \
             --shards of the run that wrote it, or, with ringlog stopped, move {0} to {1}; a \
             shard started on an empty journal would answer its ledgers as absent",
            found.display(),
            expected.display()
        )
    };
    // The list reversed: shard 1's journal would be looked for in a.
    let reversed = list(&[b, a]);
    let message = refused(&serve_args(a, 2, &["--data-dir", &reversed]));
    assert_eq!(message, misplaced(&b_canonical, &a_canonical));
    // The list shortened: b is no longer listed, but a's record still names it.
    let message = refused(&serve_args(a, 2, &[]));
    assert_eq!(message, misplaced(&b_canonical, &a_canonical));
    // Fewer shards than journals, as with one directory.
    let message = refused(&serve_args(a, 1, &["--data-dir", &list(&[a, b])]));
    assert!(message.contains("holds the journal shard-1"), "{message}");
    assert!(message.contains("--shards 2"), "{message}");
    // One directory under two names.
    let link = dir.join("link");
    std::os::unix::fs::symlink(a, &link).unwrap();
    let message = refused(&serve_args(a, 2, &["--data-dir", &list(&[a, &link])]));
    let expect = format!(
        "ringlog: --data-dir lists {} and {}, which are the same directory {}: list each \
         directory once",
        a.display(),
        link.display(),
        a_canonical.display()
    );
    assert_eq!(message, expect);
    // b gone (an unmounted device): refused, and b is not created empty.
    let away = dir.join("b-away");
    std::fs::rename(b, &away).unwrap();
    let message = refused(&serve_args(a, 2, &["--data-dir", &list(&[a, b])]));
    let expect = format!(
        "ringlog: data directory {} is missing (or has no ringlog.lock), but {} lists it \
         among the data directories of an earlier start: mount it and keep it in \
         --data-dir; if its journals are lost for good, delete ringlog.dirs in every \
         directory of --data-dir to start without them",
        b_canonical.display(),
        a_canonical.join("ringlog.dirs").display()
    );
    assert_eq!(message, expect);
    assert!(!b.exists(), "a missing recorded directory is not created");
    std::fs::rename(&away, b).unwrap();
}
