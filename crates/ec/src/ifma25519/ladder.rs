//! The X25519-style same-scalar batch in eight AVX-512 IFMA lanes: the RFC 7748 §5
//! Montgomery ladder on the u-coordinates of eight points at a time, one point per 64-bit
//! lane (field elements: [`F8`]), for [`crate::X25519`].
//!
//! * validation (the decoding path only): the Euler criterion `χ(w) = w^((p−1)/2)` of
//!   `w = u³ + A·u² + u` in lanes (`u` on the curve, not on its twist, iff `w` is a non-zero
//!   square; `u = 0` is rejected before), four vectors' exponentiations interleaved;
//! * multiplication: the ladder over the 253 bits of `t = k/8 mod ℓ`, then three x-only
//!   doublings: `u([8t]P)`, the torsion-free scalar `s' = 8t` of [`crate::X25519`]'s
//!   semantics. Per bit 4 squarings, 5 multiplications (one of them by the affine `u`) and one
//!   multiplication by `a24 = 121665` (ten IFMA instructions);
//! * encoding: `u = X/Z` with one eight-lane inversion per chunk (Montgomery's trick across the
//!   vectors), `Z = 0` (the identity) giving `u = 0` as in RFC 7748;
//! * hashing ([`hash_mul_u`]): RFC 9380 `curve25519_XMD:SHA-512_ELL2_RO_` from the two field
//!   elements on: both Elligator 2 maps (App. G.2.1, the two exponentiations side by side), the
//!   rational map to edwards25519 (G.2.2), the sum, the affine `u` of the sum with one shared
//!   inversion, and the ladder on `8k`, which clears the cofactor.
//!
//! Constant time in the scalar: every lane takes the same bit, applied by a conditional swap
//! that is a `vpblendmq` with a mask computed arithmetically from the bit (no branch, no
//! index); the sequence of instructions does not depend on `t`. The only data-dependent
//! branch is the rejection of a chunk containing an invalid (public) encoding.
#![allow(clippy::cast_possible_truncation)] // bit extraction from scalar bytes

use super::Ext8;
use super::field::{F8, SQRT_M1, U8, pow2k_n, pow22501_n, square_n};
use core::arch::x86_64::__mmask8;

/// `a24 = (A − 2)/4 = 121665` of RFC 7748 §5 (used as `z₂ = E·(AA + a24·E)`).
const A24: u64 = 121_665;
/// The Montgomery coefficient `A = 486662`.
const A: u64 = 486_662;

/// One ladder state: `(x₂ : z₂)` and `(x₃ : z₃)`.
#[derive(Clone, Copy)]
struct State {
    x2: F8,
    z2: F8,
    x3: F8,
    z3: F8,
}

// SAFETY: four `F8`, i.e. `__m512i` arrays: all zeros is a valid value.
unsafe impl crate::wipe::ZeroBits for State {}

