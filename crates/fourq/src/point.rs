//! Points of FourQ, `E: −x² + y² = 1 + d·x²·y²` over GF(p²), in extended twisted Edwards
//! coordinates (Hisil–Wong–Carter–Dawson 2008), with FourQlib's representations:
//!
//! | name | coordinates | meaning | used for |
//! |------|-------------|---------|----------|
//! | R1 ([`Point`]) | `(X, Y, Z, Ta, Tb)` | `x = X/Z`, `y = Y/Z`, `T = Ta·Tb = X·Y/Z` | accumulator |
//! | R2 ([`PointR2`]) | `(X+Y, Y−X, 2Z, 2d·T)` | | table entries, addends |
//! | R3 ([`PointR3`]) | `(X+Y, Y−X, Z, T)` | | second operand of the core addition |
//! | R5 ([`AffineR5`]) | `(x+y, y−x, 2d·t)` with `Z = 1` | | fixed-base table entries |
//!
//! Splitting `T` into `Ta·Tb` lets doubling skip computing `T` (which the next doubling does
//! not need). Because `a = −1` is a square and `d` is not a square in GF(p²), the addition
//! law is *complete*: it is correct for every pair of points, including doubling and the
//! identity, so no input ever needs a branch ([CL15, §5], [HWCD08, §3.1]).
//!
//! The endomorphisms ψ (degree-1 in the sense of GLS, from the Frobenius) and φ (from the CM
//! by √−40 on the Q-curve) are evaluated as `τ̂ ∘ δψδ⁻¹ ∘ τ` and `τ̂ ∘ δφδ⁻¹ ∘ τ` through the
//! 4-isogenous curve Ê, exactly as in [CL15, §3 and App. A] and FourQlib's `eccp2.c`.
//!
//! [CL15]: <https://eprint.iacr.org/2015/565>
//! [HWCD08]: https://eprint.iacr.org/2008/522 "Hisil, Wong, Carter, Dawson, Twisted Edwards
//! curves revisited, ASIACRYPT 2008"

use subtle::{Choice, ConditionallyNegatable, ConditionallySelectable, ConstantTimeEq, CtOption};
use zeroize::Zeroize;

use crate::constants::*;
use crate::field::{Fp2, Fp2Mul, Portable};

/// A point of FourQ, in extended twisted Edwards coordinates `(X : Y : Z : Ta·Tb)`.
///
/// Every constructor of this crate returns a point of the prime-order subgroup (order `N`),
/// except [`Point::from_bytes_unchecked_subgroup`] (and `GroupEncoding::from_bytes_unchecked`,
/// which calls it), whose points may have a component of order dividing the cofactor 392, and
/// the crate-internal raw map used before cofactor clearing.
#[derive(Clone, Copy)]
pub struct Point {
    pub(crate) x: Fp2,
    pub(crate) y: Fp2,
    pub(crate) z: Fp2,
    pub(crate) ta: Fp2,
    pub(crate) tb: Fp2,
}

/// `(X+Y, Y−X, 2Z, 2d·T)`.
#[derive(Clone, Copy, Default)]
pub(crate) struct PointR2 {
    pub(crate) xy: Fp2,
    pub(crate) yx: Fp2,
    pub(crate) z2: Fp2,
    pub(crate) t2: Fp2,
}

/// `(X+Y, Y−X, Z, T)`.
#[derive(Clone, Copy)]
pub(crate) struct PointR3 {
    xy: Fp2,
    yx: Fp2,
    z: Fp2,
    t: Fp2,
}

/// Affine `(x+y, y−x, 2d·t)`.
#[derive(Clone, Copy, Default)]
pub(crate) struct AffineR5 {
    pub(crate) xy: Fp2,
    pub(crate) yx: Fp2,
    pub(crate) t2: Fp2,
}

impl Point {
    /// The neutral element `(0, 1)`.
    pub const IDENTITY: Point = Point {
        x: Fp2::ZERO,
        y: Fp2::ONE,
        z: Fp2::ONE,
        ta: Fp2::ZERO,
        tb: Fp2::ONE,
    };

    /// The neutral element `(0, 1)`.
    pub fn identity() -> Point {
        Point::IDENTITY
    }

    /// FourQlib's generator `G` of the order-`N` subgroup.
    pub fn generator() -> Point {
        Point::from_affine(GEN_X, GEN_Y)
    }

    /// `(x, y, 1, x, y)`: FourQlib's `point_setup`.
    pub(crate) fn from_affine(x: Fp2, y: Fp2) -> Point {
        Point {
            x,
            y,
            z: Fp2::ONE,
            ta: x,
            tb: y,
        }
    }

