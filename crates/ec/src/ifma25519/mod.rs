//! The same-scalar batch of ristretto255 in eight AVX-512 IFMA lanes: `[k]P_i` for one secret
//! scalar `k` and eight points at a time, from Ristretto encodings to Ristretto encodings.
//! (The submodule `ladder` holds the X25519-style group's Montgomery ladder and hash on the
//! same lane field.)
//!
//! Every ECDH-PSI round is one secret scalar times many points. The scalar is recoded once
//! into 64 signed radix-16 digits `k = Σ dᵢ·16^i`, `dᵢ ∈ [−8, 8)`; eight points then run
//! through the same digit sequence side by side, one point per 64-bit lane of each
//! `__m512i` (field elements: [`field::F8`], five registers of eight limbs):
//!
//! * decoding: RFC 9496 §4.3.1 in lanes (one `SQRT_RATIO_M1` per point as an eight-lane
//!   exponentiation), with the canonicity and sign checks of the encoding;
//! * multiplication: a per-lane table `[1..8]·P` in projective Niels form `(Y+X, Y−X, Z,
//!   2dT)`, then for each digit from the top four doublings and one addition, the formulas
//!   of Hisil–Wong–Carter–Dawson ("Twisted Edwards curves revisited", ASIACRYPT 2008, §3.1
//!   and §3.3, `a = −1`) in dalek's completed/projective/extended representation (the same
//!   sequence as dalek's serial `variable_base::mul`);
//! * encoding: `[k]P = [2]([k/2]P)` with dalek's batched double-and-encode formulas in lanes
//!   and one eight-lane inversion per chunk (Montgomery's trick across the groups).
//!
//! Field operations per point (S squarings of 15 IFMA products, M multiplications of 25,
//! each product two IFMA instructions): decoding 257S + 27M (254S + 19M of them the
//! `SQRT_RATIO_M1`); table 64M; 63 digits × (16S + 20M) plus 8M for the top digit and the
//! final conversion; double-and-encode 12S + 17M (the shared inversion amortised over a
//! chunk of 256). Decode + `[k]P` + encode: ≈ 1277S + 1376M ≈ 13 400 IFMA instructions per
//! point. The hash path replaces the decoding by two Elligator maps and their sum
//! (512S + 73M), ≈ 1532S + 1422M.
//!
//! Constant time in the scalar: the digit is the same in all lanes, so the table entry is
//! chosen by scanning all eight entries with a broadcast mask (no index or branch on the
//! digit), and the sign is applied by a masked negation. Decoding and encoding use lane masks
//! (`vpblendmq`) for every data-dependent choice; the only branch is the rejection of a chunk
//! that contains an invalid encoding, which depends on public data.
//!
//! Only compiled with `cfg(obliv_x86_simd)` (x86-64 without `--cfg obliv_portable`). Every
//! kernel function is compiled with the feature set `crate::cpu::ifma25519` (`avx512f`,
//! `avx512dq`, `avx512ifma`) and only entered through an [`Ifma`] token, which exists only
//! after `cpu::ifma25519::detected()` confirmed exactly those features at run time (and that
//! none is switched off by `OBLIV_CPU_DISABLE` or `obliv_cpu::disable`); the callers fall back
//! to curve25519-dalek otherwise. Every output is tested to be byte-identical to dalek's.
#![allow(unsafe_code)]

pub(crate) mod field;
mod ladder;
mod sha512x8;

use core::arch::x86_64::{__mmask8, _mm512_mask_blend_epi64};
use curve25519_dalek::scalar::Scalar;
use field::{
    D_MINUS_ONE_SQ, EDWARDS_D, EDWARDS_D2, F8, INVSQRT_A_MINUS_D, ONE_MINUS_D_SQ,
    SQRT_AD_MINUS_ONE, SQRT_M1, U8,
};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

/// Proof that the running CPU has every feature of `crate::cpu::ifma25519` (`avx512f`,
/// `avx512dq`, `avx512ifma`), none switched off: only [`Ifma::detect`] makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ifma(());