crate::cpu::ifma25519::enable! {
    /// Swap `(x₂, z₂)` and `(x₃, z₃)` in every lane if `mask` is all ones (it is `0` or `0xff`).
    #[inline]
    fn cswap(s: &mut State, mask: __mmask8) {
        let (x2, x3) = (
            F8::select(&s.x2, &s.x3, mask),
            F8::select(&s.x3, &s.x2, mask),
        );
        let (z2, z3) = (
            F8::select(&s.z2, &s.z3, mask),
            F8::select(&s.z3, &s.z2, mask),
        );
        *s = State { x2, z2, x3, z3 };
    }

    /// One ladder step of RFC 7748 §5 (differential addition and doubling):
    /// `A = x₂+z₂, B = x₂−z₂, C = x₃+z₃, D = x₃−z₃, AA = A², BB = B², E = AA−BB,
    /// DA = D·A, CB = C·B, x₃ = (DA+CB)², z₃ = x₁·(DA−CB)², x₂ = AA·BB, z₂ = E·(AA + a24·E)`.
    #[inline]
    fn step(s: &mut State, x1: &F8) {
        let a = s.x2.add(&s.z2);
        let b = s.x2.sub(&s.z2);
        let c = s.x3.add(&s.z3);
        let d = s.x3.sub(&s.z3);
        let aa = a.square_nc();
        let bb = b.square_nc();
        let da = d.mul_nc(&a);
        let cb = c.mul_nc(&b);
        let aa_r = aa.reduce();
        let bb_r = bb.reduce();
        let e = U8::combine(&[&aa], &[&bb]);
        let sum = U8::combine(&[&da, &cb], &[]);
        let dif = U8::combine(&[&da], &[&cb]);
        let a24e = e.mul_small(A24);
        let t = U8::combine(&[&aa, &a24e], &[]);
        s.x3 = sum.square();
        s.z3 = x1.mul(&dif.square());
        s.x2 = aa_r.mul(&bb_r);
        s.z2 = e.mul(&t);
    }

    /// x-only doubling `(X : Z) ↦ (AA·BB : E·(AA + a24·E))`, `AA = (X+Z)², BB = (X−Z)²`.
    #[inline]
    fn double(x: &F8, z: &F8) -> (F8, F8) {
        let aa = x.add(z).square_nc();
        let bb = x.sub(z).square_nc();
        let e = U8::combine(&[&aa], &[&bb]);
        let t = U8::combine(&[&aa, &e.mul_small(A24)], &[]);
        (aa.reduce().mul(&bb.reduce()), e.mul(&t))
    }

    /// `(X : Z)` of `[8t]P` for the affine `u(P)` of eight points (`x1`), `t < 2^253` given by
    /// its 32 little-endian bytes: the ladder over bits 252…0 of `t` (RFC 7748 §5, with the swap
    /// bit carried from step to step), then three doublings.
    ///
    /// One ladder at a time: its state and `x1` take 25 of the 32 vector registers, and two
    /// ladders interleaved (so that one's products would fill the other's latency) spill to the
    /// stack; measured on this crate's AMD EPYC (Zen 4), one at a time is 4 % faster.
    fn ladder(x1: &F8, t: &[u8; 32]) -> (F8, F8) {
        let mut s = State {
            x2: F8::one(),
            z2: F8::zero(),
            x3: *x1,
            z3: F8::one(),
        };
        let mut swap = 0u8;
        for i in (0..253).rev() {
            let bit = (t[i >> 3] >> (i & 7)) & 1;
            swap ^= bit;
            // 0 → 0x00, 1 → 0xff, without a branch.
            cswap(&mut s, 0u8.wrapping_sub(swap));
            swap = bit;
            step(&mut s, x1);
        }
        cswap(&mut s, 0u8.wrapping_sub(swap));
        let (mut x, mut z) = (s.x2, s.z2);
        // The ladder state (multiples of the lanes' points, which the hash path derives from
        // the secret items) and the swap bit, wiped once per ladder.
        crate::wipe::wipe(&mut s);
        zeroize::Zeroize::zeroize(&mut swap);
        for _ in 0..3 {
            (x, z) = double(&x, &z);
        }
        (x, z)
    }

    /// `w = u·(u² + A·u + 1)`, the right-hand side of the curve equation `v² = w`: `u` is the
    /// u-coordinate of a point on Curve25519 (not on its quadratic twist) iff `w` is a square.
    /// `u² + A·u + 1` has no root in GF(p) (`A² − 4` is not a square), so `w ≠ 0` for `u ≠ 0`.
    #[inline]
    fn curve_rhs(u: &F8) -> F8 {
        let u2 = u.square_nc();
        let au = u.mul_small(A);
        let inner = U8::combine(&[&u2, &au, &U8(F8::one().0)], &[]);
        u.mul(&inner)
    }

    /// Euler's criterion for `N` vectors of non-zero elements: the lanes where `w^((p−1)/2) = 1`,
    /// i.e. `w` is a square, with `(p − 1)/2 = 2^254 − 10 = 16·(2^250 − 1) + 6`; the `N`
    /// exponentiations interleaved (254 squarings and 12 multiplications each).
    fn is_square_n<const N: usize>(w: &[F8; N]) -> [__mmask8; N] {
        let one = F8::one();
        let (t19, _) = pow22501_n(w);
        let w2 = square_n(w);
        let mut w6 = w2;
        for (o, (a, b)) in w6.iter_mut().zip(w2.iter().zip(w)) {
            *o = a.mul(b).square();
        }
        let t = pow2k_n(&t19, 4);
        let mut ok = [0; N];
        for j in 0..N {
            ok[j] = t[j].mul(&w6[j]).ct_eq(&one);
        }
        ok
    }
}

