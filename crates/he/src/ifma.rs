//! Constant-time modular exponentiation with AVX-512 IFMA (52-bit multiply-accumulate), for
//! the secret-exponent exponentiations of Paillier CRT decryption modulo `p²` and `q²` and of
//! MODP ElGamal decryption, and for the fixed-base tables of encryption (`IfmaFixedBase`).
//!
//! Numbers are held in radix `2^52`, `8·N` limbs (`N` zmm registers). Multiplication is
//! word-serial *almost Montgomery multiplication* (AMM) with `R = 2^(52·8N) > 4M`: inputs and
//! outputs stay below `2M`, so no conditional subtraction is needed until the very end
//! (Gueron–Krasnov, *Software implementation of modular exponentiation, using advanced vector
//! instructions architectures*, WAIFI 2012; Drucker–Gueron, *Fast modular squaring with
//! AVX512IFMA*, ITNG 2019; the layout of OpenSSL's `rsaz-avx512`). Per limb `aᵢ` of `a`:
//!
//! ```text
//! X += lo52(aᵢ·B);  y = (X₀·k₀) mod 2^52;  X += lo52(y·M);  X = X / 2^52 (a lane shift);
//! X += hi52(aᵢ·B) + hi52(y·M)
//! ```
//!
//! Lanes are not normalised inside the loop (each stays below `2^61`); carries are propagated
//! once at the end. Exponentiation is a fixed 5-bit window with the table read by a full
//! masked scan, so neither the branch pattern nor the memory accesses depend on the exponent
//! or the base; the final reduction below `M` is a masked subtraction.
//!
//! Used only when the CPU reports `avx512f` and `avx512ifma` at run time (exactly the features
//! the `target_feature` attributes below enable), and not at all when built with
//! `--cfg obliv_portable`; otherwise callers use the 64-bit Montgomery backend
//! (`bigint::monty`).
#![allow(unsafe_code)]
#![allow(clippy::cast_possible_truncation)] // limb arithmetic: truncation to 52/64 bits intended
#![allow(clippy::needless_range_loop)] // several arrays indexed in lock-step

use std::sync::atomic::{AtomicBool, Ordering};

use crate::bigint::Integer;
use crate::bigint::monty::Monty;

#[cfg(all(test, obliv_x86_simd))]
pub(crate) use imp::available;

obliv_cpu::feature_set! {
    /// The 52-bit-limb Montgomery kernels (every function of `imp` that uses vectors).
    pub(crate) mod ifma_set = ["avx512f", "avx512ifma"];
}

#[cfg(obliv_x86_simd)]
pub(crate) use imp::{IfmaFixedBase, IfmaModulus};

/// Set by [`disable`]: contexts and tables created afterwards do not use IFMA.
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Makes contexts and tables created afterwards skip the IFMA path (`true`) or use it when
/// the CPU has it (`false`, the default). For benchmarks and tests of the other paths.
pub(crate) fn disable(on: bool) {
    DISABLED.store(on, Ordering::Relaxed);
}

#[cfg(obliv_x86_simd)]
mod imp {
    use core::arch::x86_64::{
        __m512i, _mm_cvtsi128_si64, _mm512_add_epi64, _mm512_alignr_epi64, _mm512_and_si512,
        _mm512_castsi512_si128, _mm512_loadu_si512, _mm512_madd52hi_epu64, _mm512_madd52lo_epu64,
        _mm512_maskz_set1_epi64, _mm512_or_si512, _mm512_set1_epi64, _mm512_setzero_si512,
        _mm512_storeu_si512,
    };

    use super::{DISABLED, Ordering};
    use crate::bigint::Integer;
    use crate::bigint::monty::Monty;
    use subtle::ConstantTimeEq;
    use zeroize::Zeroize;

    const MASK52: u64 = (1 << 52) - 1;
    const WINDOW: u32 = 5;

    /// A number in radix `2^52`: `N` blocks of 8 limbs, 64-byte aligned for the vector loads.
    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Num<const N: usize>([[u64; 8]; N]);