impl Ifma {
    /// `Some` if `cpu::ifma25519::detected()`: the CPU has the features this module's kernels
    /// are compiled with and none is switched off. Asked on every batch call (cheap: cached
    /// CPUID bits and an atomic load), so `obliv_cpu::disable` takes effect at any time.
    pub(crate) fn detect() -> Option<Self> {
        crate::cpu::ifma25519::detected().then_some(Ifma(()))
    }

    /// For each 32-byte Ristretto encoding, decode it, multiply by `k` and write the encoding
    /// of the product.
    ///
    /// Returns `false` (and leaves `out` partly written) if some encoding is not a valid
    /// Ristretto encoding, or is the identity while `reject_identity` is set; the caller then
    /// redoes the chunk on the reference path, which names the offending index.
    /// `out.len()` must equal `encodings.len()` (extra elements of either are ignored).
    pub(crate) fn decode_mul_encode(
        self,
        encodings: &[[u8; 32]],
        k: &Scalar,
        out: &mut [[u8; 32]],
        reject_identity: bool,
    ) -> bool {
        // [k]P = [2]([k/2]P): the doubled points are encoded with one shared inversion.
        let half = Zeroizing::new(k * Scalar::from_bytes_mod_order(INV_TWO));
        let digits = radix16(&half);
        // SAFETY: an `Ifma` value exists only after `cpu::ifma25519::detected()`, which checks
        // every feature the `cpu::ifma25519::enable!` function is compiled with.
        unsafe { decode_mul_encode(encodings, &digits, out, reject_identity) }
    }
}

impl Ifma {
    /// For each 64-byte uniform string `b` (the output of `expand_message_xmd`), the encoding
    /// of `[k]·(E(b[..32]) + E(b[32..]))` with `E` the ristretto255 Elligator map: RFC 9496
    /// §4.3.4 element derivation (dalek's `RistrettoPoint::from_uniform_bytes`) followed by
    /// the multiplication, all in lanes. `out.len()` must equal `uniform.len()`.
    pub(crate) fn uniform_mul_encode(self, uniform: &[[u8; 64]], k: &Scalar, out: &mut [[u8; 32]]) {
        let half = Zeroizing::new(k * Scalar::from_bytes_mod_order(INV_TWO));
        let digits = radix16(&half);
        // SAFETY: an `Ifma` value exists only after `cpu::ifma25519::detected()`, which checks
        // every feature the `cpu::ifma25519::enable!` function is compiled with.
        unsafe { uniform_mul_encode(uniform, &digits, out) }
    }
}

impl Ifma {
    /// For each affine u-coordinate `u(P)` (canonical, non-zero: the caller checks), the
    /// encoding of `u([8t]P)` by the eight-lane Montgomery ladder ([`ladder`]); `t < 2^253`
    /// is given by its little-endian bytes. With `check`, the lanes first test that every `u`
    /// is on the curve (not on the twist) and return `false` if one is not (`out` then partly
    /// written). `out.len()` must equal `us.len()`.
    pub(crate) fn x25519_mul(
        self,
        us: &[[u8; 32]],
        t: &[u8; 32],
        out: &mut [[u8; 32]],
        check: bool,
    ) -> bool {
        // SAFETY: an `Ifma` value exists only after `cpu::ifma25519::detected()`, which checks
        // every feature the `cpu::ifma25519::enable!` function is compiled with.
        unsafe { ladder::mul_u(us, t, out, check) }
    }

    /// For each item's two RFC 9380 `hash_to_field` elements of `curve25519_XMD:SHA-512_ELL2_RO_`
    /// (as limbs below `2^51 + 2^18`), the encoding of `u([k]H)` with `H` the suite's point
    /// (`k < 2^253` by its little-endian bytes): both Elligator 2 maps, the sum, the affine
    /// `u` (one shared inversion) and the ladder on `8k` (which clears the cofactor), all in
    /// lanes. `out.len()` must equal `fe.len()`.
    pub(crate) fn x25519_hash_mul(self, fe: &[[[u64; 5]; 2]], k: &[u8; 32], out: &mut [[u8; 32]]) {
        // SAFETY: an `Ifma` value exists only after `cpu::ifma25519::detected()`, which checks
        // every feature the `cpu::ifma25519::enable!` function is compiled with.
        unsafe { ladder::hash_mul_u(fe, k, out) }
    }
}

