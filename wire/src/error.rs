//! Why bytes cannot be decoded, in either protocol and on either side.

use std::fmt;

/// Why a frame cannot be decoded. Every variant means: close the connection, as Java does.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum DecodeError {
    /// Length prefix over the limit: close before allocating.
    ///
    /// `frame_size` includes the 4-byte prefix (saturating at `u32::MAX`), as the limit does.
    FrameTooLarge {
        frame_size: u32,
        frame_size_max: u32,
    },
    /// First payload byte 0x0A: a v3 protobuf frame (not served by the v2 codec).
    ProtocolV3,
    /// Opcodes 4/5/6 over v2 or any unknown opcode: Java closes the connection.
    OpcodeUnsupported { opcode: u8 },
    /// Fields do not fit the frame (e.g. ADD body < 16 bytes, READ frame < 20 bytes, fencing flag
    /// without key).
    Malformed { reason: &'static str },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::FrameTooLarge {
                frame_size,
                frame_size_max,
            } => write!(
                formatter,
                "frame of {frame_size} bytes exceeds the {frame_size_max}-byte limit"
            ),
            DecodeError::ProtocolV3 => write!(formatter, "v3 protobuf frame on the v2 codec"),
            DecodeError::OpcodeUnsupported { opcode } => {
                write!(formatter, "opcode {opcode} is not served over v2")
            }
            DecodeError::Malformed { reason } => write!(formatter, "malformed frame: {reason}"),
        }
    }
}

impl std::error::Error for DecodeError {}

pub(crate) fn malformed(reason: &'static str) -> DecodeError {
    DecodeError::Malformed { reason }
}
