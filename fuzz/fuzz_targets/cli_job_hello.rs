//! The CLI's job hello (`obliv psi`: settings, row counts, checkpoint run), the finished-
//! bucket map and run id, and the protocol after them: one party (`obliv_cli::party::run`) on
//! loopback TCP against a peer that sends the input's frames. See `obliv_fuzz::cli`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::cli::fuzz(data));
