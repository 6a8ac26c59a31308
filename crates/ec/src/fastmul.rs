//! The same-scalar batch multiplication for the `a = −3` curves P-256 and SM2: constant-time
//! Montgomery field arithmetic on 4 × 64-bit limbs, the complete projective formulas of
//! Renes–Costello–Batina (RCB16, Algorithms 4 and 6) for the table and the additions, runs of
//! four Jacobian doublings (`dbl-2001-b`) between the windows of a fixed 4-bit window, with
//! the scalar recoded once for the whole chunk and the outputs normalised with one shared
//! inversion. Public exponents (inversion, square roots) use a fixed 4-bit window too.
//!
//! Why: the `p256`/`sm2` crates' generic field arithmetic costs several times more per
//! multiplication than this module's (the `ec` bench measures both), and the batch
//! path of ECDH-PSI is nothing but `[k]P` for one `k` and many `P`. The crates remain the
//! reference: every output of this module is checked against their `mul` in the tests.
//!
//! Constant time: no branch or index depends on the scalar or on the points; the table is
//! read by scanning all 16 entries with `subtle` selects; reductions use masks.
//!
//! RCB16: J. Renes, C. Costello, L. Batina, "Complete addition formulas for prime order
//! elliptic curves", EUROCRYPT 2016, <https://eprint.iacr.org/2015/1060>.

// Limb arithmetic: u128 products are split into their u64 halves on purpose.
#![allow(clippy::cast_possible_truncation)]

use core::marker::PhantomData;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

/// Parameters of a prime field `GF(p)`, `p < 2^256`, and of the curve `y² = x³ − 3x + b`.
pub(crate) trait Params: Copy + Send + Sync + 'static {
    /// `p`, little-endian limbs.
    const P: [u64; 4];
    /// `−p^{-1} mod 2^64`.
    const INV: u64;
    /// `R² mod p`, `R = 2^256`.
    const R2: [u64; 4];
    /// `R mod p` (one in Montgomery form).
    const ONE: [u64; 4];
    /// `b·R mod p`.
    const B: [u64; 4];
    /// `|Z|` of the SSWU map, `Z = −Z_NEG` (RFC 9380 §6.6.2, App. H.2).
    const Z_NEG: u64;
    /// `c1 = (p − 3)/4`, little-endian limbs (the public exponent of `sqrt_ratio`).
    const C1: [u64; 4];
    /// `c2 = sqrt(−Z)`, big-endian bytes.
    const C2: [u8; 32];
    /// The group order `n` (prime), little-endian limbs (for the eight-lane kernel's recoding).
    #[cfg(obliv_x86_simd)]
    const N: [u64; 4];
    /// `true` for a curve `y² = x³ + b` (`a = 0`, secp256k1), whose points only the
    /// eight-lane kernel (`ifma_weierstrass`) handles: the formulas and the map to the curve of
    /// this module are for `a = −3` and must not be used with it; `Z_NEG`, `C2` then describe
    /// the SSWU map of the isogenous curve (RFC 9380 §8.7).
    #[cfg(obliv_x86_simd)]
    const A_IS_ZERO: bool = false;
}

/// secp256k1 (SEC 2), for the field arithmetic and the eight-lane kernel only (`a = 0`).
#[cfg(obliv_x86_simd)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Secp256k1Params;
#[cfg(obliv_x86_simd)]
impl Params for Secp256k1Params {
    const P: [u64; 4] = [
        0xfffffffefffffc2f,
        0xffffffffffffffff,
        0xffffffffffffffff,
        0xffffffffffffffff,
    ];
    const INV: u64 = 0xd838091dd2253531;
    const R2: [u64; 4] = [0x7a2000e90a1, 0x1, 0x0, 0x0];
    const ONE: [u64; 4] = [0x1000003d1, 0x0, 0x0, 0x0];
    /// `7·R mod p`.
    const B: [u64; 4] = [0x700001ab7, 0x0, 0x0, 0x0];
    const Z_NEG: u64 = 11;
    const C1: [u64; 4] = [
        0xffffffffbfffff0b,
        0xffffffffffffffff,
        0xffffffffffffffff,
        0x3fffffffffffffff,
    ];
    const C2: [u8; 32] = [
        0x31, 0xfd, 0xf3, 0x02, 0x72, 0x40, 0x13, 0xe5, 0x7a, 0xd1, 0x3f, 0xb3, 0x8f, 0x84, 0x2a,
        0xfe, 0xec, 0x18, 0x4f, 0x00, 0xa7, 0x47, 0x89, 0xdd, 0x28, 0x67, 0x29, 0xc8, 0x30, 0x3c,
        0x4a, 0x59,
    ];
    #[cfg(obliv_x86_simd)]
    const N: [u64; 4] = [
        0xbfd25e8cd0364141,
        0xbaaedce6af48a03b,
        0xfffffffffffffffe,
        0xffffffffffffffff,
    ];
    #[cfg(obliv_x86_simd)]
    const A_IS_ZERO: bool = true;
}

/// NIST P-256.
#[derive(Clone, Copy, Debug)]
pub(crate) struct P256Params;
impl Params for P256Params {
    const P: [u64; 4] = [0xffffffffffffffff, 0xffffffff, 0x0, 0xffffffff00000001];
    const INV: u64 = 1;
    const R2: [u64; 4] = [0x3, 0xfffffffbffffffff, 0xfffffffffffffffe, 0x4fffffffd];
    const ONE: [u64; 4] = [0x1, 0xffffffff00000000, 0xffffffffffffffff, 0xfffffffe];
    const B: [u64; 4] = [
        0xd89cdf6229c4bddf,
        0xacf005cd78843090,
        0xe5a220abf7212ed6,
        0xdc30061d04874834,
    ];
    const Z_NEG: u64 = 10;
    const C1: [u64; 4] = [
        0xffffffffffffffff,
        0x3fffffff,
        0x4000000000000000,
        0x3fffffffc0000000,
    ];
    const C2: [u8; 32] = [
        0xda, 0x53, 0x8e, 0x3b, 0xe1, 0xd8, 0x9b, 0x99, 0xc9, 0x78, 0xfc, 0x67, 0x51, 0x80, 0xaa,
        0xb2, 0x7b, 0x8d, 0x1f, 0xf8, 0x4c, 0x55, 0xd5, 0xb6, 0x2c, 0xcd, 0x34, 0x27, 0xe4, 0x33,
        0xc4, 0x7f,
    ];
    #[cfg(obliv_x86_simd)]
    const N: [u64; 4] = [
        0xf3b9cac2fc632551,
        0xbce6faada7179e84,
        0xffffffffffffffff,
        0xffffffff00000000,
    ];
}

