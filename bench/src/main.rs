//! ringlog-bench: the physical disk floor, the engine in-process, and load over the network.
#![forbid(unsafe_code)]

mod churn;
mod deleted_ledgers;
mod disk;
mod journal;
mod ledgers;
mod reads;
mod report;
mod tls_client;
mod verify_log;
mod writes;

use clap::{Parser, Subcommand};

/// Benchmarks for ringlog. Every number ringlog claims comes from one of these commands.
#[derive(Parser, Debug)]
#[command(name = "ringlog-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Physical floor: QD1 O_DIRECT write + linked fdatasync on a preallocated, zeroed file.
    Disk(disk::DiskArgs),
    /// The engine in-process (no network): N appends outstanding, staging to durable.
    Journal(journal::JournalArgs),
    /// BookKeeper v2 ADD load against a bookie, like BookKeeper's `bin/benchmark writes`.
    Writes(writes::WritesArgs),
    /// Reads back and checks every entry a `writes --verify-log` run recorded as acked.
    Reads(reads::ReadsArgs),
    /// Ledgers created, written and deleted (in ZooKeeper) continuously, with the bookie's
    /// disk use and write amplification against the data still live (issue 14).
    Churn(churn::ChurnArgs),
    /// Creates and deletes ledger metadata znodes in ZooKeeper, as a client's createLedger and
    /// deleteLedger do, for scripts that drive the bookie's garbage collector.
    Ledgers(ledgers::LedgersArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Disk(args) => disk::run(args),
        Command::Journal(args) => journal::run(args),
        Command::Writes(args) => writes::run(args),
        Command::Reads(args) => reads::run(args),
        Command::Churn(args) => churn::run(args),
        Command::Ledgers(args) => ledgers::run(args),
    };
    if let Err(error) = result {
        eprintln!("ringlog-bench: {error}");
        std::process::exit(1);
    }
}
