//! v2 error codes (i32 on the wire).
//!
//! A v2 client maps only these values; any other one, EUNKNOWNLEDGERSTATE (107) included, throws
//! in the Java client (§5.10), so it is deliberately absent here. v3's `StatusCode` numbers the
//! same codes differently; `v3::status_from_v2` and `v3::v2_from_status` map between the two.

/// Success.
pub const EOK: i32 = 0;
/// Ledger unknown here.
pub const ENOLEDGER: i32 = 1;
/// Entry never stored here.
pub const ENOENTRY: i32 = 2;
/// Malformed or unsupported request.
pub const EBADREQ: i32 = 100;
/// I/O failure, state unknown.
pub const EIO: i32 = 101;
/// Master key missing or mismatched.
pub const EUA: i32 = 102;
/// Protocol version not accepted.
pub const EBADVERSION: i32 = 103;
/// Ledger fenced; normal add refused.
pub const EFENCED: i32 = 104;
/// Bookie is read-only.
pub const EREADONLY: i32 = 105;
/// Bookie is overloaded.
pub const ETOOMANYREQUESTS: i32 = 106;
