//! Unbalanced PSI's phases (offline and append client, online client and server) against a
//! scripted peer. See `obliv_fuzz::unbalanced`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::unbalanced::fuzz(data));
