//! Compiles KEDA's `proto/externalscaler.proto` into Rust (`OUT_DIR/externalscaler.rs`, included
//! by `src/keda/proto.rs`) with protox, a protobuf compiler in pure Rust, so that building needs
//! no system `protoc`.

fn main() {
    println!("cargo::rerun-if-changed=proto/externalscaler.proto");
    if let Err(error) = externalscaler() {
        println!("cargo::error=cannot compile proto/externalscaler.proto: {error}");
    }
}

fn externalscaler() -> Result<(), Box<dyn std::error::Error>> {
    let descriptors = protox::compile(["proto/externalscaler.proto"], ["proto"])?;
    tonic_prost_build::configure().emit_rerun_if_changed(false).compile_fds(descriptors)?;
    Ok(())
}
