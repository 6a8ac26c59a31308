//! Scalar multiplication on FourQ.
//!
//! * [`mul_endo`]: the Costello–Longa variable-base algorithm ([CL15, §4–5], FourQlib
//!   `ecc_mul`): the 256-bit scalar is split into four 64-bit sub-scalars with the lattice
//!   basis and Babai rounding of [CL15, §4] ([`decompose`]); the sub-scalars are recoded into
//!   65 signed digits `±T[v]` with `v ∈ [0, 7]` by the GLV-SAC recoding of Faz-Hernández,
//!   Longa and Sánchez ([FLS15, Alg. 1], [`recode`]); an 8-point table
//!   `T[v] = P + [v₀]φ(P) + [v₁]ψ(P) + [v₂]ψ(φ(P))` is read with a full scan and a
//!   conditional negation; 64 doublings and 64 additions follow. No branch and no memory
//!   index depends on the scalar.
//! * [`mul_fixed_window`]: a plain signed radix-16 fixed-window ladder (no endomorphisms),
//!   constant time; the reference the fast path is tested against.
//! * [`mul_base`]: fixed-base multiplication with a precomputed table of the generator,
//!   signed radix-16 in the "32 tables × 8 affine multiples" layout of curve25519-dalek's
//!   `EdwardsBasepointTable`: 64 mixed additions and 4 doublings.
//! * `mul_vartime_u256` (tests only): variable-time width-5 NAF, and [`double_mul_vartime`]
//!   for verification-style `a·G + b·P` on public inputs.
//!
//! [CL15]: <https://eprint.iacr.org/2015/565>
//! [FLS15]: https://eprint.iacr.org/2013/158 "Faz-Hernández, Longa, Sánchez, Efficient and
//! secure algorithms for GLV-based scalar multiplication and their implementation on GLV-GLS
//! curves, J. Cryptographic Engineering 5(1), 2015"

// Limb arithmetic splits u128 values into u64 halves on purpose.
#![allow(clippy::cast_possible_truncation)]

use std::sync::OnceLock;

use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::Zeroize;

#[cfg(obliv_x86_simd)]
use crate::backend::serial::u64::fp2_mulx::Mulx;
use crate::constants::*;
use crate::field::{Fp2Mul, Portable};
use crate::point::{AffineR5, Point, PointR2, add_core};

/// `⌊k·ℓ / 2^256⌋ mod 2^64` for 256-bit `k` and `ℓ` (a full 4×4-word product; word 4).
#[inline(always)]
fn mul_truncate(k: &[u64; 4], ell: &[u64; 4]) -> u64 {
    let mut w = [0u64; 8];
    for i in 0..4 {
        let mut carry = 0u128;
        for j in 0..4 {
            let t = (k[i] as u128) * (ell[j] as u128) + (w[i + j] as u128) + carry;
            w[i + j] = t as u64;
            carry = t >> 64;
        }
        w[i + 4] = carry as u64;
    }
    w[4]
}

/// The four-dimensional decomposition of [CL15, §4.2]: for any `k ∈ [0, 2^256)`, returns
/// `(a1, a2, a3, a4)`, each below 2^64 with `a1` odd, such that
/// `k ≡ a1 + a2·λφ + a3·λψ + a4·λφ·λψ (mod N)` where φ, ψ act as `λφ`, `λψ` on the subgroup.
///
/// `α_i = ⌊k·ℓ_i / 2^256⌋` (Babai rounding with precomputed `ℓ_i`), then
/// `a = (k, 0, 0, 0) − Σ α_i·b_i + c` with the offset `c` (and `+ b_4` when the result would be
/// even), all modulo 2^64 since the true values fit. Constant time.
pub(crate) fn decompose(k: &[u64; 4]) -> [u64; 4] {
    let a1 = mul_truncate(k, &ELL[0]);
    let a2 = mul_truncate(k, &ELL[1]);
    let a3 = mul_truncate(k, &ELL[2]);
    let a4 = mul_truncate(k, &ELL[3]);
    let m = |x: u64, y: u64| x.wrapping_mul(y);
    let t = k[0]
        .wrapping_sub(m(a1, B11))
        .wrapping_sub(m(a2, B21))
        .wrapping_sub(m(a3, B31))
        .wrapping_sub(m(a4, B41))
        .wrapping_add(DEC_C[0]);
    // mask = all ones when t is even: then add the fourth basis vector to make a1 odd.
    let mask = !(0u64.wrapping_sub(t & 1));
    [
        t.wrapping_add(mask & B41),
        m(a1, B12)
            .wrapping_add(a2)
            .wrapping_sub(m(a3, B32))
            .wrapping_sub(m(a4, B42))
            .wrapping_add(DEC_C[1])
            .wrapping_add(mask & B42),
        m(a3, B33)
            .wrapping_sub(m(a1, B13))
            .wrapping_sub(a2)
            .wrapping_add(m(a4, B43))
            .wrapping_add(DEC_C[2])
            .wrapping_sub(mask & B43),
        m(a1, B14)
            .wrapping_sub(m(a2, B24))
            .wrapping_sub(m(a3, B34))
            .wrapping_add(m(a4, B44))
            .wrapping_add(DEC_C[3])
            .wrapping_sub(mask & B44),
    ]
}