    /// Does `(X : Y : Z)` satisfy `(−X² + Y²)Z² = Z⁴ + d·X²·Y²`? (`Z ≠ 0` is checked too.)
    pub(crate) fn is_on_curve(&self) -> Choice {
        let x2 = self.x.square();
        let y2 = self.y.square();
        let z2 = self.z.square();
        let lhs = y2.sub(&x2).mul(&z2);
        let rhs = z2.square().add(&D.mul(&x2).mul(&y2));
        lhs.ct_eq(&rhs) & !self.z.is_zero()
    }

    /// `2P` (dbl-2008-hwcd with `a = −1`): `4M + 3S`. Reads `X, Y, Z` only.
    #[inline(always)]
    pub(crate) fn double_r1<M: Fp2Mul>(&self, m: M) -> Point {
        let t1 = m.square(&self.x); // X²
        let t2 = m.square(&self.y); // Y²
        let xy = self.x.add(&self.y);
        let tb = t1.add(&t2); // X² + Y²
        let t1 = t2.sub(&t1); // Y² − X²
        let ta = m.square(&xy).sub(&tb); // 2XY
        let t2 = m.square(&self.z).double().sub(&t1); // 2Z² − (Y² − X²)
        Point {
            x: m.mul(&ta, &t2),
            y: m.mul(&t1, &tb),
            z: m.mul(&t1, &t2),
            ta,
            tb,
        }
    }

    /// `(X+Y, Y−X, 2Z, 2d·T)`.
    #[inline(always)]
    pub(crate) fn to_r2<M: Fp2Mul>(self, m: M) -> PointR2 {
        PointR2 {
            xy: self.x.add(&self.y),
            yx: self.y.sub(&self.x),
            z2: self.z.double(),
            t2: m.mul(&m.mul(&self.ta.double(), &self.tb), &D),
        }
    }

    /// `(X+Y, Y−X, Z, T)`.
    #[inline(always)]
    pub(crate) fn to_r3<M: Fp2Mul>(self, m: M) -> PointR3 {
        PointR3 {
            xy: self.x.add(&self.y),
            yx: self.y.sub(&self.x),
            z: self.z,
            t: m.mul(&self.ta, &self.tb),
        }
    }

    /// `P + Q` with `Q` in R2: `9M` (add-2008-hwcd-3 with the `2d` folded into Q).
    #[inline(always)]
    pub(crate) fn add_r2<M: Fp2Mul>(&self, q: &PointR2, m: M) -> Point {
        add_core(q, &self.to_r3(m), m)
    }

    /// `P + Q` with `Q` affine in R5 (`Z_Q = 1`): `7M` (mixed addition, FourQlib `eccmadd`).
    #[inline(always)]
    pub(crate) fn add_r5<M: Fp2Mul>(&self, q: &AffineR5, m: M) -> Point {
        let c = m.mul(&m.mul(&self.ta, &self.tb), &q.t2); // 2d·T1·t2
        let d = self.z.double(); // 2Z1
        let a = m.mul(&self.y.sub(&self.x), &q.yx); // (Y1−X1)(y2−x2)
        let b = m.mul(&self.x.add(&self.y), &q.xy); // (X1+Y1)(x2+y2)
        finish_add(a, b, c, d, m)
    }

    /// `ψ(P)`: `τ̂ ∘ δψδ⁻¹ ∘ τ` ([CL15, §3]). Reads `X, Y, Z`.
    #[inline(always)]
    pub(crate) fn psi<M: Fp2Mul>(&self, m: M) -> Point {
        let (x, y, z) = tau(self, m);
        let (x, y, z) = delta_psi_delta(x, y, z, m);
        tau_dual(x, y, z, m)
    }

    /// `φ(P)`: `τ̂ ∘ δφδ⁻¹ ∘ τ` ([CL15, §3]). Reads `X, Y, Z`.
    #[inline(always)]
    pub(crate) fn phi<M: Fp2Mul>(&self, m: M) -> Point {
        let (x, y, z) = tau(self, m);
        let (x, y, z) = delta_phi_delta(x, y, z, m);
        tau_dual(x, y, z, m)
    }

    /// `[392]P`, FourQlib's `cofactor_clearing` chain: `3P`, `48P`, `49P`, `392P`.
    pub(crate) fn mul_by_cofactor(&self) -> Point {
        let m = Portable;
        let q = self.to_r2(m);
        let mut p = self.double_r1(m).add_r2(&q, m); // 3P
        for _ in 0..4 {
            p = p.double_r1(m); // 48P
        }
        p = p.add_r2(&q, m); // 49P
        for _ in 0..3 {
            p = p.double_r1(m); // 392P
        }
        p
    }

    /// Affine `(x, y)` with canonical coordinates (one constant-time inversion).
    pub(crate) fn to_affine(self) -> (Fp2, Fp2) {
        let zi = self.z.invert();
        (self.x.mul(&zi).canonical(), self.y.mul(&zi).canonical())
    }

    /// The 32-byte encoding: `y` (as `y0 ‖ y1`, 127 bits each) with bit 255 set to the "sign"
    /// of `x` — bit 126 of `x0`, or of `x1` when `x0 = 0` — as FourQlib's `encode`.
    pub fn to_bytes(&self) -> [u8; 32] {
        let (x, y) = self.to_affine();
        encode_affine(&x, &y)
    }