    impl<const N: usize> Num<N> {
        const ZERO: Self = Self([[0; 8]; N]);

        fn limb(&self, i: usize) -> u64 {
            self.0[i / 8][i % 8]
        }

        fn limb_mut(&mut self, i: usize) -> &mut u64 {
            &mut self.0[i / 8][i % 8]
        }

        fn from_integer(x: &Integer) -> Self {
            let mut out = Self::ZERO;
            let words = x.as_limbs();
            // Repack 64-bit words into 52-bit limbs (x < 2^(52·8N) by the callers' checks).
            for i in 0..8 * N {
                let lo = i * 52;
                let (w, s) = (lo / 64, lo % 64);
                let mut v = words.get(w).map_or(0, |x| x >> s);
                if s > 12 {
                    v |= words.get(w + 1).map_or(0, |x| x << (64 - s));
                }
                *out.limb_mut(i) = v & MASK52;
            }
            out
        }

        fn value(&self) -> Integer {
            let mut words = vec![0u64; (8 * N * 52).div_ceil(64)];
            for i in 0..8 * N {
                let v = self.limb(i) & MASK52;
                let lo = i * 52;
                let (w, s) = (lo / 64, lo % 64);
                words[w] |= v << s;
                if s > 12 {
                    words[w + 1] |= v >> (64 - s);
                }
            }
            let x = Integer::from_limbs(&words);
            words.zeroize();
            x
        }

        fn zeroize(&mut self) {
            for b in self.0.iter_mut() {
                b.zeroize();
            }
        }
    }

    /// The precomputed constants for one odd modulus.
    #[derive(Clone)]
    pub(crate) struct IfmaModulus<const N: usize> {
        m: Num<N>,
        /// `R² mod M`.
        r2: Num<N>,
        /// `−M^{−1} mod 2^52`.
        k0: u64,
    }

    impl<const N: usize> Drop for IfmaModulus<N> {
        fn drop(&mut self) {
            self.m.zeroize();
            self.r2.zeroize();
            self.k0.zeroize();
        }
    }

    /// Whether the running CPU has the instructions this module needs (and IFMA has not been
    /// switched off by [`super::disable`]).
    pub(crate) fn available() -> bool {
        !DISABLED.load(Ordering::Relaxed) && super::ifma_set::detected()
    }

