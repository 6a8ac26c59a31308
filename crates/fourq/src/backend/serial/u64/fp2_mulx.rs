//! GF(p²) multiplication and squaring in `mulx` assembly, p = 2^127 − 1, one inline-assembly
//! block per operation, for x86-64 CPUs with BMI2: the [`Fp2Mul`] implementation [`Mulx`], a
//! token that only [`Mulx::detect`] hands out. The variable-base multiplication's main loop
//! runs faster on it than on LLVM's code for the portable `u128` Karatsuba product (measured in
//! `docs/benchmarks.md`).
//!
//! Both are schoolbook products with one reduction per coordinate (the shape of FourQlib's
//! `fp2mul1271_a`), arranged so that no intermediate is negative:
//!
//! ```text
//! a·b:  c0 = a0·b0 + a1·(p − b1),   c1 = a0·b1 + a1·b0
//! a²:   c0 = (a0 + a1)·fold(a0 + (p − a1)),   c1 = (2·a0)·a1
//! ```
//!
//! `p − x` for `x ∈ [0, p]` is `x XOR (2^127 − 1)` (no borrow), and `fold(y) = (y mod 2^127) +
//! ⌊y / 2^127⌋ ≤ 2^127` for `y < 2^128`. Each sum of products `S` above is at most
//! `max(2p², (2^128 − 2)·2^127) = 2^255 − 2^128`, and the reduction below maps any
//! `S ≤ 2^255 − 2` into `[0, p]`.
//!
//! # Reduction
//!
//! Write `S = L + 2^127·H` with `L < 2^127` and `H = H' + 2^127·e`, `H' < 2^127`, `e ∈ {0,1}`
//! (`S < 2^255`). As `2^127 ≡ 1` and `2^254 ≡ 1 (mod p)`, `S ≡ x = L + H' + e < 2^128`, and
//! `x = 2^128 − 1` only for `S = 2^255 − 1`. Then `x ≡ (x mod 2^127) + ⌊x / 2^127⌋`, which is
//! at most `2^127 − 1 = p` when `x ≤ 2^128 − 2`. In instructions: two `shld` form `H`, `btr`
//! clears bit 127 of `L` and moves `e` into the carry flag, `adc` adds, and a second `btr` /
//! `adc` folds `x`.
//!
//! The instructions run in data-independent time (`mulx`, `add`/`adc`, `shld`, `btr`, `not`,
//! `mov`); there is no branch, and the only memory read is of the operands, at fixed offsets.
#![allow(unsafe_code)]

use crate::backend::serial::u64::fp::Fp;
use crate::field::{Fp2, Fp2Mul};

obliv_cpu::feature_set! {
    /// The one feature the assembly needs (`mulx`).
    pub(crate) mod bmi2_set = ["bmi2"];
}

/// The `mulx` GF(p²) products. Holding one proves that this CPU has BMI2: the only
/// constructor is [`Mulx::detect`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mulx(());

impl Mulx {
    /// A token when this CPU has BMI2 (and it is not switched off), else `None`.
    #[inline]
    pub(crate) fn detect() -> Option<Mulx> {
        bmi2_set::detected().then_some(Mulx(()))
    }
}

impl Fp2Mul for Mulx {
    #[inline(always)]
    fn mul(self, a: &Fp2, b: &Fp2) -> Fp2 {
        // SAFETY: a `Mulx` exists only where BMI2 was detected.
        unsafe { mul(a, b) }
    }

    #[inline(always)]
    fn square(self, a: &Fp2) -> Fp2 {
        // SAFETY: as in `mul`.
        unsafe { square(a) }
    }
}

/// The four limbs `a0.lo, a0.hi, a1.lo, a1.hi` of `a` in place (`Fp2` is `repr(C)` over two
/// `repr(transparent)` `[u64; 2]`).
#[inline(always)]
fn limbs(a: &Fp2) -> *const u64 {
    core::ptr::from_ref(a).cast()
}

/// The reduction of the module docs as assembly text: `S = (lo, hi, z2, z3)` (little-endian
/// limbs, `S ≤ 2^255 − 2`) in, `S mod p` in `[0, p]` in `(lo, hi)` out; `z2`, `z3` clobbered.
macro_rules! reduce {
    () => {
        concat!(
            "shld {z3}, {z2}, 1\n",
            "shld {z2}, {hi}, 1\n",
            "btr {hi}, 63\n",
            "btr {z3}, 63\n",
            "adc {lo}, {z2}\n",
            "adc {hi}, {z3}\n",
            "btr {hi}, 63\n",
            "adc {lo}, 0\n",
            "adc {hi}, 0\n",
        )
    };
}