    /// Encode many points with one field inversion (Montgomery's trick: `3(n−1)`
    /// multiplications replace `n − 1` inversions). Same output as [`Point::to_bytes`] on
    /// each point.
    ///
    /// `Z ≠ 0` for every point of the curve in extended coordinates (complete formulas), but
    /// the φ/ψ formulas of [`Point::mul`] degenerate to `(0 : 0 : 0)` on a few small-order
    /// points, which a caller can reach with [`Point::from_bytes_unchecked_subgroup`]. Such a
    /// `Z = 0` enters the shared product as `1` (a constant-time selection), so it cannot
    /// zero the common inverse and spoil the encodings of the other points: it encodes as
    /// [`Point::to_bytes`] encodes it (`Z⁻¹ = 0`), and every other point is unaffected.
    pub fn batch_to_bytes(points: &[Point]) -> Vec<[u8; 32]> {
        let zs: Vec<Fp2> = points
            .iter()
            .map(|p| Fp2::conditional_select(&p.z, &Fp2::ONE, p.z.is_zero()))
            .collect();
        let mut prefix = Vec::with_capacity(points.len());
        let mut prod = Fp2::ONE;
        for z in &zs {
            prefix.push(prod);
            prod = prod.mul(z);
        }
        let mut inv = prod.invert();
        let mut out = vec![[0u8; 32]; points.len()];
        for i in (0..points.len()).rev() {
            let p = &points[i];
            // The inverse of the substituted 1 is 1; `to_bytes` inverts a zero `Z` to 0.
            let zi = Fp2::conditional_select(&inv.mul(&prefix[i]), &Fp2::ZERO, p.z.is_zero());
            inv = inv.mul(&zs[i]);
            out[i] = encode_affine(&p.x.mul(&zi).canonical(), &p.y.mul(&zi).canonical());
        }
        out
    }
}

/// The 32-byte encoding of canonical affine coordinates.
fn encode_affine(x: &Fp2, y: &Fp2) -> [u8; 32] {
    let mut out = y.to_bytes();
    let x0_zero = x.a0.is_zero();
    let s = u8::conditional_select(&x.a0.bit(126), &x.a1.bit(126), x0_zero);
    out[31] |= s << 7;
    out
}

impl Point {
    /// Decode a 32-byte encoding to a point of the curve, without the subgroup check.
    ///
    /// Rejects a non-canonical `y` (either half `≥ p`), a `y` with no matching `x` on the curve,
    /// and the sign bit set when `x = 0`. Runs in constant time in the encoding.
    pub fn from_bytes_unchecked_subgroup(bytes: &[u8; 32]) -> CtOption<Point> {
        let sign = Choice::from(bytes[31] >> 7);
        let mut yb = *bytes;
        yb[31] &= 0x7f;
        Fp2::from_bytes(&yb).and_then(|y| {
            // x² = (y² − 1)/(d·y² + 1); the denominator never vanishes since d is a non-square.
            let y2 = y.square();
            let u = y2.sub(&Fp2::ONE);
            let v = D.mul(&y2).add(&Fp2::ONE);
            let (is_sq, mut x) = Fp2::sqrt_ratio(&u, &v);
            let x = {
                let x0_zero = x.a0.is_zero();
                let s = u8::conditional_select(&x.a0.bit(126), &x.a1.bit(126), x0_zero);
                let flip = Choice::from(s) ^ sign;
                x.conditional_negate(flip);
                x.canonical()
            };
            let x_zero = x.is_zero();
            let p = Point::from_affine(x, y);
            CtOption::new(p, is_sq & !(x_zero & sign) & p.is_on_curve())
        })
    }

    /// Decode and check membership of the order-`N` subgroup (`[N]P = O`).
    ///
    /// Returns `None` for a non-canonical encoding, a point off the curve, or a point outside
    /// the prime-order subgroup (one with a component of order dividing 392). The subgroup
    /// check is a variable-time multiplication by the public `N` on the public input.
    pub fn from_bytes(bytes: &[u8; 32]) -> CtOption<Point> {
        Point::from_bytes_unchecked_subgroup(bytes).and_then(|p| {
            let ok = p.is_torsion_free_vartime();
            CtOption::new(p, Choice::from(u8::from(ok)))
        })
    }

