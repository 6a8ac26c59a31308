//! A PIR client's response decoders (server info, DPF, batch and IT-PIR answers) against two
//! scripted servers. See `obliv_fuzz::pir::fuzz_client`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::pir::fuzz_client(data));