/// SM2 (GB/T 32918.5).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sm2Params;
impl Params for Sm2Params {
    const P: [u64; 4] = [
        0xffffffffffffffff,
        0xffffffff00000000,
        0xffffffffffffffff,
        0xfffffffeffffffff,
    ];
    const INV: u64 = 1;
    const R2: [u64; 4] = [0x200000003, 0x2ffffffff, 0x100000001, 0x400000002];
    const ONE: [u64; 4] = [0x1, 0xffffffff, 0x0, 0x100000000];
    const B: [u64; 4] = [
        0x90d230632bc0dd42,
        0x71cf379ae9b537ab,
        0x527981505ea51c3c,
        0x240fe188ba20e2c8,
    ];
    const Z_NEG: u64 = 9;
    const C1: [u64; 4] = [
        0x3fffffffffffffff,
        0xffffffffc0000000,
        0xffffffffffffffff,
        0x3fffffffbfffffff,
    ];
    const C2: [u8; 32] = {
        let mut c = [0u8; 32];
        c[31] = 3;
        c
    };
    #[cfg(obliv_x86_simd)]
    const N: [u64; 4] = [
        0x53bbf40939d54123,
        0x7203df6b21c6052b,
        0xffffffffffffffff,
        0xfffffffeffffffff,
    ];
}

/// Big-endian affine coordinates `(x, y)` of a point, `None` for the identity.
pub(crate) type AffineXy = Option<([u8; 32], [u8; 32])>;

/// An element of `GF(p)` in Montgomery form, fully reduced (`< p`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fe<C: Params>([u64; 4], PhantomData<C>);

#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = u128::from(a) + u128::from(b) + u128::from(carry);
    (t as u64, (t >> 64) as u64)
}

#[inline(always)]
fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let t = u128::from(a)
        .wrapping_sub(u128::from(b))
        .wrapping_sub(u128::from(borrow));
    (t as u64, (t >> 127) as u64)
}

#[inline(always)]
fn mac(acc: u64, a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = u128::from(acc) + u128::from(a) * u128::from(b) + u128::from(carry);
    (t as u64, (t >> 64) as u64)
}

/// `x − p` if `x ≥ p` (with `hi` the bit above the 256 limbs), else `x`; constant time.
#[inline(always)]
fn reduce_once<C: Params>(x: [u64; 4], hi: u64) -> [u64; 4] {
    let p = C::P;
    let (r0, b) = sbb(x[0], p[0], 0);
    let (r1, b) = sbb(x[1], p[1], b);
    let (r2, b) = sbb(x[2], p[2], b);
    let (r3, b) = sbb(x[3], p[3], b);
    let (_, b) = sbb(hi, 0, b);
    // b = 1 iff x < p: keep x.
    let keep = b.wrapping_neg();
    [
        (x[0] & keep) | (r0 & !keep),
        (x[1] & keep) | (r1 & !keep),
        (x[2] & keep) | (r2 & !keep),
        (x[3] & keep) | (r3 & !keep),
    ]
}

/// The Montgomery square `a²·R^{-1} mod p` of `a < p`, fully reduced: the 512-bit square
/// from 10 products (the cross products `a_i·a_j`, `i < j`, once and doubled, plus the four
/// `a_i²`) instead of 16, then four Montgomery reduction steps.
#[inline(always)]
fn portable_square<C: Params>(a: &[u64; 4]) -> [u64; 4] {
    // Cross products into t1..t6.
    let (t1, c) = mac(0, a[0], a[1], 0);
    let (t2, c) = mac(0, a[0], a[2], c);
    let (t3, t4) = mac(0, a[0], a[3], c);
    let (t3, c) = mac(t3, a[1], a[2], 0);
    let (t4, t5) = mac(t4, a[1], a[3], c);
    let (t5, t6) = mac(t5, a[2], a[3], 0);
    // Doubled (the cross sum is below 2^447: t7 takes the top bit of t6).
    let t7 = t6 >> 63;
    let t6 = (t6 << 1) | (t5 >> 63);
    let t5 = (t5 << 1) | (t4 >> 63);
    let t4 = (t4 << 1) | (t3 >> 63);
    let t3 = (t3 << 1) | (t2 >> 63);
    let t2 = (t2 << 1) | (t1 >> 63);
    let t1 = t1 << 1;
    // Plus the squares a_i² at limbs 2i, 2i + 1.
    let (t0, hi) = mac(0, a[0], a[0], 0);
    let (t1, c) = adc(t1, hi, 0);
    let (lo, hi) = mac(0, a[1], a[1], 0);
    let (t2, c) = adc(t2, lo, c);
    let (t3, c) = adc(t3, hi, c);
    let (lo, hi) = mac(0, a[2], a[2], 0);
    let (t4, c) = adc(t4, lo, c);
    let (t5, c) = adc(t5, hi, c);
    let (lo, hi) = mac(0, a[3], a[3], 0);
    let (t6, c) = adc(t6, lo, c);
    let (t7, _) = adc(t7, hi, c);
    // Montgomery reduction: t += m_i·p·2^{64i}, i = 0..4; the carry out of limb i + 4 is
    // kept for the next step (the value stays below 2p·2^256 for a < p).
    let mut t = [t0, t1, t2, t3, t4, t5, t6, t7];
    let p = &C::P;
    let mut top = 0;
    for i in 0..4 {
        let m = t[i].wrapping_mul(C::INV);
        let (_, mut c) = mac(t[i], m, p[0], 0);
        for j in 1..4 {
            (t[i + j], c) = mac(t[i + j], m, p[j], c);
        }
        (t[i + 4], top) = adc(t[i + 4], c, top);
    }
    reduce_once::<C>([t[4], t[5], t[6], t[7]], top)
}

/// The portable Montgomery product `a·b·R^{-1} mod p` (CIOS on `u128` products), fully
/// reduced; `a, b < p`.
#[inline(always)]
fn portable_mul<C: Params>(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let p = &C::P;
    let mut t = [0u64; 6];
    for &bi in b {
        let mut c = 0;
        for j in 0..4 {
            (t[j], c) = mac(t[j], a[j], bi, c);
        }
        let (s, c2) = adc(t[4], c, 0);
        t[4] = s;
        t[5] = c2;
        let m = t[0].wrapping_mul(C::INV);
        let (_, mut c) = mac(t[0], m, p[0], 0);
        for j in 1..4 {
            (t[j - 1], c) = mac(t[j], m, p[j], c);
        }
        let (s, c2) = adc(t[4], c, 0);
        t[3] = s;
        t[4] = t[5] + c2;
    }
    reduce_once::<C>([t[0], t[1], t[2], t[3]], t[4])
}

impl<C: Params> Fe<C> {
    pub(crate) const ZERO: Self = Fe([0; 4], PhantomData);
    pub(crate) const ONE: Self = Fe(C::ONE, PhantomData);

    pub(crate) fn b() -> Self {
        Fe(C::B, PhantomData)
    }

    /// Montgomery product `a·b·R^{-1} mod p`, with the backend of `C`.
    #[inline(always)]
    pub(crate) fn mul(&self, rhs: &Self) -> Self {
        Fe(portable_mul::<C>(&self.0, &rhs.0), PhantomData)
    }

    /// Montgomery square: the six cross products once, doubled, then a separate reduction.
    #[inline(always)]
    pub(crate) fn square(&self) -> Self {
        Fe(portable_square::<C>(&self.0), PhantomData)
    }

