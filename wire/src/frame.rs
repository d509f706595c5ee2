//! The frame every BookKeeper message travels in, and the v2 packet header that opens a v2
//! frame's payload: the length prefix and its limit, splitting a frame off the bytes received,
//! and building a frame whose length is patched in at the end.
//!
//! Every frame is `u32 length | payload`, `length` counting everything after itself (§1.1). A
//! v2 payload is `u32 packet header | fields`, all integers big-endian (§2.1); a v3 payload is a
//! protobuf message whose first byte is 0x0A (§1.2).

use crate::entry_body::{MasterKey, MASTER_KEY_SIZE};
use crate::error::{malformed, DecodeError};

/// Pulsar's 5 MiB + 10 KiB; the Java default is 5 MiB.
///
/// Like Netty's `LengthFieldBasedFrameDecoder`, the limit bounds the whole frame including its
/// 4-byte length prefix.
pub const FRAME_SIZE_MAX_DEFAULT: u32 = 5_253_120;
/// The protocol version Java clients send and the highest one a bookie accepts.
pub const PROTOCOL_VERSION_CURRENT: u8 = 2;
/// Reads: fence the ledger; a master key follows the ids.
pub const FLAG_DO_FENCING: u16 = 0x0001;
/// Adds: accept even if the ledger is fenced.
pub const FLAG_RECOVERY_ADD: u16 = 0x0002;
/// High-priority pool; may be accepted in read-only mode.
pub const FLAG_HIGH_PRIORITY: u16 = 0x0004;

/// v2 opcodes (§2.2). `ReadLac`, `WriteLac` and `GetBookieInfo` exist only so that the numbers
/// have names: over v2 they are refused with [`DecodeError::OpcodeUnsupported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Add = 1,
    Read = 2,
    Auth = 3,
    ReadLac = 4,
    WriteLac = 5,
    GetBookieInfo = 6,
    BatchRead = 7,
}

impl TryFrom<u8> for Opcode {
    type Error = DecodeError;

    fn try_from(opcode: u8) -> Result<Self, DecodeError> {
        match opcode {
            1 => Ok(Opcode::Add),
            2 => Ok(Opcode::Read),
            3 => Ok(Opcode::Auth),
            4 => Ok(Opcode::ReadLac),
            5 => Ok(Opcode::WriteLac),
            6 => Ok(Opcode::GetBookieInfo),
            7 => Ok(Opcode::BatchRead),
            _ => Err(DecodeError::OpcodeUnsupported { opcode }),
        }
    }
}

/// The `u32` after the length prefix: version (bits 31..24), opcode (23..16), flags (15..0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeader {
    pub version: u8,
    pub opcode: u8,
    pub flags: u16,
}

impl PacketHeader {
    /// Splits a header word. Version 0 is the legacy form whose word is just the opcode (§2.1),
    /// so its opcode is the low byte and its flags are 0, as in Java's `PacketHeader`.
    #[must_use]
    pub fn decode(word: u32) -> Self {
        let [version, opcode_packed, flags_high, flags_low] = word.to_be_bytes();
        if version == 0 {
            PacketHeader {
                version,
                opcode: flags_low,
                flags: 0,
            }
        } else {
            let flags = u16::from_be_bytes([flags_high, flags_low]);
            PacketHeader {
                version,
                opcode: opcode_packed,
                flags,
            }
        }
    }

    /// Packs the header word. Version 0 has no room for flags, so they are dropped.
    #[must_use]
    pub fn encode(self) -> u32 {
        if self.version == 0 {
            u32::from(self.opcode)
        } else {
            let [flags_high, flags_low] = self.flags.to_be_bytes();
            u32::from_be_bytes([self.version, self.opcode, flags_high, flags_low])
        }
    }

    /// Responses carry the request's version and no flags (§2.1).
    pub(crate) fn response(version: u8, opcode: Opcode) -> Self {
        PacketHeader {
            version,
            opcode: opcode as u8,
            flags: 0,
        }
    }

    /// Client requests always go out as the current version, like the Java client's.
    pub(crate) fn request(opcode: Opcode, flags: u16) -> Self {
        PacketHeader {
            version: PROTOCOL_VERSION_CURRENT,
            opcode: opcode as u8,
            flags,
        }
    }
}

pub(crate) const LENGTH_PREFIX_SIZE: usize = 4;
pub(crate) const PACKET_HEADER_SIZE: usize = 4;
/// The first byte of every v3 `Request`/`Response`: field 1 (`header`), wire type 2 (§1.2).
pub(crate) const PROTOBUF_TAG_V3_HEADER: u8 = 0x0A;

const _: () = assert!(FRAME_SIZE_MAX_DEFAULT == 5 * 1024 * 1024 + 10 * 1024);