/// `2^{-1} mod ℓ`, little-endian: `(ℓ + 1)/2`.
const INV_TWO: [u8; 32] = [
    0xf7, 0xe9, 0x7a, 0x2e, 0x8d, 0x31, 0x09, 0x2c, 0x6b, 0xce, 0x7b, 0x51, 0xef, 0x7c, 0x6f, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08,
];

/// The 64 signed radix-16 digits `dᵢ ∈ [−8, 8)` with `k = Σ dᵢ·16^i` (dalek's
/// `Scalar::as_radix_16`; `k < 2^255` since it is reduced), computed without branches.
pub(crate) fn radix16(k: &Scalar) -> Zeroizing<[i8; 64]> {
    let bytes = Zeroizing::new(k.to_bytes());
    let mut d = Zeroizing::new([0i8; 64]);
    for (i, b) in bytes.iter().enumerate() {
        // Nibbles are below 16: the casts are lossless.
        #[allow(clippy::cast_possible_wrap)]
        {
            d[2 * i] = (b & 15) as i8;
            d[2 * i + 1] = (b >> 4) as i8;
        }
    }
    for i in 0..63 {
        let carry = (d[i] + 8) >> 4;
        d[i] -= carry << 4;
        d[i + 1] += carry;
    }
    d
}

/// Eight points in extended coordinates `(X : Y : Z : T)`, `x = X/Z`, `y = Y/Z`, `XY = ZT`.
#[derive(Clone, Copy)]
struct Ext8 {
    x: F8,
    y: F8,
    z: F8,
    t: F8,
}

// SAFETY: four `F8`, i.e. `__m512i` arrays: all zeros is a valid value.
unsafe impl crate::wipe::ZeroBits for Ext8 {}

/// Eight points in projective coordinates `(X : Y : Z)`.
#[derive(Clone, Copy)]
struct Proj8 {
    x: F8,
    y: F8,
    z: F8,
}

/// Eight points in completed coordinates `((X : Z), (Y : T))`: `x = X/Z`, `y = Y/T`.
#[derive(Clone, Copy)]
struct Completed8 {
    x: F8,
    y: F8,
    z: F8,
    t: F8,
}

/// Eight points in projective Niels form `(Y + X, Y − X, Z, 2d·T)`, ready to be added.
#[derive(Clone, Copy)]
struct Niels8 {
    y_plus_x: F8,
    y_minus_x: F8,
    z: F8,
    t2d: F8,
}

// SAFETY: four `F8`, i.e. `__m512i` arrays: all zeros is a valid value.
unsafe impl crate::wipe::ZeroBits for Niels8 {}

/// The tag of the digit selection in [`crate::scan_trace`].
#[cfg(test)]
const TRACE_TAG: u8 = 2;

impl Ext8 {
    crate::cpu::ifma25519::enable! {
        #[inline]
        fn to_niels(self) -> Niels8 {
            Niels8 {
                y_plus_x: self.y.add(&self.x),
                y_minus_x: self.y.sub(&self.x),
                z: self.z,
                t2d: self.t.mul(&F8::splat(EDWARDS_D2)),
            }
        }

        /// `P + Q` [HWCD08, §3.1, `add-2008-hwcd-3` with `k = 2d`], `Q` in Niels form.
        #[inline]
        fn add_niels(&self, q: &Niels8) -> Completed8 {
            let pp = self.y.add(&self.x).mul_nc(&q.y_plus_x);
            let mm = self.y.sub(&self.x).mul_nc(&q.y_minus_x);
            let tt2d = self.t.mul_nc(&q.t2d);
            let zz = self.z.mul_nc(&q.z);
            Completed8 {
                x: U8::combine(&[&pp], &[&mm]),
                y: U8::combine(&[&pp, &mm], &[]),
                z: U8::combine(&[&zz, &zz, &tt2d], &[]),
                t: U8::combine(&[&zz, &zz], &[&tt2d]),
            }
        }
    }
}

