//! Config resolution without a server: core lists, shard placement, data directory lists and
//! journal placement, defaults and bounds.

use clap::Parser;
use server::cli::{Cli, Command};
use server::config::{
    cores_parse, journal_dir, shard_cores, shard_data_dir, DataDirList, ServeArgs,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn core_lists_parse_lists_and_ranges() {
    assert_eq!(cores_parse("0,1").unwrap(), vec![0, 1]);
    assert_eq!(cores_parse("0-3").unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(cores_parse("4, 0-1 ,7").unwrap(), vec![4, 0, 1, 7]);
    for bad in ["", "a", "0-", "3-1", "0,0", "1,0-2", "0-100000"] {
        assert!(cores_parse(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn shards_follow_cores() {
    let available = [0, 1];
    assert_eq!(shard_cores(None, None, &available).unwrap(), vec![0, 1]);
    assert_eq!(
        shard_cores(Some(3), None, &available).unwrap(),
        vec![0, 1, 0]
    );
    assert_eq!(
        shard_cores(None, Some(vec![1]), &available).unwrap(),
        vec![1]
    );
    assert_eq!(
        shard_cores(Some(1), Some(vec![1]), &available).unwrap(),
        vec![1]
    );
    assert!(shard_cores(Some(2), Some(vec![1]), &available).is_err());
    assert!(shard_cores(None, Some(vec![5]), &available).is_err());
    assert!(shard_cores(Some(0), None, &available).is_err());
    assert_eq!(shard_cores(None, None, &[]).unwrap(), vec![0]);
}

#[test]
fn defaults_and_bounds() {
    let args = ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        ..ServeArgs::default()
    };
    let config = args.resolve(&[0, 1, 2]).unwrap();
    assert_eq!(config.listen.to_string(), "0.0.0.0:3181");
    assert_eq!(config.shards(), 3);
    assert_eq!(config.frame_size_max, 5_253_120);
    assert_eq!(config.journal.segment_size, 256 << 20);
    assert_eq!(config.journal.index_cache_pages, 8192);
    assert_eq!(config.journal.disk_reserve, 128 << 20);
    assert_eq!(config.journal.commits_in_flight_max, 2);
    assert_eq!(config.journal.commit_overlap_bytes_min, 0);
    assert_eq!(config.journal.commit_block, engine::CommitBlock::Sector);
    assert_eq!(config.journal.sync_mode, engine::SyncMode::Dsync);
    assert!(config.direct_io);
    assert_eq!(config.idle_timeout.as_millis(), 600_000);
    assert_eq!(config.requests_in_flight_max, 10_000);
    assert_eq!(config.busy_poll.as_micros(), 200);
    assert_eq!(config.commit_stall, Some(std::time::Duration::from_secs(1)));
    assert_eq!(
        config.shard_slice,
        Some(std::time::Duration::from_micros(100))
    );
    assert!(
        ServeArgs::default().resolve(&[0]).is_err(),
        "data_dir is required"
    );
    let bad = |args: ServeArgs| ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        ..args
    };
    assert!(bad(ServeArgs {
        commits_in_flight: Some(5),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .is_err());
    assert!(bad(ServeArgs {
        segment_size: Some(4097),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .is_err());
    assert!(bad(ServeArgs {
        commit_overlap_min_kib: Some(8193),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .is_err());
    let overlap = bad(ServeArgs {
        commit_overlap_min_kib: Some(32),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .expect("32 KiB is in bounds");
    assert_eq!(overlap.journal.commit_overlap_bytes_min, 32 * 1024);
    for (bytes, block) in [
        (512, Some(engine::CommitBlock::Small)),
        (4096, Some(engine::CommitBlock::Sector)),
        (1024, None),
        (0, None),
    ] {
        let resolved = bad(ServeArgs {
            commit_block_bytes: Some(bytes),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(
            resolved.ok().map(|c| c.journal.commit_block),
            block,
            "{bytes}"
        );
    }
    assert!(bad(ServeArgs {
        idle_timeout_ms: Some(10),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .is_err());
    assert!(bad(ServeArgs {
        connections_max: Some(0),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .is_err());
    let error = bad(ServeArgs {
        busy_poll_us: Some(10_001),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid --busy-poll-us: must be 0..=10000"
    );
    for (slice_us, valid) in [(0, true), (50, false), (100, true), (100_001, false)] {
        let resolved = bad(ServeArgs {
            shard_slice_us: Some(slice_us),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--shard-slice-us {slice_us}");
    }
    for (stall_ms, valid) in [(0, true), (3_600_000, true), (3_600_001, false)] {
        let resolved = bad(ServeArgs {
            commit_stall_ms: Some(stall_ms),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--commit-stall-ms {stall_ms}");
    }
    for (reserve_mib, valid) in [(0, true), (16, true), (1_048_576, true), (1_048_577, false)] {
        let resolved = bad(ServeArgs {
            disk_reserve_mib: Some(reserve_mib),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--disk-reserve-mib {reserve_mib}");
        if let Ok(config) = resolved {
            assert_eq!(config.journal.disk_reserve, reserve_mib << 20);
        }
    }
    for (percent, valid) in [
        (None, true),
        (Some(0), true),
        (Some(90), true),
        (Some(91), false),
    ] {
        let resolved = bad(ServeArgs {
            disk_pressure_percent: percent,
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(
            resolved.is_ok(),
            valid,
            "--disk-pressure-percent {percent:?}"
        );
        if let Ok(config) = resolved {
            assert_eq!(config.journal.disk_pressure_percent, percent.unwrap_or(20));
        }
    }
    // The total is shared by the shards, at most 1024 windows each.
    for (mib, shards, windows) in [
        (0, 1, Some(0)),
        (64, 1, Some(64)),
        (512, 2, Some(256)),
        (1, 2, Some(1)),
        (1024, 1, Some(1024)),
        (1025, 1, None),
        (2048, 2, Some(1024)),
        (16385, 64, None),
    ] {
        let resolved = bad(ServeArgs {
            read_ahead_mib: Some(mib),
            shards: Some(shards),
            ..ServeArgs::default()
        })
        .resolve(&[0, 1]);
        let got = resolved
            .map(|config| config.journal.read_ahead_windows)
            .ok();
        assert_eq!(got, windows, "--read-ahead-mib {mib} over {shards} shards");
    }
    let defaults = bad(ServeArgs::default()).resolve(&[0]).unwrap();
    assert_eq!(
        defaults.journal.read_ahead_windows, 512,
        "one shard has it all"
    );
    // Dead segments kept for reuse: 4 GiB of them by default, whatever the segment size,
    // 1..=64; an explicit count wins, up to 64.
    assert_eq!(defaults.journal.segment_recycle_max, 16, "256 MiB segments");
    for (segment_mib, count, expected) in [
        (64, None, Some(64)),
        (1024, None, Some(4)),
        (2048, None, Some(2)),
        (4, None, Some(64)),
        (64, Some(0), Some(0)),
        (64, Some(8), Some(8)),
        (64, Some(64), Some(64)),
        (64, Some(65), None),
    ] {
        let resolved = bad(ServeArgs {
            segment_size: Some(segment_mib << 20),
            segment_recycle_max: count,
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        let got = resolved
            .map(|config| config.journal.segment_recycle_max)
            .ok();
        assert_eq!(
            got, expected,
            "{segment_mib} MiB segments, --segment-recycle-max {count:?}"
        );
    }
    assert!(defaults.journal.sort_sealed, "sorting is on by default");
    let unsorted = bad(ServeArgs {
        sort_sealed_segments: Some(false),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .unwrap();
    assert!(!unsorted.journal.sort_sealed);
    // Sorting pauses above a write rate: 96 MiB/s by default, 0 to 4096 (never).
    assert_eq!(defaults.sort_traffic_max_bytes_per_s, 96 << 20);
    for (mib, valid) in [(0, true), (16, true), (4096, true), (4097, false)] {
        let resolved = bad(ServeArgs {
            sort_traffic_max_mib: Some(mib),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--sort-traffic-max-mib {mib}");
        if let Ok(config) = resolved {
            assert_eq!(config.sort_traffic_max_bytes_per_s, mib << 20);
        }
    }
    // Compaction earns a share of the commits' bytes: 250% by default, 0 to 1000.
    assert_eq!(defaults.compaction_commit_percent, 250);
    for (percent, valid) in [(0, true), (250, true), (1000, true), (1001, false)] {
        let resolved = bad(ServeArgs {
            compaction_commit_percent: Some(percent),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(
            resolved.is_ok(),
            valid,
            "--compaction-commit-percent {percent}"
        );
        if let Ok(config) = resolved {
            assert_eq!(config.compaction_commit_percent, percent);
        }
    }
    let off = bad(ServeArgs {
        busy_poll_us: Some(0),
        ..ServeArgs::default()
    })
    .resolve(&[0])
    .unwrap();
    assert!(off.busy_poll.is_zero(), "0 turns polling off");
    // Read pacing: 25% of the commits' bytes over 1 ms commits by default; 0 never paces
    // (and then no tick turns it on); at most 100%; the commit time 100 us to 1 s.
    assert_eq!(defaults.journal.read_pace_percent, 25);
    assert_eq!(defaults.read_pace_commit, Some(Duration::from_millis(1)));
    for (percent, valid) in [(0, true), (25, true), (100, true), (101, false)] {
        let resolved = bad(ServeArgs {
            read_pace_percent: Some(percent),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--read-pace-percent {percent}");
        if let Ok(config) = resolved {
            assert_eq!(config.journal.read_pace_percent, percent);
            assert_eq!(config.read_pace_commit.is_some(), percent != 0);
        }
    }
    for (us, valid) in [
        (99, false),
        (100, true),
        (1_000_000, true),
        (1_000_001, false),
    ] {
        let resolved = bad(ServeArgs {
            read_pace_commit_us: Some(us),
            ..ServeArgs::default()
        })
        .resolve(&[0]);
        assert_eq!(resolved.is_ok(), valid, "--read-pace-commit-us {us}");
        if let Ok(config) = resolved {
            assert_eq!(config.read_pace_commit, Some(Duration::from_micros(us)));
        }
    }
}

#[test]
fn zookeeper_options_default_and_need_zk() {
    let with = |args: ServeArgs| ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        ..args
    };
    let config = with(ServeArgs::default()).resolve(&[0]).unwrap();
    assert!(config.registration.is_none(), "no --zk, no registration");
    let zk = |args: ServeArgs| {
        with(ServeArgs {
            zk: Some("zk1:2181,10.0.0.2:2182".into()),
            ..args
        })
    };
    let registration = zk(ServeArgs::default())
        .resolve(&[0])
        .unwrap()
        .registration
        .unwrap();
    assert_eq!(registration.servers, "zk1:2181,10.0.0.2:2182");
    assert_eq!(registration.root, "/ledgers");
    assert_eq!(registration.advertised_address, None);
    assert_eq!(registration.session_timeout.as_millis(), 10_000);
    assert_eq!(registration.connect_timeout.as_millis(), 30_000);
    // BookKeeper's gcWaitTime and gcMetadataOpRateLimit.
    assert_eq!(
        registration.gc_interval,
        Some(Duration::from_millis(600_000))
    );
    assert_eq!(registration.gc_metadata_rate, 1_000);
    // Off: without a local record of its id, a bookie moved to a new address would take
    // every ledger for over-replicated.
    assert_eq!(registration.gc_overreplicated_wait, None);
    // Each ZooKeeper option alone is refused: it would silently do nothing.
    let lonely = [
        ServeArgs {
            zk_root: Some("/x".into()),
            ..ServeArgs::default()
        },
        ServeArgs {
            advertised_address: Some("10.0.0.1:3181".parse().unwrap()),
            ..ServeArgs::default()
        },
        ServeArgs {
            zk_session_timeout_ms: Some(1000),
            ..ServeArgs::default()
        },
        ServeArgs {
            zk_connect_timeout_ms: Some(1000),
            ..ServeArgs::default()
        },
        ServeArgs {
            gc_interval_ms: Some(1000),
            ..ServeArgs::default()
        },
        ServeArgs {
            gc_metadata_rate: Some(10),
            ..ServeArgs::default()
        },
        ServeArgs {
            gc_overreplicated_wait_ms: Some(1000),
            ..ServeArgs::default()
        },
    ];
    for args in lonely {
        let error = with(args).resolve(&[0]).unwrap_err().to_string();
        assert!(error.contains("needs --zk"), "{error}");
    }
}

#[test]
fn gc_options_are_checked() {
    let zk = |args: ServeArgs| ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        zk: Some("127.0.0.1:2181".into()),
        ..args
    };
    let gc = |interval_ms: Option<u64>, rate: Option<u32>| {
        zk(ServeArgs {
            gc_interval_ms: interval_ms,
            gc_metadata_rate: rate,
            ..ServeArgs::default()
        })
        .resolve(&[0])
        .map(|config| {
            let registration = config.registration.unwrap();
            (registration.gc_interval, registration.gc_metadata_rate)
        })
    };
    // 0 turns collection off; small intervals are for tests.
    assert_eq!(gc(Some(0), None).unwrap(), (None, 1_000));
    let small = gc(Some(100), Some(1)).unwrap();
    assert_eq!(small, (Some(Duration::from_millis(100)), 1));
    let large = gc(Some(604_800_000), Some(100_000)).unwrap();
    assert_eq!(large.0, Some(Duration::from_secs(604_800)));
    for (interval_ms, rate) in [
        (Some(99), None),
        (Some(604_800_001), None),
        (None, Some(0)),
        (None, Some(100_001)),
    ] {
        let error = gc(interval_ms, rate).unwrap_err().to_string();
        assert!(error.contains("gc-"), "{error}");
    }
}

#[test]
fn gc_overreplicated_wait_is_checked() {
    let wait = |interval_ms: Option<u64>, wait_ms: Option<u64>| {
        ServeArgs {
            data_dir: Some(DataDirList::Joined("/data".into())),
            zk: Some("127.0.0.1:2181".into()),
            gc_interval_ms: interval_ms,
            gc_overreplicated_wait_ms: wait_ms,
            ..ServeArgs::default()
        }
        .resolve(&[0])
        .map(|config| config.registration.unwrap().gc_overreplicated_wait)
    };
    assert_eq!(wait(None, Some(0)).unwrap(), None);
    assert_eq!(
        wait(Some(200), Some(100)).unwrap(),
        Some(Duration::from_millis(100))
    );
    assert_eq!(
        wait(None, Some(604_800_000)).unwrap(),
        Some(Duration::from_secs(604_800))
    );
    // Collection off: the check is off by default, and refused when asked for (it would
    // silently do nothing).
    assert_eq!(wait(Some(0), None).unwrap(), None);
    assert_eq!(wait(Some(0), Some(0)).unwrap(), None);
    for (interval_ms, wait_ms) in [
        (Some(0), Some(1_000)),
        (None, Some(99)),
        (None, Some(604_800_001)),
    ] {
        let error = wait(interval_ms, wait_ms).unwrap_err().to_string();
        assert!(error.contains("gc-overreplicated-wait-ms"), "{error}");
    }
}

#[test]
fn zookeeper_options_are_checked() {
    let zk = |args: ServeArgs| ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        zk: args.zk.or(Some("127.0.0.1:2181".into())),
        ..args
    };
    for servers in [
        "",
        "zk",
        "zk:",
        "zk:0",
        "zk:65536",
        ":2181",
        "zk:2181/chroot",
        "a:1,",
    ] {
        let args = zk(ServeArgs {
            zk: Some(servers.into()),
            ..ServeArgs::default()
        });
        assert!(args.resolve(&[0]).is_err(), "--zk {servers:?} accepted");
    }
    for root in [
        "",
        "/",
        "ledgers",
        "/ledgers/",
        "/a//b",
        "/a/./b",
        "/a/../b",
        "/a\u{0}",
    ] {
        let args = zk(ServeArgs {
            zk_root: Some(root.into()),
            ..ServeArgs::default()
        });
        assert!(args.resolve(&[0]).is_err(), "--zk-root {root:?} accepted");
    }
    let args = zk(ServeArgs {
        zk_root: Some("/pulsar/ledgers".into()),
        ..ServeArgs::default()
    });
    assert_eq!(
        args.resolve(&[0]).unwrap().registration.unwrap().root,
        "/pulsar/ledgers"
    );
    for address in ["0.0.0.0:3181", "10.0.0.1:0", "[::1]:3181"] {
        let args = zk(ServeArgs {
            advertised_address: Some(address.parse().unwrap()),
            ..ServeArgs::default()
        });
        assert!(
            args.resolve(&[0]).is_err(),
            "--advertised-address {address} accepted"
        );
    }
    for (session, connect) in [(Some(99), None), (Some(600_001), None), (None, Some(99))] {
        let args = zk(ServeArgs {
            zk_session_timeout_ms: session,
            zk_connect_timeout_ms: connect,
            ..ServeArgs::default()
        });
        assert!(
            args.resolve(&[0]).is_err(),
            "{session:?} {connect:?} accepted"
        );
    }
}

#[test]
fn zookeeper_options_come_from_the_config_file_too() {
    let dir = crate::support::TestDir::new("config-zk");
    let path = dir.0.join("ringlog.toml");
    let file = "data_dir = \"/data\"\nzk = \"127.0.0.1:2181\"\nzk_root = \"/bk\"\n\
                advertised_address = \"10.0.0.9:3181\"\nzk_session_timeout_ms = 4000\n\
                zk_connect_timeout_ms = 5000\n";
    std::fs::write(&path, file).unwrap();
    let args = ServeArgs {
        config: Some(path),
        zk_root: Some("/flag".into()),
        ..ServeArgs::default()
    };
    let config = args.merge_config_file().unwrap().resolve(&[0]).unwrap();
    let registration = config.registration.unwrap();
    assert_eq!(registration.root, "/flag", "a flag overrides the file");
    assert_eq!(registration.servers, "127.0.0.1:2181");
    assert_eq!(
        registration.advertised_address,
        Some("10.0.0.9:3181".parse().unwrap())
    );
    assert_eq!(registration.session_timeout.as_millis(), 4000);
    assert_eq!(registration.connect_timeout.as_millis(), 5000);
}

/// Where a --data-dir list comes from in `data_dirs_check`.
#[derive(Clone, Copy, Debug)]
enum Source<'a> {
    /// `--data-dir VALUE` on the command line.
    Flag(&'a str),
    /// The config file `data_dir = VALUE`, VALUE in TOML syntax.
    File(&'a str),
}

/// Resolves the list from `source`; `expect` is the directories, or the error message.
fn data_dirs_check(source: Source<'_>, expect: Result<&[&str], &str>) {
    // A directory per call: the tests of this binary run in parallel in one process.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = crate::support::TestDir::new(&format!("config-data-dirs-{call}"));
    let args = match source {
        Source::Flag(value) => {
            let cli = Cli::try_parse_from(["ringlog", "serve", "--data-dir", value]).unwrap();
            let Command::Serve(args) = cli.command else {
                panic!("parsed as serve")
            };
            args
        }
        Source::File(value) => {
            let path = dir.0.join("ringlog.toml");
            std::fs::write(&path, format!("data_dir = {value}\n")).unwrap();
            ServeArgs {
                config: Some(path),
                ..ServeArgs::default()
            }
        }
    };
    let resolved = args.merge_config_file().and_then(|args| args.resolve(&[0]));
    match (resolved, expect) {
        (Ok(config), Ok(expect)) => {
            let expect: Vec<PathBuf> = expect.iter().map(PathBuf::from).collect();
            assert_eq!(config.data_dirs, expect, "{source:?}");
        }
        (Err(error), Err(expect)) => assert_eq!(error.to_string(), expect, "{source:?}"),
        (resolved, expect) => panic!(
            "{source:?}: {:?}, expected {expect:?}",
            resolved.map(|c| c.data_dirs)
        ),
    }
}

#[test]
fn data_dir_lists_come_from_the_flag_and_the_file() {
    let ok = |dirs: &'static [&'static str]| Ok(dirs);
    data_dirs_check(Source::Flag("/data"), ok(&["/data"]));
    data_dirs_check(Source::Flag("/mnt/a,/mnt/b"), ok(&["/mnt/a", "/mnt/b"]));
    data_dirs_check(Source::Flag(" /mnt/a , /mnt/b "), ok(&["/mnt/a", "/mnt/b"]));
    data_dirs_check(
        Source::Flag("relative,/mnt/b/"),
        ok(&["relative", "/mnt/b/"]),
    );
    data_dirs_check(Source::File("\"/data\""), ok(&["/data"]));
    data_dirs_check(Source::File("\"/mnt/a,/mnt/b\""), ok(&["/mnt/a", "/mnt/b"]));
    data_dirs_check(
        Source::File("[\"/mnt/a\", \"/mnt/b\"]"),
        ok(&["/mnt/a", "/mnt/b"]),
    );
    data_dirs_check(Source::File("[\"/data\"]"), ok(&["/data"]));
}

#[test]
fn data_dir_lists_refuse_empty_items_and_duplicates() {
    let empty = |list: &str| {
        format!(
            "invalid --data-dir {list:?}: an item is empty (two commas in a row, a comma at \
             either end, or \"\" in an array); expected DIR[,DIR...]"
        )
    };
    for list in ["/a,,/b", "/a,", ",/a", "/a, ,/b"] {
        data_dirs_check(Source::Flag(list), Err(&empty(list)));
        data_dirs_check(Source::File(&format!("{list:?}")), Err(&empty(list)));
    }
    data_dirs_check(Source::File("\"\""), Err(&empty("")));
    data_dirs_check(Source::File("[\"/a\", \"\"]"), Err(&empty("/a,")));
    data_dirs_check(
        Source::File("[]"),
        Err("no data directory: pass --data-dir DIR (or data_dir in --config)"),
    );
    let twice = |list: &str, directory: &str| {
        format!(
            "invalid --data-dir {list:?}: {directory} is listed twice; list each directory once"
        )
    };
    for (list, directory) in [
        ("/a,/b,/a", "/a"),
        ("/a,/a/", "/a/"),
        ("/a,/b,/a/./", "/a/./"),
        ("/a,//a", "//a"),
        ("a,a", "a"),
    ] {
        data_dirs_check(Source::Flag(list), Err(&twice(list, directory)));
    }
    data_dirs_check(Source::File("[\"/a\", \"/a\"]"), Err(&twice("/a,/a", "/a")));
    data_dirs_check(
        Source::File("[\"/a,/b\"]"),
        Err("invalid data_dir item \"/a,/b\": a data directory's path may not hold a comma"),
    );
    let many = (0..65)
        .map(|index| format!("/d{index}"))
        .collect::<Vec<_>>()
        .join(",");
    data_dirs_check(
        Source::Flag(&many),
        Err("invalid --data-dir: must be a list of at most 64 directories"),
    );
    let sixty_four = (0..64)
        .map(|index| format!("/d{index}"))
        .collect::<Vec<_>>();
    let sixty_four: Vec<&str> = sixty_four.iter().map(String::as_str).collect();
    data_dirs_check(Source::Flag(&sixty_four.join(",")), Ok(&sixty_four));
    // Neither a string nor an array: the parse error says what the key takes.
    let dir = crate::support::TestDir::new("config-data-dir-type");
    let path = dir.0.join("ringlog.toml");
    std::fs::write(&path, "data_dir = 5\n").unwrap();
    let args = ServeArgs {
        config: Some(path),
        ..ServeArgs::default()
    };
    let error = args.merge_config_file().unwrap_err().to_string();
    assert!(
        error.contains("a directory, a comma-separated list of directories, or an array"),
        "{error}"
    );
    // The flag refuses an empty value before any list is made.
    assert!(Cli::try_parse_from(["ringlog", "serve", "--data-dir", ""]).is_err());
}

#[test]
fn journals_are_placed_round_robin_over_the_data_dirs() {
    let one = [PathBuf::from("/data")];
    for shard in 0..4 {
        assert_eq!(shard_data_dir(&one, shard), PathBuf::from("/data"));
        // One directory: the same paths as before lists existed.
        assert_eq!(
            journal_dir(&one, shard),
            PathBuf::from(format!("/data/shard-{shard}"))
        );
    }
    let three = [
        PathBuf::from("/mnt/a"),
        PathBuf::from("/mnt/b"),
        PathBuf::from("/mnt/c"),
    ];
    let placed: Vec<PathBuf> = (0..7).map(|shard| journal_dir(&three, shard)).collect();
    let expect: Vec<PathBuf> = [
        "/mnt/a/shard-0",
        "/mnt/b/shard-1",
        "/mnt/c/shard-2",
        "/mnt/a/shard-3",
        "/mnt/b/shard-4",
        "/mnt/c/shard-5",
        "/mnt/a/shard-6",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(placed, expect);
    let args = ServeArgs {
        data_dir: Some(DataDirList::Joined("/mnt/a,/mnt/b".into())),
        shards: Some(3),
        ..ServeArgs::default()
    };
    let config = args.resolve(&[0, 1, 2]).unwrap();
    assert_eq!(config.journal_dir(2), PathBuf::from("/mnt/a/shard-2"));
    assert_eq!(config.shard_data_dir(1), PathBuf::from("/mnt/b"));
    assert_eq!(config.data_dir_first(), PathBuf::from("/mnt/a"));
}

#[test]
fn log_filters() {
    use server::config::log_parse;
    assert!(log_parse(None).is_ok());
    assert!(log_parse(Some("warn".into())).is_ok());
    assert!(log_parse(Some("info,server::shard=debug".into())).is_ok());
    assert!(log_parse(Some("server=loud".into())).is_err());
    let args = ServeArgs {
        data_dir: Some(DataDirList::Joined("/data".into())),
        log: Some("server=loud".into()),
        ..ServeArgs::default()
    };
    assert!(args
        .resolve(&[0])
        .unwrap_err()
        .to_string()
        .contains("--log"));
}

#[test]
fn read_ahead_and_sorting_come_from_the_config_file_too() {
    let dir = crate::support::TestDir::new("config-read-ahead");
    let path = dir.0.join("ringlog.toml");
    let file = "data_dir = \"/data\"\nread_ahead_mib = 256\nsort_sealed_segments = false\n";
    std::fs::write(&path, file).unwrap();
    let args = ServeArgs {
        config: Some(path),
        ..ServeArgs::default()
    };
    let config = args.merge_config_file().unwrap().resolve(&[0]).unwrap();
    assert_eq!(config.journal.read_ahead_windows, 256);
    assert!(!config.journal.sort_sealed);
}
