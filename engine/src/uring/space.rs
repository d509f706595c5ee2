//! File system capacity of a directory (statvfs), for the v3 GET_BOOKIE_INFO request.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Capacity of the file system holding a path, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskSpace {
    /// Total size of the file system.
    pub total_bytes: u64,
    /// Bytes available to an unprivileged writer (`f_bavail`), as Java's `File.getUsableSpace`.
    pub free_bytes: u64,
}

/// `statvfs(path)`: one blocking system call, cheap (no disk I/O on local file systems).
// The fields are `u64` on 64-bit Linux but narrower on 32-bit targets.
#[allow(clippy::useless_conversion)]
pub fn disk_space(path: &Path) -> io::Result<DiskSpace> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: an all-zero `statvfs` is a valid value of this plain C struct of integers.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string that outlives the call, and `stat` is a valid,
    // writable `statvfs` the kernel fills.
    let result = unsafe { libc::statvfs(path.as_ptr(), &raw mut stat) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    let fragment_size = u64::from(stat.f_frsize);
    Ok(DiskSpace {
        total_bytes: u64::from(stat.f_blocks).saturating_mul(fragment_size),
        free_bytes: u64::from(stat.f_bavail).saturating_mul(fragment_size),
    })
}