    /// Is `P` in the order-`N` subgroup?
    ///
    /// Evaluates the endomorphism `E = a1 + a2·φ + a3·ψ + a4·ψφ` for the short lattice vector
    /// `(a1, …, a4) = decompose(0)` (so `a1 + a2λφ + a3λψ + a4λφλψ ≡ 0 mod N`) with the CL15
    /// multiplication: `E` kills the subgroup, and a test over all 392 points of
    /// `E(GF(p²))[392]` (alone and added to a subgroup point) shows it kills no other torsion
    /// point, so `E(P) = O` iff `[N]P = O`. About one variable-base multiplication instead of
    /// the ~1.8 of a plain `[N]P`.
    ///
    /// The formulas for φ and ψ degenerate to `(0 : 0 : 0)` on four low-order points; such a
    /// result (`Z = 0`) is never a valid identity and is rejected, so those points are
    /// rejected too (the exhaustive test checks this).
    ///
    /// Named `vartime` because it is meant for public points (decoding received encodings);
    /// the arithmetic itself is the constant-time multiplication.
    pub fn is_torsion_free_vartime(&self) -> bool {
        let e = crate::scalar_mul::mul_endo(self, &[0; 4]);
        bool::from(e.is_identity() & !e.z.is_zero())
    }

    /// `[N]P == O` by a plain variable-time width-5 NAF chain (reference for the check above).
    #[cfg(test)]
    pub(crate) fn is_torsion_free_naf_vartime(&self) -> bool {
        crate::scalar_mul::mul_vartime_u256(self, &ORDER).is_identity_vartime()
    }

    /// `P == O`, variable time (for public points).
    pub fn is_identity_vartime(&self) -> bool {
        bool::from(self.is_identity())
    }

    /// `P == O` in constant time: `X = 0` and `Y = Z`.
    pub fn is_identity(&self) -> Choice {
        self.x.is_zero() & self.y.ct_eq(&self.z)
    }

    /// `2P`.
    pub fn double(&self) -> Point {
        self.double_r1(Portable)
    }

    /// Constant-time table-free check that the point is on the curve (for tests and callers
    /// holding points from elsewhere).
    pub fn is_valid(&self) -> bool {
        bool::from(self.is_on_curve())
    }
}

/// `P + Q` from `P` in R2 and `Q` in R3: FourQlib's `eccadd_core`, `8M`.
#[inline(always)]
pub(crate) fn add_core<M: Fp2Mul>(p: &PointR2, q: &PointR3, m: M) -> Point {
    let c = m.mul(&p.t2, &q.t); // 2d·T1·T2
    let d = m.mul(&p.z2, &q.z); // 2·Z1·Z2
    let b = m.mul(&p.xy, &q.xy); // (X1+Y1)(X2+Y2)
    let a = m.mul(&p.yx, &q.yx); // (Y1−X1)(Y2−X2)
    finish_add(a, b, c, d, m)
}

/// Common tail of the additions: `E = B − A`, `F = D − C`, `G = D + C`, `H = B + A`,
/// `(X3, Y3, Z3, T3) = (E·F, G·H, F·G, E·H)` with `T3` kept as `Ta = H`, `Tb = E`.
#[inline(always)]
fn finish_add<M: Fp2Mul>(a: Fp2, b: Fp2, c: Fp2, d: Fp2, m: M) -> Point {
    let f = d.sub(&c);
    let g = d.add(&c);
    let e = b.sub(&a);
    let h = b.add(&a);
    Point {
        x: m.mul(&e, &f),
        y: m.mul(&g, &h),
        z: m.mul(&f, &g),
        ta: h,
        tb: e,
    }
}

/// τ: E → Ê, `(X, Y, Z) ↦ (ctau1·XY(Y²−X²), (X²+Y²)(2Z²−(Y²−X²)), (X²+Y²)(Y²−X²))`.
#[inline(always)]
fn tau<M: Fp2Mul>(p: &Point, m: M) -> (Fp2, Fp2, Fp2) {
    let t0 = m.square(&p.x);
    let t1 = m.square(&p.y);
    let xy = m.mul(&p.x, &p.y);
    let z = t0.add(&t1);
    let t0 = t1.sub(&t0);
    let y = m.square(&p.z).double().sub(&t0);
    (
        m.mul(&m.mul(&xy, &t0), &CTAU1),
        m.mul(&y, &z),
        m.mul(&z, &t0),
    )
}

/// τ̂: Ê → E, returning R1 with `Ta = Y²−X²`-type factors as in FourQlib's `ecc_tau_dual`.
#[inline(always)]
fn tau_dual<M: Fp2Mul>(x: Fp2, y: Fp2, z: Fp2, m: M) -> Point {
    let t0 = m.square(&x);
    let z2 = m.square(&z);
    let t1 = m.square(&y);
    let ta = t1.sub(&t0); // Y² − X²
    let t0 = t0.add(&t1); // X² + Y²
    let zz = z2.double().sub(&ta); // 2Z² − (Y² − X²)
    let tb = m.mul(&m.mul(&x, &y), &CTAUDUAL1);
    Point {
        x: m.mul(&tb, &t0),
        y: m.mul(&zz, &ta),
        z: m.mul(&zz, &t0),
        ta,
        tb,
    }
}