/// A recoded scalar: 65 table indices in `[0, 7]` and 65 negation flags (1 = negate).
#[derive(Clone)]
pub(crate) struct Recoded {
    digits: [u8; 65],
    negate: [u8; 65],
}

impl Recoded {
    /// The 65 digits and 65 negation flags (secret: read them only in constant-time code).
    /// Only the vector backend reads them this way.
    #[cfg(obliv_x86_simd)]
    pub(crate) fn digits(&self) -> (&[u8; 65], &[u8; 65]) {
        (&self.digits, &self.negate)
    }
}

impl Zeroize for Recoded {
    fn zeroize(&mut self) {
        self.digits.zeroize();
        self.negate.zeroize();
    }
}

impl Drop for Recoded {
    fn drop(&mut self) {
        self.zeroize();
    }
}

/// GLV-SAC recoding ([FLS15, Alg. 1]; FourQlib `recode`): with `a1` odd, every column `i`
/// gets the sign `s_i = ±1` from bit `i+1` of `a1` (the top column is positive) and the
/// other three sub-scalars are rewritten so that their digit in column `i` is `0` or `s_i`.
/// Then `Σ_i 2^i · s_i · (P + d_i,2·φP + d_i,3·ψP + d_i,4·ψφP)` equals the multiple.
/// Branch-free.
pub(crate) fn recode(scalars: &[u64; 4]) -> Recoded {
    let mut s = *scalars;
    let mut digits = [0u8; 65];
    let mut negate = [0u8; 65];
    for i in 0..64 {
        s[0] >>= 1;
        let bit0 = s[0] & 1;
        negate[i] = (1 - bit0) as u8;
        let mut d = 0u64;
        for (j, sj) in s.iter_mut().enumerate().skip(1) {
            let bit = *sj & 1;
            let carry = (bit0 | bit) ^ bit0; // bit = 1 in a negative column carries one up
            *sj = (*sj >> 1) + carry;
            d |= bit << (j - 1);
        }
        digits[i] = d as u8;
    }
    digits[64] = (s[1] + (s[2] << 1) + (s[3] << 2)) as u8;
    s.zeroize();
    Recoded { digits, negate }
}

/// Decompose and recode a 256-bit scalar.
pub(crate) fn recode_u256(k: &[u64; 4]) -> Recoded {
    let mut sub = decompose(k);
    let r = recode(&sub);
    sub.zeroize();
    r
}

/// FourQlib's `ecc_precomp`: `T[v] = P + [v&1]φ(P) + [v>>1&1]ψ(P) + [v>>2]ψ(φ(P))` in R2.
#[inline(always)]
pub(crate) fn precompute<M: Fp2Mul>(p: &Point, m: M) -> [PointR2; 8] {
    let phi = p.phi(m);
    let psi_phi = phi.psi(m);
    let psi = p.psi(m);
    let q = phi.to_r3(m);
    let r = psi.to_r3(m);
    let s = psi_phi.to_r3(m);
    let mut t = [PointR2::default(); 8];
    t[0] = p.to_r2(m);
    t[1] = add_core(&t[0], &q, m).to_r2(m);
    t[2] = add_core(&t[0], &r, m).to_r2(m);
    t[3] = add_core(&t[1], &r, m).to_r2(m);
    t[4] = add_core(&t[0], &s, m).to_r2(m);
    t[5] = add_core(&t[1], &s, m).to_r2(m);
    t[6] = add_core(&t[2], &s, m).to_r2(m);
    t[7] = add_core(&t[3], &s, m).to_r2(m);
    t
}

