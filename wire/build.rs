//! Generates the protobuf types with prost-build, parsing the .proto files with protox (pure
//! Rust), so the build needs no `protoc`: the v3 protocol (proto/BookkeeperProtocol.proto)
//! and BookKeeper's ledger metadata (proto/LedgerMetadataFormat.proto).

fn main() {
    let protos = [
        "proto/BookkeeperProtocol.proto",
        "proto/LedgerMetadataFormat.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = match protox::compile(protos, ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("cannot parse {protos:?}: {error}"),
    };
    if let Err(error) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("cannot generate Rust for {protos:?}: {error}");
    }
}