/// δ∘φ_W∘δ⁻¹ on Ê ([CL15, App. A]; FourQlib `ecc_delphidel`).
#[inline(always)]
fn delta_phi_delta<M: Fp2Mul>(x: Fp2, y: Fp2, z: Fp2, m: M) -> (Fp2, Fp2, Fp2) {
    let t4 = m.square(&z);
    let t3 = m.mul(&y, &z);
    let t2 = m.square(&y);
    let t0 = m.mul(&t4, &CPHI4).add(&t2);
    let t1 = m.mul(&t3, &CPHI3);
    let t5 = t0.sub(&t1);
    let t0 = m.mul(&m.mul(&t0.add(&t1), &z), &t5);
    let t1 = m.mul(&t3, &CPHI1);
    let t5 = t2.add(&m.mul(&t4, &CPHI2));
    let t6 = m.mul(&m.mul(&t1.sub(&t5), &t1.add(&t5)), &CPHI0);
    let x = m.mul(&x, &t6);
    let t6 = m.square(&t2);
    let t2 = m.square(&t3);
    let t3 = m.square(&t4);
    let t1 = m.mul(&m.mul(&t2, &CPHI8).add(&t6).add(&m.mul(&t3, &CPHI9)), &y);
    let t2 = m.mul(&t2, &CPHI6).add(&m.mul(&t3, &CPHI7));
    let yy = m.mul(&t6.add(&t2), &CPHI5);
    let x = m.mul(&x, &t1).conj();
    let yy = m.mul(&m.mul(&yy, &z), &t0).conj();
    let zz = m.mul(&t0, &t1).conj();
    (x, yy, zz)
}

/// δ∘ψ_W∘δ⁻¹ on Ê ([CL15, App. A]; FourQlib `ecc_delpsidel`).
#[inline(always)]
fn delta_psi_delta<M: Fp2Mul>(x: Fp2, y: Fp2, z: Fp2, m: M) -> (Fp2, Fp2, Fp2) {
    let x = x.conj();
    let z = z.conj();
    let y = y.conj();
    let t2 = m.square(&z);
    let t0 = m.square(&x);
    let x = m.mul(&x, &t2);
    let zz = t0.add(&m.mul(&t2, &CPSI2));
    let t1 = t0.add(&m.mul(&t2, &CPSI3));
    let t2 = t0.add(&m.mul(&t2, &CPSI4)).neg();
    let zz = m.mul(&zz, &y);
    let x = m.mul(&m.mul(&x, &t2), &CPSI1);
    let y = m.mul(&t1, &zz);
    let z = m.mul(&zz, &t2);
    (x, y, z)
}

impl PointR2 {
    /// The sixteen 64-bit limbs `xy, yx, z2, t2` (for masked table scans).
    #[inline(always)]
    pub(crate) fn to_words(self) -> [u64; 16] {
        let mut w = [0u64; 16];
        for (k, e) in [self.xy, self.yx, self.z2, self.t2].iter().enumerate() {
            w[4 * k] = e.a0.0[0];
            w[4 * k + 1] = e.a0.0[1];
            w[4 * k + 2] = e.a1.0[0];
            w[4 * k + 3] = e.a1.0[1];
        }
        w
    }

    /// Inverse of [`PointR2::to_words`].
    #[inline(always)]
    pub(crate) fn from_words(w: &[u64; 16]) -> PointR2 {
        let e = |k: usize| Fp2::from_words([w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]]);
        PointR2 {
            xy: e(0),
            yx: e(1),
            z2: e(2),
            t2: e(3),
        }
    }

    /// `−Q = (Y−X, X+Y, 2Z, −2dT)`.
    #[inline(always)]
    pub(crate) fn conditional_negate(&mut self, neg: Choice) {
        let (xy, yx) = (self.xy, self.yx);
        self.xy = Fp2::conditional_select(&xy, &yx, neg);
        self.yx = Fp2::conditional_select(&yx, &xy, neg);
        self.t2.conditional_negate(neg);
    }

    /// `(2X, 2Y, 2Z)` (FourQlib R2→R4), a projective representative for doubling.
    #[inline(always)]
    pub(crate) fn to_r1_for_doubling(self) -> Point {
        Point {
            x: self.xy.sub(&self.yx),
            y: self.xy.add(&self.yx),
            z: self.z2,
            ta: Fp2::ZERO,
            tb: Fp2::ZERO,
        }
    }
}

impl ConditionallySelectable for PointR2 {
    #[inline(always)]
    fn conditional_select(a: &Self, b: &Self, c: Choice) -> Self {
        PointR2 {
            xy: Fp2::conditional_select(&a.xy, &b.xy, c),
            yx: Fp2::conditional_select(&a.yx, &b.yx, c),
            z2: Fp2::conditional_select(&a.z2, &b.z2, c),
            t2: Fp2::conditional_select(&a.t2, &b.t2, c),
        }
    }
}

impl AffineR5 {
    /// The identity `(1, 1, 0)`.
    pub(crate) const IDENTITY: AffineR5 = AffineR5 {
        xy: Fp2::ONE,
        yx: Fp2::ONE,
        t2: Fp2::ZERO,
    };

