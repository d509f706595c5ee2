//! The collector's pure parts: LAYOUT parsing, hierarchical paths, the round's safety rules
//! against a fake metadata store, and the read rate.

use super::gc::{round, RoundOutcome};
use super::gc_metadata::{Metadata, ReadError, RoundError};
use super::ledger_layout::{
    child_classify, form_hybrid, layout_parse, ledger_path, Child, Form, LayoutError, Manager,
};
use super::read_rate::ReadRate;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

const ROOT: &str = "/ledgers";
/// What BookKeeper 4.x and Pulsar write by default (`LedgerLayout.serialize`).
const LAYOUT_HIERARCHICAL: &[u8] =
    b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";

#[test]
fn layout_strings_of_bookkeeper_parse() {
    let cases: [(&[u8], Manager); 6] = [
        (LAYOUT_HIERARCHICAL, Manager::Hierarchical),
        (
            b"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1",
            Manager::LongHierarchical,
        ),
        (
            b"2\norg.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory:1\n",
            Manager::LegacyHierarchical,
        ),
        (b"1\nhierarchical:1", Manager::Hierarchical),
        (b"1\nlonghierarchical:1", Manager::LongHierarchical),
        (b"1\nlegacyhierarchical:1", Manager::LegacyHierarchical),
    ];
    for (bytes, manager) in cases {
        assert_eq!(layout_parse(bytes), Ok(manager), "{bytes:?}");
    }
}

#[test]
fn layouts_not_understood_are_refused() {
    let flat = b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1";
    assert!(matches!(
        layout_parse(flat),
        Err(LayoutError::Manager { .. })
    ));
    let ms = b"2\norg.apache.bookkeeper.meta.MSLedgerManagerFactory:1";
    assert!(matches!(layout_parse(ms), Err(LayoutError::Manager { .. })));
    let version = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:2";
    assert!(matches!(
        layout_parse(version),
        Err(LayoutError::Manager { .. })
    ));
    let format = b"3\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1";
    assert!(matches!(
        layout_parse(format),
        Err(LayoutError::FormatVersion { .. })
    ));
    for garbage in [&b""[..], b"2", b"2\nno-colon", b"\xff\xfe"] {
        assert!(layout_parse(garbage).is_err(), "{garbage:?}");
    }
}

#[test]
fn paths_are_bookkeepers() {
    assert_eq!(ledger_path(ROOT, 1, Form::Short), "/ledgers/00/0000/L0001");
    assert_eq!(
        ledger_path(ROOT, 1_234_567_890, Form::Short),
        "/ledgers/12/3456/L7890"
    );
    assert_eq!(
        ledger_path(ROOT, 1, Form::Long),
        "/ledgers/000/0000/0000/0000/L0001"
    );
    assert_eq!(
        ledger_path(ROOT, i64::MAX, Form::Long),
        "/ledgers/922/3372/0368/5477/L5807"
    );
    // getHybridHierarchicalLedgerPath: short below Integer.MAX_VALUE.
    assert_eq!(form_hybrid(i64::from(i32::MAX) - 1), Form::Short);
    assert_eq!(form_hybrid(i64::from(i32::MAX)), Form::Long);
}

/// The id a path names, through `child_classify` level by level.
fn id_of(path: &str) -> Child {
    let mut parent = None;
    let names: Vec<&str> = path.trim_start_matches(ROOT).split('/').skip(1).collect();
    for (index, name) in names.iter().enumerate() {
        match child_classify(parent.as_ref(), name) {
            Child::Branch(branch) if index + 1 < names.len() => parent = Some(branch),
            other => return other,
        }
    }
    panic!("{path} ends in a branch")
}

#[test]
fn ids_round_trip_through_both_forms() {
    let ids = [
        0,
        1,
        9_999,
        10_000,
        2_147_483_646,
        2_147_483_647,
        9_999_999_999,
        1 << 40,
        i64::MAX - 1,
        i64::MAX,
    ];
    for id in ids {
        if id <= 9_999_999_999 {
            assert_eq!(
                id_of(&ledger_path(ROOT, id, Form::Short)),
                Child::Ledger(id)
            );
        }
        assert_eq!(id_of(&ledger_path(ROOT, id, Form::Long)), Child::Ledger(id));
        let hybrid = ledger_path(ROOT, id, form_hybrid(id));
        assert_eq!(id_of(&hybrid), Child::Ledger(id));
    }
}

#[test]
fn nodes_that_do_not_parse_are_unparsed_or_ignored() {
    for special in ["available", "cookies", "INSTANCEID", "underreplication"] {
        assert_eq!(child_classify(None, special), Child::Ignored);
    }
    for special in ["idgen", "idgen-long", "LAYOUT", "1", "0000", "ab"] {
        assert_eq!(child_classify(None, special), Child::Ignored);
    }
    for path in [
        "/ledgers/00/000/L0001",
        "/ledgers/00/0000/L001",
        "/ledgers/00/0000/0001",
        "/ledgers/00/0000/Lx001",
        "/ledgers/00/abcd/L0001",
        // Above i64::MAX.
        "/ledgers/999/9999/9999/9999/L9999",
    ] {
        assert_eq!(id_of(path), Child::Unparsed, "{path}");
    }
}

