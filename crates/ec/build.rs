//! Sets `cfg(obliv_x86_simd)` on x86-64 unless the build passes `--cfg obliv_portable`
//! (see `obliv_cpu::build_script`).

fn main() {
    obliv_cpu::build_script();
}
