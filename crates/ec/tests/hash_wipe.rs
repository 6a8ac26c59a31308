//! What the hash paths derive from private items is not left in freed memory.
//!
//! In ECDH-PSI each party hashes its private items to the group; the points `H(x)` and the
//! hash scratch (uniform bytes, field elements, lane vectors, copies of the messages) reveal
//! the items to a dictionary search. The batch steps may keep such values only in buffers they
//! wipe before freeing them; only their outputs (`[k]H(x)`, and the points that
//! `hash_to_point` returns) are the caller's.
//!
//! This binary installs `obliv_testkit::TestAlloc`, which, while a scenario runs, inspects every
//! block of memory before it is freed, and the old block of every reallocation (which it always moves,
//! so a buffer that grows leaves its old copy behind for the check): either for a known secret
//! (a "needle": an item, its uniform bytes, the in-memory bytes of its point), or, for the
//! AVX-512 kernels' vectors of lanes (the only 64-byte-aligned blocks these paths allocate),
//! for any non-zero byte.
//!
//! One test: it ends by switching the SIMD backends off for the whole process
//! (`obliv_cpu::disable`) to run the fallbacks (dalek, the serial FourQ code) too.
#![allow(clippy::unwrap_used)] // test code

use curve25519_dalek::ristretto::RistrettoPoint;
use obliv_ec::{FourQ, PrimeGroup, Ristretto255, SecretScalar, X25519};
use obliv_testkit::TestAlloc;
use rand::SeedableRng;
use sha2::{Digest, Sha256, Sha512};

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Runs `f` and returns how many freed blocks held `needle`; what `f` returns is dropped
/// after the count (it is the caller's).
fn freed_copies<R>(needle: &[u8], f: impl FnOnce() -> R) -> usize {
    obliv_testkit::freed_copies(&[needle], f).1
}

/// Runs `f` and returns how many freed blocks aligned to 64 bytes or more (the AVX-512
/// kernels' vectors of `__m512i` lanes, the only such blocks these paths allocate) held a
/// non-zero byte.
fn unwiped_lanes<R>(f: impl FnOnce() -> R) -> usize {
    obliv_testkit::unwiped_aligned_blocks(64, f).1.len()
}

