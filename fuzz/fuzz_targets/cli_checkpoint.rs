//! The CLI's checkpoint directory (`manifest`, `run` and bucket files) opened by
//! `Checkpoint::open` and read back; a bucket that reads saves and reads back the same. See
//! `obliv_fuzz::files::fuzz_checkpoint`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::files::fuzz_checkpoint(data));
