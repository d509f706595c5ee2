//! Unit tests of the codec, out of the library files.

mod v2;
mod v3;