/// Number of random-subset tests in [`all_on_curve_batched`]: a chunk holding a point of the
/// twist passes all of them with probability `2^-40` (the workspace's statistical security
/// parameter). A multiple of 8: the tests' products are checked eight per vector.
pub(super) const SUBSET_TESTS: usize = 40;

/// From this many vectors on, [`all_on_curve`] tests the chunk with random subset products
/// rather than lane by lane. The batched test costs about `SUBSET_TESTS/2 + 1`
/// multiplications per vector (pairs of vectors, below) plus `SUBSET_TESTS/8` Euler
/// exponentiations (≈ 265 multiplications each) per chunk; the exact one ≈ 265 per vector.
pub(super) const BATCHED_FROM_VECTORS: usize = 8;

crate::cpu::ifma25519::enable! {
    /// Whether every lane of the vectors `x1` (non-zero u-coordinates; padding lanes must hold a
    /// valid `u` too) is on the curve: lane by lane for short chunks, otherwise
    /// [`all_on_curve_batched`] with fresh coins from the thread's CSPRNG (`rand::rng()`, ChaCha
    /// seeded from the operating system; the peer cannot predict them).
    fn all_on_curve(x1: &[F8]) -> bool {
        if x1.len() < BATCHED_FROM_VECTORS {
            return x1.chunks(4).all(|quad| {
                let mut q = [F8::splat([9, 0, 0, 0, 0]); 4];
                q[..quad.len()].copy_from_slice(quad);
                let w = [0, 1, 2, 3].map(|i| curve_rhs(&q[i]));
                is_square_n(&w).iter().all(|&m| m == 0xff)
            });
        }
        let mut coins = vec![0u8; SUBSET_TESTS * x1.len()];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut coins);
        let w: Vec<F8> = x1.iter().map(|u| curve_rhs(u)).collect();
        all_on_curve_batched(&w, &coins)
    }

    /// The batched on-curve test (the random-subset product test for quadratic residuosity):
    /// given `wᵢ = u³ + A·u² + u ≠ 0` for every point of a chunk (eight per vector), test `t`
    /// (`t < SUBSET_TESTS`) multiplies the `wᵢ` of a random subset `Sₜ` and checks that the
    /// product is a square. The Legendre symbol is multiplicative, so the product's symbol is
    /// `∏_{i∈Sₜ} χ(wᵢ)`: always `1` if every point is on the curve; if some `wⱼ` is not a square,
    /// adding or removing `j` flips the symbol, so exactly half of all subsets fail and the
    /// independent uniform subsets all pass with probability `2^-SUBSET_TESTS`.
    ///
    /// `coins[t·n + j]` (`n = w.len()`) is the mask of vector `j` in test `t`: lane `l` of
    /// vector `j` belongs to `Sₜ` iff bit `l` is set. The coins must be uniform and unknown to
    /// whoever chose the points. Per pair of vectors `(a, b)` one product `a·b` is shared by the
    /// tests, each selecting `1`, `a`, `b` or `a·b` per lane and multiplying it into its
    /// accumulator; at the end each accumulator's eight lanes are multiplied together (an 8×8
    /// transposition of eight accumulators, seven products) and Euler's criterion runs on the
    /// `SUBSET_TESTS/8` vectors of products. Variable time only in the public outcome.
    #[allow(clippy::needless_range_loop)] // `r` picks lane r of all eight accumulators (a transposition)
    pub(super) fn all_on_curve_batched(w: &[F8], coins: &[u8]) -> bool {
        debug_assert_eq!(coins.len(), SUBSET_TESTS * w.len());
        let n = w.len();
        let one = F8::one();
        let mut acc = [one; SUBSET_TESTS];
        for j in (0..n).step_by(2) {
            let a = w[j];
            if j + 1 < n {
                let b = w[j + 1];
                let ab = a.mul(&b);
                for (t, acc) in acc.iter_mut().enumerate() {
                    let (ma, mb) = (coins[t * n + j], coins[t * n + j + 1]);
                    // Lanes in a's mask: a or a·b; elsewhere 1 or b; then b's mask picks.
                    let without_b = F8::select(&one, &a, ma);
                    let with_b = F8::select(&b, &ab, ma);
                    *acc = acc.mul(&F8::select(&without_b, &with_b, mb));
                }
            } else {
                for (t, acc) in acc.iter_mut().enumerate() {
                    *acc = acc.mul(&F8::select(&one, &a, coins[t * n + j]));
                }
            }
        }
        // Test 8g + i's product is the product of accumulator 8g + i's lanes: transpose each
        // group of eight accumulators so that vector r holds their lanes r, multiply the eight.
        let mut products = [one; SUBSET_TESTS / 8];
        for (g, p) in products.iter_mut().enumerate() {
            let limbs: [[[u64; 8]; 5]; 8] = core::array::from_fn(|i| acc[8 * g + i].to_limbs());
            for r in 0..8 {
                let column: [[u64; 8]; 5] =
                    core::array::from_fn(|limb| core::array::from_fn(|i| limbs[i][limb][r]));
                *p = p.mul(&F8::from_limbs(&column));
            }
        }
        is_square_n(&products).iter().all(|&m| m == 0xff)
    }

    /// For each affine u-coordinate (32 bytes, already checked canonical and non-zero by the
    /// caller), `u([8t]P)` encoded; with `check`, first the lanes' on-curve test, and `false`
    /// (with `out` partly written) if some `u` is on the twist.
    /// `out.len()` must equal `us.len()`.
    pub(super) fn mul_u(us: &[[u8; 32]], t: &[u8; 32], out: &mut [[u8; 32]], check: bool) -> bool {
        const PAD: [u8; 32] = {
            let mut b = [0u8; 32];
            b[0] = 9;
            b
        };
        let lanes = |c: &[[u8; 32]]| {
            let mut l = [PAD; 8];
            l[..c.len()].copy_from_slice(c);
            F8::from_bytes(&l)
        };
        let mut x1: Vec<F8> = us.chunks(8).map(lanes).collect();
        let ok = !check || all_on_curve(&x1);
        if ok {
            ladder_and_encode(&x1, t, out);
        }
        // The points may be hashes of private items (the default hash path): their copy is
        // wiped once per call.
        crate::wipe::wipe_slice(&mut x1);
        ok
    }

    /// `u([8t]P)` for the affine u-coordinates `x1` (eight per vector), encoded into `out` (the
    /// last vector possibly partial): the ladders, then one shared inversion (Montgomery's
    /// trick across the vectors).
    fn ladder_and_encode(x1: &[F8], t: &[u8; 32], out: &mut [[u8; 32]]) {
        let mut xz: Vec<(F8, F8)> = Vec::with_capacity(x1.len());
        for x in x1 {
            xz.push(ladder(x, t));
        }
        // Z = 0 (the identity) would zero the shared product: such lanes take Z = 1, X = 0, which
        // encodes u = 0 as RFC 7748's `x₂·z₂^(p−2)` does.
        for (x, z) in &mut xz {
            let m = z.is_zero();
            *z = F8::select(z, &F8::one(), m);
            *x = F8::select(x, &F8::zero(), m);
        }
        // Montgomery's trick: prefix products, one inversion, back substitution.
        let mut prefix = Vec::with_capacity(xz.len());
        let mut acc = F8::one();
        for (_, z) in &xz {
            prefix.push(acc);
            acc = acc.mul(z);
        }
        let mut inv = acc.invert();
        for (i, (x, z)) in xz.iter().enumerate().rev() {
            let zinv = inv.mul(&prefix[i]);
            inv = inv.mul(z);
            let enc = x.mul(&zinv).to_bytes();
            let o = &mut out[8 * i..];
            let n = o.len().min(8);
            o[..n].copy_from_slice(&enc[..n]);
        }
        // The products' projective coordinates and the prefix products: internal scratch,
        // wiped once per call like the rest of the lanes' vectors.
        crate::wipe::wipe_slice(&mut xz);
        crate::wipe::wipe_slice(&mut prefix);
    }
}

