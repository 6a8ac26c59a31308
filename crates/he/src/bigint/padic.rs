//! Constant-time exponentiation modulo `p²` on base-`p` digits with Montgomery reduction
//! modulo `p`.
//!
//! An element of `Z/p²` is held as two digits `X = X₀ + X₁·p` with `0 ≤ X₀, X₁ < p`, in
//! Montgomery form for the half-size `R = 2^(64k)` (`k` the limbs of `p`): `X ≡ x·R (mod p²)`.
//! A Montgomery product `X·Y·R⁻¹ mod p²` works on the digits:
//!
//! ```text
//! U = X·Y ≡ A + B·p (mod p²)      A = X₀Y₀,  B = X₀Y₁ + X₁Y₀
//! A + m·p = w·R                   REDC modulo p: m = A·(−p⁻¹) mod R, w < 2p
//! U·R⁻¹ ≡ w + (B − m)·p·R⁻¹ ≡ w + v·p (mod p²),   v = (B − m)·R⁻¹ mod p
//! ```
//!
//! so that a product costs three half-size products and two half-size REDCs, and a square
//! `(X₀ + X₁p)² ≡ X₀² + 2X₀X₁·p` one half-size square, one product and two REDCs. Counting
//! 64-bit limb products, that is about `5k²` per product and `3.5k²` per square, against `8k²`
//! and `6k²` for Montgomery arithmetic modulo the `2k`-limb `p²`. (Digit-wise products modulo
//! a square are folklore, with Barrett's division for the carry `⌊A/p⌋`; see poncho's answer
//! to *Efficient multiplication modulo a square*, crypto.stackexchange.com question 107578.
//! Taking the carry from REDC's own multiplier `m` instead, as here, keeps every step on the
//! whole-row kernels of [`super::monty`].)
//!
//! The normalisations are masked: `w ≥ p` moves one `p` into the second digit (adds `R` to
//! the input of the second REDC), and `v < 4p` is brought below `p` by masked subtractions of
//! `2p` and `p`. Every loop runs over public lengths, so the time depends on `k` and the
//! exponent's bit count only. The row kernels are those of [`super::monty`] (portable `u128`,
//! or BMI2 + ADX assembly).
//!
//! Paillier's CRT decryption computes `c^{p−1} mod p² = 1 + L·p`, which in plain digits is
//! `(1, L)`: the decryption's `L_p` is the second digit.
#![allow(clippy::cast_possible_truncation)] // limb arithmetic: truncation to 64 bits intended
#![allow(clippy::needless_range_loop)]
// The dispatch to the ADX entry point is `unsafe` (target features).
#![allow(unsafe_code)]

use zeroize::Zeroize;

use super::monty::{Backend, Kernel, Monty, Portable, WINDOW, exponent_limbs, window_ladder};
use super::{Integer, limbs_of};

/// Exponentiation modulo `p²` on base-`p` digits (see the module docs).
#[derive(Clone)]
pub(crate) struct Padic {
    /// `p`, `k` limbs.
    p: Vec<u64>,
    /// `−p⁻¹ mod 2^64`.
    n0: u64,
    /// `p − 1`, `k` limbs.
    pm1: Vec<u64>,
    /// `!p`, `k` limbs (for `w − p = w + !p + 1`).
    not_p: Vec<u64>,
    /// `!(2p)` and `p` over `k + 1` limbs, the two normalisations of the second digit.
    not_2p: Vec<u64>,
    p_wide: Vec<u64>,
    /// Digits of `R mod p²` (the Montgomery form of 1) and of `R² mod p²`: `2k` limbs each.
    one: Vec<u64>,
    r2: Vec<u64>,
    /// `p⁻¹ mod R`, for splitting a value into digits by an exact division.
    p_inv: Integer,
    /// Montgomery arithmetic modulo `p`, for `x mod p` when splitting.
    mont_p: Monty,
    backend: Backend,
}

impl Drop for Padic {
    fn drop(&mut self) {
        // p is a secret prime factor.
        self.p.zeroize();
        self.pm1.zeroize();
        self.n0.zeroize();
        self.not_p.zeroize();
        self.not_2p.zeroize();
        self.p_wide.zeroize();
        self.one.zeroize();
        self.r2.zeroize();
        super::wipe(&mut self.p_inv);
    }
}

