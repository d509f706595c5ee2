//! ringlog binary: flags and config file -> `Config` -> `server::run`; the only place that
//! exits. Exit codes: 0 stopped by a signal, 1 startup error, 2 poisoned journal.
#![forbid(unsafe_code)]

use clap::Parser;
use server::config::{Cli, Command};
use server::Outcome;

const EXIT_STOPPED: i32 = 0;
const EXIT_STARTUP: i32 = 1;
const EXIT_POISONED: i32 = 2;

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
    let Command::Serve(args) = cli.command;
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