impl Proj8 {
    crate::cpu::ifma25519::enable! {
        /// `2P` [HWCD08, §3.3, `dbl-2008-hwcd`, `a = −1`], into completed coordinates.
        #[inline]
        fn double(&self) -> Completed8 {
            let xx = self.x.square_nc();
            let yy = self.y.square_nc();
            let zz = self.z.square_nc();
            let x_plus_y_sq = self.x.add(&self.y).square_nc();
            Completed8 {
                x: U8::combine(&[&x_plus_y_sq], &[&yy, &xx]),
                y: U8::combine(&[&yy, &xx], &[]),
                z: U8::combine(&[&yy], &[&xx]),
                t: U8::combine(&[&zz, &zz, &xx], &[&yy]),
            }
        }
    }
}

impl Completed8 {
    crate::cpu::ifma25519::enable! {
        #[inline]
        fn to_proj(self) -> Proj8 {
            Proj8 {
                x: self.x.mul(&self.t),
                y: self.y.mul(&self.z),
                z: self.z.mul(&self.t),
            }
        }

        #[inline]
        fn to_ext(self) -> Ext8 {
            Ext8 {
                x: self.x.mul(&self.t),
                y: self.y.mul(&self.z),
                z: self.z.mul(&self.t),
                t: self.x.mul(&self.y),
            }
        }
    }
}

impl Niels8 {
    crate::cpu::ifma25519::enable! {
        #[inline]
        fn identity() -> Self {
            Niels8 {
                y_plus_x: F8::one(),
                y_minus_x: F8::one(),
                z: F8::one(),
                t2d: F8::zero(),
            }
        }

        /// `−P` where `mask` is set: swap `Y + X` and `Y − X`, negate `2dT`.
        #[inline]
        fn cond_neg(&self, mask: __mmask8) -> Self {
            Niels8 {
                y_plus_x: F8::select(&self.y_plus_x, &self.y_minus_x, mask),
                y_minus_x: F8::select(&self.y_minus_x, &self.y_plus_x, mask),
                z: self.z,
                t2d: self.t2d.cond_neg(mask),
            }
        }
    }
}

/// The selection masks of a digit `d ∈ [−8, 8]` that is the same in every lane: `abs[j]` is
/// all-ones iff `|d| = j + 1`, `neg` iff `d < 0` — computed without a branch or an index on
/// `d` (dalek's `LookupTable::select`, with AVX-512 mask registers for `subtle`'s selects).
/// The caller zeroizes them after use.
#[inline]
fn digit_masks(d: i8) -> ([__mmask8; 8], __mmask8) {
    let sign = d >> 7; // −1 or 0
    // |d| ≤ 8: the cast is lossless.
    #[allow(clippy::cast_sign_loss)]
    let abs = (d.wrapping_add(sign) ^ sign) as u8;
    let mut masks = [0u8; 8];
    for (m, j) in masks.iter_mut().zip(1u8..) {
        *m = 0u8.wrapping_sub(abs.ct_eq(&j).unwrap_u8());
    }
    #[allow(clippy::cast_sign_loss)]
    let neg: __mmask8 = 0u8.wrapping_sub((sign as u8) & 1);
    (masks, neg)
}