/// Assembly text of a 128 × 128-bit product `(r0, r1, r2, r3) = x·y`: `$x0`, `$x1` are the
/// limbs of `x` as `mulx` operands (registers or memory), `$load_y0`, `$load_y1` the code that
/// puts each limb of `y` into `rdx`; `{t0}`, `{t1}` are clobbered.
#[rustfmt::skip] // one instruction per line
macro_rules! product {
    ([$r0:literal, $r1:literal, $r2:literal, $r3:literal], [$x0:expr, $x1:expr], [$load_y0:expr, $load_y1:expr]) => {
        concat!(
            $load_y0, "\n",
            "mulx ", $r1, ", ", $r0, ", ", $x0, "\n",
            "mulx ", $r2, ", {t0}, ", $x1, "\n",
            "add ", $r1, ", {t0}\n",
            "adc ", $r2, ", 0\n",
            $load_y1, "\n",
            "mulx ", $r3, ", {t0}, ", $x1, "\n",
            "add ", $r2, ", {t0}\n",
            "adc ", $r3, ", 0\n",
            "mulx {t1}, {t0}, ", $x0, "\n",
            "add ", $r1, ", {t0}\n",
            "adc ", $r2, ", {t1}\n",
            "adc ", $r3, ", 0\n",
        )
    };
}

/// `x·y + u·v mod p` for `GF(p)` operands in memory at the given offsets of `a` and `b`, as
/// one assembly block: [`product!`]s `x·y` into `(lo, hi, z2, z3)` and `u·v` into
/// `(w0, w1, w2, w3)`, their sum (below `2p²`, so no carry leaves `z3`), then [`reduce!`].
/// `$not_lo`, `$not_hi` are empty, or `"not rdx"`, `"not rdx\nbtr rdx, 63"` to use `p − v`
/// instead of `v` (`¬v.lo`, `¬v.hi` with bit 63 cleared, as `v ≤ p`).
macro_rules! sum_of_products {
    ($a:expr, $b:expr, [$x:literal, $y:literal], [$u:literal, $v:literal], [$not_lo:literal, $not_hi:literal]) => {{
        let (lo, hi): (u64, u64);
        // SAFETY: reads 32 bytes at each of `a` and `b` (two `Fp2`); the caller guarantees
        // BMI2.
        unsafe {
            core::arch::asm!(
                product!(
                    ["{lo}", "{hi}", "{z2}", "{z3}"],
                    [concat!("[{a} + ", $x, "]"), concat!("[{a} + ", $x, " + 8]")],
                    [concat!("mov rdx, [{b} + ", $y, "]"), concat!("mov rdx, [{b} + ", $y, " + 8]")]
                ),
                product!(
                    ["{w0}", "{w1}", "{w2}", "{w3}"],
                    [concat!("[{a} + ", $u, "]"), concat!("[{a} + ", $u, " + 8]")],
                    [
                        concat!("mov rdx, [{b} + ", $v, "]\n", $not_lo),
                        concat!("mov rdx, [{b} + ", $v, " + 8]\n", $not_hi)
                    ]
                ),
                "add {lo}, {w0}",
                "adc {hi}, {w1}",
                "adc {z2}, {w2}",
                "adc {z3}, {w3}",
                reduce!(),
                a = in(reg) $a,
                b = in(reg) $b,
                lo = out(reg) lo,
                hi = out(reg) hi,
                z2 = out(reg) _,
                z3 = out(reg) _,
                w0 = out(reg) _,
                w1 = out(reg) _,
                w2 = out(reg) _,
                w3 = out(reg) _,
                t0 = out(reg) _,
                t1 = out(reg) _,
                out("rdx") _,
                options(pure, readonly, nostack),
            );
        }
        Fp([lo, hi])
    }};
}

/// `a·b` in GF(p²) for inputs with coordinates in `[0, p]`; the result's are in `[0, p]`.
///
/// # Safety
/// The CPU must support BMI2 (`mulx`).
#[inline(always)]
unsafe fn mul(a: &Fp2, b: &Fp2) -> Fp2 {
    let (a, b) = (limbs(a), limbs(b));
    Fp2 {
        // a0·b0 + a1·(p − b1)
        a0: sum_of_products!(
            a,
            b,
            ["0", "0"],
            ["16", "16"],
            ["not rdx", "not rdx\nbtr rdx, 63"]
        ),
        // a0·b1 + a1·b0
        a1: sum_of_products!(a, b, ["0", "16"], ["16", "0"], ["", ""]),
    }
}

