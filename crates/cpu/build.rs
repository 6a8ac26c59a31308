//! Sets `cfg(obliv_x86_simd)` for this crate's own doctests and tests, as
//! `obliv_cpu::build_script` does for the crates that use it.

mod build_cfg {
    include!("src/build_cfg.rs");
}

fn main() {
    build_cfg::emit();
}
