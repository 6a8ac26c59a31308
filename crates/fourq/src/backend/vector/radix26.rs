// The GF(p) and GF(p²) lane arithmetic of the vector backends without IFMA (`avx2.rs`, four
// lanes of `__m256i`; `avx512.rs`, eight lanes of `__m512i`), `include!`d by each and compiled
// there with its feature set (`enable!`). The including backend provides `LANES`, the vector
// type `V`, the lane-mask type `Mask` (one bit per lane) and these primitives on 64-bit lanes:
// `splat`, `v_zero`, `v_add`, `v_sub`, `v_mul32` (`vpmuludq`: low 32 bits times low 32 bits),
// `v_and`, `v_or`, `v_xor`, `v_shr25`, `v_shr26`, `v_shr32`, `v_shl32`, `v_eq` (all ones in the
// equal lanes), `v_pick(a, b, m)` (`b` where `m` is all ones, `a` where it is zero), `lanes`,
// `from_lanes`, `movemask` and `expand`.
//
// # Representation
//
// An element of GF(p), p = 2¹²⁷ − 1, is five limbs of 26, 25, 26, 25 and 25 bits at bit offsets
// 0, 26, 51, 77 and 102, one vector per limb (one 64-bit lane per point). The widths add up to
// 127, so the wrap-around `2¹²⁷ ≡ 1` lands on a limb boundary, and the product of limbs `i` and
// `j` lands on limb `(i + j) mod 5` exactly or one bit above it (the offsets alternate like those
// of the radix-2^25.5 Curve25519 code): `vpmuludq` forms every `a_i · b_j` (or `a_i · 2b_j`) and
// adds it into one of five columns, 25 products per GF(p) product and 15 per square.
//
// One carry pass (limb 4's carry wraps into limb 0 with factor 1, then one more step from limb 0
// to limb 1) gives limbs below `2²⁶, 2²⁵ + 2¹⁴, 2²⁶, 2²⁵, 2²⁵`: *normal form* (`N`).
//
// # Limb bounds (checked by `debug_assert`s in the test profile)
//
// * GF(p) products: limbs below `16N`, so the `vpmuludq` operands (`b_j` doubled) stay below 2³²
//   and every column below 2⁶²;
// * GF(p²) products: Karatsuba in columns, inputs below `8N` (so `a0 + a1` and `b0 + b1` are
//   below `16N`): `t0 = a0·b0`, `t1 = a1·b1`, `t2 = (a0 + a1)(b0 + b1)`, then `c0 = t0 + B − t1`
//   with `B = 2³⁷·p` written limb-wise (every column of `B` is above `t1`, below 2⁶⁰ there) and
//   `c1 = t2 − t0 − t1` (column for column the cross products `a0·b1 + a1·b0`: never negative),
//   one carry pass per coordinate;
// * `sub(a, b) = a + 4p − b` needs `b < 3N` (a normal-form value, a sum of two, or a negated
//   normal-form value, as the shared formulas arrange); `neg(a) = 3p − a` needs `a < 2N`;
// * the shared formulas then keep every multiplication input below `8N`.
//
// Nothing branches on or indexes by a value: the table look-up reads all eight entries under
// masks, and the lane selections of the decoder and the hash map are blends.
//
// This file is not a module of its own: it is `include!`d (see `avx2.rs`, `avx512.rs`).

/// Limbs per GF(p) element.
const LIMBS: usize = 5;
/// Vectors per packed table entry: two limbs per 64-bit lane (see [`pack_entry`]).
const ENTRY_WORDS: usize = 4 * LIMBS;


/// Limb widths (they add up to 127).
const BITS: [u32; LIMBS] = [26, 25, 26, 25, 25];
/// Limb offsets.
const OFFSET: [u32; LIMBS] = [0, 26, 51, 77, 102];
/// Limb masks.
const MASK: [u64; LIMBS] = [
    (1 << 26) - 1,
    (1 << 25) - 1,
    (1 << 26) - 1,
    (1 << 25) - 1,
    (1 << 25) - 1,
];

