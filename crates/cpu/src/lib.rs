//! One way for every obliv crate to declare, detect and enter a SIMD backend; and the
//! constant-time checks' markings ([`ctgrind`]).
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
//! set that contains or implies one of the named features report itself absent (switching
//! `avx2` off switches off the AVX-512 sets too, whose code may use AVX2 instructions), so the
//! whole process runs the next backend down. Benchmarks use it to measure the paths a CPU without, say, AVX-512
//! IFMA runs (`OBLIV_CPU_DISABLE=avx512ifma`), and tests use it to run every protocol through
//! the fallbacks. It can only take features away, never claim one the CPU lacks.
// No unsafe code but the Valgrind client request of `ctgrind` (inline assembly that only the
// checked build compiles in).
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod ctgrind;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The x86 feature names a [`feature_set!`] may use, each with its bit in a feature mask.
const KNOWN: [&str; 30] = [
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
    "sse3",
    "f16c",
];

/// What enabling each feature with `#[target_feature]` enables with it (rustc's implied
/// features, one step; `sse2` is the x86-64 baseline). A function compiled with `avx512f`
/// may contain AVX2, FMA or F16C instructions too, so [`feature_set!`]'s detector checks the
/// transitive closure ([`implied`]), not just the names listed: on a real CPU they come
/// together, but a virtual machine may mask one and not the other.
const IMPLIES: [(&str, &[&str]); 18] = [
    ("ssse3", &["sse3"]),
    ("sse4.1", &["ssse3"]),
    ("sse4.2", &["sse4.1"]),
    ("avx", &["sse4.2"]),
    ("avx2", &["avx"]),
    ("fma", &["avx"]),
    ("f16c", &["avx"]),
    ("avx512f", &["avx2", "fma", "f16c"]),
    ("avx512dq", &["avx512f"]),
    ("avx512bw", &["avx512f"]),
    ("avx512vl", &["avx512f"]),
    ("avx512cd", &["avx512f"]),
    ("avx512ifma", &["avx512f"]),
    ("avx512vbmi", &["avx512bw"]),
    ("avx512vbmi2", &["avx512bw"]),
    ("avx512vpopcntdq", &["avx512f"]),
    ("vaes", &["avx2", "aes"]),
    ("vpclmulqdq", &["avx", "pclmulqdq"]),
];

/// `mask` with every feature its features imply ([`IMPLIES`]), transitively; evaluated at
/// compile time by [`feature_set!`].
#[doc(hidden)]
pub const fn implied(mask: u64) -> u64 {
    let mut m = mask;
    loop {
        let before = m;
        let mut i = 0;
        while i < IMPLIES.len() {
            let (name, implies) = IMPLIES[i];
            if let Some(b) = bit(name)
                && m & b != 0
            {
                m |= self::mask(implies);
            }
            i += 1;
        }
        if m == before {
            return m;
        }
    }
}

/// Whether the running CPU has every feature of `mask` (checked one by one with
/// `is_x86_feature_detected!`; `false` off x86-64).
#[doc(hidden)]
pub fn present(mask: u64) -> bool {
    (0..KNOWN.len())
        .filter(|i| mask >> i & 1 == 1)
        .all(has_feature)
}

/// Whether the CPU has `KNOWN[i]`.
#[cfg(target_arch = "x86_64")]
fn has_feature(i: usize) -> bool {
    use std::arch::is_x86_feature_detected as has;
    match KNOWN[i] {
        "sse2" => has!("sse2"),
        "ssse3" => has!("ssse3"),
        "sse4.1" => has!("sse4.1"),
        "sse4.2" => has!("sse4.2"),
        "pclmulqdq" => has!("pclmulqdq"),
        "aes" => has!("aes"),
        "avx" => has!("avx"),
        "avx2" => has!("avx2"),
        "fma" => has!("fma"),
        "bmi1" => has!("bmi1"),
        "bmi2" => has!("bmi2"),
        "adx" => has!("adx"),
        "popcnt" => has!("popcnt"),
        "lzcnt" => has!("lzcnt"),
        "movbe" => has!("movbe"),
        "sha" => has!("sha"),
        "avx512f" => has!("avx512f"),
        "avx512dq" => has!("avx512dq"),
        "avx512bw" => has!("avx512bw"),
        "avx512vl" => has!("avx512vl"),
        "avx512cd" => has!("avx512cd"),
        "avx512ifma" => has!("avx512ifma"),
        "avx512vbmi" => has!("avx512vbmi"),
        "avx512vbmi2" => has!("avx512vbmi2"),
        "vaes" => has!("vaes"),
        "vpclmulqdq" => has!("vpclmulqdq"),
        "gfni" => has!("gfni"),
        "avx512vpopcntdq" => has!("avx512vpopcntdq"),
        "sse3" => has!("sse3"),
        "f16c" => has!("f16c"),
        _ => false,
    }
}

