//! `ReadOnlyDisk`: the `Disk` trait over a journal directory with plain `std::fs` reads, that
//! never changes a byte of it. Every write, create, rename or removal is recorded as
//! intended and reported done, so recovery runs to its verdict exactly as at open (which
//! would zero a torn tail and write back a rebuilt index) while the directory stays as it is.

use crate::disk::{BufferId, Disk, DiskCompletion, DiskToken, FileOp, SubmitError, WriteSync};
use crate::file_name::{is_temporary_file_name, parse_file_name};
use crate::ids::FileId;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A change recovery would have made to the directory, had it been opened by a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteIntended {
    /// Create (the temporary of) a file.
    Create(FileId),
    /// Write `length` bytes at `position`.
    Write {
        /// The file.
        file: FileId,
        /// Where the write starts.
        position: u64,
        /// Bytes written.
        length: usize,
    },
    /// Publish (rename into place) a file.
    Rename(FileId),
    /// Remove a file.
    Remove(FileId),
}

/// A journal directory read with `std::fs`, never written (module doc).
pub struct ReadOnlyDisk {
    directory: PathBuf,
    buffers: Vec<Vec<u8>>,
    files: HashMap<FileId, File>,
    writes_intended: Vec<WriteIntended>,
    temporaries: Vec<String>,
}

impl ReadOnlyDisk {
    /// A disk over `directory`, which must exist; nothing is opened yet.
    #[must_use]
    pub fn new(directory: &Path) -> ReadOnlyDisk {
        ReadOnlyDisk {
            directory: directory.to_path_buf(),
            buffers: Vec::new(),
            files: HashMap::new(),
            writes_intended: Vec::new(),
            temporaries: Vec::new(),
        }
    }

    /// What recovery would have changed, in order.
    #[must_use]
    pub fn writes_intended(&self) -> &[WriteIntended] {
        &self.writes_intended
    }

    /// Temporary files found by `files_list` (an open deletes them; they are left here).
    #[must_use]
    pub fn temporaries(&self) -> &[String] {
        &self.temporaries
    }

    fn refused() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "the read-only disk submits no asynchronous I/O",
        )
    }
}

impl Disk for ReadOnlyDisk {
    fn buffers_allocate(&mut self, sizes: &[usize]) {
        assert!(self.buffers.is_empty(), "buffers are allocated once");
        self.buffers = sizes.iter().map(|&size| vec![0u8; size]).collect();
    }

    fn buffer(&self, id: BufferId) -> &[u8] {
        &self.buffers[id.0 as usize]
    }

    fn buffer_mut(&mut self, id: BufferId) -> &mut [u8] {
        &mut self.buffers[id.0 as usize]
    }

    fn buffer_copy(
        &mut self,
        from: BufferId,
        range: std::ops::Range<usize>,
        to: BufferId,
        offset: usize,
    ) {
        let (source, target) =
            crate::disk::pair_mut(&mut self.buffers, from.0 as usize, to.0 as usize);
        let length = range.len();
        target[offset..offset + length].copy_from_slice(&source[range]);
    }

    fn files_list(&mut self) -> io::Result<Vec<FileId>> {
        let mut files = Vec::new();
        self.temporaries.clear();
        for entry in std::fs::read_dir(&self.directory)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if let Some(file) = parse_file_name(&name) {
                files.push(file);
            } else if is_temporary_file_name(&name) {
                self.temporaries.push(name);
            }
        }
        files.sort_unstable();
        self.temporaries.sort_unstable();
        Ok(files)
    }

    fn file_open(&mut self, id: FileId) -> io::Result<u64> {
        let file = File::open(self.directory.join(id.to_string()))?;
        let size = file.metadata()?.len();
        self.files.insert(id, file);
        Ok(size)
    }

    fn file_create(&mut self, id: FileId, _size: u64) -> io::Result<()> {
        self.writes_intended.push(WriteIntended::Create(id));
        Ok(())
    }

    fn file_publish(&mut self, id: FileId) -> io::Result<()> {
        self.writes_intended.push(WriteIntended::Rename(id));
        Ok(())
    }

    fn submit_file_ops(&mut self, _token: DiskToken, _ops: &[FileOp]) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn submit_sync_directory(&mut self, _token: DiskToken) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn file_discard(&mut self, id: FileId) {
        self.files.remove(&id);
    }

    fn file_remove(&mut self, id: FileId) -> io::Result<()> {
        self.files.remove(&id);
        self.writes_intended.push(WriteIntended::Remove(id));
        Ok(())
    }

    fn file_close(&mut self, id: FileId) {
        self.files.remove(&id);
    }

    fn read_blocking(
        &mut self,
        id: FileId,
        position: u64,
        buffer: BufferId,
        length: usize,
    ) -> io::Result<usize> {
        let file = self
            .files
            .get(&id)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{id} is not open")))?;
        let out = &mut self.buffers[buffer.0 as usize][..length];
        let mut count = 0;
        // Short only at the end of the file, as the trait promises.
        while count < length {
            let read = file.read_at(&mut out[count..], position + count as u64)?;
            if read == 0 {
                break;
            }
            count += read;
        }
        Ok(count)
    }

    fn write_blocking(
        &mut self,
        id: FileId,
        position: u64,
        _buffer: BufferId,
        length: usize,
    ) -> io::Result<()> {
        self.writes_intended.push(WriteIntended::Write {
            file: id,
            position,
            length,
        });
        Ok(())
    }

    fn sync_blocking(&mut self, _id: FileId) -> io::Result<()> {
        Ok(())
    }

    fn submit_write_range(
        &mut self,
        _token: DiskToken,
        _id: FileId,
        _position: u64,
        _buffer: BufferId,
        _range: std::ops::Range<usize>,
        _sync: WriteSync,
    ) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn submit_zero(
        &mut self,
        _token: DiskToken,
        _id: FileId,
        _position: u64,
        _length: usize,
    ) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn submit_sync(&mut self, _token: DiskToken, _id: FileId) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn submit_read(
        &mut self,
        _token: DiskToken,
        _id: FileId,
        _position: u64,
        _buffer: BufferId,
        _length: usize,
    ) -> Result<(), SubmitError> {
        Err(SubmitError::Io(Self::refused()))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn poll(&mut self, _out: &mut Vec<DiskCompletion>) {}

    fn in_flight(&self) -> usize {
        0
    }

    fn space_free(&mut self) -> io::Result<u64> {
        Ok(0)
    }

    fn space_total(&mut self) -> io::Result<u64> {
        Ok(0)
    }
}
