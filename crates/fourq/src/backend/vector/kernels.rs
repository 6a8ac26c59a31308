// The point formulas and kernels shared by the lane backends (`ifma.rs`, `avx2.rs`), included
// by each into a `kernels` module of its own and compiled there with its feature set (`enable!`)
// and its lane field. The including backend provides, in its own module:
//
// * `LANES`, `LIMBS` (limbs per GF(p) element), the vector type `V` and the lane-mask type
//   `Mask` (one bit per lane, lane 0 in bit 0); `LOOKUP_WORD_BY_WORD`, the loop order of the
//   table scan that suits the backend's register file (the same loads and blends either way);
// * `ENTRY_WORDS`, `pack_entry(&[V; 8 * LIMBS]) -> [V; ENTRY_WORDS]` and its inverse
//   `unpack_entry`: how a table entry is stored (AVX2 packs two 26-bit limbs into each 64-bit
//   lane, halving what the constant-time scan reads and blends; IFMA stores the words as is);
// * `splat(u64) -> V`, `v_zero()`, `v_and`, `v_xor`, and `v_or_masked(a, b, m)` (`a | (b & m)`,
//   the table scan's step: its masks are all ones in exactly one entry's lanes and its
//   accumulator starts at zero, so the OR picks that entry);
// * `Fe` (`[V; LIMBS]`, one GF(p) element per lane) with `zero`, `splat`, `from_serial`,
//   `to_serial`, `add`, `sub`, `neg`, `reduce`, `mul`, `square`, and `Fe2 { a0, a1 }`
//   (GF(p²)) with `mul` and `square` (its other operations are below);
// * `H(Fe)` with `canonical() -> [V; LIMBS]`, `ct_eq`, `select`, and the free functions
//   `is_zero(&H)` and `bit126(&H)` (lane masks).
//
// The formulas keep the limb-bound discipline both fields check in their debug builds: every
// subtrahend is a normal-form value or a sum of two, every multiplication input at most a few
// normal-form values added together. Nothing branches on or indexes by a value.
//
// This file is not a module of its own: it is `include!`d (see `ifma.rs`, `avx2.rs`).