crate::cpu::ifma25519::enable! {
    /// `[d]P` from the table `[1..8]P` given the masks of `d` ([`digit_masks`]): all eight
    /// entries are read and blended under the broadcast masks (no secret index), then negated
    /// under the sign mask.
    #[inline]
    fn select(table: &[Niels8; 8], masks: &[__mmask8; 8], neg: __mmask8) -> Niels8 {
        // One coordinate at a time over all entries, so that only five accumulators are live
        // (and each mask is loaded into a mask register once per coordinate).
        let scan = |get: fn(&Niels8) -> &F8, init: F8| {
            let mut out = init;
            for (j, (e, &m)) in table.iter().zip(masks.iter()).enumerate() {
                // Test builds trace the entry read; `j` is public (the loop runs to the end).
                #[cfg(test)]
                crate::scan_trace::note(TRACE_TAG, j);
                #[cfg(not(test))]
                let _ = j;
                for (o, l) in out.0.iter_mut().zip(get(e).0) {
                    *o = _mm512_mask_blend_epi64(m, *o, l);
                }
            }
            out
        };
        let id = Niels8::identity();
        let t = Niels8 {
            y_plus_x: scan(|e| &e.y_plus_x, id.y_plus_x),
            y_minus_x: scan(|e| &e.y_minus_x, id.y_minus_x),
            z: scan(|e| &e.z, id.z),
            t2d: scan(|e| &e.t2d, id.t2d),
        };
        t.cond_neg(neg)
    }

    /// `[k]P` in every lane for the digits of `k` (dalek's serial `variable_base::mul`: per
    /// digit from the top, four doublings and one addition of a table entry).
    ///
    /// Per point: table `[1..8]P` 64 multiplications; per digit 20 multiplications and 16
    /// squarings (4 × (4S + 3M) doublings with the last one to extended coordinates, +1M; the
    /// addition 4M and its conversion to projective 3M).
    fn mul8(p: &Ext8, digits: &[i8; 64]) -> Ext8 {
        let mut table = [p.to_niels(); 8];
        for j in 1..8 {
            table[j] = p.add_niels(&table[j - 1]).to_ext().to_niels();
        }
        let identity = Ext8 {
            x: F8::zero(),
            y: F8::one(),
            z: F8::one(),
            t: F8::zero(),
        };
        let (mut masks, mut neg) = digit_masks(digits[63]);
        let mut acc = identity.add_niels(&select(&table, &masks, neg));
        for i in (0..63).rev() {
            let mut q = acc.to_proj();
            q = q.double().to_proj();
            q = q.double().to_proj();
            q = q.double().to_proj();
            let e = q.double().to_ext();
            (masks, neg) = digit_masks(digits[i]);
            acc = e.add_niels(&select(&table, &masks, neg));
        }
        masks.zeroize();
        neg.zeroize();
        // The multiples of P (on the hash paths, of the secret items' points): wiped once per
        // eight-lane multiplication (4 KiB of stores against 64 digit steps).
        crate::wipe::wipe_slice(&mut table);
        acc.to_ext()
    }
}

/// Whether 32 little-endian bytes are below `p = 2^255 − 19` (public data: branches allowed).
fn is_canonical(b: &[u8; 32]) -> bool {
    if b[31] & 0x80 != 0 {
        return false;
    }
    // Values in [p, 2^255): b[31] = 0x7f, b[1..31] all 0xff, b[0] ≥ 0xed.
    !(b[31] == 0x7f && b[1..31].iter().all(|&x| x == 0xff) && b[0] >= 0xed)
}