    impl<const N: usize> IfmaModulus<N> {
        /// The context for an odd `m` with `4m < 2^(52·8N)`; `None` otherwise or without IFMA.
        pub(crate) fn new(m: &Integer) -> Option<Self> {
            let r_bits = u32::try_from(52 * 8 * N).ok()?;
            if !available() || m.is_even() || *m <= 1u32 || m.significant_bits() + 2 > r_bits {
                return None;
            }
            // One-off setup in time set by the lengths (the modulus may be a secret p²).
            let mut r2 = Integer::from_limbs(&crate::bigint::ct_pow2_mod(2 * r_bits, m.as_limbs()));
            // −M^{−1} mod 2^52 by Newton's iteration modulo 2^64.
            let m0 = m.as_limbs()[0];
            let mut inv = 1u64;
            for _ in 0..6 {
                inv = inv.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(inv)));
            }
            let k0 = inv.wrapping_neg() & MASK52;
            let out = Self {
                m: Num::from_integer(m),
                r2: Num::from_integer(&r2),
                k0,
            };
            crate::bigint::wipe(&mut r2);
            Some(out)
        }

        /// `base^e mod M` in constant time (for a fixed bit length `e_bits` of the exponent:
        /// bits of `e` above it are ignored). `base` must be below `M`.
        pub(crate) fn pow(&self, base: &Integer, e: &Integer, e_bits: u32) -> Integer {
            // SAFETY: `new` returned `Some` only after `available()` confirmed avx512f and
            // avx512ifma on this CPU, and `self` exists only through `new`.
            unsafe { self.pow_impl(base, e, e_bits) }
        }

        crate::ifma::ifma_set::enable! {
            fn pow_impl(&self, base: &Integer, e: &Integer, e_bits: u32) -> Integer {
                let one = {
                    let mut o = Num::<N>::ZERO;
                    o.0[0][0] = 1;
                    o
                };
                let mut table = [Num::<N>::ZERO; 1 << WINDOW];
                table[0] = self.amm(&one, &self.r2); // R mod M (Montgomery one), < 2M
                table[1] = self.amm(&Num::from_integer(base), &self.r2);
                for k in 2..table.len() {
                    table[k] = self.amm(&table[k - 1], &table[1]);
                }
                let windows = e_bits.div_ceil(WINDOW).max(1);
                // The exponent as a fixed number of limbs, so that reading a bit never depends on
                // its length.
                let mut el = e
                    .to_limbs_padded((windows * WINDOW).div_ceil(64) as usize)
                    .unwrap_or_else(|| {
                        e.as_limbs()[..(windows * WINDOW).div_ceil(64) as usize].to_vec()
                    });
                let digit = |w: u32| -> u32 { digit_of(&el, w * WINDOW, WINDOW) };
                let mut acc = self.select(&table, digit(windows - 1));
                for w in (0..windows - 1).rev() {
                    for _ in 0..WINDOW {
                        acc = self.amm(&acc, &acc);
                    }
                    let t = self.select(&table, digit(w));
                    acc = self.amm(&acc, &t);
                }
                // Out of Montgomery form: AMM(acc, 1) ≤ M, then a masked subtraction of M.
                let mut r = self.amm(&acc, &one);
                self.reduce_once(&mut r);
                let out = r.value();
                el.zeroize();
                for t in table.iter_mut() {
                    t.zeroize();
                }
                acc.zeroize();
                r.zeroize();
                out
            }
        }

        crate::ifma::ifma_set::enable! {
            /// The table entry `table[d]`, reading every entry.
            fn select(&self, table: &[Num<N>], d: u32) -> Num<N> {
                let mut acc = [_mm512_setzero_si512(); N];
                for (e, entry) in (0u32..).zip(table.iter()) {
                    let mask = _mm512_set1_epi64(0i64.wrapping_sub(i64::from(e.ct_eq(&d).unwrap_u8())));
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = _mm512_or_si512(*a, _mm512_and_si512(load(&entry.0[j]), mask));
                    }
                }
                let mut out = Num::ZERO;
                for (j, a) in acc.iter().enumerate() {
                    store(&mut out.0[j], *a);
                }
                out
            }
        }

        /// `r − M` if `r ≥ M`, else `r`, without branching on `r` (limbs normalised).
        fn reduce_once(&self, r: &mut Num<N>) {
            let mut t = Num::<N>::ZERO;
            let mut borrow = 0u64;
            for i in 0..8 * N {
                let d = r.limb(i).wrapping_sub(self.m.limb(i)).wrapping_sub(borrow);
                *t.limb_mut(i) = d & MASK52;
                borrow = (d >> 63) & 1;
            }
            // borrow = 1 ⇔ r < M: keep r; else take t.
            let keep = crate::bigint::ct_mask(borrow);
            for i in 0..8 * N {
                let v = (r.limb(i) & keep) | (t.limb(i) & !keep);
                *r.limb_mut(i) = v;
            }
            t.zeroize();
        }

        crate::ifma::ifma_set::enable! {
            /// Almost Montgomery multiplication: `a·b·R^{−1} mod M`, `< 2M` for `a, b < 2M`.
            fn amm(&self, a: &Num<N>, b: &Num<N>) -> Num<N> {
                let mut bv = [_mm512_setzero_si512(); N];
                let mut mv = [_mm512_setzero_si512(); N];
                for j in 0..N {
                    bv[j] = load(&b.0[j]);
                    mv[j] = load(&self.m.0[j]);
                }
                let zero = _mm512_setzero_si512();
                let mut x = [zero; N];
                for i in 0..8 * N {
                    let ai = _mm512_set1_epi64(a.limb(i) as i64);
                    for j in 0..N {
                        x[j] = _mm512_madd52lo_epu64(x[j], ai, bv[j]);
                    }
                    let x0 = _mm_cvtsi128_si64(_mm512_castsi512_si128(x[0])) as u64;
                    let y = x0.wrapping_mul(self.k0) & MASK52;
                    let yv = _mm512_set1_epi64(y as i64);
                    for j in 0..N {
                        x[j] = _mm512_madd52lo_epu64(x[j], yv, mv[j]);
                    }
                    // Lane 0 is now ≡ 0 mod 2^52; its high bits carry into the next limb.
                    let carry = (_mm_cvtsi128_si64(_mm512_castsi512_si128(x[0])) as u64) >> 52;
                    for j in 0..N - 1 {
                        x[j] = _mm512_alignr_epi64::<1>(x[j + 1], x[j]);
                    }
                    x[N - 1] = _mm512_alignr_epi64::<1>(zero, x[N - 1]);
                    x[0] = _mm512_add_epi64(x[0], _mm512_maskz_set1_epi64(1, carry as i64));
                    for j in 0..N {
                        x[j] = _mm512_madd52hi_epu64(x[j], ai, bv[j]);
                        x[j] = _mm512_madd52hi_epu64(x[j], yv, mv[j]);
                    }
                }
                let mut out = Num::ZERO;
                for j in 0..N {
                    store(&mut out.0[j], x[j]);
                }
                let mut carry = 0u64;
                for i in 0..8 * N {
                    let v = out.limb(i) + carry;
                    *out.limb_mut(i) = v & MASK52;
                    carry = v >> 52;
                }
                out
            }
        }
    }

    /// Fixed-base exponentiation modulo `M` with every window precomputed in Montgomery form
    /// (the IFMA twin of `bigint::FixedBaseTable`): one AMM per window, the entry chosen by a
    /// masked scan of the window's `2^w` entries.
    #[derive(Clone)]
    pub(crate) struct IfmaFixedBase<const N: usize> {
        ctx: IfmaModulus<N>,
        window: u32,
        windows: u32,
        /// `windows · 2^window` entries `base^(j·2^(w·i))·R mod M`, window-major.
        table: Vec<Num<N>>,
    }

    impl<const N: usize> Drop for IfmaFixedBase<N> {
        fn drop(&mut self) {
            self.wipe();
        }
    }

    impl<const N: usize> IfmaFixedBase<N> {
        /// The table for `base` modulo odd `m`, exponents below `2^exp_bits`; `None` when the
        /// modulus does not fit or the CPU lacks IFMA.
        pub(crate) fn new(base: &Integer, m: &Integer, exp_bits: u32, window: u32) -> Option<Self> {
            let ctx = IfmaModulus::<N>::new(m)?;
            let r_bits = u32::try_from(52 * 8 * N).ok()?;
            let windows = exp_bits.div_ceil(window).max(1);
            let per = 1usize << window;
            let mut table = Vec::with_capacity(windows as usize * per);
            // The base is public (h_s, g, y) but the modulus may be secret (p², q²): the
            // entries are computed with constant-time 64-bit Montgomery products, starting
            // from this context's `R mod M` (set up in time set by the lengths) so that they
            // come out in its Montgomery form.
            let mont = Monty::new(m)?;
            let mut b = mont.reduce(base);
            let mut r = Integer::from_limbs(&crate::bigint::ct_pow2_mod(r_bits, m.as_limbs()));
            for _ in 0..windows {
                let mut cur = r.clone();
                for j in 0..per {
                    table.push(Num::from_integer(&cur));
                    if j + 1 < per {
                        cur = mont.mul_mod_lt(&cur, &b);
                    }
                }
                for _ in 0..window {
                    b = mont.mul_mod_lt(&b, &b);
                }
            }
            crate::bigint::wipe(&mut r);
            Some(Self {
                ctx,
                window,
                windows,
                table,
            })
        }

        /// Bytes held by the table.
        pub(crate) fn memory_bytes(&self) -> usize {
            self.table.len() * core::mem::size_of::<Num<N>>()
        }

        /// Overwrites the table with zeros (secret when the modulus is, e.g. `p²`).
        pub(crate) fn wipe(&mut self) {
            for t in self.table.iter_mut() {
                t.zeroize();
            }
        }

        /// Whether every entry is zero (after [`Self::wipe`]).
        #[cfg(test)]
        pub(crate) fn is_wiped(&self) -> bool {
            self.table
                .iter()
                .all(|t| t.0.iter().all(|b| b.iter().all(|&w| w == 0)))
        }

        /// `base^e mod M` for `0 ≤ e < 2^(w·windows)`, constant time in `e`.
        pub(crate) fn pow(&self, e: &Integer) -> Integer {
            // SAFETY: `ctx` was built by `IfmaModulus::new`, which checked avx512f and
            // avx512ifma on this CPU.
            unsafe { self.pow_impl(e) }
        }

        crate::ifma::ifma_set::enable! {
            fn pow_impl(&self, e: &Integer) -> Integer {
                let per = 1usize << self.window;
                let mut one = Num::<N>::ZERO;
                one.0[0][0] = 1;
                // Montgomery one: AMM(R² mod M, 1) = R mod M.
                let mut acc = self.ctx.amm(&self.ctx.r2, &one);
                let len = (self.window * self.windows).div_ceil(64) as usize;
                let mut el = e
                    .to_limbs_padded(len)
                    .unwrap_or_else(|| e.as_limbs()[..len].to_vec());
                for i in 0..self.windows {
                    let digit = digit_of(&el, i * self.window, self.window);
                    let start = i as usize * per;
                    let mut t = self.ctx.select(&self.table[start..start + per], digit);
                    acc = self.ctx.amm(&acc, &t);
                    t.zeroize();
                }
                let mut r = self.ctx.amm(&acc, &one);
                self.ctx.reduce_once(&mut r);
                let out = r.value();
                el.zeroize();
                acc.zeroize();
                r.zeroize();
                out
            }
        }
    }

    /// Bits `[pos, pos + w)` of fixed-length little-endian limbs (public positions only).
    fn digit_of(e: &[u64], pos: u32, w: u32) -> u32 {
        let mut d = 0u32;
        for k in 0..w {
            let i = (pos + k) as usize;
            if let Some(x) = e.get(i / 64) {
                d |= (((x >> (i % 64)) & 1) as u32) << k;
            }
        }
        d
    }

    crate::ifma::ifma_set::enable! {
        fn load(a: &[u64; 8]) -> __m512i {
            // SAFETY: `a` is a valid, readable 64-byte array; the load is unaligned-tolerant.
            unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
        }
    }

    crate::ifma::ifma_set::enable! {
        fn store(a: &mut [u64; 8], v: __m512i) {
            // SAFETY: `a` is a valid, writable 64-byte array; the store is unaligned-tolerant.
            unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), v) }
        }
    }
}

