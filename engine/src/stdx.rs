//! Small extensions of std used by the engine.

/// Rounds `value` up to a multiple of the power-of-two `alignment`.
#[must_use]
pub fn align_up(value: usize, alignment: usize) -> usize {
    assert!(alignment.is_power_of_two());
    let result = value.div_ceil(alignment) * alignment;
    assert!(result >= value);
    result
}

/// Rounds `value` down to a multiple of the power-of-two `alignment`.
#[must_use]
pub fn align_down(value: usize, alignment: usize) -> usize {
    assert!(alignment.is_power_of_two());
    value & !(alignment - 1)
}

/// u64 variant of `align_up`.
#[must_use]
pub fn align_up_u64(value: u64, alignment: u64) -> u64 {
    assert!(alignment.is_power_of_two());
    value.div_ceil(alignment) * alignment
}

/// u64 variant of `align_down`.
#[must_use]
pub fn align_down_u64(value: u64, alignment: u64) -> u64 {
    assert!(alignment.is_power_of_two());
    value & !(alignment - 1)
}

/// Converts an in-memory size to a file offset; sizes here are bounded far below `u64::MAX`.
#[must_use]
pub fn to_u64(value: usize) -> u64 {
    u64::try_from(value).expect("usize fits u64 on supported targets")
}

/// Converts a bounded file offset to an in-memory index.
#[must_use]
pub fn to_usize(value: u64) -> usize {
    usize::try_from(value).expect("offset fits usize on 64-bit targets")
}

/// The little-endian u32 at `offset` of `bytes` (the caller checked the length).
#[must_use]
pub fn le_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

/// The little-endian u64 at `offset` of `bytes`.
#[must_use]
pub fn le_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

/// The little-endian i64 at `offset` of `bytes`.
#[must_use]
pub fn le_i64(bytes: &[u8], offset: usize) -> i64 {
    i64::from_le_bytes(le_u64(bytes, offset).to_le_bytes())
}
