//! Differential tests against Microsoft's FourQlib through the `fourq` crate (a binding of
//! FourQlib's C code): same encodings for hashing to the curve, scalar multiplication and
//! decoding, and for the same-scalar batch paths, on random inputs.
//!
//! `fourq::point::Point::from_hash` reduces its input in place through a pointer derived from a
//! shared slice, so every call gets its own private, writable copy of the bytes.

use obliv_fourq::{Point, Scalar};
use rand::{RngExt, SeedableRng, rngs::StdRng};

fn fourqlib_hash(bytes: &[u8; 32]) -> fourq::point::Point {
    let private: [u8; 32] = std::hint::black_box(*bytes);
    fourq::point::Point::from_hash(&private)
}

fn fourqlib_encode(p: &fourq::point::Point) -> [u8; 32] {
    let mut out = [0u8; 32];
    p.encode(&mut out);
    out
}

#[test]
fn hash_to_curve_matches_fourqlib() {
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..64 {
        let b: [u8; 32] = rng.random();
        let ours = Point::hash_to_curve_fourqlib_compat(&b);
        assert_eq!(ours.to_bytes(), fourqlib_encode(&fourqlib_hash(&b)));
    }
}

#[test]
fn scalar_mul_matches_fourqlib() {
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..64 {
        let b: [u8; 32] = rng.random();
        let p = Point::hash_to_curve_fourqlib_compat(&b);
        let q = fourqlib_hash(&b);
        let k = Scalar::random(&mut rng);
        let ours = p * k;
        let theirs = q * fourq::scalar::Scalar::new(k.to_bytes());
        assert_eq!(ours.to_bytes(), fourqlib_encode(&theirs));
        // Fixed-base against FourQlib's variable-base on the generator encoding.
        let g = fourq::point::Point::decode(&Point::generator().to_bytes());
        let theirs_g = g * fourq::scalar::Scalar::new(k.to_bytes());
        assert_eq!(Point::mul_base(&k).to_bytes(), fourqlib_encode(&theirs_g));
    }
}

#[test]
fn decode_matches_fourqlib() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..64 {
        let k = Scalar::random(&mut rng);
        let enc = Point::mul_base(&k).to_bytes();
        let theirs = fourq::point::Point::decode(&enc);
        assert_eq!(fourqlib_encode(&theirs), enc);
        let ours = Option::<Point>::from(Point::from_bytes(&enc)).expect("valid encoding");
        assert_eq!(ours.to_bytes(), enc);
    }
}

/// The same-scalar batch (eight AVX-512 IFMA lanes where the CPU has them) and the projecting
/// peer-point path against FourQlib's single multiplication, point by point; 75 points so the
/// last group of eight is partial.
#[test]
fn batch_matches_fourqlib() {
    let mut rng = StdRng::seed_from_u64(4);
    for _ in 0..4 {
        let k = Scalar::random(&mut rng);
        let fk = fourq::scalar::Scalar::new(k.to_bytes());
        let inputs: Vec<[u8; 32]> = (0..75).map(|_| rng.random()).collect();
        let pts: Vec<Point> = inputs
            .iter()
            .map(Point::hash_to_curve_fourqlib_compat)
            .collect();
        let want: Vec<[u8; 32]> = inputs
            .iter()
            .map(|b| fourqlib_encode(&(fourqlib_hash(b) * fk)))
            .collect();
        assert_eq!(Point::mul_many_to_bytes(&k, &pts), want);
        let encs: Vec<[u8; 32]> = pts.iter().map(Point::to_bytes).collect();
        let projected: Vec<[u8; 32]> = Point::mul_many_encoded_projecting(&k, &encs)
            .into_iter()
            .map(|r| r.expect("valid point"))
            .collect();
        assert_eq!(projected, want);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Regenerates `vectors/fourqlib.txt`, FourQlib's answers on fixed pseudo-random inputs,
/// which `tests/fourqlib_vectors.rs` checks obliv-fourq against in every build (no FourQlib
/// needed). Run by `.ci/fourqlib-diff`, which fails if the committed file differs.
#[test]
#[ignore = "writes the committed vector file; run by .ci/fourqlib-diff"]
fn write_vectors() {
    let mut out = String::from(
        "# FourQlib's answers on fixed inputs (written by fourqlib_diff.rs::write_vectors).\n\
         # hash IN OUT: FourQlib's HashToCurve of IN, encoded; mul IN K OUT: that point times K;\n\
         # base K OUT: the generator times K; batch K N, then N lines IN OUT: as mul, one scalar.\n",
    );
    let mut rng = StdRng::seed_from_u64(0x0f0e_4c1b);
    for _ in 0..32 {
        let b: [u8; 32] = rng.random();
        out += &format!(
            "hash {} {}\n",
            hex(&b),
            hex(&fourqlib_encode(&fourqlib_hash(&b)))
        );
    }
    let g = fourq::point::Point::decode(&Point::generator().to_bytes());
    for _ in 0..32 {
        let b: [u8; 32] = rng.random();
        let k = Scalar::random(&mut rng).to_bytes();
        let fk = fourq::scalar::Scalar::new(k);
        let prod = fourqlib_hash(&b) * fourq::scalar::Scalar::new(k);
        out += &format!(
            "mul {} {} {}\n",
            hex(&b),
            hex(&k),
            hex(&fourqlib_encode(&prod))
        );
        out += &format!("base {} {}\n", hex(&k), hex(&fourqlib_encode(&(g * fk))));
    }
    for n in [75usize, 8, 1] {
        let k = Scalar::random(&mut rng).to_bytes();
        out += &format!("batch {} {n}\n", hex(&k));
        for _ in 0..n {
            let b: [u8; 32] = rng.random();
            let prod = fourqlib_hash(&b) * fourq::scalar::Scalar::new(k);
            out += &format!("{} {}\n", hex(&b), hex(&fourqlib_encode(&prod)));
        }
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/fourqlib.txt");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, out).unwrap();
}
