//! The bodies of ringlog's fuzz targets (reliability.md N11), one public function per target.
//!
//! They live in a library, not in the `fuzz_targets/` binaries, so that `tests/corpus_replay.rs`
//! can run every committed corpus file through exactly the code libFuzzer runs, and so that the
//! corpus generator (`examples/corpus_seed.rs`) shares the segment-image layout with
//! `recovery_scan`. Every function must return normally for every input; a panic, an abort, an
//! allocation over libFuzzer's `-malloc_limit_mb` or an endless loop is a bug in `engine` or
//! `wire` (or `server`'s TLS session) (or in the property checked here).

mod record;
mod recovery;
mod sealed;
mod tls;
mod wire_v2;
mod wire_v3;

pub use record::record_decode;
pub use recovery::{recovery_reopen, recovery_scan, segment_image, RECOVERY_SEGMENT_SIZE};
pub use sealed::sealed_open;
pub use tls::tls_after_start;
pub use wire_v2::{v2_request, v2_response};
pub use wire_v3::v3_request;