crate::cpu::ifma25519::enable! {
    /// RFC 9496 §4.3.1 decoding of `N` groups of eight encodings (dalek's
    /// `CompressedRistretto::decompress`), the `N` inverse square roots interleaved: per group the
    /// lanes that hold valid encodings, and the decoded points (meaningless in the others).
    ///
    /// Per point: 3 squarings and 8 multiplications around one `SQRT_RATIO_M1` (254S + 19M).
    #[allow(clippy::needless_range_loop)] // parallel per-group arrays, indexed together
    fn decode_n<const N: usize>(bytes: &[[[u8; 32]; 8]; N]) -> ([__mmask8; N], [Ext8; N]) {
        let one = F8::one();
        let neg_d = F8::splat(EDWARDS_D).neg();
        let mut s = [one; N];
        let mut u1 = [one; N];
        let mut u2 = [one; N];
        let mut v = [one; N];
        let mut vu2 = [one; N];
        for j in 0..N {
            s[j] = F8::from_bytes(&bytes[j]);
            let ss = s[j].square();
            u1[j] = one.sub(&ss);
            u2[j] = one.add(&ss);
            let u2_sqr = u2[j].square();
            v[j] = neg_d.mul(&u1[j].square()).sub(&u2_sqr);
            vu2[j] = v[j].mul(&u2_sqr);
        }
        let (ok, inv) = field::sqrt_ratio_i_n(&[one; N], &vu2);
        let mut valid = [0; N];
        let mut pts = [Ext8 {
            x: one,
            y: one,
            z: one,
            t: one,
        }; N];
        for j in 0..N {
            let mut byte_ok: __mmask8 = 0;
            for (lane, b) in bytes[j].iter().enumerate() {
                // Canonical and non-negative (the low bit of a canonical value is its sign).
                let ok = is_canonical(b) && b[0] & 1 == 0;
                byte_ok |= u8::from(ok) << lane;
            }
            let dx = inv[j].mul(&u2[j]);
            let dy = inv[j].mul(&dx.mul(&v[j]));
            let x = s[j].add(&s[j]).mul(&dx);
            let x = x.cond_neg(x.is_negative());
            let y = u1[j].mul(&dy);
            let t = x.mul(&y);
            valid[j] = byte_ok & ok[j] & !t.is_negative() & !y.is_zero();
            pts[j] = Ext8 { x, y, z: one, t };
        }
        (valid, pts)
    }

    /// RFC 9496 §4.3.2 encoding of eight points (dalek's `RistrettoPoint::compress`); the batch
    /// path uses [`DoubleEncode`] instead, this one checks the decoder in the tests.
    #[cfg(test)]
    fn encode8(p: &Ext8) -> [[u8; 32]; 8] {
        let (x, y, z, t) = (&p.x, &p.y, &p.z, &p.t);
        let u1 = z.add(y).mul(&z.sub(y));
        let u2 = x.mul(y);
        let (_, invsqrt) = F8::sqrt_ratio_i(&F8::one(), &u1.mul(&u2.square()));
        let i1 = invsqrt.mul(&u1);
        let i2 = invsqrt.mul(&u2);
        let z_inv = i1.mul(&i2.mul(t));
        let sqrt_m1 = F8::splat(SQRT_M1);
        let ix = x.mul(&sqrt_m1);
        let iy = y.mul(&sqrt_m1);
        let enchanted = i1.mul(&F8::splat(INVSQRT_A_MINUS_D));
        let rotate = t.mul(&z_inv).is_negative();
        let x = F8::select(x, &iy, rotate);
        let y = F8::select(y, &ix, rotate);
        let den_inv = F8::select(&i2, &enchanted, rotate);
        let y = y.cond_neg(x.mul(&z_inv).is_negative());
        let s = den_inv.mul(&z.sub(&y));
        let s = s.cond_neg(s.is_negative());
        s.to_bytes()
    }
}

/// The per-point state of dalek's `double_and_compress_batch` for `2Q`, `Q = (X : Y : Z : T)`:
/// `e = 2XY`, `f = Z² + dT²`, `g = Y² + X²`, `h = Z² − dT²` (then `2Q = (ef : gh : fg : eh)`
/// up to the Ristretto coset choices), with `eg`, `fh` kept for the shared inversion of
/// `efgh` ("Ristretto: double-and-encode", ristretto.group §"Batched double-and-encode").
struct DoubleEncode {
    e: F8,
    f: F8,
    g: F8,
    h: F8,
    eg: F8,
    fh: F8,
    /// `efgh`, with 1 in the lanes where it is 0 (so that one such lane does not spoil the
    /// shared inversion of the others).
    factor: F8,
    /// Lanes where `efgh = 0`: `Q` in the 4-torsion, i.e. `2Q` is the identity (encoding 0).
    zero: __mmask8,
}

