//! `record_decode`: journal record framing on arbitrary bytes.
//!
//! Properties: `decode_header` and `decode` never panic and agree with each other; a record
//! that decodes is canonical, i.e. `encode` of its header and payload reproduces the input's
//! first `record_size` bytes exactly (flags, reserved bytes, padding and both checksums).

use engine::record::{self, RecordError};

/// Target `record_decode`.
pub fn record_decode(data: &[u8]) {
    let header_only = record::decode_header(data);
    match record::decode(data) {
        Ok((header, checksum_header, payload)) => {
            assert_eq!(header_only, Ok((header, checksum_header)));
            assert_eq!(payload.len(), header.payload_size as usize);
            let size = record::record_size(payload.len());
            assert!(size <= data.len());
            // Not zero: a byte `encode` forgot to write would then differ from the input.
            let mut out = vec![0xA5u8; size];
            let checksum_encoded = record::encode(&mut out, &header, payload);
            assert_eq!(checksum_encoded, checksum_header);
            assert_eq!(&out[..], &data[..size], "decoded record is not canonical");
        }
        Err(error) => match header_only {
            // A bad header fails the whole record for the same reason.
            Err(header_error) => assert_eq!(error, header_error),
            // A good header leaves only length, payload checksum and padding to fail on.
            Ok(_) => assert!(
                matches!(
                    error,
                    RecordError::Truncated | RecordError::ChecksumPayload | RecordError::Reserved
                ),
                "header decodes but the record fails with {error:?}"
            ),
        },
    }
}
