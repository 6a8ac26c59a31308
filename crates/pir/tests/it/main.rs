//! The integration tests of obliv-pir that can share a process, one module per test file, built
//! as one binary (`cargo test -p obliv-pir --test it tcp::` runs one module). The tests that
//! install a global allocator (`answer_zeroize.rs`, `zeroize.rs`) stay binaries of their own.

mod tcp;
mod tls;
