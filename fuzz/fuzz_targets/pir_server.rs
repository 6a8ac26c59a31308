//! A PIR server's request decoder (`ServerState::handle`: info, DPF, batch and IT-PIR
//! requests) on a fixed database; the answer is a status byte and a body, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::pir::fuzz_server(data));
