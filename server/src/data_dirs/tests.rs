//! The record of the list: what it is written as and what reading it accepts. The directories
//! themselves are tested in server/tests/it/data_dirs.rs.

use super::{record_encode, record_parse};
use std::path::PathBuf;

#[test]
fn a_record_reads_back_as_written() {
    let directories = vec![
        PathBuf::from("/mnt/nvme0/ringlog"),
        PathBuf::from("/mnt/nvme1/ring log,with\ncharacters"),
    ];
    let record = record_encode(&directories);
    assert_eq!(
        record,
        b"ringlog data directories 1\n/mnt/nvme0/ringlog\0/mnt/nvme1/ring log,with\ncharacters\0"
    );
    assert_eq!(record_parse(&record), Some(directories));
}

#[test]
fn a_record_not_written_here_is_refused() {
    let many: Vec<u8> = (0..65)
        .flat_map(|index| format!("/d{index}\0").into_bytes())
        .collect();
    let too_many = [b"ringlog data directories 1\n".as_slice(), &many].concat();
    for bytes in [
        &b""[..],
        b"ringlog data directories 1",
        b"ringlog data directories 1\n",
        b"ringlog data directories 2\n/a\0",
        b"ringlog data directories 1\n/a",
        b"ringlog data directories 1\nrelative\0",
        b"ringlog data directories 1\n/a\0\0",
        &too_many,
    ] {
        assert_eq!(
            record_parse(bytes),
            None,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}