/// Test builds record every table entry a constant-time look-up reads ([`scan_trace`]); other
/// builds compile this to nothing.
#[inline(always)]
pub(crate) fn note_scan(entry: usize) {
    #[cfg(test)]
    scan_trace::note(entry);
    #[cfg(not(test))]
    let _ = entry;
}

/// A per-thread trace of the table entries read by the constant-time look-ups (test builds
/// only): how many reads, an order-sensitive digest of the entry indices, and the set of
/// entries read. Equal traces for different scalars show that the sequence of memory reads of
/// the look-ups does not depend on the secret digits.
#[cfg(test)]
pub(crate) mod scan_trace {
    use std::cell::Cell;

    /// `(reads, digest of the index sequence, bit set of the indices read)`.
    pub(crate) type Trace = (u64, u64, u64);

    thread_local! {
        static TRACE: Cell<Trace> = const { Cell::new((0, 0, 0)) };
    }

    pub(crate) fn note(entry: usize) {
        TRACE.with(|t| {
            let (n, h, set) = t.get();
            let h = (h ^ (entry as u64 + 1)).wrapping_mul(0x0100_0000_01b3);
            t.set((n + 1, h, set | 1 << entry));
        });
    }

    /// The trace since the last call (and a fresh one started).
    pub(crate) fn take() -> Trace {
        TRACE.with(|t| t.replace((0, 0, 0)))
    }
}

/// An all-ones mask when `a == b`, else zero, hidden from the optimiser so that it cannot turn
/// the masked accumulation below back into a branch or an indexed load.
#[inline(always)]
fn eq_mask(a: u8, b: u8) -> u64 {
    let diff = u64::from(a ^ b);
    core::hint::black_box(0u64.wrapping_sub(diff.wrapping_sub(1) >> 63))
}

/// Read `T[digit]` by scanning all eight entries (every limb of every entry is loaded and
/// masked), then negate it if `neg = 1`.
#[inline(always)]
fn lookup8(table: &[[u64; 16]; 8], digit: u8, neg: u8) -> PointR2 {
    let mut acc = [0u64; 16];
    for (j, e) in table.iter().enumerate() {
        note_scan(j);
        let m = eq_mask(digit, j as u8);
        for (a, w) in acc.iter_mut().zip(e.iter()) {
            *a |= w & m;
        }
    }
    let mut r = PointR2::from_words(&acc);
    r.conditional_negate(Choice::from(neg));
    r
}

/// The precomputed table as raw limbs, for [`lookup8`].
#[inline(always)]
pub(crate) fn table_words(t: &[PointR2; 8]) -> [[u64; 16]; 8] {
    let mut w = [[0u64; 16]; 8];
    for (wi, ti) in w.iter_mut().zip(t.iter()) {
        *wi = ti.to_words();
    }
    w
}

/// The main loop of [CL15, Alg. 2] for a precomputed table and a recoded scalar.
#[inline(always)]
pub(crate) fn mul_endo_with<M: Fp2Mul>(table: &[PointR2; 8], rec: &Recoded, m: M) -> Point {
    let mut words = table_words(table);
    let mut q = lookup8(&words, rec.digits[64], 0).to_r1_for_doubling();
    for i in (0..64).rev() {
        let s = lookup8(&words, rec.digits[i], rec.negate[i]);
        q = q.double_r1(m).add_r2(&s, m);
    }
    // The table's limbs (multiples of P, a hashed private item on the hash paths): 1 KiB of
    // stores once per multiplication, against 64 doublings and additions.
    words.zeroize();
    q
}

/// `[k]P` for a 256-bit `k` with the four-dimensional decomposition (constant time in `k`).
///
/// The endomorphisms act as scalars only on the order-`N` subgroup, so the result equals
/// `[k]P` when `P` is in that subgroup (every point this crate hands out is).
///
/// The scalar is recoded here; the multiplication dispatches at run time to a copy compiled
/// for `bmi2`/`adx`/`avx2` when the CPU has them (same arithmetic, same result;
/// [`crate::backend::serial::x86`]).
pub(crate) fn mul_endo(p: &Point, k: &[u64; 4]) -> Point {
    let rec = recode_u256(k);
    crate::backend::serial::x86::mul_recoded(p, &rec)
}

