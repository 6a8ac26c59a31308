//! The integration tests of obliv-ec that can share a process, one module per test file, built
//! as one binary (`cargo test -p obliv-ec --test it suite::` runs one module). Binaries of
//! their own: `cpu_disable.rs` (it switches a CPU feature off for the whole process),
//! `hash_wipe.rs` (a global allocator) and `ctgrind.rs` (run by name under Valgrind by
//! `.ci/ctgrind`).

mod common;
mod kat;
mod ristretto_batch;
mod suite;
mod x25519;
