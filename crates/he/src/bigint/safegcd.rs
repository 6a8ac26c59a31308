//! Modular inversion and gcd for an odd modulus by Bernstein and Yang's *safegcd* (D. J.
//! Bernstein, B.-Y. Yang, *Fast constant-time gcd computation and modular inversion*, TCHES
//! 2019/3): the `divstep` iteration on `(δ, f, g)` with `f = M` odd and `g = x`, run in batches
//! of 62 steps on the low 64 bits of `f` and `g`, each batch's 2×2 transition matrix then applied
//! to the full `f, g` and to the Bézout-like pair `d, e` (kept modulo `M`). The batch layout, the
//! signed 62-bit limb form and the way `d, e` stay in `(−2M, M)` follow libsecp256k1's
//! `modinv64` (its `doc/safegcd_implementation.md`), generalised here to any length.
//!
//! Two modes:
//! * [`Mode::ConstantTime`]: always `⌈B/62⌉` batches, `B = ⌊(49b + 57)/17⌋` for a `b`-bit
//!   modulus (`b ≥ 46`; `⌊(49b + 80)/17⌋` below), the paper's Theorem 11.2 bound after which
//!   `g = 0` for every input; every step is branch-free and no memory index depends on the
//!   values, so the time depends on the lengths of the modulus and the input only (the input
//!   is reduced by binary long division, `bigint::ct_mod`, not by the variable-time
//!   division). For secrets (key setup).
//! * [`Mode::VarTime`]: stops as soon as `g = 0` and drops the top limbs of `f, g` as they
//!   shrink: about twice as fast, for public values (ciphertexts, group elements).
//!
//! When `g` reaches zero, `f = ±gcd(M, x)`; if that is `±1`, `d·sign(f)` is `x⁻¹ mod M`.
#![allow(clippy::cast_possible_truncation)] // 62-bit limb extraction
#![allow(clippy::cast_possible_wrap)] // limbs below 2^62 as i64
#![allow(clippy::cast_sign_loss)] // the reverse, for non-negative limbs
#![allow(clippy::many_single_char_names)] // the paper's u, v, q, r, f, g, d, e

use zeroize::Zeroize;

use super::Integer;

/// Bits per limb of the signed form.
const LIMB_BITS: u32 = 62;
/// The low 62 bits.
const MASK: i64 = (1 << LIMB_BITS) - 1;

/// Whether the iteration count may depend on the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A fixed number of steps (the worst case for the modulus' length); for secret inputs.
    ConstantTime,
    /// Stops when the gcd is found; for public inputs.
    VarTime,
}

/// The transition matrix of 62 divsteps, scaled by `2^62`: `[u v; q r]`.
#[derive(Clone, Copy)]
struct Trans {
    u: i64,
    v: i64,
    q: i64,
    r: i64,
}