/// `[k]P` for a recoded `k` with the GF(p²) products `m`, inlined into each compiled copy:
/// the table of `P` and the main loop.
#[inline(always)]
pub(crate) fn mul_recoded_with<M: Fp2Mul>(p: &Point, rec: &Recoded, m: M) -> Point {
    let mut table = precompute(p, m);
    let q = mul_endo_with(&table, rec, m);
    table.zeroize();
    q
}

/// `[k]P` for a recoded `k` on the portable code throughout: one compiled instance, shared by
/// the dispatch's fallback and the tests that compare every other copy against it. Kept out of
/// line because every inlined instance of the portable multiplication is one more very large
/// function for LLVM to optimise.
#[inline(never)]
pub(crate) fn mul_recoded_portable(p: &Point, rec: &Recoded) -> Point {
    mul_recoded_with(p, rec, Portable)
}

/// Signed radix-16 digits `e_i ∈ [−8, 8)` (the last in `[−8, 8]`) with `k = Σ e_i·16^i`,
/// for `k < 2^255`. Branch-free.
fn radix16(k: &[u64; 4]) -> [i8; 64] {
    let mut e = [0i8; 64];
    for i in 0..64 {
        e[i] = ((k[i / 16] >> (4 * (i % 16))) & 15) as i8;
    }
    for i in 0..63 {
        let carry = (e[i] + 8) >> 4;
        e[i] -= carry << 4;
        e[i + 1] += carry;
    }
    e
}

/// `(|e|, e < 0)` without a branch.
#[inline(always)]
fn abs_sign(e: i8) -> (u8, Choice) {
    let mask = e >> 7; // −1 if negative
    let abs = ((e ^ mask) - mask) as u8;
    (abs, Choice::from((mask & 1) as u8))
}

/// Constant-time `[k]P` by a signed 4-bit fixed window (`k < 2^255`): a table of
/// `P, 2P, …, 8P`, 63 × 4 doublings and 64 additions, every look-up a full scan.
/// Works for any point of the curve (no endomorphisms involved).
pub(crate) fn mul_fixed_window(p: &Point, k: &[u64; 4]) -> Point {
    let m = Portable;
    let mut table = [PointR2::default(); 8];
    let mut mult = *p;
    let base = mult.to_r2(m);
    table[0] = base;
    for t in table.iter_mut().skip(1) {
        mult = mult.add_r2(&base, m);
        *t = mult.to_r2(m);
    }
    let mut e = radix16(k);
    let identity = Point::IDENTITY.to_r2(m);
    let mut q = Point::IDENTITY;
    for i in (0..64).rev() {
        for _ in 0..4 {
            q = q.double_r1(m);
        }
        let (abs, neg) = abs_sign(e[i]);
        let mut s = identity;
        for (j, t) in table.iter().enumerate() {
            note_scan(j);
            s.conditional_assign(t, abs.ct_eq(&((j + 1) as u8)));
        }
        s.conditional_negate(neg);
        q = q.add_r2(&s, m);
    }
    e.zeroize();
    table.zeroize();
    q
}

/// The fixed-base table: `TABLE[j][m] = (m+1)·256^j·G` in affine R5, `j < 32`, `m < 8`.
type BaseTable = [[AffineR5; 8]; 32];

fn base_table() -> &'static BaseTable {
    static TABLE: OnceLock<Box<BaseTable>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([[AffineR5::default(); 8]; 32]);
        let mut b = Point::generator();
        for row in t.iter_mut() {
            let mut m = b;
            for entry in row.iter_mut() {
                *entry = AffineR5::from_point(&m);
                m += b;
            }
            for _ in 0..8 {
                b = b.double_r1(Portable);
            }
        }
        t
    })
}

/// Force the lazily built fixed-base table (about a millisecond, once per process).
pub(crate) fn init_base_table() {
    let _ = base_table();
}

/// `[k]G` for the generator `G`, `k < 2^255`, constant time: signed radix-16 digits `e_i`,
/// `Σ_{i odd} e_i·16^i·G` (32 mixed additions), ×16, `+ Σ_{i even} e_i·16^i·G`
/// (32 more); each addend read from a row of 8 affine points by a full scan. The GF(p²)
/// products are the `mulx` assembly where the CPU has BMI2.
pub(crate) fn mul_base(k: &[u64; 4]) -> Point {
    #[cfg(obliv_x86_simd)]
    if let Some(m) = Mulx::detect() {
        return mul_base_with(k, m);
    }
    mul_base_with(k, Portable)
}

