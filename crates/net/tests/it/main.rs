//! The integration tests of obliv-net that can share a process, one module per test file, built
//! as one binary (`cargo test -p obliv-net --test it tcp_hostile::` runs one module). The test
//! that installs a global allocator (`read_ahead_alloc.rs`) stays a binary of its own.

mod deadlines;
mod mux_split;
mod roundtrip;
mod run;
mod session;
mod sim_link;
mod tcp_hostile;
mod tls;
