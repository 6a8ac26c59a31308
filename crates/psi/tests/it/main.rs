//! The integration tests of obliv-psi, one module per test file, built as one binary
//! (`cargo test -p obliv-psi --test it rr22_variants::` runs one module). The `#[ignore]`d
//! measurements are run one at a time by their module's name, e.g.
//! `cargo test -p obliv-psi --test it rr22_session_cost:: -- --ignored --nocapture`.

// The shared helpers stay in `tests/common/`: `benches/rr22_buckets.rs` includes
// `common/buckets.rs` by path.
#[path = "../common/mod.rs"]
mod common;

mod driver;
mod ecdh;
mod ecdh3;
mod fail_closed;
mod hashed_items;
mod kkrt;
mod rr22;
mod rr22_concurrent;
mod rr22_concurrent_cost;
mod rr22_session;
mod rr22_session_cost;
mod rr22_variants;
mod stat_security;
mod unbalanced;