/// `a²` in GF(p²) for an input with coordinates in `[0, p]`; the result's are in `[0, p]`.
///
/// # Safety
/// The CPU must support BMI2 (`mulx`).
#[inline(always)]
unsafe fn square(a: &Fp2) -> Fp2 {
    let a = limbs(a);
    let (c0l, c0h, c1l, c1h): (u64, u64, u64, u64);
    // SAFETY: reads the 32 bytes of `a` only; the caller guarantees BMI2.
    unsafe {
        core::arch::asm!(
            // u = a0 + a1 (at most 2p: no fold); v = fold(a0 + (p − a1)) (at most 2^127).
            "mov {u0}, [{a}]",
            "mov {u1}, [{a} + 8]",
            "mov {t0}, [{a} + 16]",
            "mov {t1}, [{a} + 24]",
            "mov {v0}, {u0}",
            "mov {v1}, {u1}",
            "add {u0}, {t0}",
            "adc {u1}, {t1}",
            "not {t0}",
            "not {t1}",
            "btr {t1}, 63",
            "add {v0}, {t0}",
            "adc {v1}, {t1}",
            "btr {v1}, 63",
            "adc {v0}, 0",
            "adc {v1}, 0",
            // c0 = u·v into (lo, hi, z2, z3), reduced.
            product!(
                ["{lo}", "{hi}", "{z2}", "{z3}"],
                ["{u0}", "{u1}"],
                ["mov rdx, {v0}", "mov rdx, {v1}"]
            ),
            reduce!(),
            a = in(reg) a,
            u0 = out(reg) _,
            u1 = out(reg) _,
            v0 = out(reg) _,
            v1 = out(reg) _,
            lo = out(reg) c0l,
            hi = out(reg) c0h,
            z2 = out(reg) _,
            z3 = out(reg) _,
            t0 = out(reg) _,
            t1 = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
        core::arch::asm!(
            // c1 = (2·a0)·a1 into (lo, hi, z2, z3), reduced; 2·a0 < 2^128.
            "mov {u0}, [{a}]",
            "mov {u1}, [{a} + 8]",
            "add {u0}, {u0}",
            "adc {u1}, {u1}",
            product!(
                ["{lo}", "{hi}", "{z2}", "{z3}"],
                ["{u0}", "{u1}"],
                ["mov rdx, [{a} + 16]", "mov rdx, [{a} + 24]"]
            ),
            reduce!(),
            a = in(reg) a,
            u0 = out(reg) _,
            u1 = out(reg) _,
            lo = out(reg) c1l,
            hi = out(reg) c1h,
            z2 = out(reg) _,
            z3 = out(reg) _,
            t0 = out(reg) _,
            t1 = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
    }
    Fp2 {
        a0: Fp([c0l, c0h]),
        a1: Fp([c1l, c1h]),
    }
}

/// [`reduce!`] alone, for its tests: `S mod p` in `[0, p]` for `S ≤ 2^255 − 2`.
#[cfg(test)]
fn reduce(s: [u64; 4]) -> Fp {
    let [mut lo, mut hi, z2, z3] = s;
    // SAFETY: register arithmetic only (no BMI2 instruction).
    unsafe {
        core::arch::asm!(
            reduce!(),
            lo = inout(reg) lo,
            hi = inout(reg) hi,
            z2 = inout(reg) z2 => _,
            z3 = inout(reg) z3 => _,
            options(pure, nomem, nostack),
        );
    }
    Fp([lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Portable;
    use proptest::prelude::*;

    const P: u128 = (1 << 127) - 1;

    fn fp2(a0: u128, a1: u128) -> Fp2 {
        Fp2 {
            a0: Fp::from_u128_reduced(a0),
            a1: Fp::from_u128_reduced(a1),
        }
    }

    /// Equal to the portable result as field elements, and weakly reduced (at most `p`).
    fn check(got: Fp2, want: Fp2) -> Result<(), TestCaseError> {
        prop_assert!(got.a0.to_u128() <= P && got.a1.to_u128() <= P);
        prop_assert_eq!(got.to_bytes(), want.to_bytes());
        Ok(())
    }

    /// Coordinates at the ends of the weakly reduced range and at the reductions' boundaries.
    const EDGES: [u128; 9] = [
        0,
        1,
        2,
        P - 1,
        P,
        1 << 126,
        (1 << 126) - 1,
        1 << 64,
        u64::MAX as u128,
    ];

    #[test]
    fn edge_values_match_portable() {
        let Some(m) = Mulx::detect() else {
            eprintln!("skipped: no BMI2 on this CPU");
            return;
        };
        let all: Vec<Fp2> = EDGES
            .iter()
            .flat_map(|&x| EDGES.iter().map(move |&y| fp2(x, y)))
            .collect();
        for a in &all {
            check(m.square(a), Portable.square(a)).unwrap();
            for b in &all {
                check(m.mul(a, b), Portable.mul(a, b)).unwrap();
            }
        }
    }

    /// `S mod p` for `S = Σ s_i·2^(64i)`, from the portable arithmetic (`2^128 ≡ 2`).
    fn reduce_portable(s: [u64; 4]) -> Fp {
        let a = u128::from(s[0]) | u128::from(s[1]) << 64;
        let b = u128::from(s[2]) | u128::from(s[3]) << 64;
        Fp::from_u128(a).add(&Fp::from_u128(b).double())
    }

    /// `S = L + 2^127·(H' + 2^127·e)` as limbs.
    #[allow(clippy::cast_possible_truncation)] // splitting into limbs
    fn compose(l: u128, h: u128, e: u128) -> [u64; 4] {
        let high = h | e << 127; // bits 127..254 of S
        let lo = l | high << 127;
        let hi = high >> 1;
        [lo as u64, (lo >> 64) as u64, hi as u64, (hi >> 64) as u64]
    }

    fn check_reduce(s: [u64; 4]) -> Result<(), TestCaseError> {
        let got = reduce(s);
        prop_assert!(got.to_u128() <= P, "{s:x?} reduced to {:#x}", got.to_u128());
        prop_assert_eq!(
            got.to_bytes(),
            reduce_portable(s).to_bytes(),
            "S = {:x?}",
            s
        );
        Ok(())
    }

    /// The reduction on every split `S = L + 2^127·(H' + 2^127·e)` of the sums `x = L + H' + e`
    /// at its boundaries: `x` at `p`, `2^127`, `2^128 − 2`, and with an all-ones low limb and
    /// bit 127 set (where the last carry runs into the high limb).
    #[test]
    fn reduction_at_its_boundaries() {
        let targets = [
            0,
            1,
            P - 1,
            P,
            P + 1,
            P + 2,
            (1 << 127) + u128::from(u64::MAX),
            (1 << 127) + (3 << 64) - 1,
            u128::MAX - 2,
            u128::MAX - 1,
        ];
        for x in targets {
            for e in 0..=1u128 {
                let Some(rest) = x.checked_sub(e) else {
                    continue;
                };
                // The largest and the smallest L, and one in between.
                for l in [rest.min(P), rest.saturating_sub(P - 1).min(P), rest / 2] {
                    let Some(h) = rest.checked_sub(l) else {
                        continue;
                    };
                    if l > P || h > P {
                        continue;
                    }
                    check_reduce(compose(l, h, e)).unwrap();
                }
            }
        }
        // The largest S the products can reach, and the largest the reduction takes.
        check_reduce(compose(P - 1, P - 1, 1)).unwrap();
        check_reduce([u64::MAX - 1, u64::MAX, u64::MAX, u64::MAX >> 1]).unwrap();
    }

    proptest! {
        #[test]
        fn reduction_of_random_sums(l in 0..=P, h in 0..=P, e in 0..=1u128) {
            // Every S below 2^255 − 1 (the one excluded value has L = H' = p, e = 1).
            prop_assume!(!(l == P && h == P && e == 1));
            check_reduce(compose(l, h, e))?;
        }

        #[test]
        fn random_values_match_portable(
            a0 in 0..=P, a1 in 0..=P, b0 in 0..=P, b1 in 0..=P,
        ) {
            let Some(m) = Mulx::detect() else {
                return Ok(());
            };
            let (a, b) = (fp2(a0, a1), fp2(b0, b1));
            check(m.mul(&a, &b), Portable.mul(&a, &b))?;
            check(m.square(&a), Portable.square(&a))?;
            // Operands aliased, as the formulas pass them.
            check(m.mul(&a, &a), Portable.square(&a))?;
        }
    }
}