/// `sqrt(−486664)` with `sgn0 = 0` (RFC 9380 Appendix G.2.2 `c1`; either root gives the same
/// u-coordinates, since flipping it negates both mapped points).
const SQRT_M486664: [u64; 5] = [
    1_693_982_333_959_686,
    608_509_411_481_997,
    2_235_573_344_831_311,
    947_681_270_984_193,
    266_558_006_233_600,
];
/// `2^((p + 3)/8)` (RFC 9380 Appendix G.2.1 `c2`).
const ELL2_C2: [u64; 5] = [
    1_718_705_420_411_057,
    234_908_883_556_509,
    2_233_514_472_574_048,
    2_117_202_627_021_982,
    765_476_049_583_133,
];

crate::cpu::ifma25519::enable! {
    /// RFC 9380 Appendix G.2.1 `map_to_curve_elligator2_curve25519` (the straight-line Elligator
    /// 2 map, `Z = 2`) followed by G.2.2's rational map to edwards25519, on `N` vectors of eight
    /// field elements, the `N` exponentiations interleaved; the points in extended coordinates
    /// (the exceptional case of the rational map gives the identity, as G.2.2 says).
    ///
    /// Per map: one exponentiation by `(p − 5)/8` (252 squarings, 11 multiplications) and about
    /// 4 squarings and 21 multiplications around it. Constant time: masked selects only.
    #[allow(clippy::needless_range_loop)] // parallel per-vector arrays, indexed together
    fn elligator2_n<const N: usize>(u: &[F8; N]) -> [Ext8; N] {
        let one = F8::one();
        let zero = F8::zero();
        let x1n = F8::splat([A, 0, 0, 0, 0]).neg();
        let c2 = F8::splat(ELL2_C2);
        let c3 = F8::splat(SQRT_M1);
        let mut tv1 = [one; N];
        let mut xd = [one; N];
        let mut gxd = [one; N];
        let mut gx1 = [one; N];
        let mut tv3 = [one; N];
        let mut tv2 = [one; N];
        for j in 0..N {
            let u2 = u[j].square();
            tv1[j] = u2.add(&u2); // 2u²
            xd[j] = tv1[j].add(&one); // non-zero: −1/2 is not a square
            let xd2 = xd[j].square();
            gxd[j] = xd2.mul(&xd[j]);
            // gx1 = x1n³ + J·x1n²·xd + x1n·xd² = ((J·tv1)·x1n + xd²)·x1n.
            let g = tv1[j].mul_small(A).reduce().mul(&x1n).add(&xd2);
            gx1[j] = g.mul(&x1n);
            let gxd2 = gxd[j].square();
            let gxd3 = gxd2.mul(&gxd[j]);
            tv3[j] = gxd3.mul(&gx1[j]); // gx1·gxd³
            tv2[j] = gxd2.square().mul(&tv3[j]); // gx1·gxd⁷
        }
        // y11 = tv3·tv2^((p − 5)/8), (p − 5)/8 = 2^252 − 3: (tv2^(2^250 − 1))^4·tv2.
        let (t19, _) = pow22501_n(&tv2);
        let p58 = pow2k_n(&t19, 2);
        let mut out = [Ext8 {
            x: zero,
            y: one,
            z: one,
            t: zero,
        }; N];
        for j in 0..N {
            let y11 = p58[j].mul(&tv2[j]).mul(&tv3[j]);
            let y12 = y11.mul(&c3);
            let t1 = y11.square().mul(&gxd[j]);
            let e1 = t1.ct_eq(&gx1[j]);
            let y1 = F8::select(&y12, &y11, e1);
            let x2n = x1n.mul(&tv1[j]);
            let y21 = y11.mul(&u[j]).mul(&c2);
            let y22 = y21.mul(&c3);
            let gx2 = gx1[j].mul(&tv1[j]);
            let e2 = y21.square().mul(&gxd[j]).ct_eq(&gx2);
            let y2 = F8::select(&y22, &y21, e2);
            // RFC step 34 `e3 = (y1²·gxd == gx1)`: y1 = y11 if e1, else y11·√−1 with
            // y1²·gxd = −t1; so e3 = e1 ∨ (t1 = −gx1), without squaring y1 again.
            let e3 = e1 | t1.ct_eq(&gx1[j].neg());
            let xn = F8::select(&x2n, &x1n, e3);
            let y = F8::select(&y2, &y1, e3);
            let e4 = y.is_negative();
            let y = y.cond_neg(e3 ^ e4);
            // G.2.2: x = c1·xM/yM, y = (xM − 1)/(xM + 1) with xM = xn/xd, yM = y.
            let exn = xn.mul(&F8::splat(SQRT_M486664));
            let exd = xd[j].mul(&y);
            let eyn = xn.sub(&xd[j]);
            let eyd = xn.add(&xd[j]);
            let z = exd.mul(&eyd);
            let exc = z.is_zero();
            out[j] = Ext8 {
                x: F8::select(&exn.mul(&eyd), &zero, exc),
                y: F8::select(&eyn.mul(&exd), &one, exc),
                z: F8::select(&z, &one, exc),
                t: F8::select(&exn.mul(&eyn), &zero, exc),
            };
        }
        out
    }

    /// RFC 9380 `curve25519_XMD:SHA-512_ELL2_RO_` after `hash_to_field`, then the ladder: for
    /// each item's two field elements `(u₀, u₁)` (given as reduced limbs, `fe[i][0..2]`), `Q₀ =
    /// map(u₀)`, `Q₁ = map(u₁)`, `R = Q₀ + Q₁` on edwards25519, its Montgomery
    /// `u = (1 + y)/(1 − y)` made affine with one shared inversion, then `u([8k]R)` encoded,
    /// which is `u([k]H)` for the suite's `H = clear_cofactor(R) = [8]R`: the ladder's three
    /// final doublings are the cofactor clearing. `k < 2^253` is given by its little-endian
    /// bytes. `out.len()` must equal `fe.len()`.
    pub(super) fn hash_mul_u(fe: &[[[u64; 5]; 2]], k: &[u8; 32], out: &mut [[u8; 32]]) {
        let mut num = Vec::with_capacity(fe.len().div_ceil(8));
        let mut den = Vec::with_capacity(fe.len().div_ceil(8));
        // The items' field elements in lanes and their mapped points, wiped once per call
        // (after the last group; each group overwrites the previous one's).
        let mut l = [[[0u64; 8]; 5]; 2];
        let zero = F8::zero();
        let blank = Ext8 {
            x: zero,
            y: zero,
            z: zero,
            t: zero,
        };
        let mut q = [blank; 2];
        for group in fe.chunks(8) {
            // One vector of eight items: its two maps' exponentiations side by side (the
            // lanes past a partial last group hold zeros, their results are dropped).
            l = [[[0u64; 8]; 5]; 2];
            for (lane, item) in group.iter().enumerate() {
                for m in 0..2 {
                    for (limb, &x) in item[m].iter().enumerate() {
                        l[m][limb][lane] = x;
                    }
                }
            }
            q = elligator2_n(&[F8::from_limbs(&l[0]), F8::from_limbs(&l[1])]);
            // R = Q₀ + Q₁; the cofactor clearing H = [8]R is left to the ladder, whose scalar is
            // a multiple of 8 (see above).
            let c = q[0].add_niels(&q[1].to_niels());
            // Completed ((X : Z), (Y : T)): y = Y/T, u = (1 + y)/(1 − y) = (T + Y)/(T − Y).
            let n = c.t.add(&c.y);
            let d = c.t.sub(&c.y);
            // y = 1 (the identity, probability 2^-252): u = 0 as for every identity here.
            let m = d.is_zero();
            num.push(F8::select(&n, &F8::zero(), m));
            den.push(F8::select(&d, &F8::one(), m));
        }
        let mut prefix = Vec::with_capacity(den.len());
        let mut acc = F8::one();
        for d in &den {
            prefix.push(acc);
            acc = acc.mul(d);
        }
        let mut inv = acc.invert();
        let mut x1 = vec![F8::zero(); den.len()];
        for i in (0..den.len()).rev() {
            x1[i] = num[i].mul(&inv.mul(&prefix[i]));
            inv = inv.mul(&den[i]);
        }
        ladder_and_encode(&x1, k, out);
        // `u(R)` of the hashed items (projective, the prefix products of the denominators,
        // affine), which reveal the items to a dictionary search: wiped once per call.
        zeroize::Zeroize::zeroize(&mut l);
        crate::wipe::wipe_slice(&mut q);
        crate::wipe::wipe_slice(&mut num);
        crate::wipe::wipe_slice(&mut den);
        crate::wipe::wipe_slice(&mut prefix);
        crate::wipe::wipe_slice(&mut x1);
        crate::wipe::wipe(&mut inv);
        crate::wipe::wipe(&mut acc);
    }
}

