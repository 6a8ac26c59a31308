//! The end-to-end tests of the `obliv` binary, one module per test file, built as one test
//! binary (`cargo test -p obliv-cli --test it workers::` runs one module).

mod common;

mod cli;
mod hostile;
mod keys;
mod local_inputs;
mod option_bounds;
mod tls;
mod workers;
