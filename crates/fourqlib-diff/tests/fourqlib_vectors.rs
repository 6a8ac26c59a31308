//! obliv-fourq against FourQlib's answers on fixed inputs (`vectors/fourqlib.txt`, written by
//! FourQlib itself through `fourqlib_diff.rs::write_vectors`): hashing to the curve, variable-
//! and fixed-base scalar multiplication, decoding, and the same-scalar batch paths (eight
//! AVX-512 IFMA lanes where the CPU has them, a partial last group). Needs no C toolchain, so
//! it runs in every build and on every CPU; `.ci/fourqlib-diff` regenerates the file against
//! the live FourQlib and checks it is unchanged.
#![allow(clippy::unwrap_used)] // test code

use obliv_fourq::{Point, Scalar};

fn unhex(s: &str) -> [u8; 32] {
    assert_eq!(s.len(), 64, "{s}");
    let mut b = [0u8; 32];
    for (i, x) in b.iter_mut().enumerate() {
        *x = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    b
}

#[test]
fn obliv_fourq_gives_fourqlibs_answers() {
    let text = include_str!("../vectors/fourqlib.txt");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let mut counts = [0usize; 4];
    while let Some(line) = lines.next() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "hash" => {
                let p = Point::hash_to_curve_fourqlib_compat(&unhex(f[1]));
                assert_eq!(p.to_bytes(), unhex(f[2]), "{line}");
                let back = Option::<Point>::from(Point::from_bytes(&unhex(f[2]))).unwrap();
                assert_eq!(back.to_bytes(), unhex(f[2]), "decode: {line}");
                counts[0] += 1;
            }
            "mul" => {
                let p = Point::hash_to_curve_fourqlib_compat(&unhex(f[1]));
                let k = Scalar::from_bytes_mod_order(&unhex(f[2]));
                assert_eq!(k.to_bytes(), unhex(f[2]), "a reduced scalar: {line}");
                assert_eq!((p * k).to_bytes(), unhex(f[3]), "{line}");
                counts[1] += 1;
            }
            "base" => {
                let k = Scalar::from_bytes_mod_order(&unhex(f[1]));
                assert_eq!(Point::mul_base(&k).to_bytes(), unhex(f[2]), "{line}");
                counts[2] += 1;
            }
            "batch" => {
                let k = Scalar::from_bytes_mod_order(&unhex(f[1]));
                let n: usize = f[2].parse().unwrap();
                let (inputs, want): (Vec<[u8; 32]>, Vec<[u8; 32]>) = (0..n)
                    .map(|_| {
                        let l: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
                        (unhex(l[0]), unhex(l[1]))
                    })
                    .unzip();
                let pts: Vec<Point> = inputs
                    .iter()
                    .map(Point::hash_to_curve_fourqlib_compat)
                    .collect();
                assert_eq!(Point::mul_many_to_bytes(&k, &pts), want, "batch of {n}");
                let encs: Vec<[u8; 32]> = pts.iter().map(Point::to_bytes).collect();
                let projected: Vec<[u8; 32]> = Point::mul_many_encoded_projecting(&k, &encs)
                    .into_iter()
                    .map(|r| r.unwrap())
                    .collect();
                assert_eq!(projected, want, "projecting batch of {n}");
                counts[3] += 1;
            }
            other => panic!("unknown vector kind {other:?}"),
        }
    }
    assert_eq!(counts, [32, 32, 32, 3], "the vector file is incomplete");
}