/// Off x86-64 no x86 feature is present.
#[cfg(not(target_arch = "x86_64"))]
fn has_feature(_: usize) -> bool {
    false
}

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
///   has every feature of the set, and none of them, nor any feature they imply, is switched
///   off by [`disable`] or `OBLIV_CPU_DISABLE`;
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
            /// The features a function compiled with `FEATURES` may use: those and what they
            /// imply (`avx512f` brings AVX2, FMA and F16C).
            const IMPLIED: u64 = $crate::implied(MASK);

            /// Whether the functions of this set may run here: x86 SIMD compiled in, every
            /// feature present on this CPU (with every feature they imply), none of those
            /// switched off.
            #[inline]
            pub fn detected() -> bool {
                #[cfg(obliv_x86_simd)]
                {
                    $crate::allowed(IMPLIED)
                        $(&& ::std::arch::is_x86_feature_detected!($feat))+
                        && $crate::present(IMPLIED)
                }
                #[cfg(not(obliv_x86_simd))]
                {
                    let _ = (MASK, IMPLIED);
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

    /// The implications match rustc's: for every known feature, the features
    /// `rustc --print cfg -C target-feature=+f` enables are exactly `implied` of it (skipped
    /// with a message where no `rustc` runs).
    #[test]
    fn implications_match_rustc() {
        for name in KNOWN {
            let out = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
                .args(["--print", "cfg", "--target", "x86_64-unknown-linux-gnu"])
                .args(["-C", "target-cpu=x86-64", "-C"])
                .arg(format!("target-feature=+{name}"))
                .output();
            let Some(out) = out.ok().filter(|o| o.status.success()) else {
                eprintln!("skipped: rustc --print cfg did not run");
                return;
            };
            let mut from_rustc = 0;
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some(f) = line
                    .strip_prefix("target_feature=\"")
                    .and_then(|f| f.strip_suffix('"'))
                    && let Some(b) = bit(f)
                {
                    from_rustc |= b;
                }
            }
            // The x86-64 baseline (sse2) is on without being asked for.
            let ours = implied(mask(&[name])) | mask(&["sse2"]);
            assert_eq!(
                ours,
                from_rustc,
                "{name}: ours {:?}, rustc's {:?}",
                names(ours),
                names(from_rustc)
            );
        }
    }

    fn names(m: u64) -> Vec<&'static str> {
        (0..KNOWN.len())
            .filter(|i| m >> i & 1 == 1)
            .map(|i| KNOWN[i])
            .collect()
    }

    #[test]
    fn implied_closes_transitively() {
        let all = implied(mask(&["avx512ifma"]));
        for f in [
            "avx512ifma",
            "avx512f",
            "avx2",
            "fma",
            "f16c",
            "avx",
            "sse4.2",
            "sse4.1",
            "ssse3",
            "sse3",
        ] {
            assert!(all & mask(&[f]) != 0, "{f}");
        }
        assert_eq!(all & mask(&["avx512bw", "aes", "bmi2"]), 0);
        assert_eq!(implied(mask(&["bmi2", "adx"])), mask(&["bmi2", "adx"]));
    }

    /// `present` agrees with `is_x86_feature_detected!` on this CPU, and a real CPU with a
    /// feature has everything it implies.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn present_follows_the_cpu() {
        assert!(present(mask(&["sse2"])));
        assert_eq!(
            present(mask(&["avx2"])),
            std::arch::is_x86_feature_detected!("avx2")
        );
        for name in KNOWN {
            let m = mask(&[name]);
            if present(m) {
                assert!(present(implied(m)), "{name} without what it implies");
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

    // A set is switched off with any feature it implies: `avx512f` code may use AVX2
    // instructions, so switching `avx2` off must switch an `avx512f` set off too.
    crate::feature_set! {
        #[allow(unreachable_pub)]
        mod avx512f_only = ["avx512f"];
    }
    crate::feature_set! {
        #[allow(unreachable_pub)]
        mod fma_only = ["fma"];
    }

    #[test]
    fn switching_off_an_implied_feature_switches_the_set_off() {
        let fma_was_allowed = allowed(mask(&["fma"]));
        disable(&["f16c"]).expect("f16c is known");
        assert!(!avx512f_only::detected(), "avx512f implies f16c");
        // fma implies avx, not f16c: unaffected (and never detected in a portable build).
        assert_eq!(
            fma_only::detected(),
            cfg!(obliv_x86_simd) && fma_was_allowed && present(implied(mask(&["fma"])))
        );
    }
}
