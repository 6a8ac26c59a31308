//! One way for every obliv crate to declare, detect and enter a SIMD backend.
//!
//! A backend is compiled with some CPU features enabled (`#[target_feature(enable = ...)]`) and
//! may only run on a CPU that has all of them: calling it after checking fewer is undefined
//! behaviour (LLVM is free to emit any enabled instruction anywhere in such a function). To
//! make that mistake impossible to write, [`feature_set!`] takes the list of features once and
//! generates from it both the run-time detector and the macro that compiles functions with
//! exactly those features:
//!
//! ```
//! obliv_cpu::feature_set! {
//!     /// The AVX2 kernels.
//!     pub(crate) mod avx2 = ["avx2"];
//! }
//!
//! #[cfg(obliv_x86_simd)]
//! mod kernels {
//!     crate::avx2::enable! {
//!         /// Sums with AVX2 enabled (LLVM vectorises the loop with ymm registers).
//!         pub(crate) fn sum(xs: &[u32]) -> u32 {
//!             xs.iter().fold(0u32, |a, &x| a.wrapping_add(x))
//!         }
//!     }
//! }
//!
//! pub fn sum(xs: &[u32]) -> u32 {
//!     #[cfg(obliv_x86_simd)]
//!     if avx2::detected() {
//!         // SAFETY: `detected()` confirmed every feature `kernels::sum` is compiled with.
//!         return unsafe { kernels::sum(xs) };
//!     }
//!     xs.iter().fold(0u32, |a, &x| a.wrapping_add(x))
//! }
//!
//! fn main() {
//!     assert_eq!(sum(&[1, 2, 3]), 6);
//! }
//! ```
//!
//! # Compiling the SIMD paths out
//!
//! The x86 SIMD code of every obliv crate sits behind `cfg(obliv_x86_simd)`, which each such
//! crate's build script sets on `x86_64` unless the build runs with
//! `RUSTFLAGS="--cfg obliv_portable"`. With that flag an x86-64 build compiles exactly the
//! portable code that an aarch64 build runs, so it can be tested on any machine
//! ([`build_script`] is that build script's body).
//!
//! # Switching backends off at run time
//!
//! [`disable`] (or the environment variable `OBLIV_CPU_DISABLE`, a comma-separated list of
//! feature names read once, in the manner of OpenSSL's `OPENSSL_ia32cap`) makes every feature
//! set that contains one of the named features report itself absent, so the whole process runs
//! the next backend down. Benchmarks use it to measure the paths a CPU without, say, AVX-512
//! IFMA runs (`OBLIV_CPU_DISABLE=avx512ifma`), and tests use it to run every protocol through
//! the fallbacks. It can only take features away, never claim one the CPU lacks.
#![forbid(unsafe_code)]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The x86 feature names a [`feature_set!`] may use, each with its bit in a feature mask.
const KNOWN: [&str; 28] = [
    "sse2",
    "ssse3",
    "sse4.1",
    "sse4.2",
    "pclmulqdq",
    "aes",
    "avx",
    "avx2",
    "fma",
    "bmi1",
    "bmi2",
    "adx",
    "popcnt",
    "lzcnt",
    "movbe",
    "sha",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512cd",
    "avx512ifma",
    "avx512vbmi",
    "avx512vbmi2",
    "vaes",
    "vpclmulqdq",
    "gfni",
    "avx512vpopcntdq",
];

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn bit(name: &str) -> Option<u64> {
    let mut i = 0;
    while i < KNOWN.len() {
        if same(KNOWN[i], name) {
            return Some(1 << i);
        }
        i += 1;
    }
    None
}

/// The mask of a list of feature names; evaluated at compile time by [`feature_set!`], where an
/// unknown name is a compile error.
#[doc(hidden)]
pub const fn mask(features: &[&str]) -> u64 {
    let mut m = 0;
    let mut i = 0;
    while i < features.len() {
        match bit(features[i]) {
            Some(b) => m |= b,
            None => panic!("obliv_cpu::feature_set!: unknown feature name"),
        }
        i += 1;
    }
    m
}

/// Features switched off by [`disable`].
static DISABLED: AtomicU64 = AtomicU64::new(0);
/// Features switched off by `OBLIV_CPU_DISABLE`, read once.
static FROM_ENV: OnceLock<u64> = OnceLock::new();

/// The name in `OBLIV_CPU_DISABLE` or a [`disable`] call that is not an x86 feature this crate
/// knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFeature(pub String);

impl std::fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown CPU feature name {:?} (known: {})",
            self.0,
            KNOWN.join(", ")
        )
    }
}

impl std::error::Error for UnknownFeature {}

fn parse(list: &str) -> Result<u64, UnknownFeature> {
    let mut m = 0;
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        m |= bit(name).ok_or_else(|| UnknownFeature(name.to_owned()))?;
    }
    Ok(m)
}

fn env_mask() -> u64 {
    // An unreadable or malformed variable switches nothing off; `disabled_features` reports
    // what took effect, and the CLI validates the variable itself to give an error.
    *FROM_ENV.get_or_init(|| {
        std::env::var("OBLIV_CPU_DISABLE")
            .ok()
            .and_then(|v| parse(&v).ok())
            .unwrap_or(0)
    })
}

