// The tests of a lane backend, `include!`d into its `tests` module (next to `use super::*` and
// `use super::kernels::*`): every lane of every kernel against the serial code. A CPU without
// the backend's features skips them with a message.

use crate::scalar::Scalar;
use crate::scalar_mul::{mul_many_recoded, recode_u256};
use proptest::prelude::*;

const P: u128 = (1u128 << 127) - 1;

fn fp2(a: u128, b: u128) -> Fp2 {
    Fp2 {
        a0: Fp::from_u128_reduced(a),
        a1: Fp::from_u128_reduced(b),
    }
}

fn elt() -> impl Strategy<Value = u128> {
    prop_oneof![
        0..=P,
        Just(0u128),
        Just(P),
        Just(P - 1),
        Just(1u128),
        Just((1u128 << 126) + 5)
    ]
}

fn eq(a: &Fp2, b: &Fp2) -> bool {
    bool::from(subtle::ConstantTimeEq::ct_eq(a, b))
}

/// Whether this CPU runs the backend; says so (once per backend) when it does not.
fn runs_here() -> bool {
    static SAID: std::sync::Once = std::sync::Once::new();
    let ok = available();
    if !ok {
        SAID.call_once(|| {
            eprintln!(
                "skipped: this CPU lacks the features of the {} lane backend",
                module_path!()
            );
        });
    }
    ok
}