/// The in-memory bytes of a point made of 64-bit limbs only (no padding): 160 bytes for
/// `RistrettoPoint` (four radix-2^51 coordinates) and `obliv_fourq::Point` (five GF(p²)
/// coordinates).
fn limb_bytes<T: Copy>(p: &T) -> Vec<u8> {
    assert_eq!(size_of::<T>(), 160);
    assert_eq!(align_of::<T>(), 8);
    // SAFETY: the callers pass only the two point types above, `Copy` structs of `u64` limbs
    // (160 bytes, 8-aligned, asserted), so every byte of the value is initialised.
    unsafe { std::slice::from_raw_parts((p as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// RFC 9380 §5.3.1 `expand_message_xmd(msg, dst, 64)` with SHA-512 (`ell = 1`): `b₁`.
fn xmd_sha512_64(msg: &[u8], dst: &[u8]) -> Vec<u8> {
    let dst_len = [u8::try_from(dst.len()).unwrap()];
    let b0 = Sha512::new()
        .chain_update([0u8; 128])
        .chain_update(msg)
        .chain_update([0u8, 64, 0])
        .chain_update(dst)
        .chain_update(dst_len)
        .finalize();
    Sha512::new()
        .chain_update(b0)
        .chain_update([1u8])
        .chain_update(dst)
        .chain_update(dst_len)
        .finalize()
        .to_vec()
}

/// Private items: 32 bytes each that occur nowhere else.
fn items(n: usize) -> Vec<[u8; 32]> {
    (0..n)
        .map(|i| Sha256::digest(format!("private item {i}")).into())
        .collect()
}

fn scalar<G: PrimeGroup>() -> SecretScalar<G::ScalarInner> {
    G::random_scalar(&mut rand::rngs::StdRng::seed_from_u64(5))
}

/// Appends to `failures` if the armed run of `f` freed `count` bad blocks.
fn report(failures: &mut Vec<String>, what: String, count: usize) {
    if count != 0 {
        failures.push(format!("{what}: {count} freed blocks"));
    }
}

/// The ristretto255 hash step: uniform bytes (lanes) and hashed points (dalek fallback).
fn ristretto(backend: &str, failures: &mut Vec<String>) {
    let xs = items(40);
    let k = scalar::<Ristretto255>();
    let mut out = vec![[0u8; 32]; xs.len()];
    for i in [0usize, 9, 39] {
        let uniform: [u8; 64] = xmd_sha512_64(&xs[i], Ristretto255::DEFAULT_DST)
            .try_into()
            .unwrap();
        let h: RistrettoPoint = Ristretto255::hash_to_point(&xs[i]);
        assert_eq!(Ristretto255::from_uniform_bytes(&uniform), h);
        for (what, needle) in [
            ("uniform bytes", uniform.to_vec()),
            ("point", limb_bytes(&h)),
        ] {
            let n = freed_copies(&needle, || {
                Ristretto255::hash_mul_and_encode_chunk(&xs, &k, &mut out);
            });
            report(
                failures,
                format!("{backend} ristretto255 hash: {what} {i}"),
                n,
            );
        }
        // The hashed points given to the multiplication (as the default hash path does):
        // the encodings of 2H that the lanes start from.
        let pts: Vec<RistrettoPoint> = xs.iter().map(|x| Ristretto255::hash_to_point(x)).collect();
        let doubled = (h + h).compress().to_bytes();
        let n = freed_copies(&doubled, || {
            Ristretto255::mul_and_encode_chunk(&pts, &k, &mut out);
        });
        report(failures, format!("{backend} ristretto255 mul: 2H {i}"), n);
    }
}

/// The X25519 hash step (lane vectors of the hashed items' `u(R)`) and the multiplication
/// of hashed points (their copy, in bytes and in lanes).
fn x25519(backend: &str, failures: &mut Vec<String>) {
    let xs = items(40);
    let k = scalar::<X25519>();
    let mut out = vec![[0u8; 32]; xs.len()];
    let n = unwiped_lanes(|| {
        X25519::hash_mul_and_encode_chunk(&xs, &k, &mut out);
    });
    report(failures, format!("{backend} x25519 hash: lane vectors"), n);
    let pts: Vec<_> = xs.iter().map(|x| X25519::hash_to_point(x)).collect();
    for i in [0usize, 9, 39] {
        let n = freed_copies(&pts[i].to_bytes(), || {
            X25519::mul_and_encode_chunk(&pts, &k, &mut out);
        });
        report(failures, format!("{backend} x25519 mul: u(H) {i}"), n);
    }
    let n = unwiped_lanes(|| {
        X25519::mul_and_encode_chunk(&pts, &k, &mut out);
    });
    report(failures, format!("{backend} x25519 mul: lane vectors"), n);
}

/// FourQ: the default `hash_mul_and_encode_chunk` (item by item) and `hash_and_mul_batch`
/// (`hash_to_curve_many` on the prefixed items): the copies of the items and their points.
fn fourq(backend: &str, failures: &mut Vec<String>) {
    let xs = items(100);
    let k = scalar::<FourQ>();
    let mut out = vec![[0u8; 32]; xs.len()];
    // The messages `hash_and_mul_batch` hashes: I2OSP(len(DST), 2) ‖ DST ‖ x.
    let dst = FourQ::DEFAULT_DST;
    let prefixed: Vec<Vec<u8>> = xs
        .iter()
        .map(|x| {
            let mut m = u16::try_from(dst.len()).unwrap().to_be_bytes().to_vec();
            m.extend_from_slice(dst);
            m.extend_from_slice(x);
            m
        })
        .collect();
    let many = obliv_fourq::Point::hash_to_curve_many(&prefixed);
    for i in [0usize, 70, 99] {
        let single = FourQ::hash_to_point(&xs[i]);
        assert_eq!(single, many[i]);
        let chunk_needles = [("item", xs[i].to_vec()), ("point", limb_bytes(&single))];
        for (what, needle) in chunk_needles {
            let n = freed_copies(&needle, || {
                FourQ::hash_mul_and_encode_chunk(&xs, &k, &mut out);
            });
            report(
                failures,
                format!("{backend} fourq hash chunk: {what} {i}"),
                n,
            );
        }
        let batch_needles = [("item", xs[i].to_vec()), ("point", limb_bytes(&many[i]))];
        for (what, needle) in batch_needles {
            let n = freed_copies(&needle, || FourQ::hash_and_mul_batch(&xs, &k));
            report(
                failures,
                format!("{backend} fourq hash batch: {what} {i}"),
                n,
            );
        }
    }
}

/// Regression: the ristretto255 hash step freed the items' uniform bytes (lanes) and hashed
/// points (dalek) unwiped; the default `hash_mul_and_encode_chunk` (FourQ's) its hashed points
/// and, per item, the prefixed copy of the item; FourQ's batch hash the prefixed items and
/// their points; X25519's lanes the `u(R)` of the hashed items (projective, prefix products,
/// affine); the multiplication steps of X25519 and ristretto255 their copies of the points
/// (`u`, the encodings of `2P`), which are the items' hashes on the default hash path.
#[test]
fn hash_paths_leave_no_item_derived_data_in_freed_memory() {
    let mut failures = Vec::new();
    let lanes = Ristretto255::batch_backend();
    if lanes != "avx512ifma-8way" {
        eprintln!(
            "hash_paths_leave_no_item_derived_data_in_freed_memory: no AVX-512 IFMA lanes \
             here (CPU, OBLIV_CPU_DISABLE or --cfg obliv_portable): both halves check the \
             fallbacks"
        );
    }
    let fourq_backend = obliv_fourq::Point::batch_backend();
    ristretto(lanes, &mut failures);
    x25519(lanes, &mut failures);
    fourq(fourq_backend, &mut failures);
    obliv_cpu::disable(&["avx512ifma", "avx2"]).unwrap();
    assert_eq!(Ristretto255::batch_backend(), "dalek");
    assert_eq!(obliv_fourq::Point::batch_backend(), "serial");
    ristretto("dalek", &mut failures);
    x25519("dalek", &mut failures);
    fourq("serial", &mut failures);
    assert!(failures.is_empty(), "{failures:#?}");
}