#[cfg(test)]
mod tests {
    //! The batched on-curve test with chosen coins: it is exactly the random-subset product
    //! test, so fixed subsets show both what it catches and why the subsets must be random.
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ifma25519::Ifma;
    use curve25519_dalek::edwards::EdwardsPoint;
    use curve25519_dalek::montgomery::MontgomeryPoint;
    use rand::SeedableRng;

    /// `n` vectors of valid u-coordinates, with the twist `u`s at the given point indices;
    /// returned as the right-hand sides `w` the test takes.
    fn rhs(_: Ifma, n: usize, twist_at: &[usize]) -> Vec<F8> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
        let mut us: Vec<[u8; 32]> = (0..8 * n)
            .map(|_| {
                EdwardsPoint::random(&mut rng)
                    .mul_by_cofactor()
                    .to_montgomery()
                    .0
            })
            .collect();
        for &i in twist_at {
            us[i] = loop {
                let mut b: [u8; 32] = rand::RngExt::random(&mut rng);
                b[31] &= 0x3f;
                if b != [0; 32] && MontgomeryPoint(b).to_edwards(0).is_none() {
                    break b;
                }
            };
        }
        us.chunks(8)
            .map(|c| {
                let lanes: [[u8; 32]; 8] = c.try_into().unwrap();
                // SAFETY: the `Ifma` token proves the CPU features.
                unsafe { curve_rhs(&F8::from_bytes(&lanes)) }
            })
            .collect()
    }

    fn batched(_: Ifma, w: &[F8], coins: &[u8]) -> bool {
        // SAFETY: the `Ifma` token proves the CPU features.
        unsafe { all_on_curve_batched(w, coins) }
    }

    fn random_coins(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..SUBSET_TESTS * n)
            .map(|_| rand::RngExt::random(&mut rng))
            .collect()
    }

    #[test]
    fn valid_chunks_pass_every_subset() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("valid_chunks_pass_every_subset") else {
            return;
        };
        for n in [1usize, 2, 9, 32] {
            let w = rhs(ifma, n, &[]);
            assert!(batched(ifma, &w, &vec![0xff; SUBSET_TESTS * n]));
            for seed in 0..4 {
                assert!(batched(ifma, &w, &random_coins(n, seed)), "n = {n}");
            }
        }
    }

    #[test]
    fn subsets_decide_what_is_caught() {
        let Some(ifma) = crate::ifma25519::lanes_for_test("subsets_decide_what_is_caught") else {
            return;
        };
        let n = 9; // odd: the last vector goes through the unpaired branch
        for at in [0usize, 13, 8 * n - 1] {
            let w = rhs(ifma, n, &[at]);
            // The empty subsets test nothing.
            assert!(batched(ifma, &w, &vec![0; SUBSET_TESTS * n]));
            // One test whose subset is just the twist point fails, whichever test it is.
            for t in [0, 7, 8, SUBSET_TESTS - 1] {
                let mut coins = vec![0; SUBSET_TESTS * n];
                coins[t * n + at / 8] = 1 << (at % 8);
                assert!(!batched(ifma, &w, &coins), "point {at}, test {t}");
            }
            assert!(!batched(ifma, &w, &vec![0xff; SUBSET_TESTS * n]));
            assert!(!batched(ifma, &w, &random_coins(n, at as u64)));
        }
        // Two twist points: their product is a square, so the all-points subset misses them;
        // random subsets do not.
        let w = rhs(ifma, n, &[5, 40]);
        assert!(batched(ifma, &w, &vec![0xff; SUBSET_TESTS * n]));
        for seed in 0..8 {
            assert!(!batched(ifma, &w, &random_coins(n, seed)));
        }
    }

    /// The exact lane-by-lane test (`curve_rhs`, then Euler's criterion `is_square_n`, which
    /// short chunks use) against dalek's on-curve decision (the Edwards decompression of
    /// `y = (u − 1)/(u + 1)`), lane for lane, on curve and twist `u`s mixed.
    #[test]
    fn exact_on_curve_test_matches_dalek() {
        let Some(_ifma) = crate::ifma25519::lanes_for_test("exact_on_curve_test_matches_dalek")
        else {
            return;
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        for _ in 0..16 {
            let us: [[u8; 32]; 32] = core::array::from_fn(|i| {
                if i % 3 == 0 {
                    EdwardsPoint::random(&mut rng).to_montgomery().0
                } else {
                    // Random canonical u other than 0 and −1 (where the map to y fails).
                    loop {
                        let mut b: [u8; 32] = rand::RngExt::random(&mut rng);
                        b[31] &= 0x3f;
                        if b != [0; 32] {
                            break b;
                        }
                    }
                }
            });
            let w: [F8; 4] = core::array::from_fn(|v| {
                let lanes: [[u8; 32]; 8] = us[8 * v..8 * v + 8].try_into().unwrap();
                // SAFETY: the `Ifma` token above proves the CPU features.
                unsafe { curve_rhs(&F8::from_bytes(&lanes)) }
            });
            // SAFETY: as above.
            let squares = unsafe { is_square_n(&w) };
            for (i, u) in us.iter().enumerate() {
                let on_curve = MontgomeryPoint(*u).to_edwards(0).is_some();
                assert_eq!(squares[i / 8] >> (i % 8) & 1 == 1, on_curve, "u #{i}");
            }
        }
    }
}
