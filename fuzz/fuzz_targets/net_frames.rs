//! obliv-net's TCP frame readers (read-ahead and direct) on raw socket bytes, and the `Mux`
//! demultiplexer on a scripted peer's frames. See `obliv_fuzz::net`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::net::fuzz(data));