    #[inline(always)]
    pub(crate) fn add(&self, rhs: &Self) -> Self {
        let (a, b) = (&self.0, &rhs.0);
        let (r0, c) = adc(a[0], b[0], 0);
        let (r1, c) = adc(a[1], b[1], c);
        let (r2, c) = adc(a[2], b[2], c);
        let (r3, c) = adc(a[3], b[3], c);
        Fe(reduce_once::<C>([r0, r1, r2, r3], c), PhantomData)
    }

    #[inline(always)]
    pub(crate) fn sub(&self, rhs: &Self) -> Self {
        let (a, b, p) = (&self.0, &rhs.0, &C::P);
        let (r0, bw) = sbb(a[0], b[0], 0);
        let (r1, bw) = sbb(a[1], b[1], bw);
        let (r2, bw) = sbb(a[2], b[2], bw);
        let (r3, bw) = sbb(a[3], b[3], bw);
        // Add p back if it borrowed.
        let m = bw.wrapping_neg();
        let (r0, c) = adc(r0, p[0] & m, 0);
        let (r1, c) = adc(r1, p[1] & m, c);
        let (r2, c) = adc(r2, p[2] & m, c);
        let (r3, _) = adc(r3, p[3] & m, c);
        Fe([r0, r1, r2, r3], PhantomData)
    }

    #[inline(always)]
    fn double(&self) -> Self {
        self.add(self)
    }

    /// From 32 big-endian bytes; `None` if not below `p`.
    pub(crate) fn from_be_bytes(bytes: &[u8]) -> Option<Self> {
        let mut l = [0u64; 4];
        for (i, limb) in l.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[32 - 8 * (i + 1)..32 - 8 * i]);
            *limb = u64::from_be_bytes(w);
        }
        // Canonical iff x − p borrows.
        let p = C::P;
        let (_, b) = sbb(l[0], p[0], 0);
        let (_, b) = sbb(l[1], p[1], b);
        let (_, b) = sbb(l[2], p[2], b);
        let (_, b) = sbb(l[3], p[3], b);
        if b == 0 {
            return None;
        }
        Some(Fe(l, PhantomData).mul(&Fe(C::R2, PhantomData)))
    }

    /// To 32 big-endian bytes (out of Montgomery form).
    pub(crate) fn to_be_bytes(self) -> [u8; 32] {
        let n = self.mul(&Fe([1, 0, 0, 0], PhantomData)).0;
        let mut out = [0u8; 32];
        for (i, limb) in n.iter().enumerate() {
            out[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
        }
        out
    }

    /// The canonical plain value, little-endian limbs (the eight-lane kernel's input).
    #[cfg(obliv_x86_simd)]
    pub(crate) fn to_le_limbs(self) -> [u64; 4] {
        self.mul(&Fe([1, 0, 0, 0], PhantomData)).0
    }

    /// `self^(p−2) = self^{-1}` (0 maps to 0); the exponent is public.
    pub(crate) fn invert(&self) -> Self {
        let mut e = C::P;
        e[0] -= 2; // p is odd and > 2: no borrow.
        self.pow_public(&e)
    }

    /// A small constant.
    fn from_u64(v: u64) -> Self {
        Fe([v, 0, 0, 0], PhantomData).mul(&Fe(C::R2, PhantomData))
    }

    pub(crate) fn neg(&self) -> Self {
        Self::ZERO.sub(self)
    }

    /// `self^e` for a public exponent `e` (little-endian limbs): a fixed 4-bit window over
    /// `self^0..self^15` (252 squarings and at most 64 + 14 multiplications). Which products
    /// are taken depends on `e` only, never on `self`.
    fn pow_public(&self, e: &[u64; 4]) -> Self {
        let mut table = [Self::ONE; 16];
        table[1] = *self;
        for i in 2..16 {
            table[i] = table[i - 1].mul(self);
        }
        let mut r = Self::ONE;
        for i in (0..64).rev() {
            if i != 63 {
                r = r.square().square().square().square();
            }
            // The digit is below 16: the cast is lossless.
            let d = ((e[i / 16] >> (4 * (i % 16))) & 0xf) as usize;
            if d != 0 {
                r = r.mul(&table[d]);
            }
        }
        r
    }

    /// `sgn0` of RFC 9380 §4.1 (`m = 1`): parity of the canonical representative.
    fn sgn0(&self) -> Choice {
        Choice::from(self.to_be_bytes()[31] & 1)
    }

    fn ct_eq(&self, other: &Self) -> Choice {
        self.0[0].ct_eq(&other.0[0])
            & self.0[1].ct_eq(&other.0[1])
            & self.0[2].ct_eq(&other.0[2])
            & self.0[3].ct_eq(&other.0[3])
    }

    /// `OS2IP(bytes) mod p` for 48 big-endian bytes: `d0·2^192 + d1`, `d0, d1 < 2^192 < p`.
    pub(crate) fn reduce_be48(bytes: &[u8]) -> Self {
        let load = |part: &[u8]| {
            let mut b = [0u8; 32];
            b[8..].copy_from_slice(part);
            // Below 2^192 < p: canonical.
            Self::from_be_bytes(&b).unwrap_or(Self::ZERO)
        };
        let mut two192 = [0u8; 32];
        two192[7] = 1;
        let two192 = Self::from_be_bytes(&two192).unwrap_or(Self::ZERO);
        load(&bytes[..24]).mul(&two192).add(&load(&bytes[24..48]))
    }

    fn is_zero(&self) -> Choice {
        (self.0[0] | self.0[1] | self.0[2] | self.0[3]).ct_eq(&0)
    }
}

impl<C: Params> ConditionallySelectable for Fe<C> {
    fn conditional_select(a: &Self, b: &Self, choice: Choice) -> Self {
        Fe(
            [
                u64::conditional_select(&a.0[0], &b.0[0], choice),
                u64::conditional_select(&a.0[1], &b.0[1], choice),
                u64::conditional_select(&a.0[2], &b.0[2], choice),
                u64::conditional_select(&a.0[3], &b.0[3], choice),
            ],
            PhantomData,
        )
    }
}

/// A point in homogeneous projective coordinates `(X : Y : Z)`, `x = X/Z`, `y = Y/Z`;
/// the identity is `(0 : 1 : 0)`.
#[derive(Clone, Copy, Debug)]
struct Point<C: Params> {
    x: Fe<C>,
    y: Fe<C>,
    z: Fe<C>,
}

impl<C: Params> ConditionallySelectable for Point<C> {
    fn conditional_select(a: &Self, b: &Self, choice: Choice) -> Self {
        Point {
            x: Fe::conditional_select(&a.x, &b.x, choice),
            y: Fe::conditional_select(&a.y, &b.y, choice),
            z: Fe::conditional_select(&a.z, &b.z, choice),
        }
    }
}

impl<C: Params> Point<C> {
    const IDENTITY: Self = Point {
        x: Fe::ZERO,
        y: Fe::ONE,
        z: Fe::ZERO,
    };