/// Where the product of limbs `i` and `j` lands: at the start of limb `(i + j) mod 5` (after
/// `2¹²⁷ ≡ 1` when `i + j ≥ 5`), or one bit above it, where `SHIFT[i][j] = 1`. The products in
/// `Acc::product` and `Fe::square` are written out after this table (the field tests check them
/// against the serial arithmetic); it is computed here from the offsets as a check of the
/// radix, which fails to compile unless every product lands at most one bit off.
#[cfg(test)]
const SHIFT: [[u32; LIMBS]; LIMBS] = [
    [0, 0, 0, 0, 0],
    [0, 1, 0, 1, 1],
    [0, 0, 0, 1, 0],
    [0, 1, 1, 1, 1],
    [0, 1, 0, 1, 0],
];

const _: () = {
    let mut i = 0;
    while i < LIMBS {
        let mut j = 0;
        while j < LIMBS {
            let mut at = OFFSET[i] + OFFSET[j];
            if i + j >= LIMBS {
                at -= 127;
            }
            let d = at - OFFSET[(i + j) % LIMBS];
            assert!(d <= 1);
            #[cfg(test)]
            assert!(d == SHIFT[i][j]);
            j += 1;
        }
        i += 1;
    }
};

/// `4p` limb-wise: `4·(2^w − 1)` per limb of width `w` (above `3N`).
const P4: [u64; LIMBS] = [
    4 * MASK[0],
    4 * MASK[1],
    4 * MASK[2],
    4 * MASK[3],
    4 * MASK[4],
];
/// `3p` limb-wise (above `2N`).
const P3: [u64; LIMBS] = [
    3 * MASK[0],
    3 * MASK[1],
    3 * MASK[2],
    3 * MASK[3],
    3 * MASK[4],
];
/// `2³⁷·p` limb-wise: the column offset that keeps the differences of `Fe2::mul` positive.
const BIG: [u64; LIMBS] = [
    MASK[0] << 37,
    MASK[1] << 37,
    MASK[2] << 37,
    MASK[3] << 37,
    MASK[4] << 37,
];

/// `LANES` elements of GF(p), one per lane.
#[derive(Clone, Copy)]
struct Fe([V; LIMBS]);

/// `LANES` elements of GF(p²).
#[derive(Clone, Copy)]
struct Fe2 {
    a0: Fe,
    a1: Fe,
}

enable! {
    /// A table entry's `8·LIMBS` words (normal-form limbs, below 2³²) packed two to a lane:
    /// word `j` in the low half and word `j + ENTRY_WORDS` in the high half of word `j`. The
    /// constant-time scan of the eight entries then reads and blends half as many vectors.
    #[inline]
    fn pack_entry(w: &[V; 8 * LIMBS]) -> [V; ENTRY_WORDS] {
        for e in w.chunks_exact(LIMBS) {
            Fe(core::array::from_fn(|k| e[k])).check(1);
        }
        core::array::from_fn(|j| {
            v_or(w[j], v_shl32(w[j + ENTRY_WORDS]))
        })
    }
}

enable! {
    /// The words of a packed entry (the inverse of [`pack_entry`]).
    #[inline]
    fn unpack_entry(e: &[V; ENTRY_WORDS]) -> [V; 8 * LIMBS] {
        let low = splat(u64::from(u32::MAX));
        // Two straight passes (one `from_fn` choosing per word compiled to a loop with a
        // branch in it).
        let mut w = [v_zero(); 8 * LIMBS];
        for j in 0..ENTRY_WORDS {
            w[j] = v_and(e[j], low);
            w[j + ENTRY_WORDS] = v_shr32(e[j]);
        }
        w
    }
}

/// Limbs of a weakly reduced serial element (`≤ p`).
fn fp_limbs(a: &Fp) -> [u64; LIMBS] {
    let v = a.to_u128();
    core::array::from_fn(|i| ((v >> OFFSET[i]) as u64) & MASK[i])
}

/// A serial element from limbs below 2⁶⁰ (value reduced mod p into `[0, p]`).
fn fp_from_limbs(l: [u64; LIMBS]) -> Fp {
    let mut l = l;
    for i in 0..LIMBS - 1 {
        l[i + 1] += l[i] >> BITS[i];
        l[i] &= MASK[i];
    }
    // Bits of the top limb from 25 up sit at 2^127 and above: 2^127 ≡ 1.
    let top = l[4] >> BITS[4];
    l[4] &= MASK[4];
    let v = (0..LIMBS).fold(0u128, |v, i| v | (u128::from(l[i]) << OFFSET[i]));
    Fp::from_u128(v + u128::from(top))
}