impl DoubleEncode {
    crate::cpu::ifma25519::enable! {
        /// 4 squarings and 5 multiplications per point.
        fn new(q: &Ext8) -> Self {
            let xx = q.x.square();
            let yy = q.y.square();
            let zz = q.z.square();
            let dtt = q.t.square().mul(&F8::splat(EDWARDS_D));
            let e = q.x.mul(&q.y.add(&q.y));
            let f = zz.add(&dtt);
            let g = yy.add(&xx);
            let h = zz.sub(&dtt);
            let eg = e.mul(&g);
            let fh = f.mul(&h);
            let efgh = eg.mul(&fh);
            let zero = efgh.is_zero();
            DoubleEncode {
                e,
                f,
                g,
                h,
                eg,
                fh,
                factor: F8::select(&efgh, &F8::one(), zero),
                zero,
            }
        }

        /// The encodings of `2Q` given `inv = 1/efgh` (dalek's `double_and_compress_batch`;
        /// 10 multiplications per point).
        fn finish(&self, inv: &F8) -> [[u8; 32]; 8] {
            let z_inv = self.eg.mul(inv);
            let t_inv = self.fh.mul(inv);
            let sqrt_m1 = F8::splat(SQRT_M1);
            let negcheck1 = self.eg.mul(&z_inv).is_negative();
            let e = F8::select(&self.e, &self.g, negcheck1);
            let g = F8::select(&self.g, &self.e.neg(), negcheck1);
            let h = F8::select(&self.h, &self.f.mul(&sqrt_m1), negcheck1);
            let magic = F8::select(&F8::splat(INVSQRT_A_MINUS_D), &sqrt_m1, negcheck1);
            let negcheck2 = h.mul(&e).mul(&z_inv).is_negative();
            let g = g.cond_neg(negcheck2);
            let s = h.sub(&g).mul(&magic.mul(&g.mul(&t_inv)));
            let s = s.cond_neg(s.is_negative());
            F8::select(&s, &F8::zero(), self.zero).to_bytes()
        }
    }
}

