//! obliv-fourq checked and timed against Microsoft's FourQlib (through the `fourq` crate).
//!
//! The library is empty: everything lives in the test, bench and example targets, which need
//! the `fourqlib` feature (and with it Debian's `cmake` and `libclang-dev` to build FourQlib):
//!
//! - `cargo test -p obliv-fourqlib-diff --features fourqlib`: the differential tests (same
//!   encodings for hashing to the curve, scalar multiplication, decoding and the batch paths);
//! - `cargo bench -p obliv-fourqlib-diff --features fourqlib --bench fourq`: the comparison
//!   bench (obliv-fourq, FourQlib and curve25519-dalek);
//! - `cargo run -p obliv-fourqlib-diff --features fourqlib --release --example fourq_figures`
//!   and `--example fourq_varbase`: per-operation figures, best of many short runs.