/// 62 divsteps on the low words of `f` (odd) and `g`, branch-free: returns the new `δ` and the
/// matrix `T` with `T·[f; g] = 2^62·[f'; g']` for the full-length `f'`, `g'` after the steps.
///
/// Per step, with `s` set iff `δ > 0` and `g` is odd: if `s`, `(δ, f, g) ← (−δ, g, −f)` (and the
/// matrix rows swap, the new second row negated); then if `g` is odd `g ← g + f` (row 2 += row
/// 1); then `g ← g/2`, `δ ← δ + 1` and row 1 is doubled (rather than row 2 halved, which keeps
/// the entries integral: the matrix is `2^62` times the true one after 62 steps).
fn divsteps_62(mut delta: i64, f0: u64, g0: u64) -> (i64, Trans) {
    let (mut f, mut g) = (f0, g0);
    let (mut u, mut v, mut q, mut r) = (1i64, 0i64, 0i64, 1i64);
    for _ in 0..LIMB_BITS {
        let odd = super::ct_mask(g & 1); // all ones iff g is odd
        let positive = (delta.wrapping_neg() >> 63) as u64; // all ones iff δ > 0
        let swap = odd & positive;
        let swap_i = swap as i64;
        // δ ← −δ under the mask.
        delta = (delta ^ swap_i).wrapping_sub(swap_i);
        // (f, g) ← (g, −f) under the mask.
        let (nf, ng) = (g, f.wrapping_neg());
        f ^= (f ^ nf) & swap;
        g ^= (g ^ ng) & swap;
        // (u, v, q, r) ← (q, r, −u, −v) under the mask.
        let (nu, nv, nq, nr) = (q, r, u.wrapping_neg(), v.wrapping_neg());
        u ^= (u ^ nu) & swap_i;
        v ^= (v ^ nv) & swap_i;
        q ^= (q ^ nq) & swap_i;
        r ^= (r ^ nr) & swap_i;
        // g odd: g += f, row 2 += row 1.
        g = g.wrapping_add(f & odd);
        q = q.wrapping_add(u & odd as i64);
        r = r.wrapping_add(v & odd as i64);
        // g is even now: halve it, double row 1.
        g >>= 1;
        u = u.wrapping_shl(1);
        v = v.wrapping_shl(1);
        delta = delta.wrapping_add(1);
    }
    (delta, Trans { u, v, q, r })
}

/// A value in signed 62-bit limbs: `Σ a[i]·2^(62i)`, every limb in `[0, 2^62)` except the last,
/// which is signed.
fn to_signed62(x: &[u64], len: usize) -> Vec<i64> {
    let mut out = vec![0i64; len];
    for (i, o) in out.iter_mut().enumerate() {
        let bit = i * LIMB_BITS as usize;
        let (w, s) = (bit / 64, bit % 64);
        let lo = x.get(w).copied().unwrap_or(0) >> s;
        let hi = if s > 2 {
            x.get(w + 1).copied().unwrap_or(0) << (64 - s)
        } else {
            0
        };
        *o = ((lo | hi) as i64) & MASK;
    }
    out
}

/// The magnitude limbs of a non-negative signed-62 value.
fn from_signed62(a: &[i64]) -> Integer {
    let mut words = vec![0u64; (a.len() * LIMB_BITS as usize).div_ceil(64) + 1];
    for (i, &limb) in a.iter().enumerate() {
        let bit = i * LIMB_BITS as usize;
        let (w, s) = (bit / 64, bit % 64);
        let limb = limb as u64;
        words[w] |= limb << s;
        if s > 2 {
            words[w + 1] |= limb >> (64 - s);
        }
    }
    let out = Integer::from_limbs(&words);
    words.zeroize();
    out
}

/// `[f; g] ← T·[f; g] / 2^62` (exact: the divsteps made the low 62 bits of both products zero)
/// over the first `len` limbs.
fn update_fg(f: &mut [i64], g: &mut [i64], len: usize, t: Trans) {
    let (u, v, q, r) = (
        i128::from(t.u),
        i128::from(t.v),
        i128::from(t.q),
        i128::from(t.r),
    );
    let mut cf = u * i128::from(f[0]) + v * i128::from(g[0]);
    let mut cg = q * i128::from(f[0]) + r * i128::from(g[0]);
    debug_assert_eq!(cf as i64 & MASK, 0);
    debug_assert_eq!(cg as i64 & MASK, 0);
    cf >>= LIMB_BITS;
    cg >>= LIMB_BITS;
    for i in 1..len {
        cf += u * i128::from(f[i]) + v * i128::from(g[i]);
        cg += q * i128::from(f[i]) + r * i128::from(g[i]);
        f[i - 1] = cf as i64 & MASK;
        g[i - 1] = cg as i64 & MASK;
        cf >>= LIMB_BITS;
        cg >>= LIMB_BITS;
    }
    f[len - 1] = cf as i64;
    g[len - 1] = cg as i64;
}