/// A metadata store in memory: every znode path, the LAYOUT bytes, an optional failure at
/// the k-th read, and a hook run at the first listing.
#[derive(Default)]
struct Fake {
    nodes: BTreeSet<String>,
    layout: Option<Vec<u8>>,
    fail_at_read: Option<usize>,
    reads: usize,
    on_first_listing: Option<Box<dyn FnOnce()>>,
}

impl Fake {
    fn new(ledgers: &[(i64, Form)]) -> Fake {
        let mut fake = Fake {
            layout: Some(LAYOUT_HIERARCHICAL.to_vec()),
            ..Fake::default()
        };
        for name in [
            "available",
            "cookies",
            "idgen",
            "INSTANCEID",
            "underreplication",
        ] {
            fake.insert(&format!("{ROOT}/{name}"));
        }
        fake.insert(&format!("{ROOT}/idgen/ID-0000000001"));
        for &(ledger, form) in ledgers {
            fake.insert(&ledger_path(ROOT, ledger, form));
        }
        fake
    }

    /// Inserts `path` and its ancestors.
    fn insert(&mut self, path: &str) {
        let mut end = path.len();
        loop {
            self.nodes.insert(path[..end].to_string());
            match path[..end].rfind('/') {
                Some(0) | None => break,
                Some(slash) => end = slash,
            }
        }
    }

    fn read(&mut self, path: &str) -> Result<(), ReadError> {
        self.reads += 1;
        if self.fail_at_read == Some(self.reads) {
            return Err(ReadError::ZooKeeper {
                operation: "list",
                path: path.to_string(),
                error: zookeeper_client::Error::ConnectionLoss,
            });
        }
        Ok(())
    }
}

impl Metadata for Fake {
    async fn data(&mut self, path: &str) -> Result<Option<Vec<u8>>, ReadError> {
        self.read(path)?;
        assert_eq!(path, format!("{ROOT}/LAYOUT"));
        Ok(self.layout.clone())
    }

    async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        self.read(path)?;
        if let Some(hook) = self.on_first_listing.take() {
            hook();
        }
        if !self.nodes.contains(path) {
            return Ok(None);
        }
        let prefix = format!("{path}/");
        let children = self
            .nodes
            .iter()
            .filter_map(|node| node.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_string)
            .collect();
        Ok(Some(children))
    }
}

fn run(fake: &mut Fake, local: &[i64]) -> Result<RoundOutcome, RoundError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let local = local.to_vec();
    runtime.block_on(round(fake, ROOT, move || local))
}

const LONG_ID: i64 = 5_000_000_000;

#[test]
fn local_ledgers_missing_from_both_forms_are_deleted() {
    let mut fake = Fake::new(&[
        (1, Form::Short),
        (3, Form::Short),
        (LONG_ID, Form::Long),
        // The long-hierarchical manager writes small ids in the long form too.
        (7, Form::Long),
    ]);
    let local = [1, 2, 3, 4, 7, 8, LONG_ID, LONG_ID + 1];
    let outcome = run(&mut fake, &local).unwrap();
    assert_eq!(outcome.deletions, vec![2, 4, 8, LONG_ID + 1]);
    assert_eq!(outcome.ledgers_listed, 4);
    assert_eq!(outcome.nodes_unparsed, 0);
}