enable! {
    fn field_ops(a: &[Fp2; LANES], b: &[Fp2; LANES]) -> [[Fp2; LANES]; 7] {
        let (x, y) = (Fe2::from_serial(a), Fe2::from_serial(b));
        // GF(p) squaring of both coordinates, as an element of GF(p²).
        let sq = Fe2 {
            a0: x.a0.square(),
            a1: x.a1.square(),
        };
        [
            sq.to_serial(),
            x.mul(&y).to_serial(),
            x.square().to_serial(),
            x.add(&y).reduce().to_serial(),
            x.sub(&y).to_serial(),
            x.conj().to_serial(),
            x.neg().to_serial(),
        ]
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every lane of every operation equals the serial GF(p²) arithmetic.
    #[test]
    fn field_matches_serial(v in proptest::collection::vec((elt(), elt(), elt(), elt()), LANES)) {
        if !runs_here() {
            return Ok(());
        }
        let a: [Fp2; LANES] = core::array::from_fn(|i| fp2(v[i].0, v[i].1));
        let b: [Fp2; LANES] = core::array::from_fn(|i| fp2(v[i].2, v[i].3));
        // SAFETY: runs_here() confirmed every feature of the backend's set.
        let r = unsafe { field_ops(&a, &b) };
        for i in 0..LANES {
            let sq = Fp2 {
                a0: a[i].a0.square(),
                a1: a[i].a1.square(),
            };
            prop_assert!(eq(&r[0][i], &sq));
            prop_assert!(eq(&r[1][i], &a[i].mul(&b[i])));
            prop_assert!(eq(&r[2][i], &a[i].square()));
            prop_assert!(eq(&r[3][i], &a[i].add(&b[i])));
            prop_assert!(eq(&r[4][i], &a[i].sub(&b[i])));
            prop_assert!(eq(&r[5][i], &a[i].conj()));
            prop_assert!(eq(&r[6][i], &a[i].neg()));
        }
    }

    /// The lane-wise decoder accepts and rejects exactly what the serial one does, with
    /// the same coordinates: valid points, random strings (about half off the curve),
    /// non-canonical `y`, the identity with and without the sign bit, `y = −1`.
    #[test]
    fn decode_matches_serial(m in any::<u64>(), junk in any::<[[u8; 32]; 3]>()) {
        if !runs_here() {
            return Ok(());
        }
        let mut enc: [[u8; 32]; 8] = core::array::from_fn(|i| {
            Point::hash_to_curve(&(m + i as u64).to_le_bytes()).to_bytes()
        });
        enc[0][31] ^= 0x80; // the other x: still on the curve
        enc[1..4].copy_from_slice(&junk);
        enc[4] = [0xff; 32]; // non-canonical
        enc[5] = [0; 32];
        enc[5][0] = 1; // identity
        enc[6] = enc[5];
        enc[6][31] = 0x80; // identity with the sign bit: rejected
        enc[7] = [0xff; 32];
        enc[7][0] = 0xfe;
        enc[7][15] = 0x7f;
        enc[7][16..].fill(0); // y = −1: the order-2 point (0, −1)
        let mut got = Vec::new();
        for group in enc.chunks(LANES) {
            // SAFETY: runs_here() confirmed every feature of the backend's set.
            got.extend(unsafe { decode_lanes(group.try_into().unwrap()) });
        }
        for i in 0..8 {
            let want: Option<Point> = Point::from_bytes_unchecked_subgroup(&enc[i]).into();
            match (want, got[i]) {
                (None, None) => {}
                (Some(p), Some((x, y))) => {
                    prop_assert!(eq(&p.x, &x) && eq(&p.y, &y), "lane {}", i);
                }
                (w, g) => prop_assert!(false, "lane {}: serial {:?}, lanes {:?}", i, w.is_some(), g.is_some()),
            }
        }
    }

    /// The lane-wise hash map (with cofactor clearing) gives the serial points.
    #[test]
    fn map_matches_serial(m in any::<u64>()) {
        if !runs_here() {
            return Ok(());
        }
        let mut r: [Fp2; LANES] = core::array::from_fn(|i| {
            crate::hash::hash_to_fp2(&(m + i as u64).to_le_bytes())
        });
        r[LANES - 1] = Fp2::ZERO;
        r[LANES - 2] = Fp2::ONE;
        // SAFETY: runs_here() confirmed every feature of the backend's set.
        let h = unsafe { map_and_clear_lanes(&r) };
        for i in 0..LANES {
            prop_assert_eq!(h[i], crate::hash::map_and_clear(&r[i]));
        }
    }

    /// The lane-wise ladder gives the same points as the serial one.
    #[test]
    fn mul_matches_serial(b in any::<[u8; 64]>(), m in any::<u64>()) {
        if !runs_here() {
            return Ok(());
        }
        let k = Scalar::from_bytes_mod_order_wide(&b);
        let rec = recode_u256(&k.limbs());
        let pts: [Point; LANES] =
            core::array::from_fn(|i| Point::hash_to_curve(&(m + i as u64).to_le_bytes()));
        // SAFETY: runs_here() confirmed every feature of the backend's set.
        let r = unsafe { mul_lanes(&rec, &pts, false) };
        // SAFETY: as above.
        let rc = unsafe { mul_lanes(&rec, &pts, true) };
        for i in 0..LANES {
            prop_assert_eq!(r[i], mul_many_recoded(&rec, &pts[i]));
            prop_assert_eq!(rc[i], mul_many_recoded(&rec, &pts[i].mul_by_cofactor()));
        }
    }
}

/// Structural constant-time check of the lane look-ups: for every scalar (zero, one, `N − 1`,
/// single bits, random) the ladder forms a mask for every one of the eight table entries in the
/// same order, 65 look-ups per group of lanes, so the blends that read the entries never depend
/// on a digit.
#[test]
fn lookups_scan_every_entry_whatever_the_scalar() {
    use crate::scalar_mul::scan_trace;
    if !runs_here() {
        return;
    }
    let pts: [Point; LANES] =
        core::array::from_fn(|i| Point::hash_to_curve(&(i as u64).to_le_bytes()));
    let mut ks = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from_u64(392)];
    ks.extend((0..246).step_by(17).map(|b| {
        let mut e = [0u8; 32];
        e[b / 8] = 1 << (b % 8);
        Scalar::from_bytes_mod_order(&e)
    }));
    ks.extend((0u8..4).map(|i| Scalar::from_bytes_mod_order_wide(&[i.wrapping_mul(77) ^ 0x5a; 64])));
    let traces: Vec<_> = ks
        .iter()
        .map(|k| {
            let rec = recode_u256(&k.limbs());
            scan_trace::take();
            // SAFETY: runs_here() confirmed every feature of the backend's set.
            let _ = unsafe { mul_lanes(&rec, &pts, false) };
            scan_trace::take()
        })
        .collect();
    assert_eq!(traces[0].0, 65 * 8);
    assert_eq!(traces[0].2, 0xff);
    assert!(traces.iter().all(|t| *t == traces[0]));
}