/// `[d; e] ← (T·[d; e] + M·[m_d; m_e]) / 2^62` with `m_d, m_e` chosen so that the division is
/// exact and the results stay in `(−2M, M)` (libsecp256k1's `update_de_62`): each starts as the
/// matrix entries of the rows whose `d` or `e` is negative, then is corrected by the low bits
/// times `M⁻¹ mod 2^62`. `d ≡ T·[d; e]·2^−62` modulo `M` either way.
fn update_de(d: &mut [i64], e: &mut [i64], t: Trans, m: &[i64], m_inv: i64) {
    let len = m.len();
    let (sd, se) = (d[len - 1] >> 63, e[len - 1] >> 63);
    let mut md = (t.u & sd).wrapping_add(t.v & se);
    let mut me = (t.q & sd).wrapping_add(t.r & se);
    let (u, v, q, r) = (
        i128::from(t.u),
        i128::from(t.v),
        i128::from(t.q),
        i128::from(t.r),
    );
    let mut cd = u * i128::from(d[0]) + v * i128::from(e[0]);
    let mut ce = q * i128::from(d[0]) + r * i128::from(e[0]);
    md = md.wrapping_sub((m_inv.wrapping_mul(cd as i64).wrapping_add(md)) & MASK);
    me = me.wrapping_sub((m_inv.wrapping_mul(ce as i64).wrapping_add(me)) & MASK);
    cd += i128::from(m[0]) * i128::from(md);
    ce += i128::from(m[0]) * i128::from(me);
    debug_assert_eq!(cd as i64 & MASK, 0);
    debug_assert_eq!(ce as i64 & MASK, 0);
    cd >>= LIMB_BITS;
    ce >>= LIMB_BITS;
    for i in 1..len {
        cd += u * i128::from(d[i]) + v * i128::from(e[i]) + i128::from(m[i]) * i128::from(md);
        ce += q * i128::from(d[i]) + r * i128::from(e[i]) + i128::from(m[i]) * i128::from(me);
        d[i - 1] = cd as i64 & MASK;
        e[i - 1] = ce as i64 & MASK;
        cd >>= LIMB_BITS;
        ce >>= LIMB_BITS;
    }
    d[len - 1] = cd as i64;
    e[len - 1] = ce as i64;
}

/// Carries every limb but the last into `[0, 2^62)`.
fn carry(a: &mut [i64]) {
    for i in 0..a.len() - 1 {
        let c = a[i] >> LIMB_BITS;
        a[i] &= MASK;
        a[i + 1] = a[i + 1].wrapping_add(c);
    }
}

/// `a += M` where `mask` is all ones (branch-free), then carried.
fn add_masked(a: &mut [i64], m: &[i64], mask: i64) {
    // Hidden from the optimiser, which would otherwise branch on it (see `super::ct_mask`).
    let mask = core::hint::black_box(mask);
    for (x, &y) in a.iter_mut().zip(m) {
        *x = x.wrapping_add(y & mask);
    }
    carry(a);
}

/// `d·sign(f)` in `[0, M)` for `d ∈ (−2M, M)` and `f_negative` all ones iff `f < 0`.
fn normalize(d: &mut [i64], f_negative: i64, m: &[i64]) {
    let len = m.len();
    // (−2M, M) → (−M, M).
    let neg = d[len - 1] >> 63;
    add_masked(d, m, neg);
    // Negate under the mask: limb by limb, then carried.
    for x in d.iter_mut() {
        *x = (*x ^ f_negative).wrapping_sub(f_negative);
    }
    carry(d);
    // (−M, M) → [0, M).
    let neg = d[len - 1] >> 63;
    add_masked(d, m, neg);
}

/// `M⁻¹ mod 2^64` for odd `M` (Newton's iteration: each step doubles the correct low bits).
fn inv_word(m0: u64) -> u64 {
    let mut x = m0; // correct to 3 bits: m·m ≡ 1 mod 8 for odd m
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(x)));
    }
    x
}