impl Fe {
    enable! {
        #[inline]
        fn zero() -> Fe {
            Fe([v_zero(); LIMBS])
        }
    }

    enable! {
        /// The same serial element in every lane.
        #[inline]
        fn splat(a: &Fp) -> Fe {
            let l = fp_limbs(a);
            Fe(core::array::from_fn(|k| splat(l[k])))
        }
    }

    enable! {
        #[inline]
        fn from_serial(a: &[Fp; LANES]) -> Fe {
            let l = a.map(|x| fp_limbs(&x));
            Fe(core::array::from_fn(|k| {
                from_lanes(core::array::from_fn(|i| l[i][k]))
            }))
        }
    }

    enable! {
        #[inline]
        fn to_serial(self) -> [Fp; LANES] {
            let l = self.0.map(|v| lanes(v));
            core::array::from_fn(|i| fp_from_limbs(core::array::from_fn(|k| l[k][i])))
        }
    }

    enable! {
        /// Debug check: every limb below `times` normal-form bounds (`times · (2^w + 2¹⁴)`).
        #[inline]
        fn check(&self, times: u64) {
            if cfg!(debug_assertions) {
                for (k, l) in self.0.iter().enumerate() {
                    let bound = (times << BITS[k]) + (times << 14);
                    for v in lanes(*l) {
                        debug_assert!(v < bound, "limb {k}: {v:#x} not below {bound:#x}");
                    }
                }
            }
        }
    }

    enable! {
        #[inline]
        fn add(&self, b: &Fe) -> Fe {
            Fe(core::array::from_fn(|k| v_add(self.0[k], b.0[k])))
        }
    }

    enable! {
        /// `a + 4p − b` (needs `b < 3N`).
        #[inline]
        fn sub(&self, b: &Fe) -> Fe {
            b.check(3);
            Fe(core::array::from_fn(|k| {
                v_sub(v_add(self.0[k], splat(P4[k])), b.0[k])
            }))
        }
    }

    enable! {
        /// `3p − a` (needs `a < 2N`).
        #[inline]
        fn neg(&self) -> Fe {
            self.check(2);
            Fe(core::array::from_fn(|k| v_sub(splat(P3[k]), self.0[k])))
        }
    }

    enable! {
        /// Carry pass: columns below 2⁶⁴ − 2³⁹ in, normal form out, same value mod p.
        #[inline]
        fn carry(c: [V; LIMBS]) -> Fe {
            let [mut c0, mut c1, mut c2, mut c3, mut c4] = c;
            let m26 = splat(MASK[0]);
            let m25 = splat(MASK[1]);
            c1 = v_add(c1, v_shr26(c0));
            c0 = v_and(c0, m26);
            c2 = v_add(c2, v_shr25(c1));
            c1 = v_and(c1, m25);
            c3 = v_add(c3, v_shr26(c2));
            c2 = v_and(c2, m26);
            c4 = v_add(c4, v_shr25(c3));
            c3 = v_and(c3, m25);
            // Bit 127 is bit 0 again (2^127 ≡ 1).
            c0 = v_add(c0, v_shr25(c4));
            c4 = v_and(c4, m25);
            c1 = v_add(c1, v_shr26(c0));
            c0 = v_and(c0, m26);
            Fe([c0, c1, c2, c3, c4])
        }
    }

    enable! {
        #[inline]
        fn reduce(&self) -> Fe {
            Fe::carry(self.0)
        }
    }

    enable! {
        /// `a·b` in GF(p).
        #[inline]
        fn mul(&self, b: &Fe) -> Fe {
            Fe::carry(Acc::product(self, b).0)
        }
    }

