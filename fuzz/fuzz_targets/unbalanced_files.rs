//! Unbalanced PSI's files: the server-set record (canonical round trip), the server key file
//! (save and reload) and the client's cache header. See
//! `obliv_fuzz::files::fuzz_unbalanced_files`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| obliv_fuzz::files::fuzz_unbalanced_files(data));