// The GF(p²) operations that only combine the backend's GF(p) ones (`mul` and `square`, which
// reduce once per coordinate, are the backend's).
impl Fe2 {
    enable! {
        #[inline]
        pub(super) fn zero() -> Fe2 {
            Fe2 {
                a0: Fe::zero(),
                a1: Fe::zero(),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn splat(a: &Fp2) -> Fe2 {
            Fe2 {
                a0: Fe::splat(&a.a0),
                a1: Fe::splat(&a.a1),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn from_serial(a: &[Fp2; LANES]) -> Fe2 {
            Fe2 {
                a0: Fe::from_serial(&core::array::from_fn(|i| a[i].a0)),
                a1: Fe::from_serial(&core::array::from_fn(|i| a[i].a1)),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn to_serial(self) -> [Fp2; LANES] {
            let a0 = self.a0.to_serial();
            let a1 = self.a1.to_serial();
            core::array::from_fn(|i| Fp2 {
                a0: a0[i],
                a1: a1[i],
            })
        }
    }

    enable! {
        #[inline]
        pub(super) fn add(&self, b: &Fe2) -> Fe2 {
            Fe2 {
                a0: self.a0.add(&b.a0),
                a1: self.a1.add(&b.a1),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn sub(&self, b: &Fe2) -> Fe2 {
            Fe2 {
                a0: self.a0.sub(&b.a0),
                a1: self.a1.sub(&b.a1),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn neg(&self) -> Fe2 {
            Fe2 {
                a0: self.a0.neg(),
                a1: self.a1.neg(),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn double(&self) -> Fe2 {
            self.add(self)
        }
    }

    enable! {
        /// `a0 − a1·i`.
        #[inline]
        pub(super) fn conj(&self) -> Fe2 {
            Fe2 {
                a0: self.a0,
                a1: self.a1.neg(),
            }
        }
    }

    enable! {
        #[inline]
        pub(super) fn reduce(&self) -> Fe2 {
            Fe2 {
                a0: self.a0.reduce(),
                a1: self.a1.reduce(),
            }
        }
    }
}

/// R1: `(X, Y, Z, Ta, Tb)` with `T = Ta·Tb`.
#[derive(Clone, Copy)]
struct P1 {
    x: Fe2,
    y: Fe2,
    z: Fe2,
    ta: Fe2,
    tb: Fe2,
}

/// R2: `(X+Y, Y−X, 2Z, 2d·T)`, every coordinate in normal form.
#[derive(Clone, Copy)]
struct P2 {
    xy: Fe2,
    yx: Fe2,
    z2: Fe2,
    t2: Fe2,
}

/// R3: `(X+Y, Y−X, Z, T)`, `Z` borrowed from the point it was made from (a copy of it would
/// be a 10-vector `memcpy` in every ladder step).
#[derive(Clone, Copy)]
struct P3<'a> {
    xy: Fe2,
    yx: Fe2,
    z: &'a Fe2,
    t: Fe2,
}

impl P1 {
    enable! {
        #[inline]
        fn from_serial(p: &[Point; LANES]) -> P1 {
            P1 {
                x: Fe2::from_serial(&core::array::from_fn(|i| p[i].x)),
                y: Fe2::from_serial(&core::array::from_fn(|i| p[i].y)),
                z: Fe2::from_serial(&core::array::from_fn(|i| p[i].z)),
                ta: Fe2::from_serial(&core::array::from_fn(|i| p[i].ta)),
                tb: Fe2::from_serial(&core::array::from_fn(|i| p[i].tb)),
            }
        }
    }

    enable! {
        #[inline]
        fn to_serial(self) -> [Point; LANES] {
            let (x, y, z) = (self.x.to_serial(), self.y.to_serial(), self.z.to_serial());
            let (ta, tb) = (self.ta.to_serial(), self.tb.to_serial());
            core::array::from_fn(|i| Point {
                x: x[i],
                y: y[i],
                z: z[i],
                ta: ta[i],
                tb: tb[i],
            })
        }
    }

    enable! {
        /// `2P` into `out` (dbl-2008-hwcd, `a = −1`), reading `X, Y, Z`: `4M + 3S`. Written
        /// into a buffer of the caller: `T_a` and `T_b` are computed into `out` and the
        /// products read them there, where a returned `P1` was assembled from temporaries by
        /// a `memcpy` per call.
        #[inline]
        fn double_into(&self, out: &mut P1) {
            let x2 = self.x.square();
            let y2 = self.y.square();
            let xy = self.x.add(&self.y);
            out.tb = x2.add(&y2); // X² + Y²
            let t1 = y2.sub(&x2); // Y² − X²
            out.ta = xy.square().sub(&out.tb); // 2XY
            // 2Z² − (Y² − X²), written so that the subtrahend is a normal-form value.
            let t2 = self.z.square().double().add(&x2).sub(&y2);
            out.ta.mul_into(&t2, &mut out.x);
            t1.mul_into(&out.tb, &mut out.y);
            t1.mul_into(&t2, &mut out.z);
        }
    }

    enable! {
        /// Every coordinate zero (not a point): a buffer for the `_into` functions to write.
        #[inline]
        fn zero() -> P1 {
            P1 {
                x: Fe2::zero(),
                y: Fe2::zero(),
                z: Fe2::zero(),
                ta: Fe2::zero(),
                tb: Fe2::zero(),
            }
        }
    }

    enable! {
        #[inline]
        fn in_r3(&self) -> P3<'_> {
            P3 {
                xy: self.x.add(&self.y),
                yx: self.y.sub(&self.x),
                z: &self.z,
                t: self.ta.mul(&self.tb),
            }
        }
    }

    enable! {
        /// R2 with every coordinate carried to normal form (table entries, addends).
        #[inline]
        fn to_r2(self, d2: &Fe2) -> P2 {
            P2 {
                xy: self.x.add(&self.y).reduce(),
                yx: self.y.sub(&self.x).reduce(),
                z2: self.z.double().reduce(),
                t2: self.ta.mul(&self.tb).mul(d2),
            }
        }
    }

    enable! {
        /// `ψ(P) = τ̂ ∘ δψδ⁻¹ ∘ τ`.
        #[inline]
        fn psi(&self) -> P1 {
            let (x, y, z) = tau(self);
            let (x, y, z) = delta_psi_delta(x, y, z);
            tau_dual(x, y, z)
        }
    }

    enable! {
        /// `φ(P) = τ̂ ∘ δφδ⁻¹ ∘ τ`.
        #[inline]
        fn phi(&self) -> P1 {
            let (x, y, z) = tau(self);
            let (x, y, z) = delta_phi_delta(x, y, z);
            tau_dual(x, y, z)
        }
    }

    enable! {
        /// `[392]P`: `3P`, `48P`, `49P`, `392P`.
        #[inline]
        fn mul_by_cofactor(&self, d2: &Fe2) -> P1 {
            let q = self.to_r2(d2);
            // Two buffers in turn: each step reads one and writes the other.
            let (mut p, mut t) = (P1::zero(), P1::zero());
            self.double_into(&mut t);
            add_core_into(&q, &t.in_r3(), &mut p);
            for _ in 0..2 {
                p.double_into(&mut t);
                t.double_into(&mut p);
            }
            add_core_into(&q, &p.in_r3(), &mut t);
            t.double_into(&mut p);
            p.double_into(&mut t);
            t.double_into(&mut p);
            p
        }
    }
}

enable! {
    /// `P + Q`, `P` in R2 and `Q` in R3 (FourQlib `eccadd_core`): `8M`.
    #[inline]
    fn add_core(p: &P2, q: &P3<'_>) -> P1 {
        let mut out = P1::zero();
        add_core_into(p, q, &mut out);
        out
    }
}

enable! {
    /// [`add_core`] written into `out` (see [`P1::double_into`]).
    #[inline]
    fn add_core_into(p: &P2, q: &P3<'_>, out: &mut P1) {
        let c = p.t2.mul(&q.t);
        let d = p.z2.mul(q.z);
        let b = p.xy.mul(&q.xy);
        let a = p.yx.mul(&q.yx);
        let f = d.sub(&c);
        let g = d.add(&c);
        out.tb = b.sub(&a); // e
        out.ta = b.add(&a); // h
        out.tb.mul_into(&f, &mut out.x);
        g.mul_into(&out.ta, &mut out.y);
        f.mul_into(&g, &mut out.z);
    }
}

enable! {
    /// τ: E → Ê (FourQlib `ecc_tau`).
    #[inline]
    fn tau(p: &P1) -> (Fe2, Fe2, Fe2) {
        let t0 = p.x.square();
        let t1 = p.y.square();
        let xy = p.x.mul(&p.y);
        let z = t0.add(&t1);
        let d = t1.sub(&t0);
        // 2Z² − (Y² − X²) as 2Z² + X² − Y².
        let y = p.z.square().double().add(&t0).sub(&t1);
        (xy.mul(&d).mul(&Fe2::splat(&CTAU1)), y.mul(&z), z.mul(&d))
    }
}

enable! {
    /// τ̂: Ê → E (FourQlib `ecc_tau_dual`), returning R1.
    #[inline]
    fn tau_dual(x: Fe2, y: Fe2, z: Fe2) -> P1 {
        let t0 = x.square();
        let z2 = z.square();
        let t1 = y.square();
        let ta = t1.sub(&t0); // Y² − X²
        let s = t0.add(&t1); // X² + Y²
        let zz = z2.double().add(&t0).sub(&t1); // 2Z² − (Y² − X²)
        let tb = x.mul(&y).mul(&Fe2::splat(&CTAUDUAL1));
        P1 {
            x: tb.mul(&s),
            y: zz.mul(&ta),
            z: zz.mul(&s),
            ta,
            tb,
        }
    }
}

enable! {
    /// δ∘φ_W∘δ⁻¹ on Ê (FourQlib `ecc_delphidel`).
    #[inline]
    fn delta_phi_delta(x: Fe2, y: Fe2, z: Fe2) -> (Fe2, Fe2, Fe2) {
        let c = |k: &Fp2| Fe2::splat(k);
        let t4 = z.square();
        let t3 = y.mul(&z);
        let t2 = y.square();
        let t0 = t4.mul(&c(&CPHI4)).add(&t2);
        let t1 = t3.mul(&c(&CPHI3));
        let t5 = t0.sub(&t1);
        let t0 = t0.add(&t1).mul(&z).mul(&t5);
        let t1 = t3.mul(&c(&CPHI1));
        let t5 = t2.add(&t4.mul(&c(&CPHI2)));
        let t6 = t1.sub(&t5).mul(&t1.add(&t5)).mul(&c(&CPHI0));
        let x = x.mul(&t6);
        let t6 = t2.square();
        let t2 = t3.square();
        let t3 = t4.square();
        let t1 = t2.mul(&c(&CPHI8)).add(&t6).add(&t3.mul(&c(&CPHI9))).mul(&y);
        let t2 = t2.mul(&c(&CPHI6)).add(&t3.mul(&c(&CPHI7)));
        let yy = t6.add(&t2).mul(&c(&CPHI5));
        let x = x.mul(&t1).conj();
        let yy = yy.mul(&z).mul(&t0).conj();
        let zz = t0.mul(&t1).conj();
        (x, yy, zz)
    }
}

enable! {
    /// δ∘ψ_W∘δ⁻¹ on Ê (FourQlib `ecc_delpsidel`).
    #[inline]
    fn delta_psi_delta(x: Fe2, y: Fe2, z: Fe2) -> (Fe2, Fe2, Fe2) {
        let x = x.conj();
        let z = z.conj();
        let y = y.conj();
        let t2 = z.square();
        let t0 = x.square();
        let x = x.mul(&t2);
        let zz = t0.add(&t2.mul(&Fe2::splat(&CPSI2)));
        let t1 = t0.add(&t2.mul(&Fe2::splat(&CPSI3)));
        let t2 = t0.add(&t2.mul(&Fe2::splat(&CPSI4))).neg();
        let zz = zz.mul(&y);
        let x = x.mul(&t2).mul(&Fe2::splat(&CPSI1));
        let y = t1.mul(&zz);
        let z = zz.mul(&t2);
        (x, y, z)
    }
}

/// Vectors per table entry: `xy, yx, z2, t2`, two coordinates each, `LIMBS` limbs each.
const WORDS: usize = 8 * LIMBS;

/// The eight table entries, each `p2_to_words` packed by the backend's `pack_entry` into
/// `ENTRY_WORDS` vectors.
type Table = [[V; ENTRY_WORDS]; 8];

enable! {
    #[inline]
    fn p2_to_words(p: &P2) -> [V; WORDS] {
        let mut w = [v_zero(); WORDS];
        for (k, e) in [p.xy, p.yx, p.z2, p.t2].iter().enumerate() {
            let at = 2 * LIMBS * k;
            w[at..at + LIMBS].copy_from_slice(&e.a0.0);
            w[at + LIMBS..at + 2 * LIMBS].copy_from_slice(&e.a1.0);
        }
        w
    }
}

enable! {
    #[inline]
    fn p2_from_words(w: &[V; WORDS]) -> P2 {
        let e = |k: usize| {
            let at = 2 * LIMBS * k;
            Fe2 {
                a0: Fe(core::array::from_fn(|i| w[at + i])),
                a1: Fe(core::array::from_fn(|i| w[at + LIMBS + i])),
            }
        };
        P2 {
            xy: e(0),
            yx: e(1),
            z2: e(2),
            t2: e(3),
        }
    }
}

enable! {
    /// FourQlib's `ecc_precomp` lane-wise: `T[v] = P + [v₀]φ(P) + [v₁]ψ(P) + [v₂]ψ(φ(P))`.
    #[inline]
    fn precompute(p: &P1, d2: &Fe2) -> Table {
        let phi = p.phi();
        let psi_phi = phi.psi();
        let psi = p.psi();
        let q = phi.in_r3();
        let r = psi.in_r3();
        let s = psi_phi.in_r3();
        let t0 = p.to_r2(d2);
        let t1 = add_core(&t0, &q).to_r2(d2);
        let t2 = add_core(&t0, &r).to_r2(d2);
        let t3 = add_core(&t1, &r).to_r2(d2);
        let t4 = add_core(&t0, &s).to_r2(d2);
        let t5 = add_core(&t1, &s).to_r2(d2);
        let t6 = add_core(&t2, &s).to_r2(d2);
        let t7 = add_core(&t3, &s).to_r2(d2);
        [
            pack_entry(&p2_to_words(&t0)),
            pack_entry(&p2_to_words(&t1)),
            pack_entry(&p2_to_words(&t2)),
            pack_entry(&p2_to_words(&t3)),
            pack_entry(&p2_to_words(&t4)),
            pack_entry(&p2_to_words(&t5)),
            pack_entry(&p2_to_words(&t6)),
            pack_entry(&p2_to_words(&t7)),
        ]
    }
}

/// All-ones when `a == b`, hidden from the optimiser (as the serial `eq_mask`).
#[inline(always)]
fn eq_mask(a: u8, b: u8) -> u64 {
    let diff = u64::from(a ^ b);
    core::hint::black_box(0u64.wrapping_sub(diff.wrapping_sub(1) >> 63))
}

enable! {
    /// `±T[digit]`: all eight entries are read, masked and ORed into a zero accumulator (the
    /// digit is secret but the same in every lane; exactly one mask is all ones), then `−Q = (Y−X, X+Y, 2Z, −2dT)` is blended in under the negation mask.
    #[inline]
    fn lookup(table: &Table, digit: u8, negate: u8) -> P2 {
        let masks: [V; 8] = core::array::from_fn(|j| {
            crate::scalar_mul::note_scan(j);
            splat(eq_mask(digit, j as u8))
        });
        let picked: [V; ENTRY_WORDS] = if LOOKUP_WORD_BY_WORD {
            // The word being picked and the eight masks stay in registers.
            core::array::from_fn(|w| {
                table
                    .iter()
                    .zip(masks)
                    .fold(v_zero(), |a, (e, m)| v_or_masked(a, e[w], m))
            })
        } else {
            // Entry by entry: the whole accumulator stays in registers where there are enough.
            let mut acc = [v_zero(); ENTRY_WORDS];
            for (e, m) in table.iter().zip(masks) {
                for (a, w) in acc.iter_mut().zip(e.iter()) {
                    *a = v_or_masked(*a, *w, m);
                }
            }
            acc
        };
        let mut acc = unpack_entry(&picked);
        let n = splat(0u64.wrapping_sub(u64::from(negate)));
        for k in 0..2 * LIMBS {
            // Swap X+Y and Y−X under the mask.
            let d = v_and(v_xor(acc[k], acc[2 * LIMBS + k]), n);
            acc[k] = v_xor(acc[k], d);
            acc[2 * LIMBS + k] = v_xor(acc[2 * LIMBS + k], d);
        }
        let mut p = p2_from_words(&acc);
        let neg = p.t2.neg();
        let blend = |a: &mut Fe, b: &Fe| {
            for k in 0..LIMBS {
                a.0[k] = v_xor(
                    a.0[k],
                    v_and(v_xor(a.0[k], b.0[k]), n),
                );
            }
        };
        blend(&mut p.t2.a0, &neg.a0);
        blend(&mut p.t2.a1, &neg.a1);
        p
    }
}

enable! {
    /// The main loop of [CL15, Alg. 2] in `LANES` lanes: one table per lane, one digit sequence.
    #[inline]
    fn ladder(table: &Table, rec: &Recoded) -> P1 {
        let (digits, negate) = rec.digits();
        let first = lookup(table, digits[64], 0);
        // (2X, 2Y, 2Z), carried so that the doubling's squarings get normal-form inputs.
        let mut q = P1 {
            x: first.xy.sub(&first.yx).reduce(),
            y: first.xy.add(&first.yx).reduce(),
            z: first.z2,
            ta: Fe2::zero(),
            tb: Fe2::zero(),
        };
        let mut doubled = P1::zero();
        for i in (0..64).rev() {
            let s = lookup(table, digits[i], negate[i]);
            q.double_into(&mut doubled);
            add_core_into(&s, &doubled.in_r3(), &mut q);
        }
        q
    }
}

enable! {
    /// `[k]P_i` for `LANES` points with the recoded `k`; with `clear_cofactor`, `[k]([392]P_i)`.
    ///
    /// Callable only where the backend's feature set is known to be present (an `unsafe` call
    /// after run-time detection).
    pub(crate) fn mul_lanes(rec: &Recoded, points: &[Point; LANES], clear_cofactor: bool) -> [Point; LANES] {
        let d2 = Fe2::splat(&D.double());
        let mut p = P1::from_serial(points);
        if clear_cofactor {
            p = p.mul_by_cofactor(&d2);
        }
        let mut table = precompute(&p, &d2);
        let out = ladder(&table, rec).to_serial();
        // The multiples of the lanes' points (hashed private items on the hash paths), once
        // per `LANES` multiplications.
        zeroize::Zeroize::zeroize(&mut table);
        out
    }
}

// ---- Hash to the curve in lanes: FourQlib's map `M` and the cofactor clearing. ----

// `H`: a GF(p) lane vector whose every operation returns normal form (the map is dominated by
// its three exponentiations, so the extra carry passes after additions cost little and keep the
// bounds trivial). The backend defines it with its comparisons and selection; the operations
// shared by every backend follow.

impl H {
    enable! {
        #[inline]
        fn c(a: &Fp) -> H {
            H(Fe::splat(a))
        }
    }

    enable! {
        #[inline]
        fn add(&self, b: &H) -> H {
            H(self.0.add(&b.0).reduce())
        }
    }

    enable! {
        #[inline]
        fn sub(&self, b: &H) -> H {
            H(self.0.sub(&b.0).reduce())
        }
    }

    enable! {
        #[inline]
        fn neg(&self) -> H {
            H(self.0.neg().reduce())
        }
    }

    enable! {
        #[inline]
        fn double(&self) -> H {
            self.add(self)
        }
    }

    enable! {
        #[inline]
        fn mul(&self, b: &H) -> H {
            H(self.0.mul(&b.0))
        }
    }

    enable! {
        #[inline]
        fn square(&self) -> H {
            H(self.0.square())
        }
    }

    enable! {
        /// `a/2 = a·2¹²⁶` (since `2·2¹²⁶ = 2¹²⁷ ≡ 1`).
        #[inline]
        fn half(&self) -> H {
            self.mul(&H::c(&Fp::from_u128(1 << 126)))
        }
    }

    enable! {
        #[inline]
        fn square_n(&self, k: u32) -> H {
            let mut r = *self;
            for _ in 0..k {
                // `opaque` keeps the products `vpmuludq`s (see the backends' `v_opaque`).
                r = r.square().opaque();
            }
            r
        }
    }

    enable! {
        /// `a^(2¹²⁵ − 1)`: the serial addition chain.
        #[inline]
        fn pow_2_125_minus_1(&self) -> H {
            let x1 = *self;
            let x2 = x1.square().mul(&x1);
            let x4 = x2.square_n(2).mul(&x2);
            let x8 = x4.square_n(4).mul(&x4);
            let x16 = x8.square_n(8).mul(&x8);
            let x32 = x16.square_n(16).mul(&x16);
            let x64 = x32.square_n(32).mul(&x32);
            let x96 = x64.square_n(32).mul(&x32);
            let x112 = x96.square_n(16).mul(&x16);
            let x120 = x112.square_n(8).mul(&x8);
            let x124 = x120.square_n(4).mul(&x4);
            x124.square().mul(&x1)
        }
    }
}

enable! {
    /// FourQlib's `HashToCurve` map in lanes: the serial `hash::map_to_curve` operation for
    /// operation, with per-lane masks for its two selections.
    #[allow(clippy::many_single_char_names)]
    #[inline]
    fn map_to_curve(r: &Fe2) -> P1 {
        let (r0, r1) = (H(r.a0), H(r.a1));
        let one = H::c(&Fp::ONE);
        let x16 = |v: H| v.double().double().double().double();

        let t0 = r0.add(&r1).mul(&r0.sub(&r1));
        let t1 = r0.mul(&r1).double();
        let t2 = t0.add(&t1.double());
        let t3 = t0.double().sub(&t1);
        let t0 = t3.add(&one);
        let t4 = H::c(&H2C_A1).mul(&t2).sub(&H::c(&H2C_A0).mul(&t0));
        let t1 = H::c(&H2C_A0).mul(&t2).add(&H::c(&H2C_A1).mul(&t0));
        let t6 = t0.add(&t2).mul(&t0.sub(&t2));
        let t5 = t2.mul(&t0).double();
        let t8 = H::c(&H2C_CON2)
            .mul(&t2)
            .add(&t6.sub(&H::c(&H2C_CON1).mul(&t3)));
        let t9 = t5
            .sub(&H::c(&H2C_CON1).mul(&t2))
            .sub(&H::c(&H2C_CON2).mul(&t3));
        let t7 = t4.mul(&t8).add(&t1.mul(&t9));
        let t10 = t4.mul(&t9).sub(&t1.mul(&t8));
        let t5 = t7.square().add(&t10.square());
        let t7 = t5.mul(&t5.pow_2_125_minus_1().square());
        // t7 = t5^((p−1)/2): the quadratic character of the norm selects the branch.
        let is_one = t7.ct_eq(&one);
        let t3 = H::select(&H::c(&H2C_A0).add(&t4), &H::c(&H2C_A0).neg(), is_one);
        let t10 = H::select(&H::c(&H2C_A1).sub(&t1), &H::c(&H2C_A1).neg(), is_one);

        let t8 = t0.mul(&t3).sub(&t2.mul(&t10));
        let t9 = t2.mul(&t3).add(&t0.mul(&t10));
        let t5 = t3.add(&t10).mul(&t3.sub(&t10));
        let t11 = t3.mul(&t10).double();
        let t13 = t3.mul(&t4).add(&t1.mul(&t10));
        let t12 = t4.mul(&t10).sub(&t1.mul(&t3));
        let t5 = t5.sub(&t13).add(&t6);
        let t11 = t11.sub(&t12).add(&t0.mul(&t2).double());
        let t6 = x16(t5.mul(&t8).sub(&t9.mul(&t11)));
        let t12 = x16(t5.mul(&t9).add(&t8.mul(&t11)));
        let t14 = t0.add(&t3).double();
        let t8 = t2.add(&t10).double();
        let t4 = t6.mul(&t14).sub(&t8.mul(&t12));
        let t1 = t6.mul(&t8).add(&t12.mul(&t14));
        let t9 = t12.square().add(&t6.square());
        let t11 = t4.square().add(&t1.square());
        let t5 = t11.square().mul(&t9);
        let t7 = t5.pow_2_125_minus_1();
        let t13 = t7.square().square().mul(&t11).mul(&t9).mul(&t5);
        let t7 = t5.mul(&t13.mul(&t7));
        let t5 = t6.add(&t7).half();
        let t9 = t5.pow_2_125_minus_1();
        let t11 = t5.mul(&t9.square().square()).mul(&t12);
        let t9 = t5.mul(&t9);
        let t7 = t9.square();
        let two = one.double();
        let eq = t5.ct_eq(&t7);
        let t7n = H::select(&t11, &two, eq);
        let t11 = H::select(&two.neg(), &t11, eq);
        let t7 = t7n;
        let t13 = t13.double();

        let y0 = t3.sub(&t0);
        let y1 = t10.sub(&t2);
        let t15 = y0.mul(&t6).sub(&y1.mul(&t12));
        let t16 = t6.mul(&y1).add(&y0.mul(&t12));
        let y0 = t15.mul(&t4).add(&t1.mul(&t16)).mul(&t13);
        let y1 = t4.mul(&t16).sub(&t1.mul(&t15)).mul(&t13);
        let t15 = H::c(&H2C_B0).mul(&t3).sub(&H::c(&H2C_B1).mul(&t10));
        let t16 = H::c(&H2C_B0).mul(&t10).add(&H::c(&H2C_B1).mul(&t3));
        let x0 = t1.mul(&t16).add(&t15.mul(&t4));
        let x1 = t4.mul(&t16).sub(&t1.mul(&t15));
        let t15 = x0.mul(&t0).sub(&x1.mul(&t2));
        let t16 = x1.mul(&t0).add(&x0.mul(&t2));
        let x0 = t15.mul(&t14).sub(&t16.mul(&t8));
        let x1 = t16.mul(&t14).add(&t15.mul(&t8));
        let t15 = x0.mul(&t7).sub(&x1.mul(&t11));
        let t16 = t11.mul(&x0).add(&t7.mul(&x1));
        let t13 = t13.mul(&t9);
        let x = Fe2 {
            a0: t15.mul(&t13).0,
            a1: t16.mul(&t13).0,
        };
        let y = Fe2 { a0: y0.0, a1: y1.0 };
        P1 {
            x,
            y,
            z: Fe2::splat(&Fp2::ONE),
            ta: x,
            tb: y,
        }
    }
}

enable! {
    /// `[392]·M(r_i)` for `LANES` field elements (the hash to the curve after SHA-512).
    /// Callable only where the backend's feature set is known to be present.
    pub(crate) fn map_and_clear_lanes(r: &[Fp2; LANES]) -> [Point; LANES] {
        let d2 = Fe2::splat(&D.double());
        map_to_curve(&Fe2::from_serial(r))
            .mul_by_cofactor(&d2)
            .to_serial()
    }
}

// ---- Decoding in lanes: the on-curve decoder of `Point::from_bytes_unchecked_subgroup`. ----

enable! {
    /// GF(p²) helpers for the decoder, every result in normal form.
    #[inline]
    fn h2(a: &Fe2) -> (H, H) {
        (H(a.a0), H(a.a1))
    }
}

enable! {
    #[inline]
    fn fe2(a0: H, a1: H) -> Fe2 {
        Fe2 { a0: a0.0, a1: a1.0 }
    }
}

enable! {
    #[inline]
    fn canonical(a: &H) -> H {
        H(Fe(a.canonical()))
    }
}

enable! {
    #[inline]
    fn fe2_eq(a: &Fe2, b: &Fe2) -> Mask {
        H(a.a0).ct_eq(&H(b.a0)) & H(a.a1).ct_eq(&H(b.a1))
    }
}

enable! {
    /// `√(u/v)` lane-wise: the serial `Fp2::sqrt_ratio`, operation for operation, with lane
    /// masks for its selections. Returns `(is_square, x)`.
    #[inline]
    fn sqrt_ratio(u: &Fe2, v: &Fe2) -> (Mask, Fe2) {
        let norm = |a: &Fe2| {
            let (a0, a1) = h2(a);
            a0.square().add(&a1.square())
        };
        let t = norm(v);
        let w = u.mul(&v.conj());
        let (w0, w1) = h2(&w);
        let s = norm(&w).square_n(125);
        let c_plus = w0.add(&s);
        let c = H::select(&c_plus, &w0.sub(&s), is_zero(&c_plus)).double();
        let a = c.mul(&t);
        let r = a.mul(&t.square()).pow_2_125_minus_1();
        let x0 = a.mul(&r);
        let x1 = w1.mul(&r).mul(&t);
        let a_is_sq = x0.square().mul(&t).ct_eq(&c);
        let half = x0.half();
        let xa = fe2(half, x1);
        let xb = fe2(x1.neg(), half);
        let x = Fe2 {
            a0: H::select(&H(xb.a0), &H(xa.a0), a_is_sq).0,
            a1: H::select(&H(xb.a1), &H(xa.a1), a_is_sq).0,
        };
        let ok = fe2_eq(&v.mul(&x.square()), u) & !(is_zero(&H(v.a0)) & is_zero(&H(v.a1)));
        (ok, x)
    }
}

enable! {
    /// The on-curve decoder for `LANES` encodings whose `y` halves are already parsed (`y`,
    /// canonical, and the sign bits as a lane mask). Returns the lane mask of valid encodings
    /// (a square root exists, not the sign bit with `x = 0`, on the curve) and `(x, y)`.
    #[inline]
    fn decode(y: &Fe2, sign: Mask) -> (Mask, P1) {
        let one = Fe2::splat(&Fp2::ONE);
        let d = Fe2::splat(&D);
        let y2 = y.square();
        let u = y2.sub(&one).reduce();
        let v = d.mul(&y2).add(&one).reduce();
        let (is_sq, x) = sqrt_ratio(&u, &v);
        let (x0, x1) = h2(&x);
        let x0_zero = is_zero(&x0);
        // The "sign" of x: bit 126 of x0, or of x1 when x0 = 0.
        let s = (bit126(&x0) & !x0_zero) | (bit126(&x1) & x0_zero);
        let flip = s ^ sign;
        let x0 = canonical(&H::select(&x0, &x0.neg(), flip));
        let x1 = canonical(&H::select(&x1, &x1.neg(), flip));
        let x_zero = is_zero(&x0) & is_zero(&x1);
        let x = fe2(x0, x1);
        // −x² + y² = 1 + d·x²·y².
        let x2 = x.square();
        let lhs = y2.sub(&x2).reduce();
        let rhs = one.add(&d.mul(&x2).mul(&y2)).reduce();
        let on_curve = fe2_eq(&lhs, &rhs);
        let p = P1 {
            x,
            y: *y,
            z: one,
            ta: x,
            tb: *y,
        };
        (is_sq & !(x_zero & sign) & on_curve, p)
    }
}

enable! {
    /// For `LANES` 32-byte encodings: decode on the curve, clear the cofactor and multiply by the
    /// recoded scalar, all in lanes. Returns the points and, per lane, whether the encoding was
    /// valid (canonical `y`, a point of the curve); the points of invalid lanes are meaningless.
    /// Callable only where the backend's feature set is known to be present.
    pub(crate) fn decode_mul_lanes(
        rec: &Recoded,
        enc: &[[u8; 32]; LANES],
    ) -> ([Point; LANES], [bool; LANES]) {
        let mut ys = [Fp2::ZERO; LANES];
        let mut canon = [false; LANES];
        let mut sign: Mask = 0;
        for (i, e) in enc.iter().enumerate() {
            sign |= (e[31] >> 7) << i;
            let mut yb = *e;
            yb[31] &= 0x7f;
            let y = Fp2::from_bytes(&yb);
            canon[i] = bool::from(y.is_some());
            ys[i] = y.unwrap_or(Fp2::ZERO);
        }
        let (valid, p) = decode(&Fe2::from_serial(&ys), sign);
        let d2 = Fe2::splat(&D.double());
        let mut table = precompute(&p.mul_by_cofactor(&d2), &d2);
        let out = ladder(&table, rec).to_serial();
        zeroize::Zeroize::zeroize(&mut table);
        let ok = core::array::from_fn(|i| canon[i] && (valid >> i) & 1 == 1);
        (out, ok)
    }
}

enable! {
    /// The decoder alone (for the tests): validity and canonical affine `(x, y)` per lane.
    #[cfg(test)]
    pub(super) fn decode_lanes(enc: &[[u8; 32]; LANES]) -> [Option<(Fp2, Fp2)>; LANES] {
        let mut ys = [Fp2::ZERO; LANES];
        let mut canon = [false; LANES];
        let mut sign: Mask = 0;
        for (i, e) in enc.iter().enumerate() {
            sign |= (e[31] >> 7) << i;
            let mut yb = *e;
            yb[31] &= 0x7f;
            let y = Fp2::from_bytes(&yb);
            canon[i] = bool::from(y.is_some());
            ys[i] = y.unwrap_or(Fp2::ZERO);
        }
        let (valid, p) = decode(&Fe2::from_serial(&ys), sign);
        let (x, y) = (p.x.to_serial(), p.y.to_serial());
        core::array::from_fn(|i| (canon[i] && (valid >> i) & 1 == 1).then_some((x[i], y[i])))
    }
}