    enable! {
        /// `a²` in GF(p): 15 products instead of 25 (each cross product once, doubled through
        /// its operand: `2a_j`, or `4a_j` where `SHIFT` doubles it again).
        #[inline]
        fn square(&self) -> Fe {
            self.check(8);
            let a = &self.0;
            let a2: [V; LIMBS] = core::array::from_fn(|j| v_add(a[j], a[j]));
            let a4: [V; LIMBS] = core::array::from_fn(|j| v_add(a2[j], a2[j]));
            let m = |x: V, y: V| v_mul32(x, y);
            Fe::carry([
                sum3([m(a[0], a[0]), m(a[1], a4[4]), m(a[2], a4[3])]),
                sum3([m(a[0], a2[1]), m(a[2], a2[4]), m(a[3], a2[3])]),
                sum3([m(a[0], a2[2]), m(a[1], a2[1]), m(a[3], a4[4])]),
                sum3([m(a[0], a2[3]), m(a[1], a2[2]), m(a[4], a[4])]),
                sum3([m(a[0], a2[4]), m(a[1], a4[3]), m(a[2], a[2])]),
            ])
        }
    }
}

enable! {
    /// `t0 + … + t4` as a tree of additions.
    #[inline]
    fn sum5(t: [V; 5]) -> V {
        let add = |x, y| v_add(x, y);
        add(add(add(t[0], t[1]), add(t[2], t[3])), t[4])
    }
}

enable! {
    /// `t0 + t1 + t2`.
    #[inline]
    fn sum3(t: [V; 3]) -> V {
        v_add(v_add(t[0], t[1]), t[2])
    }
}

/// The five columns of a product, column `k` at the offset of limb `k`.
struct Acc([V; LIMBS]);

impl Acc {
    enable! {
        /// `a·b` in columns (limbs below `16N`: every column below 2⁶²). Written out product
        /// by product (`b_j` doubled where `SHIFT[i][j]` is 1), so that nothing is left to a
        /// loop the compiler might not unroll.
        #[inline]
        fn product(a: &Fe, b: &Fe) -> Acc {
            a.check(16);
            b.check(16);
            let (a, b) = (&a.0, &b.0);
            let b2: [V; LIMBS] = core::array::from_fn(|j| v_add(b[j], b[j]));
            let m = |x: V, y: V| v_mul32(x, y);
            Acc([
                sum5([m(a[0], b[0]), m(a[1], b2[4]), m(a[2], b2[3]), m(a[3], b2[2]), m(a[4], b2[1])]),
                sum5([m(a[0], b[1]), m(a[1], b[0]), m(a[2], b[4]), m(a[3], b2[3]), m(a[4], b[2])]),
                sum5([m(a[0], b[2]), m(a[1], b2[1]), m(a[2], b[0]), m(a[3], b2[4]), m(a[4], b2[3])]),
                sum5([m(a[0], b[3]), m(a[1], b[2]), m(a[2], b[1]), m(a[3], b[0]), m(a[4], b[4])]),
                sum5([m(a[0], b[4]), m(a[1], b2[3]), m(a[2], b[2]), m(a[3], b2[1]), m(a[4], b[0])]),
            ])
        }
    }
}

/// The body of [`Fe2::mul`] and [`Fe2::mul_into`], an expression of type `Fe2` (a macro, so
/// that each is compiled with its backend's features and `mul_into` stores the result straight
/// into its destination).
macro_rules! fe2_mul {
    ($a:expr, $b:expr) => {{
        let (a, b): (&Fe2, &Fe2) = ($a, $b);
        for x in [&a.a0, &a.a1, &b.a0, &b.a1] {
            x.check(8);
        }
        let t0 = Acc::product(&a.a0, &b.a0).0;
        let t1 = Acc::product(&a.a1, &b.a1).0;
        let t2 = Acc::product(&a.a0.add(&a.a1), &b.a0.add(&b.a1)).0;
        let add = |x, y| v_add(x, y);
        let sub = |x, y| v_sub(x, y);
        Fe2 {
            a0: Fe::carry(core::array::from_fn(|k| sub(add(t0[k], splat(BIG[k])), t1[k]))),
            a1: Fe::carry(core::array::from_fn(|k| sub(t2[k], add(t0[k], t1[k])))),
        }
    }};
}

impl Fe2 {
    enable! {
        /// Karatsuba in columns: `t0 = a0·b0`, `t1 = a1·b1`, `t2 = (a0 + a1)(b0 + b1)`, then
        /// `c0 = t0 + B − t1` and `c1 = t2 − t0 − t1`, one carry pass each (inputs below `8N`,
        /// so the sums are below `16N`; `B = 2³⁷·p` is above `t1` in every column, and column
        /// for column `t2 − t0 − t1` is the sum of the cross products `a0_i·b1_j + a1_i·b0_j`,
        /// never negative).
        #[inline]
        fn mul(&self, b: &Fe2) -> Fe2 {
            fe2_mul!(self, b)
        }
    }