/// A constant-time exponentiation context for one odd modulus: IFMA when the CPU has it and
/// the size fits (moduli up to 4158 bits), else the 64-bit Montgomery backend.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum CtPow {
    /// Up to 2078-bit moduli.
    #[cfg(obliv_x86_simd)]
    Ifma5(Box<IfmaModulus<5>>),
    /// Up to 3326-bit moduli.
    #[cfg(obliv_x86_simd)]
    Ifma8(Box<IfmaModulus<8>>),
    /// Up to 4158-bit moduli.
    #[cfg(obliv_x86_simd)]
    Ifma10(Box<IfmaModulus<10>>),
    /// 64-bit Montgomery (ADX or portable kernel).
    Mont(Box<Monty>),
}

impl CtPow {
    /// The context for an odd `m > 1`; `None` for any other `m`.
    pub(crate) fn new(m: &Integer) -> Option<Self> {
        #[cfg(obliv_x86_simd)]
        {
            // The size class follows the limb count of the (secret) modulus, not its bit
            // length.
            let bits = u32::try_from(64 * m.as_limbs().len()).unwrap_or(u32::MAX);
            let ctx = if bits + 2 <= 52 * 40 {
                IfmaModulus::<5>::new(m).map(|c| Self::Ifma5(Box::new(c)))
            } else if bits + 2 <= 52 * 64 {
                IfmaModulus::<8>::new(m).map(|c| Self::Ifma8(Box::new(c)))
            } else if bits + 2 <= 52 * 80 {
                IfmaModulus::<10>::new(m).map(|c| Self::Ifma10(Box::new(c)))
            } else {
                None
            };
            if ctx.is_some() {
                return ctx;
            }
        }
        Monty::new(m).map(|c| Self::Mont(Box::new(c)))
    }