    /// From a point (one inversion).
    pub(crate) fn from_point(p: &Point) -> AffineR5 {
        let (x, y) = p.to_affine();
        AffineR5 {
            xy: x.add(&y),
            yx: y.sub(&x),
            t2: x.mul(&y).double().mul(&D),
        }
    }

    #[inline(always)]
    pub(crate) fn conditional_negate(&mut self, neg: Choice) {
        let (xy, yx) = (self.xy, self.yx);
        self.xy = Fp2::conditional_select(&xy, &yx, neg);
        self.yx = Fp2::conditional_select(&yx, &xy, neg);
        self.t2.conditional_negate(neg);
    }
}

impl ConditionallySelectable for AffineR5 {
    #[inline(always)]
    fn conditional_select(a: &Self, b: &Self, c: Choice) -> Self {
        AffineR5 {
            xy: Fp2::conditional_select(&a.xy, &b.xy, c),
            yx: Fp2::conditional_select(&a.yx, &b.yx, c),
            t2: Fp2::conditional_select(&a.t2, &b.t2, c),
        }
    }
}

impl ConditionallySelectable for Point {
    fn conditional_select(a: &Self, b: &Self, c: Choice) -> Self {
        Point {
            x: Fp2::conditional_select(&a.x, &b.x, c),
            y: Fp2::conditional_select(&a.y, &b.y, c),
            z: Fp2::conditional_select(&a.z, &b.z, c),
            ta: Fp2::conditional_select(&a.ta, &b.ta, c),
            tb: Fp2::conditional_select(&a.tb, &b.tb, c),
        }
    }
}

impl ConstantTimeEq for Point {
    /// Projective equality: `X1·Z2 = X2·Z1` and `Y1·Z2 = Y2·Z1`.
    fn ct_eq(&self, other: &Point) -> Choice {
        self.x.mul(&other.z).ct_eq(&other.x.mul(&self.z))
            & self.y.mul(&other.z).ct_eq(&other.y.mul(&self.z))
    }
}

impl PartialEq for Point {
    fn eq(&self, other: &Point) -> bool {
        bool::from(self.ct_eq(other))
    }
}

impl Eq for Point {}

impl Default for Point {
    fn default() -> Point {
        Point::IDENTITY
    }
}

impl core::fmt::Debug for Point {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Points are public values; print the encoding.
        write!(f, "Point(")?;
        for b in self.to_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Wipes a table entry (the multiples of a secret-derived point are wiped after use).
impl Zeroize for PointR2 {
    fn zeroize(&mut self) {
        self.xy.zeroize();
        self.yx.zeroize();
        self.z2.zeroize();
        self.t2.zeroize();
    }
}

impl Zeroize for Point {
    fn zeroize(&mut self) {
        self.x.zeroize();
        self.y.zeroize();
        self.z.zeroize();
        self.ta.zeroize();
        self.tb.zeroize();
    }
}

impl core::ops::Add<&Point> for &Point {
    type Output = Point;
    fn add(self, rhs: &Point) -> Point {
        self.add_r2(&rhs.to_r2(Portable), Portable)
    }
}

impl core::ops::Sub<&Point> for &Point {
    type Output = Point;
    fn sub(self, rhs: &Point) -> Point {
        self.add_r2(&(-rhs).to_r2(Portable), Portable)
    }
}

impl core::ops::Neg for &Point {
    type Output = Point;
    /// `−(x, y) = (−x, y)`.
    fn neg(self) -> Point {
        Point {
            x: self.x.neg(),
            y: self.y,
            z: self.z,
            ta: self.ta.neg(),
            tb: self.tb,
        }
    }
}

impl core::ops::Neg for Point {
    type Output = Point;
    fn neg(self) -> Point {
        -&self
    }
}

macro_rules! forward_binop {
    ($tr:ident, $f:ident, $atr:ident, $af:ident) => {
        impl core::ops::$tr<Point> for Point {
            type Output = Point;
            fn $f(self, rhs: Point) -> Point {
                core::ops::$tr::$f(&self, &rhs)
            }
        }
        impl core::ops::$tr<&Point> for Point {
            type Output = Point;
            fn $f(self, rhs: &Point) -> Point {
                core::ops::$tr::$f(&self, rhs)
            }
        }
        impl core::ops::$tr<Point> for &Point {
            type Output = Point;
            fn $f(self, rhs: Point) -> Point {
                core::ops::$tr::$f(self, &rhs)
            }
        }
        impl core::ops::$atr<Point> for Point {
            fn $af(&mut self, rhs: Point) {
                *self = core::ops::$tr::$f(&*self, &rhs);
            }
        }
        impl core::ops::$atr<&Point> for Point {
            fn $af(&mut self, rhs: &Point) {
                *self = core::ops::$tr::$f(&*self, rhs);
            }
        }
    };
}
forward_binop!(Add, add, AddAssign, add_assign);
forward_binop!(Sub, sub, SubAssign, sub_assign);

impl core::iter::Sum for Point {
    fn sum<I: Iterator<Item = Point>>(iter: I) -> Point {
        iter.fold(Point::IDENTITY, |a, b| a + b)
    }
}

impl<'a> core::iter::Sum<&'a Point> for Point {
    fn sum<I: Iterator<Item = &'a Point>>(iter: I) -> Point {
        iter.fold(Point::IDENTITY, |a, b| a + b)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Affine coordinates as FourQlib's `fp2compare64` words `[x0.lo, x0.hi, x1.lo, x1.hi]`.
    pub(crate) fn words(p: &Point) -> ([u64; 4], [u64; 4]) {
        let (x, y) = p.to_affine();
        let w = |e: Fp2| [e.a0.0[0], e.a0.0[1], e.a1.0[0], e.a1.0[1]];
        (w(x), w(y))
    }

