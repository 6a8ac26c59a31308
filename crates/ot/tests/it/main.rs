//! The integration tests of obliv-ot that can share a process, one module per test file, built
//! as one binary (`cargo test -p obliv-ot --test it regression::` runs one module). The tests
//! that install a global allocator (`hostile_alloc.rs`, `secret_wipe.rs`) stay binaries of
//! their own.

mod regression;
mod tcp;