    /// Complete addition (RCB16, Algorithm 4) (`a = −3`).
    fn add(&self, rhs: &Self) -> Self {
        let b = Fe::<C>::b();
        let xx = self.x.mul(&rhs.x);
        let yy = self.y.mul(&rhs.y);
        let zz = self.z.mul(&rhs.z);
        let xy_pairs = self
            .x
            .add(&self.y)
            .mul(&rhs.x.add(&rhs.y))
            .sub(&xx.add(&yy));
        let yz_pairs = self
            .y
            .add(&self.z)
            .mul(&rhs.y.add(&rhs.z))
            .sub(&yy.add(&zz));
        let xz_pairs = self
            .x
            .add(&self.z)
            .mul(&rhs.x.add(&rhs.z))
            .sub(&xx.add(&zz));
        let bzz_part = xz_pairs.sub(&b.mul(&zz));
        let bzz3_part = bzz_part.double().add(&bzz_part);
        let yy_m_bzz3 = yy.sub(&bzz3_part);
        let yy_p_bzz3 = yy.add(&bzz3_part);
        let zz3 = zz.double().add(&zz);
        let bxz_part = b.mul(&xz_pairs).sub(&zz3.add(&xx));
        let bxz3_part = bxz_part.double().add(&bxz_part);
        let xx3_m_zz3 = xx.double().add(&xx).sub(&zz3);
        Point {
            x: yy_p_bzz3.mul(&xy_pairs).sub(&yz_pairs.mul(&bxz3_part)),
            y: yy_p_bzz3.mul(&yy_m_bzz3).add(&xx3_m_zz3.mul(&bxz3_part)),
            z: yy_m_bzz3.mul(&yz_pairs).add(&xy_pairs.mul(&xx3_m_zz3)),
        }
    }

    /// Exception-free doubling (RCB16, Algorithm 6) (`a = −3`).
    fn double(&self) -> Self {
        let b = Fe::<C>::b();
        let xx = self.x.square();
        let yy = self.y.square();
        let zz = self.z.square();
        let xy2 = self.x.mul(&self.y).double();
        let xz2 = self.x.mul(&self.z).double();
        let bzz_part = b.mul(&zz).sub(&xz2);
        let bzz3_part = bzz_part.double().add(&bzz_part);
        let yy_m_bzz3 = yy.sub(&bzz3_part);
        let yy_p_bzz3 = yy.add(&bzz3_part);
        let y_frag = yy_p_bzz3.mul(&yy_m_bzz3);
        let x_frag = yy_m_bzz3.mul(&xy2);
        let zz3 = zz.double().add(&zz);
        let bxz2_part = b.mul(&xz2).sub(&zz3.add(&xx));
        let bxz6_part = bxz2_part.double().add(&bxz2_part);
        let xx3_m_zz3 = xx.double().add(&xx).sub(&zz3);
        let y = y_frag.add(&xx3_m_zz3.mul(&bxz6_part));
        let yz2 = self.y.mul(&self.z).double();
        let x = x_frag.sub(&bxz6_part.mul(&yz2));
        let z = yz2.mul(&yy).double().double();
        Point { x, y, z }
    }

    /// `[32]P`: five Jacobian doublings (`dbl-2001-b`, `a = −3`: 3M + 5S each, against
    /// 8M + 3S and two multiplications by `b` for RCB16's Algorithm 6), entered and left by a
    /// change of coordinates (2M + 1S each way).
    ///
    /// `(X : Y : Z)` is the Jacobian point `(XZ, YZ², Z)`, and Jacobian `(X, Y, Z)` the
    /// projective `(XZ : Y : Z³)`. The identity (`Z = 0`) is first replaced by the Jacobian
    /// `(1, 1, 0)`, which `dbl-2001-b` maps to itself and which leaves as `(0 : 1 : 0)`; the
    /// replacement is a masked select. No other input is exceptional: the group has prime
    /// order, so no point has `Y = 0`.
    fn double5(&self) -> Self {
        let zz = self.z.square();
        let inf = self.z.is_zero();
        let mut x = Fe::conditional_select(&self.x.mul(&self.z), &Fe::ONE, inf);
        let mut y = Fe::conditional_select(&self.y.mul(&zz), &Fe::ONE, inf);
        let mut z = self.z;
        for _ in 0..WINDOW {
            let delta = z.square();
            let gamma = y.square();
            let beta = x.mul(&gamma);
            let alpha = x.sub(&delta).mul(&x.add(&delta));
            let alpha = alpha.double().add(&alpha);
            let beta4 = beta.double().double();
            let x3 = alpha.square().sub(&beta4.double());
            let z3 = y.add(&z).square().sub(&gamma).sub(&delta);
            let gamma2_8 = gamma.square().double().double().double();
            let y3 = alpha.mul(&beta4.sub(&x3)).sub(&gamma2_8);
            (x, y, z) = (x3, y3, z3);
        }
        let zz = z.square();
        Point {
            x: x.mul(&z),
            y,
            z: zz.mul(&z),
        }
    }

    /// `[k]P` for the scalar given as its signed radix-32 digits ([`recode`]): a table of
    /// `[1]P … [16]P`, read by a full masked scan for `|d|` and negated by a masked select when
    /// `d < 0` (`d = 0` matches no entry and adds the identity), with [`Self::double5`]
    /// between the digits.
    fn mul_digits(&self, digits: &Digits) -> Self {
        let mut table = [*self; 16];
        for j in 1..16 {
            // table[j] = [j + 1]P: a doubling of an earlier entry where j + 1 is even.
            table[j] = if j % 2 == 1 {
                table[j / 2].double()
            } else {
                table[j - 1].add(self)
            };
        }
        let mut acc = Self::IDENTITY;
        for (i, &d) in digits.iter().enumerate().rev() {
            if i != DIGITS - 1 {
                acc = acc.double5();
            }
            acc = acc.add(&Self::select_digit(&table, d));
        }
        acc
    }

    /// `[d]P` for a secret digit `d ∈ [−16, 15]` from the table `[1]P … [16]P`: every entry
    /// is read and kept or not by a masked select (`d = 0` keeps none: the identity), then `Y`
    /// is negated by a select when `d < 0`. No branch or index depends on `d`.
    #[inline(always)]
    fn select_digit(table: &[Self; 16], d: i8) -> Self {
        // d in [−16, 15]: its sign bit and |d| in [0, 16], without a branch.
        let neg = d.to_ne_bytes()[0] >> 7;
        let abs = (d ^ -(neg as i8)).to_ne_bytes()[0].wrapping_add(neg);
        let mut t = Self::IDENTITY;
        for (j, e) in table.iter().enumerate() {
            #[cfg(test)]
            lookup_scan::touch();
            // j < 16: the cast is lossless.
            t.conditional_assign(e, abs.ct_eq(&(j as u8 + 1)));
        }
        t.y = Fe::conditional_select(&t.y, &t.y.neg(), Choice::from(neg));
        t
    }
}

/// Test builds only: counts the table entries [`Point::select_digit`] reads on this thread,
/// so that a test can check that every lookup scans the whole table whatever the digit.
#[cfg(test)]
mod lookup_scan {
    use std::cell::Cell;

    thread_local!(static READS: Cell<usize> = const { Cell::new(0) });

    pub(super) fn touch() {
        READS.with(|r| r.set(r.get() + 1));
    }

    /// The number of entries read since the last call (on this thread).
    pub(super) fn take() -> usize {
        READS.with(|r| r.replace(0))
    }
}

