//! Config resolution without a server: core lists, shard placement, defaults and bounds.

use server::config::{cores_parse, shard_cores, ServeArgs};

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
        data_dir: Some("/data".into()),
        ..ServeArgs::default()
    };
    let config = args.resolve(&[0, 1, 2]).unwrap();
    assert_eq!(config.listen.to_string(), "0.0.0.0:3181");
    assert_eq!(config.shards(), 3);
    assert_eq!(config.frame_size_max, 5_253_120);
    assert_eq!(config.journal.segment_size, 1 << 30);
    assert_eq!(config.journal.commits_in_flight_max, 2);
    assert_eq!(config.journal.sync_mode, engine::SyncMode::LinkedFdatasync);
    assert!(config.direct_io);
    assert_eq!(config.idle_timeout.as_millis(), 600_000);
    assert_eq!(config.requests_in_flight_max, 10_000);
    assert!(
        ServeArgs::default().resolve(&[0]).is_err(),
        "data_dir is required"
    );
    let bad = |args: ServeArgs| ServeArgs {
        data_dir: Some("/data".into()),
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
}