/// The Theorem 11.2 bound on the divsteps for a `bits`-bit `M` and `0 ≤ x < M`.
fn divstep_bound(bits: u64) -> u64 {
    if bits < 46 {
        (49 * bits + 80) / 17
    } else {
        (49 * bits + 57) / 17
    }
}

/// The state after the divsteps: `f = ±gcd(M, x)` and `d` with `d·x ≡ f (mod M)` (in
/// `(−2M, M)`).
struct Outcome {
    f: Vec<i64>,
    d: Vec<i64>,
    m: Vec<i64>,
}

impl Drop for Outcome {
    fn drop(&mut self) {
        self.f.zeroize();
        self.d.zeroize();
    }
}

/// Runs the divsteps on `f = M` (odd, `> 1`), `g = x mod M` until `g = 0`.
fn run(x: &Integer, m: &Integer, mode: Mode) -> Outcome {
    debug_assert!(m.is_odd() && !m.is_negative());
    // Constant time: the bound of a modulus filling its limbs, so that the number of steps and
    // the lengths follow the limb count of a secret M and not its bit length.
    let bits = match mode {
        Mode::ConstantTime => 64 * m.as_limbs().len() as u64,
        Mode::VarTime => u64::from(m.significant_bits()),
    };
    // Room for M, the sign, and d, e ∈ (−2M, M) with the carries of the updates.
    let len = (bits as usize + 2).div_ceil(LIMB_BITS as usize) + 1;
    // x mod M: for secrets by binary long division (time set by the lengths); for public
    // values by the faster variable-time division.
    let mut xr = match mode {
        Mode::ConstantTime => {
            let mut r = super::ct_mod(x, m.as_limbs());
            // A negative x: M − r, or 0 when r = 0, under a mask (the sign is not secret here:
            // every secret caller passes a non-negative value).
            if x.is_negative() {
                let nonzero = super::ct_mask(u64::from(r.iter().fold(0, |a, &w| a | w) != 0));
                let mut borrow = 0u64;
                for (w, &n) in r.iter_mut().zip(m.as_limbs()) {
                    let (d, b1) = (n & nonzero).overflowing_sub(*w);
                    let (d, b2) = d.overflowing_sub(borrow);
                    *w = d;
                    borrow = u64::from(b1 | b2);
                }
            }
            let out = Integer::from_limbs(&r);
            r.zeroize();
            out
        }
        Mode::VarTime => x.modulo(m),
    };
    let m62 = to_signed62(m.as_limbs(), len);
    let m_inv = (inv_word(m.as_limbs()[0]) as i64) & MASK;
    let mut f = m62.clone();
    let mut g = to_signed62(xr.as_limbs(), len);
    xr.zeroize();
    let mut d = vec![0i64; len];
    let mut e = vec![0i64; len];
    e[0] = 1;
    let mut delta = 1i64;
    let batches = divstep_bound(bits).div_ceil(u64::from(LIMB_BITS));
    // The live length of f and g (variable time only: their top limbs become sign limbs).
    let mut fg_len = len;
    let mut b = 0u64;
    loop {
        match mode {
            Mode::ConstantTime if b == batches => break,
            Mode::VarTime if g[..fg_len].iter().all(|&w| w == 0) => break,
            _ => {}
        }
        super::ct_trace::note(super::ct_trace::DIVSTEPS, fg_len, len);
        let (nd, t) = divsteps_62(delta, f[0] as u64, g[0] as u64);
        delta = nd;
        update_fg(&mut f, &mut g, fg_len, t);
        update_de(&mut d, &mut e, t, &m62, m_inv);
        if mode == Mode::VarTime && fg_len > 1 {
            // Drop the top limb when it only extends the sign of the one below, in both.
            let (ft, gt) = (f[fg_len - 1], g[fg_len - 1]);
            let sign_only = |top: i64| top == 0 || top == -1;
            if sign_only(f[fg_len - 1]) && sign_only(g[fg_len - 1]) {
                // Fold the sign into the new top limb (signed).
                f[fg_len - 2] |= ft.wrapping_shl(LIMB_BITS);
                g[fg_len - 2] |= gt.wrapping_shl(LIMB_BITS);
                f[fg_len - 1] = 0;
                g[fg_len - 1] = 0;
                fg_len -= 1;
            }
        }
        b += 1;
    }
    // Back to full length: the signed top limb carried into the limbs above it.
    if fg_len < len {
        carry(&mut f);
    }
    e.zeroize();
    g.zeroize();
    Outcome { f, d, m: m62 }
}