/// Switches off, for the rest of the process, every feature set that uses one of `features`
/// (names as in `#[target_feature]`, e.g. `"avx512ifma"`). Backends that have already chosen
/// stay as they are only where a caller cached the choice; every obliv crate asks on each
/// batch call.
pub fn disable(features: &[&str]) -> Result<(), UnknownFeature> {
    let mut m = 0;
    for f in features {
        m |= bit(f).ok_or_else(|| UnknownFeature((*f).to_owned()))?;
    }
    DISABLED.fetch_or(m, Ordering::Relaxed);
    Ok(())
}

/// Checks a value for `OBLIV_CPU_DISABLE` (what a command-line tool should do before it runs,
/// since the library ignores a malformed value).
pub fn check_disable_list(list: &str) -> Result<(), UnknownFeature> {
    parse(list).map(|_| ())
}

/// The feature names switched off by [`disable`] and `OBLIV_CPU_DISABLE`.
pub fn disabled_features() -> Vec<&'static str> {
    let m = DISABLED.load(Ordering::Relaxed) | env_mask();
    KNOWN
        .iter()
        .enumerate()
        .filter(|(i, _)| m >> i & 1 == 1)
        .map(|(_, n)| *n)
        .collect()
}

/// Whether a feature set with this mask is allowed to run (none of its features switched off).
#[doc(hidden)]
#[inline]
pub fn allowed(mask: u64) -> bool {
    (DISABLED.load(Ordering::Relaxed) | env_mask()) & mask == 0
}

/// The body of the build script of a crate with x86 SIMD code: declares the `obliv_portable`
/// and `obliv_x86_simd` cfgs and sets `obliv_x86_simd` when compiling for `x86_64` without
/// `--cfg obliv_portable`. Such a crate's `build.rs` is `fn main() { obliv_cpu::build_script(); }`
/// and it lists `obliv-cpu` under both `[dependencies]` and `[build-dependencies]`.
pub fn build_script() {
    build_cfg::emit();
}

mod build_cfg {
    include!("build_cfg.rs");
}

/// Declares a set of x86 CPU features once, as a module holding:
///
/// - `FEATURES`: the names;
/// - `detected()`: whether x86 SIMD is compiled in (`cfg(obliv_x86_simd)`), the running CPU
///   has every feature of the set, and none of them is switched off by [`disable`] or
///   `OBLIV_CPU_DISABLE`;
/// - `enable! { items }` (only under `cfg(obliv_x86_simd)`): compiles each function it wraps
///   with exactly those features enabled.
///
/// A function made with `enable!` may be called only after `detected()` returned `true`. The
/// calling crate needs `obliv_cpu::build_script()` in its build script for the cfg. See the
/// [crate documentation](crate) for an example.
#[macro_export]
macro_rules! feature_set {
    ($(#[$meta:meta])* $vis:vis mod $name:ident = [$($feat:tt),+ $(,)?];) => {
        $crate::feature_set!(@expand ($) [$(#[$meta])*] $vis $name [$($feat),+]);
    };
    (@expand ($d:tt) [$($meta:tt)*] $vis:vis $name:ident [$($feat:tt),+]) => {
        $($meta)*
        #[allow(dead_code)]
        $vis mod $name {
            /// The `target_feature` names of this set.
            pub const FEATURES: &[&str] = &[$($feat),+];

            const MASK: u64 = $crate::mask(FEATURES);

            /// Whether the functions of this set may run here: x86 SIMD compiled in, every
            /// feature present on this CPU, none switched off.
            #[inline]
            pub fn detected() -> bool {
                #[cfg(obliv_x86_simd)]
                {
                    $crate::allowed(MASK) $(&& ::std::arch::is_x86_feature_detected!($feat))+
                }
                #[cfg(not(obliv_x86_simd))]
                {
                    let _ = MASK;
                    false
                }
            }

            /// Compiles the functions it wraps with every feature of this set enabled; call
            /// them only after `detected()`.
            #[cfg(obliv_x86_simd)]
            #[allow(unused_macros)]
            macro_rules! enable {
                ($d($d item:item)*) => {
                    $d( $( #[target_feature(enable = $feat)] )+ $d item )*
                };
            }
            #[cfg(obliv_x86_simd)]
            #[allow(unused_imports)]
            pub(crate) use enable;
        }
    };
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_known_features() {
        assert_eq!(mask(&["sse2"]), 1);
        assert_eq!(mask(&["sse2", "avx2"]), 1 | 1 << 7);
        assert_eq!(
            parse("avx512ifma, vaes").ok(),
            Some(mask(&["avx512ifma", "vaes"]))
        );
        assert_eq!(parse(""), Ok(0));
        assert!(parse("avx512ifma,avx1024").is_err());
        assert!(check_disable_list("sse9").is_err());
        // every name is distinct
        for (i, a) in KNOWN.iter().enumerate() {
            for b in &KNOWN[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn disable_takes_features_away() {
        let m = mask(&["gfni"]);
        assert!(allowed(m) || disabled_features().contains(&"gfni"));
        disable(&["gfni"]).expect("gfni is known");
        assert!(!allowed(m));
        assert!(!allowed(m | mask(&["sse2"])));
        assert!(disabled_features().contains(&"gfni"));
        assert!(disable(&["nope"]).is_err());
    }
}