/// `r = d` where `take` is 1, unchanged where it is 0, by masks.
#[inline(always)]
fn select(r: &mut [u64], d: &[u64], take: u64) {
    let mask = super::ct_mask(take);
    for (x, &y) in r.iter_mut().zip(d) {
        *x = (y & mask) | (*x & !mask);
    }
}

/// Working buffers of one exponentiation (wiped at the end).
struct Scratch {
    /// A product, then the input of the second REDC: `2k + 1` limbs.
    t: Vec<u64>,
    /// A second product: `2k` limbs.
    u: Vec<u64>,
    /// The second digit's addend `[!m, (p − 1) | c]`: `2k` limbs, the high half set once.
    a: Vec<u64>,
    /// The second digit being normalised: `k + 1` limbs.
    v: Vec<u64>,
    /// A trial subtraction (`w − p`, `v − 2p`, `v − p`): `k + 1` limbs.
    d: Vec<u64>,
}

impl Scratch {
    fn new(pm1: &[u64]) -> Self {
        let k = pm1.len();
        let mut a = vec![0; 2 * k];
        a[k..].copy_from_slice(pm1);
        Self {
            t: vec![0; 2 * k + 1],
            u: vec![0; 2 * k],
            a,
            v: vec![0; k + 1],
            d: vec![0; k + 1],
        }
    }

    fn wipe(&mut self) {
        for v in [
            &mut self.t,
            &mut self.u,
            &mut self.a,
            &mut self.v,
            &mut self.d,
        ] {
            v.zeroize();
        }
    }
}

impl Padic {
    /// The context for an odd `p > 1`, with the best kernel of this CPU (`None` for any other
    /// `p`). The setup's time depends on the limb count of `p` only.
    pub(crate) fn new(p: &Integer) -> Option<Self> {
        Self::with_backend(p, Backend::detect())
    }