crate::cpu::ifma25519::enable! {
    /// The body of [`Ifma::decode_mul_encode`], with the digits of `k/2`: per group of eight,
    /// decode and `Q = [k/2]P`; then the encodings of `2Q = [k]P` for the whole slice with one
    /// eight-lane inversion (Montgomery's trick across the groups).
    fn decode_mul_encode(
        encodings: &[[u8; 32]],
        half_digits: &[i8; 64],
        out: &mut [[u8; 32]],
        reject_identity: bool,
    ) -> bool {
        // Padding lanes hold the generator (a valid, non-identity encoding); their results are
        // dropped.
        let pad = curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes();
        let mut states = Vec::with_capacity(encodings.len().div_ceil(8));
        for chunk in encodings.chunks(8) {
            let mut lanes = [pad; 8];
            lanes[..chunk.len()].copy_from_slice(chunk);
            let (valid, p) = decode_n(&[lanes]);
            let mut valid = valid[0];
            if reject_identity {
                for (lane, b) in lanes.iter().enumerate() {
                    valid &= !(u8::from(*b == [0u8; 32]) << lane);
                }
            }
            if valid != 0xff {
                return false;
            }
            states.push(DoubleEncode::new(&mul8(&p[0], half_digits)));
        }
        encode_doubled(&states, out);
        true
    }

    /// Ristretto255 element derivation in lanes (RFC 9496 §4.3.4; dalek's `from_uniform_bytes`),
    /// then `Q = [k/2]H`, then the batched encoding of `2Q`.
    fn uniform_mul_encode(uniform: &[[u8; 64]], half_digits: &[i8; 64], out: &mut [[u8; 32]]) {
        let mut states = Vec::with_capacity(uniform.len().div_ceil(8));
        // The items' uniform bytes and their points `H`, wiped once per call (after the last
        // group; each group overwrites the previous one's).
        let mut r1 = [[0u8; 32]; 8];
        let mut r2 = [[0u8; 32]; 8];
        let zero = F8::zero();
        let mut h = Ext8 {
            x: zero,
            y: zero,
            z: zero,
            t: zero,
        };
        let mut m = [h; 2];
        for chunk in uniform.chunks(8) {
            for (lane, b) in chunk.iter().enumerate() {
                r1[lane].copy_from_slice(&b[..32]);
                r2[lane].copy_from_slice(&b[32..]);
            }
            // The lanes past a partial last group hold zeros (their results are dropped).
            r1[chunk.len()..].fill([0u8; 32]);
            r2[chunk.len()..].fill([0u8; 32]);
            m = elligator_n(&[F8::from_bytes(&r1), F8::from_bytes(&r2)]);
            h = m[0].add_niels(&m[1].to_niels()).to_ext();
            states.push(DoubleEncode::new(&mul8(&h, half_digits)));
        }
        zeroize::Zeroize::zeroize(&mut r1);
        zeroize::Zeroize::zeroize(&mut r2);
        crate::wipe::wipe_slice(&mut m);
        crate::wipe::wipe(&mut h);
        encode_doubled(&states, out);
    }

    /// The ristretto255 Elligator map on `N` vectors of eight field elements (RFC 9496 §4.3.4
    /// `MAP`; dalek's `elligator_ristretto_flavor`), constant time: one `SQRT_RATIO_M1` per lane
    /// (the `N` exponentiations interleaved) and masked selects.
    ///
    /// Per map: 2 squarings and 9 multiplications around the `SQRT_RATIO_M1`, and the 4
    /// multiplications of the conversion to extended coordinates.
    #[allow(clippy::needless_range_loop)] // parallel per-group arrays, indexed together
    fn elligator_n<const N: usize>(r0: &[F8; N]) -> [Ext8; N] {
        let one = F8::one();
        let d = F8::splat(EDWARDS_D);
        let mut r = [one; N];
        let mut n_s = [one; N];
        let mut den = [one; N];
        for j in 0..N {
            r[j] = F8::splat(SQRT_M1).mul(&r0[j].square());
            n_s[j] = r[j].add(&one).mul(&F8::splat(ONE_MINUS_D_SQ));
            den[j] = one.neg().sub(&d.mul(&r[j])).mul(&r[j].add(&d));
        }
        let (ns_d_is_sq, s) = field::sqrt_ratio_i_n(&n_s, &den);
        let mut out = [Ext8 {
            x: one,
            y: one,
            z: one,
            t: one,
        }; N];
        for j in 0..N {
            let s_prime = s[j].mul(&r0[j]);
            let s_prime = s_prime.cond_neg(!s_prime.is_negative());
            let sj = F8::select(&s[j], &s_prime, !ns_d_is_sq[j]);
            let c = F8::select(&one.neg(), &r[j], !ns_d_is_sq[j]);
            let n_t = c
                .mul(&r[j].sub(&one))
                .mul(&F8::splat(D_MINUS_ONE_SQ))
                .sub(&den[j]);
            let s_sq = sj.square();
            out[j] = Completed8 {
                x: sj.add(&sj).mul(&den[j]),
                z: n_t.mul(&F8::splat(SQRT_AD_MINUS_ONE)),
                y: one.sub(&s_sq),
                t: one.add(&s_sq),
            }
            .to_ext();
        }
        out
    }

    /// Writes the encodings of `2Q` for every group of [`DoubleEncode`] states (eight points
    /// each, the last one possibly partial in `out`), with one eight-lane inversion for all.
    fn encode_doubled(states: &[DoubleEncode], out: &mut [[u8; 32]]) {
        // Montgomery's trick, lane by lane: prefix products, one inversion, back.
        let mut prefix = Vec::with_capacity(states.len());
        let mut acc = F8::one();
        for st in states {
            prefix.push(acc);
            acc = acc.mul(&st.factor);
        }
        let mut inv = acc.invert();
        for (i, st) in states.iter().enumerate().rev() {
            let enc = st.finish(&inv.mul(&prefix[i]));
            inv = inv.mul(&st.factor);
            let (start, end) = (8 * i, (8 * i + 8).min(out.len()));
            if start < end {
                out[start..end].copy_from_slice(&enc[..end - start]);
            }
        }
    }
}

/// For the lanes' tests: the token, or `None` after printing that `test` is skipped because
/// this CPU lacks a feature of `cpu::ifma25519` or one is switched off (`OBLIV_CPU_DISABLE`).
#[cfg(test)]
pub(crate) fn lanes_for_test(test: &str) -> Option<Ifma> {
    let t = Ifma::detect();
    if t.is_none() {
        eprintln!(
            "{test}: skipped, the AVX-512 IFMA lanes ({}) are not available here \
             (missing on this CPU or switched off by OBLIV_CPU_DISABLE)",
            crate::cpu::ifma25519::FEATURES.join(", ")
        );
    }
    t
}

#[cfg(test)]
mod tests;