/// [`mul_base`] with the GF(p²) products `m`.
fn mul_base_with<M: Fp2Mul>(k: &[u64; 4], m: M) -> Point {
    let table = base_table();
    let mut e = radix16(k);
    let select = |row: &[AffineR5; 8], digit: i8| {
        let (abs, neg) = abs_sign(digit);
        let mut s = AffineR5::IDENTITY;
        for (j, t) in row.iter().enumerate() {
            note_scan(j);
            s.conditional_assign(t, abs.ct_eq(&((j + 1) as u8)));
        }
        s.conditional_negate(neg);
        s
    };
    let mut q = Point::IDENTITY;
    for i in (1..64).step_by(2) {
        q = q.add_r5(&select(&table[i / 2], e[i]), m);
    }
    for _ in 0..4 {
        q = q.double_r1(m);
    }
    for i in (0..64).step_by(2) {
        q = q.add_r5(&select(&table[i / 2], e[i]), m);
    }
    e.zeroize();
    q
}

/// Width-`w` non-adjacent form of a 256-bit integer (digits odd or zero, `|d| < 2^(w−1)`).
/// Variable time.
fn naf_vartime(k: &[u64; 4], w: u32) -> [i8; 257] {
    let mut n = [k[0], k[1], k[2], k[3], 0u64];
    let mut out = [0i8; 257];
    let width = 1u64 << w;
    let mut i = 0;
    while n.iter().any(|&x| x != 0) && i < 257 {
        if n[0] & 1 == 1 {
            let mut d = (n[0] & (width - 1)) as i64;
            if d >= (width / 2) as i64 {
                d -= width as i64;
            }
            out[i] = d as i8;
            // n -= d
            if d > 0 {
                let (r, mut borrow) = n[0].overflowing_sub(d as u64);
                n[0] = r;
                let mut j = 1;
                while borrow && j < 5 {
                    let (r, b) = n[j].overflowing_sub(1);
                    n[j] = r;
                    borrow = b;
                    j += 1;
                }
            } else {
                let (r, mut carry) = n[0].overflowing_add((-d) as u64);
                n[0] = r;
                let mut j = 1;
                while carry && j < 5 {
                    let (r, c) = n[j].overflowing_add(1);
                    n[j] = r;
                    carry = c;
                    j += 1;
                }
            }
        }
        // n >>= 1
        for j in 0..4 {
            n[j] = (n[j] >> 1) | (n[j + 1] << 63);
        }
        n[4] >>= 1;
        i += 1;
    }
    out
}

/// Odd multiples `P, 3P, …, (2^(w−1) − 1)P` in R2.
fn odd_multiples(p: &Point, count: usize) -> Vec<PointR2> {
    let m = Portable;
    let p2 = p.double_r1(m).to_r2(m);
    let mut out = Vec::with_capacity(count);
    let mut acc = *p;
    out.push(acc.to_r2(m));
    for _ in 1..count {
        acc = acc.add_r2(&p2, m);
        out.push(acc.to_r2(m));
    }
    out
}

fn add_signed_vartime(q: Point, table: &[PointR2], d: i8) -> Point {
    if d > 0 {
        q.add_r2(&table[(d as usize) / 2], Portable)
    } else if d < 0 {
        let mut s = table[((-d) as usize) / 2];
        s.conditional_negate(Choice::from(1));
        q.add_r2(&s, Portable)
    } else {
        q
    }
}

/// `[k]P` by width-5 NAF (test reference). **Variable time** in `k` and `P`: use only when both are public
/// (for example the multiplication by the public order `N` in a subgroup check). Works for
/// any point of the curve.
#[cfg(test)]
pub(crate) fn mul_vartime_u256(p: &Point, k: &[u64; 4]) -> Point {
    let naf = naf_vartime(k, 5);
    let table = odd_multiples(p, 8);
    let mut q = Point::IDENTITY;
    for i in (0..257).rev() {
        q = q.double_r1(Portable);
        q = add_signed_vartime(q, &table, naf[i]);
    }
    q
}

