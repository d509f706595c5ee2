//! Network buffers and socket operations on the ring, for the server's shards.

use super::{user_data, AlignedBuffer, Completion, Ring, OWNER_NET};
use crate::disk::SubmitError;
use io_uring::{opcode, types};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Index of a buffer in `NetBuffers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NetBufferId(pub u32);

/// The receive and send buffers of one shard's connections. A buffer in flight cannot be
/// touched or freed; a release while in flight is carried out when the completion arrives.
#[derive(Debug, Default)]
pub struct NetBuffers {
    buffers: Vec<Option<AlignedBuffer>>,
    /// Operations in flight on each buffer: 0 or 1 (`lend` refuses a busy buffer).
    busy: Vec<u32>,
    release_on_completion: Vec<bool>,
    free: Vec<u32>,
}

impl NetBuffers {
    /// An empty pool with room for `capacity` buffers before its table grows.
    #[must_use]
    pub fn new(capacity: usize) -> NetBuffers {
        NetBuffers {
            buffers: Vec::with_capacity(capacity),
            busy: Vec::with_capacity(capacity),
            release_on_completion: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
        }
    }

    /// Allocates a zeroed buffer of at least `size` bytes (once per connection, not per
    /// request).
    pub fn allocate(&mut self, size: usize) -> NetBufferId {
        let buffer = AlignedBuffer::new(size);
        if let Some(index) = self.free.pop() {
            let slot = index as usize;
            assert!(self.buffers[slot].is_none());
            self.buffers[slot] = Some(buffer);
            self.busy[slot] = 0;
            self.release_on_completion[slot] = false;
            return NetBufferId(index);
        }
        self.buffers.push(Some(buffer));
        self.busy.push(0);
        self.release_on_completion.push(false);
        NetBufferId(u32::try_from(self.buffers.len() - 1).expect("buffer count fits u32"))
    }

    /// Frees a buffer now, or when its in-flight operation completes.
    pub fn release(&mut self, id: NetBufferId) {
        let slot = id.0 as usize;
        assert!(self.buffers[slot].is_some(), "double release of {id:?}");
        if self.busy[slot] > 0 {
            self.release_on_completion[slot] = true;
        } else {
            self.buffers[slot] = None;
            self.free.push(id.0);
        }
    }

    /// The bytes of a buffer that is not in flight.
    #[must_use]
    pub fn get(&self, id: NetBufferId) -> &[u8] {
        let slot = id.0 as usize;
        assert_eq!(self.busy[slot], 0, "{id:?} is in flight");
        self.buffers[slot].as_ref().expect("live buffer").as_slice()
    }

    /// The bytes of a buffer that is not in flight, mutably.
    pub fn get_mut(&mut self, id: NetBufferId) -> &mut [u8] {
        let slot = id.0 as usize;
        assert_eq!(self.busy[slot], 0, "{id:?} is in flight");
        self.buffers[slot]
            .as_mut()
            .expect("live buffer")
            .as_mut_slice()
    }

    /// True while an operation on the buffer is in flight.
    #[must_use]
    pub fn is_busy(&self, id: NetBufferId) -> bool {
        self.busy[id.0 as usize] > 0
    }

    /// Size of a live buffer.
    #[must_use]
    pub fn size(&self, id: NetBufferId) -> usize {
        self.buffers[id.0 as usize]
            .as_ref()
            .map_or(0, AlignedBuffer::len)
    }

    /// Marks the buffer of a network completion idle again (no-op for buffer-less ops).
    pub fn complete(&mut self, completion: &Completion) {
        let Some(slot) = completion.buffer_index() else {
            return;
        };
        if completion.more() {
            return;
        }
        assert_eq!(self.busy[slot], 1, "completion for an idle buffer");
        self.busy[slot] = 0;
        if self.release_on_completion[slot] {
            self.release_on_completion[slot] = false;
            self.buffers[slot] = None;
            self.free.push(u32::try_from(slot).expect("slot fits u32"));
        }
    }

    /// Lends `buffers[id][offset..offset + length]` to one kernel operation: its address, and
    /// the buffer's busy count for `Ring::push_holding` to raise.
    pub(super) fn lend(
        &mut self,
        id: NetBufferId,
        offset: usize,
        length: usize,
    ) -> (*mut u8, &mut u32) {
        let slot = id.0 as usize;
        assert_eq!(self.busy[slot], 0, "{id:?} is already in flight");
        let buffer = self.buffers[slot].as_ref().expect("live buffer");
        assert!(offset + length <= buffer.len(), "range outside {id:?}");
        // `offset` is within the allocation (asserted above).
        let pointer = buffer.as_mut_ptr().wrapping_add(offset);
        (pointer, &mut self.busy[slot])
    }
}

impl Drop for NetBuffers {
    fn drop(&mut self) {
        for (buffer, busy) in self.buffers.drain(..).zip(&self.busy) {
            if *busy > 0 {
                // The kernel may still write here: leak rather than free.
                std::mem::forget(buffer);
            }
        }
    }
}

impl Ring {
    /// Arms a multishot accept on a listening socket: one completion per connection.
    pub fn accept_multishot(&mut self, tag: u32, listener: RawFd) -> Result<(), SubmitError> {
        let entry = opcode::AcceptMulti::new(types::Fd(listener)).build();
        let entry = entry.user_data(user_data(OWNER_NET, None, tag));
        // SAFETY: accept with null address pointers references no user memory.
        unsafe { self.push(&[entry]) }
    }

    /// Receives into `buffers[id][offset..]`.
    pub fn recv(
        &mut self,
        tag: u32,
        socket: RawFd,
        buffers: &mut NetBuffers,
        id: NetBufferId,
        offset: usize,
    ) -> Result<(), SubmitError> {
        let length = buffers.size(id) - offset;
        let (pointer, busy) = buffers.lend(id, offset, length);
        let length = u32::try_from(length).expect("buffer fits u32");
        let entry = opcode::Recv::new(types::Fd(socket), pointer, length).build();
        let entry = entry.user_data(user_data(OWNER_NET, Some(id.0 as usize), tag));
        // SAFETY: the buffer is owned by `buffers`, counted busy until `NetBuffers::complete`
        // sees this very completion, and leaked if the pool is dropped before that.
        unsafe { self.push_holding(&[entry], busy) }
    }

    /// Sends `buffers[id][offset..offset + length]`.
    pub fn send(
        &mut self,
        tag: u32,
        socket: RawFd,
        buffers: &mut NetBuffers,
        id: NetBufferId,
        offset: usize,
        length: usize,
    ) -> Result<(), SubmitError> {
        let (pointer, busy) = buffers.lend(id, offset, length);
        let length = u32::try_from(length).expect("send fits u32");
        let entry = opcode::Send::new(types::Fd(socket), pointer, length)
            .flags(libc::MSG_NOSIGNAL)
            .build();
        let entry = entry.user_data(user_data(OWNER_NET, Some(id.0 as usize), tag));
        // SAFETY: as in `recv`.
        unsafe { self.push_holding(&[entry], busy) }
    }

    /// Cancels every request on `socket` (their completions still arrive, with -ECANCELED).
    pub fn cancel_fd(&mut self, tag: u32, socket: RawFd) -> Result<(), SubmitError> {
        let builder = types::CancelBuilder::fd(types::Fd(socket)).all();
        let entry = opcode::AsyncCancel2::new(builder).build();
        let entry = entry.user_data(user_data(OWNER_NET, None, tag));
        // SAFETY: cancel references no user memory.
        unsafe { self.push(&[entry]) }
    }
}

/// Socket system calls the server needs, safe wrappers.
#[derive(Debug)]
pub struct Socket;

impl Socket {
    /// A listening TCP socket with SO_REUSEPORT, so every shard can bind the same port and the
    /// kernel spreads connections across them.
    pub fn listen_reuseport(address: SocketAddr, backlog: i32) -> io::Result<OwnedFd> {
        let domain = if address.is_ipv4() {
            libc::AF_INET
        } else {
            libc::AF_INET6
        };
        let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
        // SAFETY: plain socket creation; the fd is owned right after.
        let fd = unsafe { libc::socket(domain, flags, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        set_option(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
        set_option(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
        let (storage, length) = socket_address(address);
        // SAFETY: `storage` holds a valid sockaddr of `length` bytes.
        let bound = unsafe {
            libc::bind(
                socket.as_raw_fd(),
                std::ptr::addr_of!(storage).cast(),
                length,
            )
        };
        if bound != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `socket` is a bound stream socket.
        if unsafe { libc::listen(socket.as_raw_fd(), backlog) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }

    /// The local address a socket is bound to (to learn an ephemeral port).
    pub fn local_address(socket: RawFd) -> io::Result<SocketAddr> {
        // SAFETY: `socket` is an open fd; a duplicate is owned by the std listener only for
        // the duration of this call.
        let duplicate = unsafe { libc::dup(socket) };
        if duplicate < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `duplicate` is a fresh fd owned by the listener below.
        let listener = unsafe { std::net::TcpListener::from_raw_fd(duplicate) };
        listener.local_addr()
    }

    /// Takes ownership of an fd returned by an accept completion.
    #[must_use]
    pub fn adopt_accepted(completion: &Completion) -> Option<OwnedFd> {
        if completion.result < 0 {
            return None;
        }
        // SAFETY: a non-negative accept result is a new fd that nobody else owns.
        Some(unsafe { OwnedFd::from_raw_fd(completion.result) })
    }

    /// Disables Nagle: responses of one commit leave in one send, so delaying them only adds
    /// latency.
    pub fn set_nodelay(socket: RawFd) -> io::Result<()> {
        set_option(socket, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
    }
}

fn set_option(socket: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    let size = libc::socklen_t::try_from(std::mem::size_of::<i32>()).expect("fits socklen_t");
    // SAFETY: passes a pointer to a valid i32 of the given size.
    let result =
        unsafe { libc::setsockopt(socket, level, name, std::ptr::addr_of!(value).cast(), size) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn socket_address(address: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let length = match address {
        SocketAddr::V4(v4) => {
            let raw = libc::sockaddr_in {
                sin_family: libc::sa_family_t::try_from(libc::AF_INET).expect("AF_INET fits"),
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast(), raw) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let raw = libc::sockaddr_in6 {
                sin6_family: libc::sa_family_t::try_from(libc::AF_INET6).expect("AF_INET6 fits"),
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast(), raw) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (
        storage,
        libc::socklen_t::try_from(length).expect("sockaddr size fits"),
    )
}