/// Whether `f` is `±1` (all ones iff so), branch-free.
fn is_unit(f: &[i64]) -> i64 {
    let len = f.len();
    // +1: limb 0 is 1, all others 0. −1: limbs 0..len−1 are MASK, the last −1.
    let mut plus = f[0] ^ 1;
    let mut minus = f[0] ^ MASK;
    for (i, &w) in f.iter().enumerate().skip(1) {
        plus |= w;
        minus |= w ^ if i == len - 1 { -1 } else { MASK };
    }
    let nz = |x: i64| (x | x.wrapping_neg()) >> 63; // all ones iff x ≠ 0
    !(nz(plus) & nz(minus))
}

/// `x⁻¹ mod M` in `[0, M)` for odd `M > 1`, or `None` when `gcd(x, M) ≠ 1`.
pub(crate) fn invert_odd(x: &Integer, m: &Integer, mode: Mode) -> Option<Integer> {
    let mut out = run(x, m, mode);
    let unit = is_unit(&out.f);
    let f_negative = out.f[out.f.len() - 1] >> 63;
    let m62 = out.m.clone();
    normalize(&mut out.d, f_negative, &m62);
    let inv = from_signed62(&out.d);
    // Only whether an inverse exists is revealed (a branch on the public verdict).
    (obliv_cpu::ctgrind::declassify(unit) != 0).then_some(inv)
}