/// `sqrt_ratio(u, v)` for `p ≡ 3 (mod 4)` (RFC 9380 App. F.2.1.2).
fn sqrt_ratio<C: Params>(u: &Fe<C>, v: &Fe<C>, c2: &Fe<C>) -> (Choice, Fe<C>) {
    let tv1 = v.square();
    let tv2 = u.mul(v);
    let tv1 = tv1.mul(&tv2);
    let y1 = tv1.pow_public(&C::C1).mul(&tv2);
    let y2 = y1.mul(c2);
    let tv3 = y1.square().mul(v);
    let is_qr = tv3.ct_eq(u);
    (is_qr, Fe::conditional_select(&y2, &y1, is_qr))
}

/// `map_to_curve_simple_swu(u)` (RFC 9380 §6.6.2, App. F.2, `A = −3`), returned in projective
/// form `(x_n : y·x_d : x_d)` so that no inversion is needed.
fn map_to_curve<C: Params>(u: &Fe<C>) -> Point<C> {
    let z = Fe::<C>::from_u64(C::Z_NEG).neg();
    let a = Fe::<C>::from_u64(3).neg();
    let b = Fe::<C>::b();
    let c2 = Fe::<C>::from_be_bytes(&C::C2).unwrap_or(Fe::ZERO);
    let tv1 = z.mul(&u.square()); // 1-2
    let tv2 = tv1.square().add(&tv1); // 3-4
    let tv3 = b.mul(&tv2.add(&Fe::ONE)); // 5-6
    let tv4 = Fe::conditional_select(&z, &tv2.neg(), !tv2.is_zero()); // 7
    let tv4 = a.mul(&tv4); // 8
    let tv2 = tv3.square(); // 9
    let tv6 = tv4.square(); // 10
    let tv5 = a.mul(&tv6); // 11
    let tv2 = tv2.add(&tv5).mul(&tv3); // 12-13
    let tv6 = tv6.mul(&tv4); // 14
    let tv2 = tv2.add(&b.mul(&tv6)); // 15-16
    let x = tv1.mul(&tv3); // 17
    let (is_gx1_square, y1) = sqrt_ratio(&tv2, &tv6, &c2); // 18
    let y = tv1.mul(u).mul(&y1); // 19-20
    let x = Fe::conditional_select(&x, &tv3, is_gx1_square); // 21
    let y = Fe::conditional_select(&y, &y1, is_gx1_square); // 22
    let e1 = u.sgn0().ct_eq(&y.sgn0()); // 23
    let y = Fe::conditional_select(&y.neg(), &y, e1); // 24
    // 25: x / tv4, kept as the projective Z (tv4 ≠ 0 since A·Z ≠ 0).
    Point {
        x,
        y: y.mul(&tv4),
        z: tv4,
    }
}

/// RFC 9380 `hash_to_curve` (`_RO_`, `L = 48`, `h = 1`) with the SSWU map on this curve and
/// the expander `X`: the affine coordinates of the result, big-endian (`None` for the
/// identity, which occurs with negligible probability).
///
/// # Errors
/// [`crate::Error::HashToCurve`] if the expander rejects `dst` (empty).
pub(crate) fn hash_to_curve<C: Params, X>(msg: &[u8], dst: &[u8]) -> Result<AffineXy, crate::Error>
where
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
{
    Ok(to_affine(&hash_to_point::<C, X>(msg, dst)?))
}

/// [`hash_to_curve`] in projective coordinates (no inversion).
fn hash_to_point<C: Params, X>(msg: &[u8], dst: &[u8]) -> Result<Point<C>, crate::Error>
where
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
{
    let mut uniform = [0u8; 96];
    crate::sswu::expand::<X>(msg, dst, &mut uniform)?;
    let u0 = Fe::<C>::reduce_be48(&uniform[..48]);
    let u1 = Fe::<C>::reduce_be48(&uniform[48..]);
    Ok(map_to_curve(&u0).add(&map_to_curve(&u1)))
}

/// SEC1 compressed decoding (tag `02`/`03`, then `x < p` big-endian, `y` the square root of
/// `x³ − 3x + b` of the tag's parity); `None` for any other input, which is exactly what
/// the curve crates' decoders reject on these cofactor-1 curves (the identity has no
/// compressed form). The input is public: its branches are on public data.
fn decode_compressed<C: Params>(enc: &[u8]) -> Option<Point<C>> {
    let enc: &[u8; 33] = enc.try_into().ok()?;
    let odd = match enc[0] {
        0x02 => 0u8,
        0x03 => 1u8,
        _ => return None,
    };
    let x = Fe::<C>::from_be_bytes(&enc[1..])?;
    let rhs = x.square().mul(&x).sub(&x.double().add(&x)).add(&Fe::b());
    // With v = 1, sqrt_ratio's y1 is rhs^((p+1)/4), the square root when one exists; its
    // non-square branch (which uses c2) is not taken.
    let (is_square, y) = sqrt_ratio(&rhs, &Fe::ONE, &Fe::ONE);
    if !bool::from(is_square) {
        return None;
    }
    let flip = Choice::from((y.to_be_bytes()[31] & 1) ^ odd);
    let y = Fe::conditional_select(&y, &y.neg(), flip);
    Some(Point { x, y, z: Fe::ONE })
}

/// `[k]H(m)` for every message (`H` = [`hash_to_curve`] with `dst`), as SEC1 compressed
/// encodings (identity: 33 zeros), with one inversion for the whole slice: the hashes stay
/// projective until the shared normalisation.
///
/// # Errors
/// [`crate::Error::HashToCurve`] if the expander rejects `dst` (empty).
pub(crate) fn hash_mul_batch<C: Params, X, T: AsRef<[u8]>>(
    items: &[T],
    dst: &[u8],
    k: &Digits,
    out: &mut [[u8; 33]],
) -> Result<(), crate::Error>
where
    X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
{
    let prods = items
        .iter()
        .map(|m| Ok(hash_to_point::<C, X>(m.as_ref(), dst)?.mul_digits(k)))
        .collect::<Result<Vec<_>, crate::Error>>()?;
    encode_batch(&prods, out);
    Ok(())
}

/// `[k]P_i` for SEC1 compressed encodings `P_i` (see [`decode_compressed`]), as compressed
/// encodings with one inversion for the whole slice; `Err(i)` names the first encoding that
/// does not decode (nothing useful is written then).
pub(crate) fn decode_mul_batch<C: Params, E: AsRef<[u8]>>(
    encodings: &[E],
    k: &Digits,
    out: &mut [[u8; 33]],
) -> Result<(), usize> {
    let mut prods = Vec::with_capacity(encodings.len());
    for (i, e) in encodings.iter().enumerate() {
        prods.push(decode_compressed::<C>(e.as_ref()).ok_or(i)?.mul_digits(k));
    }
    encode_batch(&prods, out);
    Ok(())
}

/// Affine big-endian coordinates (`None` for the identity); one inversion.
fn to_affine<C: Params>(p: &Point<C>) -> AffineXy {
    if bool::from(p.z.is_zero()) {
        return None;
    }
    let zi = p.z.invert();
    Some((p.x.mul(&zi).to_be_bytes(), p.y.mul(&zi).to_be_bytes()))
}