/// One complete v2 frame whose opcode this codec serves.
pub(crate) struct Frame<'a> {
    pub(crate) header: PacketHeader,
    pub(crate) opcode: Opcode,
    /// The bytes after the packet header, up to the end of the frame.
    pub(crate) fields: &'a [u8],
    /// Including the length prefix.
    pub(crate) frame_size: usize,
}

/// Splits the first v2 frame off `buf`: `Ok(None)` until it is complete. Checks needing only the
/// prefix, first byte or header run before the whole frame is required.
pub(crate) fn frame_split(
    buf: &[u8],
    frame_size_max: u32,
) -> Result<Option<Frame<'_>>, DecodeError> {
    let Some((prefix, rest)) = buf.split_first_chunk::<LENGTH_PREFIX_SIZE>() else {
        return Ok(None);
    };
    let length = frame_length(*prefix, frame_size_max)?;
    if length < PACKET_HEADER_SIZE {
        return Err(malformed("frame shorter than its 4-byte packet header"));
    }
    if rest.first() == Some(&PROTOBUF_TAG_V3_HEADER) {
        return Err(DecodeError::ProtocolV3);
    }
    let Some((word, _)) = rest.split_first_chunk::<PACKET_HEADER_SIZE>() else {
        return Ok(None);
    };
    let header = PacketHeader::decode(u32::from_be_bytes(*word));
    let opcode = Opcode::try_from(header.opcode)?;
    if matches!(
        opcode,
        Opcode::ReadLac | Opcode::WriteLac | Opcode::GetBookieInfo
    ) {
        return Err(DecodeError::OpcodeUnsupported {
            opcode: header.opcode,
        });
    }
    let Some(fields) = rest.get(PACKET_HEADER_SIZE..length) else {
        return Ok(None);
    };
    Ok(Some(Frame {
        header,
        opcode,
        fields,
        frame_size: LENGTH_PREFIX_SIZE + length,
    }))
}

/// The length a prefix announces, if the whole frame (prefix included) is within the limit.
pub(crate) fn frame_length(
    prefix: [u8; LENGTH_PREFIX_SIZE],
    frame_size_max: u32,
) -> Result<usize, DecodeError> {
    let length = u32::from_be_bytes(prefix);
    // Netty's LengthFieldBasedFrameDecoder(max, 0, 4, 0, 4) compares length + 4 with the limit;
    // u64 keeps that sum from overflowing for a hostile prefix.
    let frame_size = u64::from(length) + LENGTH_PREFIX_SIZE as u64;
    let too_large = DecodeError::FrameTooLarge {
        frame_size: u32::try_from(frame_size).unwrap_or(u32::MAX),
        frame_size_max,
    };
    if frame_size > u64::from(frame_size_max) {
        return Err(too_large);
    }
    usize::try_from(length).map_err(|_| too_large)
}

/// Writes a placeholder length prefix and the header; returns where the frame starts.
pub(crate) fn frame_begin(out: &mut Vec<u8>, header: PacketHeader) -> usize {
    let frame_start = out.len();
    // Patched by frame_finish: computing sizes up front would duplicate every layout.
    out.extend_from_slice(&[0; LENGTH_PREFIX_SIZE]);
    out.extend_from_slice(&header.encode().to_be_bytes());
    frame_start
}

/// Sets the length prefix of the frame at `frame_start` to reach the end of `out`.
pub(crate) fn frame_finish(out: &mut [u8], frame_start: usize) {
    let fields_start = frame_start + LENGTH_PREFIX_SIZE + PACKET_HEADER_SIZE;
    assert!(
        out.len() >= fields_start,
        "frame_finish without frame_begin"
    );
    let length = out.len() - frame_start - LENGTH_PREFIX_SIZE;
    let length = u32::try_from(length).expect("v2 frame longer than u32::MAX bytes");
    out[frame_start..frame_start + LENGTH_PREFIX_SIZE].copy_from_slice(&length.to_be_bytes());
}

/// Reads big-endian fields off the front of a frame's fields; `None` once they are too short.
pub(crate) struct Cursor<'a> {
    pub(crate) rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn chunk<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (chunk, rest) = self.rest.split_first_chunk::<N>()?;
        self.rest = rest;
        Some(chunk)
    }

    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.chunk().map(|bytes| i32::from_be_bytes(*bytes))
    }

    pub(crate) fn i64(&mut self) -> Option<i64> {
        self.chunk().map(|bytes| i64::from_be_bytes(*bytes))
    }

    pub(crate) fn master_key(&mut self) -> Option<&'a MasterKey> {
        self.chunk::<MASTER_KEY_SIZE>()
    }
}
