//! Generates the v3 protobuf types from proto/BookkeeperProtocol.proto with prost-build,
//! parsing the .proto with protox (pure Rust), so the build needs no `protoc`.

fn main() {
    let proto = "proto/BookkeeperProtocol.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = match protox::compile([proto], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("cannot parse {proto}: {error}"),
    };
    if let Err(error) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("cannot generate Rust for {proto}: {error}");
    }
}