/// Bits per digit of the scalar recoding.
const WINDOW: usize = 5;

/// Digits of a 256-bit scalar in signed radix 32: `⌈257 / 5⌉` (one bit more for the carry).
const DIGITS: usize = 52;

/// A scalar recoded by [`recode`]: `k = Σ d_i·32^i`, `d_i ∈ [−16, 15]`, little-endian.
pub(crate) type Digits = zeroize::Zeroizing<[i8; DIGITS]>;

/// The signed radix-32 digits of a 32-byte big-endian scalar (the recoding, done once per
/// batch): each 5-bit window plus the incoming carry is `v ∈ [0, 32]`, written as `v` if
/// `v < 16`, else as `v − 32` with a carry of 1 into the next window; no branch or index
/// depends on the scalar. The top window holds bit 255 and a carry, so its digit is at most 2.
pub(crate) fn recode(k: &[u8]) -> Digits {
    let mut le = zeroize::Zeroizing::new([0u8; 34]);
    for (i, byte) in k.iter().take(32).enumerate() {
        le[31 - i] = *byte;
    }
    let mut out = zeroize::Zeroizing::new([0i8; DIGITS]);
    let mut carry = 0u16;
    for (i, d) in out.iter_mut().enumerate() {
        // The window's byte index depends on i only.
        let bit = i * WINDOW;
        let two = u16::from(le[bit / 8]) | (u16::from(le[bit / 8 + 1]) << 8);
        let v = ((two >> (bit % 8)) & 31) + carry;
        carry = (v + 16) >> 5;
        // v − 32·carry is in [−16, 15]: the casts are lossless.
        *d = (v as i16 - (carry << 5) as i16) as i8;
    }
    out
}

/// [`recode`] of a scalar of the curve crate's field (its big-endian `to_repr`), the copy of
/// the representation wiped after.
pub(crate) fn recode_scalar<F: ff::PrimeField>(k: &F) -> Digits {
    let mut repr = k.to_repr();
    let digits = recode(repr.as_ref());
    zeroize::Zeroize::zeroize(repr.as_mut());
    digits
}

/// `[k]P_i` for affine inputs `(x_i, y_i)` (big-endian coordinates of points on the curve;
/// `None` for the identity), written as SEC1 compressed encodings (identity: 33 zeros).
/// One inversion for the whole slice.
pub(crate) fn mul_affine_batch<C: Params>(points: &[AffineXy], k: &Digits, out: &mut [[u8; 33]]) {
    let prods: Vec<Point<C>> = points
        .iter()
        .map(|p| match p {
            Some((x, y)) => {
                // The coordinates come from the backend's own affine points: canonical.
                let x = Fe::<C>::from_be_bytes(x).unwrap_or(Fe::ZERO);
                let y = Fe::<C>::from_be_bytes(y).unwrap_or(Fe::ZERO);
                Point { x, y, z: Fe::ONE }.mul_digits(k)
            }
            None => Point::IDENTITY,
        })
        .collect();
    encode_batch(&prods, out);
}