    #[test]
    fn generator_is_on_curve_and_in_subgroup() {
        let g = Point::generator();
        assert!(g.is_valid());
        assert!(g.is_torsion_free_vartime());
        assert!(!g.is_identity_vartime());
        assert!(Point::IDENTITY.is_valid());
    }

    /// FourQlib `tests/ecc_tests.c`, "Point doubling": 1000 doublings of G.
    #[test]
    fn kat_1000_doublings() {
        let mut p = Point::generator();
        for _ in 0..1000 {
            p = p.double_r1(Portable);
        }
        let (x, y) = words(&p);
        assert_eq!(
            x,
            [
                0xC9099C54855859D6,
                0x2C3FD8822C82270F,
                0xA7B3F6E2043E8E68,
                0x4DA5B9E83AA7A1B2
            ]
        );
        assert_eq!(
            y,
            [
                0x3EE089F0EB49AA14,
                0x2001EB3A57688396,
                0x1FEE5617A7E954CD,
                0x0FFDB0D761421F50
            ]
        );
    }

    /// FourQlib `tests/ecc_tests.c`, "Point addition": P ← P + P 1000 times, then
    /// P ← 2G, P ← P + G 1000 times.
    #[test]
    fn kat_1000_additions() {
        let mut p = Point::generator();
        for _ in 0..1000 {
            p = p.add_r2(&p.to_r2(Portable), Portable);
        }
        let (x, y) = words(&p);
        assert_eq!(
            x,
            [
                0xC9099C54855859D6,
                0x2C3FD8822C82270F,
                0xA7B3F6E2043E8E68,
                0x4DA5B9E83AA7A1B2
            ]
        );
        assert_eq!(
            y,
            [
                0x3EE089F0EB49AA14,
                0x2001EB3A57688396,
                0x1FEE5617A7E954CD,
                0x0FFDB0D761421F50
            ]
        );

        let g = Point::generator();
        let q = g.to_r2(Portable);
        let mut p = g.double_r1(Portable);
        for _ in 0..1000 {
            p = p.add_r2(&q, Portable);
        }
        let (x, y) = words(&p);
        assert_eq!(
            x,
            [
                0x6480B1EF0A151DB0,
                0x3E243958590C4D90,
                0xAA270F644A65D473,
                0x5327AF7D84238CD0
            ]
        );
        assert_eq!(
            y,
            [
                0x5E06003D73C43EB1,
                0x3EF69A49CB7E0237,
                0x4E752648AC2EF0AB,
                0x293EB1E26DD23B4E
            ]
        );
    }

    /// FourQlib `tests/ecc_tests.c`, "Psi endomorphism": ψ applied 1000 times to G.
    #[test]
    fn kat_psi() {
        let mut p = Point::generator();
        for _ in 0..1000 {
            p = p.psi(Portable);
        }
        let (x, y) = words(&p);
        assert_eq!(
            x,
            [
                0xD8F3C8C24A2BC7E2,
                0x75AF54EDB41A2B93,
                0x4DE2466701F009A9,
                0x065249F9EDE0C798
            ]
        );
        assert_eq!(
            y,
            [
                0x1C6E119ADD608104,
                0x06DBB85BFFB7C21E,
                0xFD234D6C4CFA3EC1,
                0x060A30903424BF13
            ]
        );
    }

    /// FourQlib `tests/ecc_tests.c`, "Phi endomorphism": φ applied 1000 times to G
    /// (normalised after each step).
    #[test]
    fn kat_phi() {
        let mut p = Point::generator();
        for _ in 0..1000 {
            let q = p.phi(Portable);
            let (x, y) = q.to_affine();
            p = Point::from_affine(x, y);
        }
        let (x, y) = words(&p);
        assert_eq!(
            x,
            [
                0xD5B5A3061287DB16,
                0x5550AAB9E7A620EE,
                0xEC321E6CF33610FC,
                0x3E61EBB9A1CB0210
            ]
        );
        assert_eq!(
            y,
            [
                0x7E2851D5A8E83FB9,
                0x5474BF8EC55603AE,
                0xA5077613491788D5,
                0x5476093DBF8BF6BF
            ]
        );
    }

