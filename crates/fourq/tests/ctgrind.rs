//! Constant time under memcheck (`.ci/ctgrind`, see `obliv_cpu::ctgrind`): the scalar's
//! bytes are marked secret before it is reduced and used, so a branch or a table address
//! that depends on it in any of the multiplications below is reported. Valgrind emulates no
//! AVX-512: these run the serial (BMI2/ADX or portable) code and the four-lane AVX2 batch.
//! Natively the tests check the results only.
#![allow(clippy::unwrap_used)] // tests

use obliv_cpu::ctgrind::{public, secret};
use obliv_fourq::{Point, Scalar};

/// A secret scalar (from marked bytes) and a few public points.
fn setup() -> (Scalar, Vec<Point>) {
    let bytes = [0x5au8; 64];
    let points: Vec<Point> = (0u8..6)
        .map(|i| Point::hash_to_curve(&[i, 1, 2, 3]))
        .collect();
    let mut b = bytes;
    secret(&mut b[..]);
    (Scalar::from_bytes_mod_order_wide(&b), points)
}

#[test]
#[ignore = "run under valgrind by .ci/ctgrind"]
fn ctgrind_variable_base_fixed_base_and_batch() {
    let (k, points) = setup();
    eprintln!(
        "backends: serial {}, batch {}",
        Point::serial_backend(),
        Point::batch_backend()
    );
    let reference = Scalar::from_bytes_mod_order_wide(&[0x5au8; 64]);
    let mut outs = vec![
        Point::mul_base(&k).to_bytes(),
        points[0].mul(&k).to_bytes(),
        points[1].mul_fixed_window(&k).to_bytes(),
    ];
    outs.extend(Point::mul_many_to_bytes(&k, &points));
    outs.extend(Point::mul_many_to_bytes_serial(&k, &points));
    for o in &mut outs {
        public(&mut o[..]);
    }
    let mut want = vec![
        Point::mul_base(&reference).to_bytes(),
        points[0].mul(&reference).to_bytes(),
        points[1].mul(&reference).to_bytes(),
    ];
    want.extend(points.iter().map(|p| p.mul(&reference).to_bytes()));
    want.extend(points.iter().map(|p| p.mul(&reference).to_bytes()));
    assert_eq!(outs, want);
}