    /// `base^e mod m` in constant time for `0 ≤ base < m`, `e ≥ 0` of at most `e_bits` bits.
    pub(crate) fn pow(&self, base: &Integer, e: &Integer, e_bits: u32) -> Integer {
        match self {
            #[cfg(obliv_x86_simd)]
            Self::Ifma5(c) => c.pow(base, e, e_bits),
            #[cfg(obliv_x86_simd)]
            Self::Ifma8(c) => c.pow(base, e, e_bits),
            #[cfg(obliv_x86_simd)]
            Self::Ifma10(c) => c.pow(base, e, e_bits),
            Self::Mont(c) => c.pow(base, e, e_bits),
        }
    }

    /// Whether this is the 64-bit Montgomery backend (no vector path for this CPU or size).
    pub(crate) fn is_montgomery(&self) -> bool {
        matches!(self, Self::Mont(_))
    }

    /// Whether the vector path is in use.
    #[cfg(test)]
    pub(crate) fn is_ifma(&self) -> bool {
        !matches!(self, Self::Mont(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigint::{random_below, random_bits};

    #[test]
    fn matches_reference() {
        let mut rng = rand::rng();
        for bits in [64u32, 521, 2046, 2048, 3072, 4096] {
            let mut m = random_bits(&mut rng, bits);
            m.set_bit(bits - 1, true);
            m.set_bit(0, true);
            let ctx = CtPow::new(&m).expect("odd");
            #[cfg(obliv_x86_simd)]
            if imp::available() {
                assert!(ctx.is_ifma(), "{bits}");
            }
            let mont = Monty::new(&m).expect("odd");
            for e_bits in [1u32, 5, 6, 1024, bits] {
                for _ in 0..3 {
                    let b = random_below(&mut rng, &m);
                    let mut e = random_bits(&mut rng, e_bits);
                    e.set_bit(e_bits - 1, true);
                    // Reference: square and multiply with Knuth division.
                    let mut want = Integer::from(1u32);
                    for i in (0..e.significant_bits()).rev() {
                        want = want.square().modulo(&m);
                        if e.get_bit(i) {
                            want = (&want * &b).modulo(&m);
                        }
                    }
                    assert_eq!(ctx.pow(&b, &e, e_bits), want, "{bits} {e_bits}");
                    assert_eq!(mont.pow(&b, &e, e_bits), want, "{bits} {e_bits}");
                }
            }
            // Edge bases: 0, 1, m − 1.
            let e = Integer::from(65_537u32);
            for b in [Integer::new(), Integer::from(1u32), &m - 1u32] {
                assert_eq!(ctx.pow(&b, &e, 17), mont.pow(&b, &e, 17));
            }
        }
        // Moduli beyond 4158 bits use the Montgomery backend.
        let mut m = random_bits(&mut rng, 4200);
        // The top bit too: without it, m would fit the IFMA range (at most 4158 bits) once in
        // 2^42 runs.
        m.set_bit(4199, true);
        m.set_bit(0, true);
        assert!(!CtPow::new(&m).expect("odd").is_ifma());
        assert!(CtPow::new(&Integer::from(10u32)).is_none());
    }
}