    enable! {
        /// `*out = a·b`: [`Fe2::mul`] storing into a place of the caller (a field of a point
        /// being built), where assigning `mul`'s result there goes through a copy.
        #[inline]
        fn mul_into(&self, b: &Fe2, out: &mut Fe2) {
            *out = fe2_mul!(self, b);
        }
    }

    enable! {
        /// `(a0 + a1)(a0 − a1) + 2·a0·a1·i` (`a0` below `4N`, `a1` below `3N`).
        #[inline]
        fn square(&self) -> Fe2 {
            self.a0.check(4);
            let t1 = self.a0.add(&self.a1);
            let t2 = self.a0.sub(&self.a1);
            Fe2 {
                a0: t1.mul(&t2),
                a1: self.a0.add(&self.a0).mul(&self.a1),
            }
        }
    }
}

/// A GF(p) lane vector whose every operation returns normal form (the hash map and the decoder;
/// their shared operations are in `kernels.rs`).
#[derive(Clone, Copy)]
struct H(Fe);

impl H {
    enable! {
        /// The same value, its limbs opaque to the optimiser ([`v_opaque`]): for loops that
        /// carry an element from one iteration to the next.
        #[inline]
        fn opaque(self) -> H {
            H(Fe(self.0.0.map(|v| v_opaque(v))))
        }
    }

    enable! {
        /// The canonical representative in `[0, p − 1]`, every limb within its width.
        #[inline]
        fn canonical(&self) -> [V; LIMBS] {
            let prop = |l: [V; LIMBS]| {
                let mut l = l;
                for i in 0..LIMBS - 1 {
                    let c = match BITS[i] {
                        26 => v_shr26(l[i]),
                        _ => v_shr25(l[i]),
                    };
                    l[i + 1] = v_add(l[i + 1], c);
                    l[i] = v_and(l[i], splat(MASK[i]));
                }
                l
            };
            // Every limb within its width except the top one: value below 2^127 + 2^103.
            let l = prop(self.0.0);
            // Two folds of the bits from 127 up (2^127 ≡ 1) leave a value in [0, p].
            let fold = |l: [V; LIMBS]| {
                let mut l = l;
                l[0] = v_add(l[0], v_shr25(l[4]));
                l[4] = v_and(l[4], splat(MASK[4]));
                prop(l)
            };
            let l = fold(fold(l));
            // p itself (all ones) is zero.
            let mut is_p = v_eq(l[0], splat(MASK[0]));
            for k in 1..LIMBS {
                is_p = v_and(is_p, v_eq(l[k], splat(MASK[k])));
            }
            l.map(|v| v_and(v, v_xor(is_p, splat(u64::MAX))))
        }
    }

    enable! {
        /// Lane mask of `a == b` (mod p).
        #[inline]
        fn ct_eq(&self, b: &H) -> Mask {
            let (x, y) = (self.canonical(), b.canonical());
            let mut eq = v_eq(x[0], y[0]);
            for k in 1..LIMBS {
                eq = v_and(eq, v_eq(x[k], y[k]));
            }
            movemask(eq)
        }
    }

    enable! {
        /// `b` in the lanes where `c` is set, `a` elsewhere.
        #[inline]
        fn select(a: &H, b: &H, c: Mask) -> H {
            let m = expand(c);
            H(Fe(core::array::from_fn(|k| {
                v_pick(a.0.0[k], b.0.0[k], m)
            })))
        }
    }
}

enable! {
    /// Lane mask of `a == 0` (mod p).
    #[inline]
    fn is_zero(a: &H) -> Mask {
        let c = a.canonical();
        let z = v_zero();
        let eq = c[1..].iter().fold(v_eq(c[0], z), |eq, l| {
            v_and(eq, v_eq(*l, z))
        });
        movemask(eq)
    }
}

enable! {
    /// Lane mask of bit 126 of the canonical value (bit 24 of the top limb).
    #[inline]
    fn bit126(a: &H) -> Mask {
        let b = splat(1 << 24);
        movemask(v_eq(v_and(a.canonical()[4], b), b))
    }
}