#[test]
fn a_ledger_created_after_the_snapshot_is_not_deleted() {
    // Ledger 42 gets its first add while the listing runs, after its znode was listed (or
    // with a listing that misses it): the snapshot, taken first, does not hold it.
    let local = Rc::new(RefCell::new(vec![1, 2]));
    let mut fake = Fake::new(&[(1, Form::Short)]);
    let hook_local = Rc::clone(&local);
    fake.on_first_listing = Some(Box::new(move || hook_local.borrow_mut().push(42)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let snapshot_local = Rc::clone(&local);
    let outcome = runtime
        .block_on(round(&mut fake, ROOT, move || {
            snapshot_local.borrow().clone()
        }))
        .unwrap();
    assert_eq!(outcome.deletions, vec![2]);
    assert!(local.borrow().contains(&42), "the hook ran");
}

#[test]
fn an_error_at_any_read_deletes_nothing() {
    let ledgers = [
        (1, Form::Short),
        (20_000, Form::Short),
        (LONG_ID, Form::Long),
    ];
    let local = [1, 2, 20_000, 20_001, LONG_ID, LONG_ID + 1];
    let reads = {
        let mut fake = Fake::new(&ledgers);
        let outcome = run(&mut fake, &local).unwrap();
        assert_eq!(outcome.deletions, vec![2, 20_001, LONG_ID + 1]);
        fake.reads
    };
    assert!(reads >= 8, "LAYOUT, root and both trees: {reads}");
    for fail_at in 1..=reads {
        let mut fake = Fake::new(&ledgers);
        fake.fail_at_read = Some(fail_at);
        let result = run(&mut fake, &local);
        assert!(
            matches!(result, Err(RoundError::Read(ReadError::ZooKeeper { .. }))),
            "read {fail_at} of {reads} failed: {result:?}"
        );
    }
}

#[test]
fn an_unknown_or_missing_layout_deletes_nothing() {
    let mut fake = Fake::new(&[]);
    fake.layout = Some(b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1".to_vec());
    assert!(matches!(
        run(&mut fake, &[1, 2]),
        Err(RoundError::Layout { .. })
    ));
    assert_eq!(fake.reads, 1, "nothing listed under an unknown layout");
    let mut fake = Fake::new(&[]);
    fake.layout = None;
    assert!(matches!(
        run(&mut fake, &[1, 2]),
        Err(RoundError::LayoutMissing { .. })
    ));
}

#[test]
fn a_node_that_does_not_parse_keeps_its_branch() {
    let mut fake = Fake::new(&[(1, Form::Short), (20_000, Form::Short)]);
    // In 00/0000 (ids 0..=9999): not a ledger name.
    fake.insert(&format!("{ROOT}/00/0000/Lnot-a-ledger"));
    let outcome = run(&mut fake, &[1, 5, 9_999, 20_000, 20_001]).unwrap();
    assert_eq!(outcome.deletions, vec![20_001]);
    assert_eq!(outcome.nodes_unparsed, 1);
}

#[test]
fn a_branch_that_vanishes_while_listed_keeps_its_ledgers() {
    // ROOT/00 lists 0000, which is gone when read (deleted between the two reads): its ids
    // are kept this round; 00/0002 was listed whole.
    let mut gone = GoneChild(Fake::new(&[(20_000, Form::Short)]));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = runtime
        .block_on(round(&mut gone, ROOT, || vec![5, 20_000, 20_001]))
        .unwrap();
    assert_eq!(outcome.deletions, vec![20_001]);
}

/// Lists `ROOT/00/0000` under `ROOT/00` but answers NoNode when it is read.
struct GoneChild(Fake);

impl Metadata for GoneChild {
    async fn data(&mut self, path: &str) -> Result<Option<Vec<u8>>, ReadError> {
        self.0.data(path).await
    }

    async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        if path == format!("{ROOT}/00/0000") {
            return Ok(None);
        }
        let mut children = self.0.children(path).await?;
        if path == format!("{ROOT}/00") {
            if let Some(children) = children.as_mut() {
                children.push("0000".to_string());
            }
        }
        Ok(children)
    }
}

#[test]
fn negative_ids_are_never_deleted_and_empty_branches_are_not_read() {
    let mut fake = Fake::new(&[
        (1, Form::Short),
        (20_000, Form::Short),
        (i64::MAX, Form::Long),
    ]);
    let outcome = run(&mut fake, &[-5, 20_000]).unwrap();
    assert_eq!(outcome.deletions, Vec::<i64>::new());
    // LAYOUT, the root, 00, 00/0002: neither 00/0000 nor the long tree under 922 can hold
    // a candidate, so neither is read.
    assert_eq!(fake.reads, 4);
}

/// The most reads any half-open window of one second holds (`times` sorted).
fn reads_per_second_max(times: &[Instant]) -> usize {
    let mut most = 0;
    let mut end = 0;
    for (start, &time) in times.iter().enumerate() {
        while end < times.len() && times[end] < time + Duration::from_secs(1) {
            end += 1;
        }
        most = most.max(end - start);
    }
    most
}

#[test]
fn the_read_rate_never_exceeds_n_per_second() {
    for rate in [1_u32, 3, 7, 1_000, 65_537] {
        let mut limiter = ReadRate::new(rate);
        let start = Instant::now();
        let mut now = start;
        let mut times = Vec::new();
        let reads = usize::try_from(rate).unwrap() * 3 + 5;
        for read in 0..reads {
            // Bursts (the clock barely moves), and pauses after which the limiter must not
            // allow a catch-up burst above the rate.
            if read % 97 == 96 {
                now += Duration::from_millis(1_500);
            }
            let at = limiter.reserve(now);
            assert!(at >= now);
            times.push(at);
        }
        let most = reads_per_second_max(&times);
        assert!(
            most <= usize::try_from(rate).unwrap(),
            "rate {rate}: {most}"
        );
    }
    // A burst runs at the rate, not slower: read k goes at k / N s (rounded up to a ns).
    let mut limiter = ReadRate::new(1_000);
    let start = Instant::now();
    let last = (0..1_001).map(|_| limiter.reserve(start)).last().unwrap();
    assert_eq!(last - start, Duration::from_secs(1));
}