/// `gcd(x, M)` for odd `M > 1` (variable time).
pub(crate) fn gcd_odd(x: &Integer, m: &Integer) -> Integer {
    let mut out = run(x, m, Mode::VarTime);
    let len = out.f.len();
    let f_negative = out.f[len - 1] >> 63;
    for w in out.f.iter_mut() {
        *w = (*w ^ f_negative).wrapping_sub(f_negative);
    }
    carry(&mut out.f);
    from_signed62(&out.f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An odd modulus of `limbs` limbs with random top bits trimmed to `top_bits` (so that
    /// lengths around the 62-bit limb boundaries occur), or 3 for zero limbs.
    fn modulus(words: &[u64], top_bits: u32) -> Integer {
        let mut w = words.to_vec();
        if let Some(last) = w.last_mut() {
            *last >>= 64 - top_bits.clamp(1, 64);
            *last |= 1 << (top_bits.clamp(1, 64) - 1);
        }
        if let Some(first) = w.first_mut() {
            *first |= 1;
        }
        let m = Integer::from_limbs(&w);
        if m <= 1u32 { Integer::from(3u32) } else { m }
    }

    fn check(x: &Integer, m: &Integer) {
        let want = x.invert_euclid(m);
        for mode in [Mode::ConstantTime, Mode::VarTime] {
            let got = invert_odd(x, m, mode);
            assert_eq!(got, want, "{mode:?}: x = {x:?}, m = {m:?}");
            if let Some(inv) = &got {
                assert_eq!((x * inv).modulo(m), 1u32);
            }
        }
        assert_eq!(gcd_odd(x, m), Integer::gcd_euclid(x.abs(), m.clone()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Against the extended Euclidean algorithm, on every length from 1 to 70 limbs (n² of
        /// Paillier-2048 is 64), for units, for multiples of a factor of `m`, and for `x ≥ m`
        /// and `x < 0`.
        #[test]
        fn matches_euclid(
            m_words in proptest::collection::vec(any::<u64>(), 1..70),
            top_bits in 1u32..=64,
            x_words in proptest::collection::vec(any::<u64>(), 0..72),
            shape in 0u8..4,
        ) {
            let m = modulus(&m_words, top_bits);
            let x = Integer::from_limbs(&x_words);
            let x = match shape {
                // A multiple of a factor of m (3·m/3 when 3 | m, otherwise m itself times x).
                0 => &x * &m,
                1 => -x,
                2 => {
                    let f = m.gcd(&Integer::from(15u32));
                    &x * &f
                }
                _ => x,
            };
            check(&x, &m);
        }
    }

    #[test]
    fn edge_values() {
        let m = Integer::from(3u32);
        for x in [0u32, 1, 2, 3, 4, 5] {
            check(&Integer::from(x), &m);
        }
        // The largest odd modulus of each length against 1, m − 1, m − 2 and 2.
        for limbs in [1usize, 2, 31, 32, 33, 63, 64, 65] {
            let m = Integer::from_limbs(&vec![u64::MAX; limbs]);
            for x in [
                Integer::from(1u32),
                &m - 1u32,
                &m - 2u32,
                Integer::from(2u32),
            ] {
                check(&x, &m);
            }
        }
        // A prime modulus: every non-zero x is a unit (2^127 − 1).
        let p = (Integer::from(1u32) << 127u32) - 1u32;
        for x in [1u32, 2, 12_345, u32::MAX] {
            let inv = invert_odd(&Integer::from(x), &p, Mode::ConstantTime).expect("unit");
            assert_eq!((Integer::from(x) * &inv).modulo(&p), 1u32);
        }
    }

    /// The constant-time mode runs the same operations for any input of given lengths, and
    /// its reduction of an input longer than the modulus is not a variable-time division.
    #[test]
    fn constant_time_trace_depends_on_lengths_only() {
        let mut rng = rand::rng();
        let mut traces = Vec::new();
        for _ in 0..4 {
            let mut m = crate::bigint::random_bits(&mut rng, 1024);
            m.set_bit(1023, true);
            m.set_bit(0, true);
            let mut x = crate::bigint::random_bits(&mut rng, 1030);
            x.set_bit(1029, true);
            let _ = crate::bigint::ct_trace::take();
            let inv = invert_odd(&x, &m, Mode::ConstantTime);
            traces.push(crate::bigint::ct_trace::take());
            assert_eq!(inv, x.invert_euclid(&m));
        }
        assert_eq!(
            traces[0].2, 0,
            "variable-time division in the constant-time mode"
        );
        assert!(traces.iter().all(|t| *t == traces[0]));
        // Negative inputs reduce to the same residue class.
        let m = Integer::from(1_000_003u32);
        for x in [
            -Integer::from(5u32),
            -Integer::from(1_000_003u32),
            -(&m * &m) - 7u32,
        ] {
            assert_eq!(
                invert_odd(&x, &m, Mode::ConstantTime),
                invert_odd(&x, &m, Mode::VarTime)
            );
        }
    }

    #[test]
    fn signed62_round_trip() {
        for words in [
            vec![0u64],
            vec![u64::MAX; 5],
            vec![0x0123_4567_89ab_cdef, 1 << 63, 7],
        ] {
            let x = Integer::from_limbs(&words);
            let len = (words.len() * 64).div_ceil(62) + 1;
            assert_eq!(from_signed62(&to_signed62(x.as_limbs(), len)), x);
        }
    }

    #[test]
    fn divstep_bound_matches_the_paper() {
        assert_eq!(divstep_bound(256), 741);
        assert_eq!(divstep_bound(4096), 11_809);
        assert_eq!(divstep_bound(45), (49 * 45 + 80) / 17);
    }

    #[test]
    fn inverse_word() {
        for m in [1u64, 3, 0xffff_ffff_ffff_ffff, 0x1234_5678_9abc_def1] {
            assert_eq!(m.wrapping_mul(inv_word(m)), 1);
        }
    }
}