    #[test]
    fn group_laws_small() {
        let g = Point::generator();
        let g2 = g.double();
        assert_eq!(g + g, g2);
        assert_eq!(g2 - g, g);
        assert_eq!(g + Point::IDENTITY, g);
        assert_eq!(g + (-g), Point::IDENTITY);
        assert!((g + (-g)).is_identity_vartime());
        assert_eq!((g + g2) + g, g + (g2 + g));
        let m = AffineR5::from_point(&g2);
        assert_eq!(g.add_r5(&m, Portable), g + g2);
        assert!(g.psi(Portable).is_valid() && g.phi(Portable).is_valid());
    }

    /// A point with `Z = 0` (what φ/ψ give on the small-order points where they degenerate,
    /// reachable through `from_bytes_unchecked_subgroup` and `mul`) encodes in a batch as it
    /// does alone and leaves the other encodings of the batch intact.
    #[test]
    fn batch_encoding_isolates_zero_z() {
        let g = Point::generator();
        let degenerate = Point {
            x: Fp2::ZERO,
            y: Fp2::ZERO,
            z: Fp2::ZERO,
            ta: Fp2::ZERO,
            tb: Fp2::ZERO,
        };
        let pts = [g, degenerate, g.double(), degenerate, g.double() + g];
        let want: Vec<[u8; 32]> = pts.iter().map(Point::to_bytes).collect();
        assert_eq!(Point::batch_to_bytes(&pts), want);
        assert_eq!(
            Point::batch_to_bytes(&[degenerate]),
            vec![degenerate.to_bytes()]
        );
    }

    /// Hostile encodings of the identity `(0, 1)` and the generator: every alias of a
    /// coordinate (`y0 + p`, `y1 + p`, bit 127 of `y0`, each half equal to `p` or all ones)
    /// and the sign bit on `x = 0` are rejected by both decoders.
    #[test]
    fn aliased_coordinates_rejected() {
        let p = (1u128 << 127) - 1;
        let enc = |y0: u128, y1: u128, sign: bool| {
            let mut b = [0u8; 32];
            b[..16].copy_from_slice(&y0.to_le_bytes());
            b[16..].copy_from_slice(&y1.to_le_bytes());
            b[31] |= u8::from(sign) << 7;
            b
        };
        let rejected = |b: &[u8; 32]| {
            bool::from(Point::from_bytes_unchecked_subgroup(b).is_none())
                && bool::from(Point::from_bytes(b).is_none())
        };
        // The identity: y = 1 + 0·i.
        assert!(!rejected(&enc(1, 0, false)));
        for b in [
            enc(1 + p, 0, false), // y0 + p = 2^127: bit 127 of the first half
            enc(1, p, false),     // y1 = p ≡ 0
            enc(p, 0, false),
            enc(u128::MAX, 0, false),
            enc(1, p, true), // y1 = p with the sign bit: every bit of the second half set
            enc(1, 0, true), // the sign bit on x = 0
        ] {
            assert!(rejected(&b), "{b:02x?}");
        }
        // The generator: its y0 + p (below 2^128) and the same with bit 127 of y0 alone.
        let gb = Point::generator().to_bytes();
        let y0 = u128::from_le_bytes(gb[..16].try_into().unwrap());
        let mut y1b: [u8; 16] = gb[16..].try_into().unwrap();
        let sign = y1b[15] >> 7 == 1;
        y1b[15] &= 0x7f;
        let y1 = u128::from_le_bytes(y1b);
        assert_eq!(enc(y0, y1, sign), gb);
        assert!(!rejected(&gb));
        assert!(rejected(&enc(y0 + p, y1, sign)));
        assert!(rejected(&enc(y0 | 1 << 127, y1, sign)));
        // The other sign is the other point with this y.
        assert_eq!(
            Point::from_bytes(&enc(y0, y1, !sign)).unwrap(),
            -Point::generator()
        );
    }

    #[test]
    fn encoding_round_trip_and_rejection() {
        let mut p = Point::generator();
        for _ in 0..20 {
            let b = p.to_bytes();
            let q = Option::<Point>::from(Point::from_bytes(&b)).unwrap();
            assert_eq!(p, q);
            assert_eq!(q.to_bytes(), b);
            p = p.double() + Point::generator();
        }
        // The identity encodes as y = 1, sign 0.
        let mut id = [0u8; 32];
        id[0] = 1;
        assert_eq!(Point::IDENTITY.to_bytes(), id);
        assert!(Point::from_bytes(&id).is_some().unwrap_u8() == 1);
        id[31] |= 0x80; // sign set with x = 0
        assert!(bool::from(Point::from_bytes(&id).is_none()));
    }
}