    /// As [`Self::new`], with a chosen kernel.
    pub(crate) fn with_backend(p: &Integer, backend: Backend) -> Option<Self> {
        if obliv_cpu::ctgrind::declassify(p.is_negative() | p.is_even() | (*p <= 1u32)) {
            return None;
        }
        let pl = p.as_limbs().to_vec();
        let k = pl.len();
        let mut inv = 1u64;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(pl[0].wrapping_mul(inv)));
        }
        let mut p1 = pl.clone();
        p1.push(0);
        let mut twice = vec![0u64; k + 1];
        for i in 0..=k {
            twice[i] = (p1[i] << 1) | if i > 0 { p1[i - 1] >> 63 } else { 0 };
        }
        // p² by its trimmed limbs (as `ct_pow2_mod` takes a modulus).
        let p2 = p.square();
        let bits = u32::try_from(64 * k).ok()?;
        let mut ctx = Self {
            n0: inv.wrapping_neg(),
            pm1: {
                let mut v = pl.clone();
                v[0] ^= 1; // p is odd
                v
            },
            not_p: pl.iter().map(|&w| !w).collect(),
            not_2p: twice.iter().map(|&w| !w).collect(),
            p_wide: p1,
            one: Vec::new(),
            r2: Vec::new(),
            p_inv: super::inverse_mod_word_power(p, k),
            mont_p: Monty::with_backend(p, backend)?,
            backend,
            p: pl,
        };
        let mut r = super::ct_pow2_mod(bits, p2.as_limbs());
        let mut rr = super::ct_pow2_mod(bits.checked_mul(2)?, p2.as_limbs());
        r.resize(2 * k, 0);
        rr.resize(2 * k, 0);
        ctx.one = ctx.split(&r);
        ctx.r2 = ctx.split(&rr);
        r.zeroize();
        rr.zeroize();
        twice.zeroize();
        Some(ctx)
    }

    /// The digits `(z mod p, ⌊z/p⌋)` of `z < p²` (`2k` limbs): the first by a Montgomery
    /// reduction, the second as `(z − z₀)·p⁻¹ mod R` (exact, as the quotient is below `p`).
    fn split(&self, z: &[u64]) -> Vec<u64> {
        let k = self.p.len();
        let mut zi = Integer::from_limbs(z);
        let mut z0 = self.mont_p.reduce(&zi);
        let mut out = limbs_of(&z0, 2 * k);
        let mut diff = vec![0u64; k];
        let mut borrow = 0u64;
        for i in 0..k {
            let (d, b1) = z[i].overflowing_sub(out[i]);
            let (d, b2) = d.overflowing_sub(borrow);
            diff[i] = d;
            borrow = u64::from(b1 | b2);
        }
        let mut di = Integer::from_limbs(&diff);
        let mut z1 = super::mul_low(&di, &self.p_inv, k);
        out[k..].copy_from_slice(&limbs_of(&z1, k));
        for x in [&mut zi, &mut z0, &mut di, &mut z1] {
            super::wipe(x);
        }
        diff.zeroize();
        out
    }

    /// `out = X·Y·R⁻¹ mod p²` on digits (`X`, `Y`, `out`: `2k` limbs, first digit then
    /// second).
    #[inline(always)]
    fn mul<K: Kernel>(&self, kern: K, out: &mut [u64], x: &[u64], y: &[u64], s: &mut Scratch) {
        let k = self.p.len();
        let (x0, x1) = x.split_at(k);
        let (y0, y1) = y.split_at(k);
        kern.mul_rows(&mut s.t[..2 * k], x0, y0);
        let c = self.first_digit(kern, &mut out[..k], s);
        // B = X₀Y₁ + X₁Y₀, plus the addend of the second digit.
        kern.mul_rows(&mut s.t[..2 * k], x0, y1);
        kern.mul_rows(&mut s.u, x1, y0);
        s.a[k] = self.pm1[0] | c;
        s.t[2 * k] = kern.add2_n(&mut s.t[..2 * k], &s.u, &s.a, 1);
        self.second_digit(kern, &mut out[k..], s);
    }

    /// `out = X²·R⁻¹ mod p²` on digits.
    #[inline(always)]
    fn sqr<K: Kernel>(&self, kern: K, out: &mut [u64], x: &[u64], s: &mut Scratch) {
        let k = self.p.len();
        let (x0, x1) = x.split_at(k);
        kern.sqr_rows(&mut s.t[..2 * k], x0);
        let c = self.first_digit(kern, &mut out[..k], s);
        // B = 2·X₀X₁, plus the addend of the second digit.
        kern.mul_rows(&mut s.t[..2 * k], x0, x1);
        s.a[k] = self.pm1[0] | c;
        s.t[2 * k] = kern.double_add_n(&mut s.t[..2 * k], &s.a, 1);
        self.second_digit(kern, &mut out[k..], s);
    }

    /// REDC of `A = s.t[0..2k]` modulo `p`: writes `w mod p` to `out`, the low half of the
    /// second digit's addend (`!m = R − 1 − m` for REDC's multiplier `m`) to `s.a[0..k]`,
    /// and returns 1 when `w ≥ p` (that `p` moves to the second digit), else 0.
    #[inline(always)]
    fn first_digit<K: Kernel>(&self, kern: K, out: &mut [u64], s: &mut Scratch) -> u64 {
        let k = self.p.len();
        super::ct_trace::note(super::ct_trace::REDC, k, 1);
        kern.redc_rows_q(&mut s.t[..2 * k], &self.p, self.n0, &mut s.a[..k]);
        for w in s.a[..k].iter_mut() {
            *w = !*w;
        }
        // w = t[k..2k] + the parked carries t[0..k] (below 2p, with a carry limb), and w − p.
        let (lo, hi) = s.t[..2 * k].split_at(k);
        let (carry, no_borrow) = kern.add_sub_n(out, &mut s.d[..k], hi, lo, &self.not_p);
        let ge = carry | no_borrow;
        select(out, &s.d[..k], ge);
        ge
    }

    /// The second digit `v = (B + (p + c)·R − m)·R⁻¹ mod p`, its REDC input (`B` plus the
    /// addend `[!m, (p − 1) | c]` and a carry-in of 1, that is `(R − m) + (p − 1 + c)·R`)
    /// in `s.t[0..2k+1]`. The input lies in `[0, 2p² + (p + 1)R)`, so REDC leaves `v` below
    /// `4p`; masked subtractions of `2p` and `p` finish it.
    #[inline(always)]
    fn second_digit<K: Kernel>(&self, kern: K, out: &mut [u64], s: &mut Scratch) {
        let k = self.p.len();
        let high = s.t[2 * k];
        super::ct_trace::note(super::ct_trace::REDC, k, 2);
        kern.redc_rows(&mut s.t[..2 * k], &self.p, self.n0);
        // v = t[k..2k] + the parked carries + high·R, and v − 2p.
        let (lo, hi) = s.t[..2 * k].split_at(k);
        let (carry, no_borrow) =
            kern.add_sub_n(&mut s.v[..k], &mut s.d[..k], hi, lo, &self.not_2p[..k]);
        s.v[k] = carry + high;
        let top = u128::from(s.v[k]) + u128::from(self.not_2p[k]) + u128::from(no_borrow);
        s.d[k] = top as u64;
        select(&mut s.v, &s.d, (top >> 64) as u64);
        let borrow = kern.sub_n(&mut s.d, &s.v, &self.p_wide);
        select(&mut s.v, &s.d, borrow ^ 1);
        out.copy_from_slice(&s.v[..k]);
    }

    /// `base^e mod p²` as plain digits (`2k` limbs, `base mod p` first) for `base < p²` given
    /// as `2k` limbs and the low `e_bits` bits of `e`: a fixed 5-bit window over Montgomery
    /// digits, each table entry read by a scan of all 32.
    #[inline(always)]
    pub(crate) fn pow_with<K: Kernel>(
        &self,
        kern: K,
        base: &[u64],
        e: &[u64],
        e_bits: u32,
    ) -> Vec<u64> {
        let k = self.p.len();
        let per = 1usize << WINDOW;
        let mut s = Scratch::new(&self.pm1);
        let mut table = vec![0u64; per * 2 * k];
        table[..2 * k].copy_from_slice(&self.one);
        {
            let (_, rest) = table.split_at_mut(2 * k);
            self.mul(kern, &mut rest[..2 * k], base, &self.r2, &mut s);
        }
        for j in 2..per {
            let (done, rest) = table.split_at_mut(j * 2 * k);
            self.mul(
                kern,
                &mut rest[..2 * k],
                &done[(j - 1) * 2 * k..],
                &done[2 * k..4 * k],
                &mut s,
            );
        }
        let mut acc = window_ladder(
            &table,
            2 * k,
            e,
            e_bits,
            &mut s,
            |out, a, s| self.sqr(kern, out, a, s),
            |out, a, b, s| self.mul(kern, out, a, b, s),
        );
        // Out of Montgomery form: a product with the plain 1 = (1, 0).
        let mut one = vec![0u64; 2 * k];
        one[0] = 1;
        let mut out = vec![0u64; 2 * k];
        self.mul(kern, &mut out, &acc, &one, &mut s);
        table.zeroize();
        acc.zeroize();
        s.wipe();
        out
    }

    /// `base^e mod p²` in constant time for `0 ≤ base < p²` and the low `e_bits` bits of
    /// `e`, as its two digits `(a, b)` (the value is `a + b·p`).
    pub(crate) fn pow_digits(
        &self,
        base: &Integer,
        e: &Integer,
        e_bits: u32,
    ) -> (Integer, Integer) {
        let k = self.p.len();
        debug_assert!(base.as_limbs().len() <= 2 * k);
        let mut b = self.split(&limbs_of(base, 2 * k));
        let mut el = exponent_limbs(e, e_bits);
        let mut r = match self.backend {
            Backend::Portable => self.pow_with(Portable, &b, &el, e_bits),
            #[cfg(obliv_x86_simd)]
            // SAFETY: an `Adx` value exists only after the run-time check of every feature
            // that `adx::pow` enables.
            Backend::Adx(kern) => unsafe { adx::pow(self, kern, &b, &el, e_bits) },
        };
        let out = (Integer::from_limbs(&r[..k]), Integer::from_limbs(&r[k..]));
        b.zeroize();
        el.zeroize();
        r.zeroize();
        out
    }
}

#[cfg(obliv_x86_simd)]
mod adx {
    #![allow(unsafe_code)]
    use super::Padic;
    use crate::bigint::monty::Adx;

    crate::bigint::monty::adx_set::enable! {
        /// [`Padic::pow_with`] compiled for BMI2 + ADX.
        pub(super) unsafe fn pow(m: &Padic, k: Adx, base: &[u64], e: &[u64], e_bits: u32) -> Vec<u64> {
            m.pow_with(k, base, e, e_bits)
        }
    }
}

#[cfg(test)]
mod tests;
