// Shared by `obliv_cpu::build_script` and this crate's own build script (`include!`d by both).

/// Declares the `obliv_portable` and `obliv_x86_simd` cfgs, and sets `obliv_x86_simd` when the
/// target is `x86_64` and the build does not pass `--cfg obliv_portable`.
pub(crate) fn emit() {
    println!("cargo::rustc-check-cfg=cfg(obliv_portable)");
    println!("cargo::rustc-check-cfg=cfg(obliv_x86_simd)");
    println!("cargo::rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let portable = std::env::var_os("CARGO_CFG_OBLIV_PORTABLE").is_some();
    if arch == "x86_64" && !portable {
        println!("cargo::rustc-cfg=obliv_x86_simd");
    }
}