/// SEC1 compressed encodings of `prods` (identity: 33 zeros), normalised with one inversion.
fn encode_batch<C: Params>(prods: &[Point<C>], out: &mut [[u8; 33]]) {
    // Montgomery's trick: prefix products, one inversion, then back.
    let mut prefix = Vec::with_capacity(prods.len());
    let mut acc = Fe::<C>::ONE;
    for p in prods {
        prefix.push(acc);
        // Skip zeros (identity outputs) so one of them does not zero the whole batch.
        let z = Fe::conditional_select(&p.z, &Fe::ONE, p.z.is_zero());
        acc = acc.mul(&z);
    }
    let mut inv = acc.invert();
    for i in (0..prods.len()).rev() {
        let p = &prods[i];
        let zero = p.z.is_zero();
        let z = Fe::conditional_select(&p.z, &Fe::ONE, zero);
        let zinv = inv.mul(&prefix[i]);
        inv = inv.mul(&z);
        let x = p.x.mul(&zinv).to_be_bytes();
        let y = p.y.mul(&zinv).to_be_bytes();
        let mut enc = [0u8; 33];
        enc[0] = 0x02 | (y[31] & 1);
        enc[1..].copy_from_slice(&x);
        // Identity: 33 zero bytes.
        for (o, e) in out[i].iter_mut().zip(enc) {
            *o = u8::conditional_select(&e, &0, zero);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The field against the backends' own fields (p256, sm2) on random and edge values,
    //! and the point multiplication against the backends' `mul`.
    use super::*;
    use ff::PrimeField;
    use p256::elliptic_curve::hazmat::FieldArithmetic;
    use proptest::prelude::*;

    fn reference<R: PrimeField>(b: &[u8; 32]) -> Option<R>
    where
        R::Repr: AsMut<[u8]>,
    {
        let mut r = R::Repr::default();
        r.as_mut().copy_from_slice(b);
        R::from_repr(r).into()
    }

    fn bytes<R: PrimeField>(x: &R) -> Vec<u8> {
        x.to_repr().as_ref().to_vec()
    }

    fn check_ops<C: Params, R: PrimeField>(a: &[u8; 32], b: &[u8; 32])
    where
        R::Repr: AsMut<[u8]>,
    {
        let (Some(fa), Some(ra)) = (Fe::<C>::from_be_bytes(a), reference::<R>(a)) else {
            // Both must agree on canonicity.
            assert!(Fe::<C>::from_be_bytes(a).is_none() && reference::<R>(a).is_none());
            return;
        };
        let (Some(fb), Some(rb)) = (Fe::<C>::from_be_bytes(b), reference::<R>(b)) else {
            return;
        };
        assert_eq!(fa.to_be_bytes().to_vec(), bytes(&ra));
        assert_eq!(fa.mul(&fb).to_be_bytes().to_vec(), bytes(&(ra * rb)));
        assert_eq!(fa.add(&fb).to_be_bytes().to_vec(), bytes(&(ra + rb)));
        assert_eq!(fa.sub(&fb).to_be_bytes().to_vec(), bytes(&(ra - rb)));
        assert_eq!(fa.square().to_be_bytes().to_vec(), bytes(&ra.square()));
        assert_eq!(fa.neg().to_be_bytes().to_vec(), bytes(&(-ra)));
        let inv: R = Option::from(ra.invert()).unwrap_or(R::ZERO);
        assert_eq!(fa.invert().to_be_bytes().to_vec(), bytes(&inv));
    }

    type P256Fe = <p256::NistP256 as FieldArithmetic>::FieldElement;
    type Sm2Fe = <::sm2::Sm2 as FieldArithmetic>::FieldElement;

    fn p_minus(p: [u64; 4], d: u64) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut l = p;
        l[0] -= d;
        for (i, limb) in l.iter().enumerate() {
            out[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
        }
        out
    }

    #[test]
    fn edge_values() {
        let mut vals = vec![[0u8; 32], [0xffu8; 32]];
        let mut one = [0u8; 32];
        one[31] = 1;
        vals.push(one);
        for d in [0, 1, 2] {
            vals.push(p_minus(P256Params::P, d));
            vals.push(p_minus(Sm2Params::P, d));
        }
        for a in &vals {
            for b in &vals {
                check_ops::<P256Params, P256Fe>(a, b);
                check_ops::<Sm2Params, Sm2Fe>(a, b);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn field_matches_backends(a: [u8; 32], b: [u8; 32]) {
            check_ops::<P256Params, P256Fe>(&a, &b);
            check_ops::<Sm2Params, Sm2Fe>(&a, &b);
        }
    }

    /// Big-endian affine coordinates of a p256/sm2 affine point (`None` for the identity).
    macro_rules! xy_of {
        ($krate:ident, $a:expr) => {{
            let enc = $krate::elliptic_curve::sec1::ToSec1Point::to_sec1_point(&$a, false);
            match (enc.x(), enc.y()) {
                (Some(x), Some(y)) => Some((
                    <[u8; 32]>::try_from(x.as_slice()).unwrap(),
                    <[u8; 32]>::try_from(y.as_slice()).unwrap(),
                )),
                _ => None,
            }
        }};
    }

    /// `[k]P_i` for `P_i = [s_i]G` (and identity lanes): `fastmul`'s batch lane for lane
    /// against the crate's `mul`.
    macro_rules! batch_matches {
        ($krate:ident, $params:ty, $seeds:expr, $k:expr) => {{
            use $krate::elliptic_curve::group::{Group, GroupEncoding};
            let s: Option<$krate::Scalar> = reference(&$k);
            let Some(s) = s else { return Ok(()) };
            let pts: Vec<$krate::ProjectivePoint> = $seeds
                .iter()
                .map(|&seed: &u64| {
                    if seed % 5 == 0 {
                        $krate::ProjectivePoint::IDENTITY
                    } else {
                        $krate::ProjectivePoint::generator() * $krate::Scalar::from(seed)
                    }
                })
                .collect();
            let coords: Vec<AffineXy> = pts.iter().map(|p| xy_of!($krate, p.to_affine())).collect();
            let digits = recode(&$k);
            let mut got = vec![[0u8; 33]; pts.len()];
            mul_affine_batch::<$params>(&coords, &digits, &mut got);
            for (i, p) in pts.iter().enumerate() {
                let prod = (*p * s).to_affine();
                let want: Vec<u8> = if bool::from(prod.is_identity()) {
                    vec![0; 33]
                } else {
                    prod.to_bytes().to_vec()
                };
                prop_assert_eq!(&got[i].to_vec(), &want, "lane {}", i);
            }
        }};
    }

    /// The scalars 0, 1, 2 and n − 1 (from each crate's own scalar field), on points and the
    /// identity: the digits 0 and 15 everywhere, and a first window of 0 (identity
    /// accumulator through the four doublings).
    #[test]
    fn mul_edge_scalars() {
        fn edge_scalars<R: PrimeField>() -> Vec<[u8; 32]> {
            [R::ZERO, R::ONE, R::ONE.double(), -R::ONE]
                .iter()
                .map(|x| {
                    let mut b = [0u8; 32];
                    b.copy_from_slice(x.to_repr().as_ref());
                    b
                })
                .collect()
        }
        let seeds = [1u64, 2, 3, 5, 7, 1 << 40];
        for k in edge_scalars::<p256::Scalar>() {
            let r: Result<(), TestCaseError> = (|| {
                batch_matches!(p256, P256Params, seeds, k);
                Ok(())
            })();
            assert!(r.is_ok(), "{r:?}");
        }
        for k in edge_scalars::<::sm2::Scalar>() {
            let r: Result<(), TestCaseError> = (|| {
                batch_matches!(sm2, Sm2Params, seeds, k);
                Ok(())
            })();
            assert!(r.is_ok(), "{r:?}");
        }
    }

    /// `decode_compressed` against the crate's SEC1 decoder (tags `02`/`03` only, as
    /// `PrimeGroup::decode`): both reject, or both accept the same point.
    macro_rules! decode_matches {
        ($krate:ident, $params:ty, $bytes:expr) => {{
            use $krate::elliptic_curve::group::GroupEncoding;
            let bytes: &[u8] = &$bytes;
            let want: Option<[u8; 33]> = <[u8; 33]>::try_from(bytes)
                .ok()
                .filter(|b| b[0] == 0x02 || b[0] == 0x03)
                .and_then(|b| {
                    Option::<$krate::AffinePoint>::from($krate::AffinePoint::from_bytes(&b.into()))
                })
                .map(|a| {
                    let mut e = [0u8; 33];
                    e.copy_from_slice(a.to_bytes().as_ref());
                    e
                });
            let got = decode_compressed::<$params>(bytes).map(|p| {
                let mut e = [[0u8; 33]];
                encode_batch(&[p], &mut e);
                e[0]
            });
            prop_assert_eq!(got, want);
        }};
    }

    /// `decode_mul_batch` against the crate's decoding and `mul`, and the index of the first
    /// bad encoding when one is put at `bad`.
    macro_rules! decode_mul_matches {
        ($krate:ident, $params:ty, $seeds:expr, $k:expr, $bad:expr) => {{
            use $krate::elliptic_curve::group::{Group, GroupEncoding};
            let s: Option<$krate::Scalar> = reference(&$k);
            let Some(s) = s else { return Ok(()) };
            let pts: Vec<$krate::ProjectivePoint> = $seeds
                .iter()
                .map(|&seed: &u64| {
                    $krate::ProjectivePoint::generator() * $krate::Scalar::from(seed)
                })
                .collect();
            let mut encs: Vec<Vec<u8>> = pts.iter().map(|p| p.to_bytes().to_vec()).collect();
            let mut out = vec![[0u8; 33]; encs.len()];
            prop_assert_eq!(
                decode_mul_batch::<$params, _>(&encs, &recode(&$k), &mut out),
                Ok(())
            );
            for (i, p) in pts.iter().enumerate() {
                let prod = *p * s;
                let want: Vec<u8> = if bool::from(prod.is_identity()) {
                    vec![0; 33]
                } else {
                    prod.to_bytes().to_vec()
                };
                prop_assert_eq!(&out[i].to_vec(), &want, "lane {}", i);
            }
            let bad = $bad % encs.len();
            encs[bad][0] = 0x04;
            prop_assert_eq!(
                decode_mul_batch::<$params, _>(&encs, &recode(&$k), &mut out),
                Err(bad)
            );
        }};
    }

    /// `hash_mul_batch` against `hash_to_curve` then `mul_affine_batch` (itself checked
    /// against the crate's `mul` above).
    fn hash_mul_matches<C: Params, X>(msgs: &[Vec<u8>], k: &[u8; 32])
    where
        X: k256::hash2curve::ExpandMsg<k256::elliptic_curve::consts::U16>,
    {
        let dst = b"obliv-test-dst";
        let digits = recode(k);
        let mut got = vec![[0u8; 33]; msgs.len()];
        hash_mul_batch::<C, X, _>(msgs, dst, &digits, &mut got).unwrap();
        let affine: Vec<AffineXy> = msgs
            .iter()
            .map(|m| hash_to_curve::<C, X>(m, dst).unwrap())
            .collect();
        let mut want = vec![[0u8; 33]; msgs.len()];
        mul_affine_batch::<C>(&affine, &digits, &mut want);
        assert_eq!(got, want);
        assert!(hash_mul_batch::<C, X, _>(msgs, b"", &digits, &mut got).is_err());
    }

    /// `x` just above and at `p`, as a compressed encoding with tag `tag`.
    fn x_at_p_plus(p: [u64; 4], d: u64, tag: u8) -> Vec<u8> {
        let mut out = vec![tag];
        let mut l = p;
        l[0] += d; // these p have a low limb of 2^64 − 1: d = 0 only (no carry).
        for limb in l.iter().rev() {
            out.extend_from_slice(&limb.to_be_bytes());
        }
        out
    }

    #[test]
    fn decode_edges() {
        let r: Result<(), TestCaseError> = (|| {
            for tag in [0x02u8, 0x03] {
                decode_matches!(p256, P256Params, x_at_p_plus(P256Params::P, 0, tag));
                decode_matches!(sm2, Sm2Params, x_at_p_plus(Sm2Params::P, 0, tag));
                decode_matches!(p256, P256Params, [[tag].as_slice(), &[0xff; 32]].concat());
                decode_matches!(sm2, Sm2Params, [[tag].as_slice(), &[0xff; 32]].concat());
                decode_matches!(p256, P256Params, [[tag].as_slice(), &[0; 32]].concat());
                decode_matches!(sm2, Sm2Params, [[tag].as_slice(), &[0; 32]].concat());
            }
            decode_matches!(p256, P256Params, [0u8; 33]);
            decode_matches!(sm2, Sm2Params, [0u8; 33]);
            decode_matches!(p256, P256Params, [2u8; 32]);
            decode_matches!(sm2, Sm2Params, [2u8; 34]);
            Ok(())
        })();
        assert!(r.is_ok(), "{r:?}");
    }

    /// `Σ d_i·32^i` over the scalar field, and the digit ranges.
    fn check_recode(k: &p256::Scalar) {
        let d = recode(k.to_repr().as_ref());
        let mut acc = p256::Scalar::ZERO;
        for &di in d.iter().rev() {
            assert!((-16..=15).contains(&di), "{di}");
            acc *= p256::Scalar::from(32u64);
            let m = p256::Scalar::from(u64::from(di.unsigned_abs()));
            acc = if di < 0 { acc - m } else { acc + m };
        }
        assert_eq!(acc, *k);
        assert!((0..=2).contains(&d[DIGITS - 1]));
    }

    /// The secret-digit lookup reads all sixteen entries for every digit (the identity for
    /// `d = 0` included) and returns `[d]P`; and a whole multiplication reads exactly
    /// `16 × DIGITS` entries, whatever the scalar.
    #[test]
    fn digit_lookup_scans_the_whole_table() {
        /// `gx`, `gy`: the curve's generator, big-endian hex.
        fn check<C: Params>(gx: &str, gy: &str, k: &[u8; 32]) {
            let g = Point::<C> {
                x: Fe::from_be_bytes(&hex::decode(gx).unwrap()).unwrap(),
                y: Fe::from_be_bytes(&hex::decode(gy).unwrap()).unwrap(),
                z: Fe::ONE,
            };
            let mut table = [g; 16];
            for j in 1..16 {
                table[j] = table[j - 1].add(&g);
            }
            let _ = lookup_scan::take();
            for d in -16i8..=15 {
                let t = Point::select_digit(&table, d);
                assert_eq!(lookup_scan::take(), 16, "d = {d}");
                let want = match d.unsigned_abs() {
                    0 => Point::IDENTITY,
                    a => table[usize::from(a) - 1],
                };
                let want_y = if d < 0 { want.y.neg() } else { want.y };
                assert!(
                    bool::from(t.x.ct_eq(&want.x) & t.y.ct_eq(&want_y) & t.z.ct_eq(&want.z)),
                    "d = {d}"
                );
            }
            let _ = g.mul_digits(&recode(k));
            assert_eq!(lookup_scan::take(), 16 * DIGITS);
        }
        for k in [[0u8; 32], [0xffu8; 32], [0x5au8; 32]] {
            check::<P256Params>(
                "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296",
                "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5",
                &k,
            );
            check::<Sm2Params>(
                "32c4ae2c1f1981195f9904466a39c9948fe30bbff2660be1715a4589334c74c7",
                "bc3736a2f4f6779c59bdcee36b692153d0a9877cc62a474002df32e52139f0a0",
                &k,
            );
        }
    }

    #[test]
    fn recode_edges() {
        for k in [
            p256::Scalar::ZERO,
            p256::Scalar::ONE,
            -p256::Scalar::ONE,
            p256::Scalar::from(15u64),
            p256::Scalar::from(16u64),
            p256::Scalar::from(17u64),
            p256::Scalar::from(u64::MAX),
        ] {
            check_recode(&k);
        }
        // Every window 16 (all carries) and every window 31.
        let mut all16 = p256::Scalar::ZERO;
        let mut all31 = p256::Scalar::ZERO;
        for _ in 0..51 {
            all16 = all16 * p256::Scalar::from(32u64) + p256::Scalar::from(16u64);
            all31 = all31 * p256::Scalar::from(32u64) + p256::Scalar::from(31u64);
        }
        check_recode(&all16);
        check_recode(&all31);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn batch_matches_p256(seeds in proptest::collection::vec(1u64.., 1..6), k: [u8; 32]) {
            batch_matches!(p256, P256Params, seeds, k);
        }

        #[test]
        fn batch_matches_sm2(seeds in proptest::collection::vec(1u64.., 1..6), k: [u8; 32]) {
            batch_matches!(sm2, Sm2Params, seeds, k);
        }

        #[test]
        fn recode_sums_to_the_scalar(k: [u8; 32]) {
            let s: Option<p256::Scalar> = reference(&k);
            if let Some(s) = s {
                check_recode(&s);
            }
        }

        #[test]
        fn decode_matches_crates(tag in 0u8..5, x: [u8; 32]) {
            let bytes = [[tag].as_slice(), &x].concat();
            decode_matches!(p256, P256Params, bytes);
            decode_matches!(sm2, Sm2Params, bytes);
        }

        #[test]
        fn decode_mul_matches_crates(
            seeds in proptest::collection::vec(1u64.., 1..6),
            k: [u8; 32],
            bad: usize,
        ) {
            decode_mul_matches!(p256, P256Params, seeds, k, bad);
            decode_mul_matches!(sm2, Sm2Params, seeds, k, bad);
        }

        #[test]
        fn hash_mul_matches_hash_then_mul(
            msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..5),
            k: [u8; 32],
        ) {
            use k256::hash2curve::ExpandMsgXmd;
            hash_mul_matches::<P256Params, ExpandMsgXmd<sha2::Sha256>>(&msgs, &k);
            hash_mul_matches::<Sm2Params, ExpandMsgXmd<sm3::Sm3>>(&msgs, &k);
        }
    }
}
