//! ringlog binary: flags and config file -> `Config` -> `server::run`, or an offline admin
//! command (`server::admin`); the only place that exits. Exit codes of `serve`: 0 stopped by
//! a signal, 1 startup error, 2 poisoned journal; of the admin commands: 0 done, 1 could not
//! run, 3 damage found.
#![forbid(unsafe_code)]

use clap::Parser;
use server::admin::{AdminCommand, AdminError, Outcome as AdminOutcome};
use server::cli::{Cli, Command};
use server::config::ServeArgs;
use server::Outcome;

const EXIT_STOPPED: i32 = 0;
const EXIT_STARTUP: i32 = 1;
const EXIT_POISONED: i32 = 2;
/// An admin command ran and found damage (distinct from 1, "could not look").
const EXIT_DAMAGED: i32 = 3;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Usage errors exit 1 like every startup error (clap's own 2 means "poisoned"
            // here); --help and --version exit 0.
            let _ = error.print();
            std::process::exit(if error.use_stderr() {
                EXIT_STARTUP
            } else {
                EXIT_STOPPED
            });
        }
    };
    let admin = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Ledgers(args) => AdminCommand::Ledgers(args),
        Command::Ledger(args) => AdminCommand::Ledger(args),
        Command::Verify(args) => AdminCommand::Verify(args),
        Command::Segment(args) => AdminCommand::Segment(args),
    };
    let code = match server::admin::run(&admin) {
        Ok(AdminOutcome::Clean) => EXIT_STOPPED,
        Ok(AdminOutcome::Damaged) => EXIT_DAMAGED,
        // `ringlog ledgers | head`: the reader left; nothing is wrong.
        Err(AdminError::Io { error, .. }) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            EXIT_STOPPED
        }
        Err(error) => {
            eprintln!("ringlog: {error}");
            EXIT_STARTUP
        }
    };
    std::process::exit(code);
}

/// `ringlog serve`: never returns.
fn serve(args: ServeArgs) -> ! {
    let cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|core| core.id)
        .collect();
    let config = match args
        .merge_config_file()
        .and_then(|args| args.resolve(&cores))
    {
        Ok(config) => config,
        Err(error) => {
            eprintln!("ringlog: {error}");
            std::process::exit(EXIT_STARTUP);
        }
    };
    server::log::init(&config.log);
    let code = match server::run(config) {
        Ok(Outcome::Stopped) => EXIT_STOPPED,
        Ok(Outcome::Poisoned) => EXIT_POISONED,
        Err(error) => {
            eprintln!("ringlog: {error}");
            EXIT_STARTUP
        }
    };
    std::process::exit(code);
}