/// `[a]G + [b]P` by interleaved width-5 NAF (Straus). **Variable time** in `a`, `b` and `P`:
/// for verification equations where every input is public.
pub(crate) fn double_mul_vartime(a: &[u64; 4], p: &Point, b: &[u64; 4]) -> Point {
    let na = naf_vartime(a, 5);
    let nb = naf_vartime(b, 5);
    let tg = odd_multiples(&Point::generator(), 8);
    let tp = odd_multiples(p, 8);
    let top = (0..257).rev().find(|&i| na[i] != 0 || nb[i] != 0);
    let mut q = Point::IDENTITY;
    if let Some(top) = top {
        for i in (0..=top).rev() {
            q = q.double_r1(Portable);
            q = add_signed_vartime(q, &tg, na[i]);
            q = add_signed_vartime(q, &tp, nb[i]);
        }
    }
    q
}

/// `[k]P` for a recoded `k` on the serial backend (the tests' reference for the batches): the
/// same compiled copy as [`mul_endo`].
#[cfg(test)]
pub(crate) fn mul_many_recoded(rec: &Recoded, p: &Point) -> Point {
    crate::backend::serial::x86::mul_recoded(p, rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::tests::words;
    use crate::scalar::Scalar;
    use proptest::prelude::*;

    fn to_words(s: &Scalar) -> [u64; 4] {
        s.limbs()
    }

    /// FourQlib `tests/ecc_tests.c`, "Scalar multiplication", without cofactor clearing:
    /// 1000 chained `A ← [k]A` with `k` updated as in the C test.
    #[test]
    fn kat_scalar_mul_chain() {
        let mut a = Point::generator();
        let mut k = [
            0x3AD457AB55456230u64,
            0x3A8B3C2C6FD86E0C,
            0x7E38F7C9CFBB9166,
            0x0028FD6CBDA458F0,
        ];
        for _ in 0..1000 {
            k[1] = k[2];
            k[2] = k[2].wrapping_add(k[0]);
            a = mul_endo(&a, &k);
        }
        let (x, y) = words(&a);
        assert_eq!(
            x,
            [
                0xDFD2B477BD494BEF,
                0x257C122BBFC94A1B,
                0x769593547237C459,
                0x469BF80CB5B11F01
            ]
        );
        assert_eq!(
            y,
            [
                0x281C5067996F3344,
                0x0901B3817C0E936C,
                0x4FE8C429915F1245,
                0x570B948EACACE210
            ]
        );
    }

    /// Same chain with cofactor clearing before each multiplication.
    #[test]
    fn kat_scalar_mul_chain_cofactor() {
        let mut a = Point::generator();
        let mut k = [
            0x3AD457AB55456230u64,
            0x3A8B3C2C6FD86E0C,
            0x7E38F7C9CFBB9166,
            0x0028FD6CBDA458F0,
        ];
        for _ in 0..1000 {
            k[1] = k[2];
            k[2] = k[2].wrapping_add(k[0]);
            a = mul_endo(&a.mul_by_cofactor(), &k);
        }
        let (x, y) = words(&a);
        assert_eq!(
            x,
            [
                0x85CF54A3BEE3FD23,
                0x7A7EC43976FAAD92,
                0x7697567B785E2327,
                0x4CBDAB448B1539F2
            ]
        );
        assert_eq!(
            y,
            [
                0xE9193B41CDDF94D0,
                0x5AA6C859ECC810D5,
                0xAA876E760AA8B331,
                0x320C53F02230094A
            ]
        );
    }

    /// FourQlib "Recoding and decomposition tests": the digits reconstruct the sub-scalars.
    fn reconstruct(rec: &Recoded) -> [u64; 4] {
        let mut acc = [0u64; 4];
        for i in (0..65).rev() {
            for a in acc.iter_mut() {
                *a = a.wrapping_mul(2);
            }
            let d = rec.digits[i] as u64;
            let bits = [1, d & 1, (d >> 1) & 1, (d >> 2) & 1];
            for (a, b) in acc.iter_mut().zip(bits) {
                *a = if rec.negate[i] == 1 {
                    a.wrapping_sub(b)
                } else {
                    a.wrapping_add(b)
                };
            }
        }
        acc
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn decomposition_and_recoding(k in any::<[u64; 4]>()) {
            let sub = decompose(&k);
            prop_assert_eq!(sub[0] & 1, 1);
            let rec = recode(&sub);
            prop_assert_eq!(reconstruct(&rec), sub);
            prop_assert!(rec.digits.iter().all(|&d| d < 8));
        }

        #[test]
        fn endo_matches_fixed_window_and_base(b in any::<[u8; 64]>()) {
            let s = Scalar::from_bytes_mod_order_wide(&b);
            let k = to_words(&s);
            let g = Point::generator();
            let p = g.double() + g; // some subgroup point
            let r1 = mul_endo(&p, &k);
            let r2 = mul_fixed_window(&p, &k);
            let r3 = mul_vartime_u256(&p, &k);
            prop_assert_eq!(r1, r2);
            prop_assert_eq!(r1, r3);
            prop_assert_eq!(mul_base(&k), mul_endo(&g, &k));
        }

        #[test]
        fn double_mul_matches(a in any::<[u8; 64]>(), b in any::<[u8; 64]>()) {
            let (sa, sb) = (Scalar::from_bytes_mod_order_wide(&a), Scalar::from_bytes_mod_order_wide(&b));
            let p = mul_base(&to_words(&Scalar::from_u64(12345)));
            let lhs = double_mul_vartime(&to_words(&sa), &p, &to_words(&sb));
            let rhs = mul_base(&to_words(&sa)) + mul_endo(&p, &to_words(&sb));
            prop_assert_eq!(lhs, rhs);
        }
    }

    /// Structural constant-time check: whatever the scalar (zero, one, `N − 1`, single bits,
    /// random), every look-up of the CL15 ladder, the fixed-window reference and the
    /// fixed-base multiplication reads all entries of its table in the same order (the same
    /// number of reads, the same index sequence), so no memory index depends on a digit.
    #[test]
    fn lookups_scan_every_entry_whatever_the_scalar() {
        use super::scan_trace::{Trace, take};
        let p = Point::hash_to_curve(b"scan");
        let mut n1 = ORDER;
        n1[0] -= 1;
        let mut ks: Vec<[u64; 4]> = vec![[0; 4], [1, 0, 0, 0], [2, 0, 0, 0], [15, 0, 0, 0], n1];
        ks.extend((0..246).step_by(7).map(|b| {
            let mut k = [0u64; 4];
            k[b / 64] = 1 << (b % 64);
            k
        }));
        ks.extend((0u8..4).map(|i| {
            to_words(&Scalar::from_bytes_mod_order_wide(
                &[i.wrapping_mul(77) ^ 0x5a; 64],
            ))
        }));
        type Op<'a> = &'a dyn Fn(&[u64; 4]) -> Point;
        let ops: [(&str, Op, u64); 3] = [
            ("mul_endo", &|k| mul_endo(&p, k), 65 * 8),
            ("mul_fixed_window", &|k| mul_fixed_window(&p, k), 64 * 8),
            ("mul_base", &|k| mul_base(k), 64 * 8),
        ];
        init_base_table();
        for (name, op, reads) in ops {
            let traces: Vec<Trace> = ks
                .iter()
                .map(|k| {
                    take();
                    let _ = op(k);
                    take()
                })
                .collect();
            assert_eq!(traces[0].0, reads, "{name}");
            assert_eq!(traces[0].2, 0xff, "{name}");
            for (k, t) in ks.iter().zip(&traces) {
                assert_eq!(*t, traces[0], "{name} with {k:x?}");
            }
        }
    }

    /// The secret-derived scratch types wipe to zero: the recoded scalar and a table of
    /// multiples (as the multiplications do after use).
    #[test]
    fn scratch_tables_wipe_to_zero() {
        let p = Point::generator();
        let mut table = precompute(&p, Portable);
        table.zeroize();
        assert!(table.iter().all(|e| e.to_words() == [0u64; 16]));
        let mut rec = recode_u256(&[u64::MAX, 5, 7, 1 << 60]);
        rec.zeroize();
        assert!(rec.digits.iter().chain(rec.negate.iter()).all(|&x| x == 0));
    }

    #[test]
    fn order_annihilates() {
        let g = Point::generator();
        assert!(mul_endo(&g, &ORDER).is_identity_vartime());
        assert!(mul_fixed_window(&g, &ORDER).is_identity_vartime());
        assert!(mul_base(&ORDER).is_identity_vartime());
        let mut n1 = ORDER;
        n1[0] += 1;
        assert_eq!(mul_endo(&g, &n1), g);
        assert_eq!(mul_base(&[0; 4]), Point::IDENTITY);
        assert_eq!(mul_endo(&g, &[0; 4]), Point::IDENTITY);
    }
}
