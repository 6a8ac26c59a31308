//! The seed corpus: a few valid inputs per target, made from honest runs and real encodings,
//! and a few invalid ones. `cargo run --release --example gen_corpus` (in `fuzz/`) writes them
//! to `corpus/<target>/`, each named by the BLAKE3 hash of its content.

use obliv_cli::checkpoint::{BucketResult, RunInfo};
use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::{FourQ, P256, PrimeGroup, Ristretto255, Secp256k1, Sm2, X25519};

use crate::psi::Family;

/// Seeds of one target.
pub type Seeds = Vec<Vec<u8>>;

/// Every target's seeds, by target name.
pub fn all() -> Vec<(&'static str, Seeds)> {
    vec![
        ("psi_handshake", psi_handshake()),
        (
            "psi_ecdh",
            psi_sessions(
                Family::Ecdh,
                &[0, 1, 2, 3, 4, 5, 7, 9, 11, 0x80],
                &[0, 1, 12],
            ),
        ),
        ("psi_ecdh3", psi_ecdh3()),
        ("psi_kkrt", psi_sessions(Family::Kkrt, &[0, 1], &[0, 1, 12])),
        // RR22's silent VOLE sends ~160 KB at any set size: one item keeps seeds small.
        (
            "psi_rr22",
            psi_sessions(Family::Rr22, &[0, 1, 2, 3, 4, 5], &[0, 1]),
        ),
        (
            "psi_unbalanced",
            (0..4).map(crate::unbalanced::seed).collect(),
        ),
        ("cli_job_hello", cli_job_hello()),
        ("cli_checkpoint", cli_checkpoint()),
        ("unbalanced_files", unbalanced_files()),
        ("pir_server", pir_server()),
        (
            "pir_client",
            (0..3).map(|m| crate::pir::seeds(m).1).collect(),
        ),
        ("dpf_key", dpf_key()),
        ("he_paillier", he_paillier()),
        ("he_elgamal", he_elgamal()),
        ("ec_points", ec_points()),
        ("net_frames", net_frames()),
    ]
}

/// A valid hello of the peer for `psi_handshake`'s fixed one, then variations.
fn psi_handshake() -> Seeds {
    let hello = |f: &dyn Fn(&mut [u8; 30])| {
        let mut b = [0u8; 30];
        b[0..4].copy_from_slice(b"OBPS");
        b[4..6].copy_from_slice(&obliv_psi::handshake::WIRE_VERSION.to_le_bytes());
        b[6] = 10;
        b[8] = 1;
        b[9] = 1;
        b[10..14].copy_from_slice(&4096u32.to_le_bytes());
        b[14..22].copy_from_slice(&77u64.to_le_bytes());
        b[22..30].copy_from_slice(&40u64.to_le_bytes());
        f(&mut b);
        crate::encode_frames(&[b])
    };
    vec![
        hello(&|_| {}),
        hello(&|b| b[4] = 2),
        hello(&|b| b[7] = 3),
        hello(&|b| b[22] = 41),
        hello(&|b| b[0] = b'X'),
        crate::encode_frames(&[&b"OBPS"[..]]),
        Vec::new(),
    ]
}

fn psi_sessions(family: Family, modes: &[u8], sizes: &[u8]) -> Seeds {
    let mut out = Vec::new();
    for &mode in modes {
        for &items in sizes {
            out.push(crate::psi::seed(family, mode, items));
        }
    }
    // Invalid: a truncated script and garbage.
    if let Some(s) = out.last() {
        out.push(s[..s.len() / 2].to_vec());
    }
    out.push(vec![0, 5, 3, 0, 0, 0, 1, 2, 3]);
    out
}

/// Three-party ECDH-PSI: each of the three positions (receiver, lower helper, higher helper)
/// on FourQ and on Curve25519, with a few set sizes; then a truncated run and garbage.
fn psi_ecdh3() -> Seeds {
    let curve_mode = |curve: obliv_ec::Curve| {
        let k = obliv_ec::Curve::ALL
            .iter()
            .position(|&c| c == curve)
            .unwrap_or(0);
        u8::try_from(9 * k).unwrap_or(0)
    };
    let mut out = Vec::new();
    for curve in [obliv_ec::Curve::FourQ, obliv_ec::Curve::Curve25519] {
        for rank_and_receiver in [0u8, 1, 2, 3, 4] {
            for items in [1u8, 12] {
                out.push(crate::ecdh3::seed(
                    curve_mode(curve) + rank_and_receiver,
                    items,
                ));
            }
        }
    }
    if let Some(s) = out.last() {
        out.push(s[..s.len() / 2].to_vec());
    }
    out.push(vec![0, 5, 3, 0, 0, 0, 1, 2, 3]);
    out
}

/// The job hello a peer sends for the CLI target's party in `mode`.
fn job_hello(mode: u8, rows: u64, checkpoint: bool, run: Option<RunInfo>) -> Vec<u8> {
    let cfg = crate::cli::config(mode, 0);
    let curve = match cfg.protocol {
        obliv_cli::party::Protocol::Ecdh | obliv_cli::party::Protocol::Ecdh3pc => {
            cfg.curve.to_string()
        }
        _ => "-".into(),
    };
    let params = format!(
        "protocol={} curve={curve} receiver={} broadcast={} shard={} bucket_load={}",
        cfg.protocol, cfg.receiver, cfg.broadcast, cfg.shard, cfg.bucket_load
    );
    let mut b = b"OBLIVJB4".to_vec();
    b.extend_from_slice(&(params.len() as u64).to_le_bytes());
    b.extend_from_slice(params.as_bytes());
    b.extend_from_slice(&rows.to_le_bytes());
    b.push(u8::from(checkpoint));
    let run = run.unwrap_or(RunInfo {
        id: [0; 16],
        buckets: 0,
    });
    b.extend_from_slice(&run.id);
    b.extend_from_slice(&run.buckets.to_le_bytes());
    b
}

fn cli_job_hello() -> Seeds {
    let mut out = Vec::new();
    for mode in 0..5u8 {
        let h = job_hello(mode, 8, false, None);
        out.push([&[mode][..], &crate::encode_frames(&[&h])].concat());
    }
    // With a checkpoint on both sides: hello, then the run id is ours to draw.
    let h = job_hello(8, 8, true, None);
    out.push([&[8u8][..], &crate::encode_frames(&[&h])].concat());
    let run = RunInfo {
        id: [5; 16],
        buckets: 1,
    };
    let h = job_hello(8, 8, true, Some(run));
    out.push([&[8u8][..], &crate::encode_frames(&[&h[..], &[1u8][..]])].concat());
    // Invalid: other settings, overstated rows, garbage.
    let mut h = job_hello(0, 8, false, None);
    h[20] ^= 1;
    out.push([&[0u8][..], &crate::encode_frames(&[&h])].concat());
    let h = job_hello(0, u64::MAX, false, None);
    out.push([&[0u8][..], &crate::encode_frames(&[&h])].concat());
    out.push(vec![
        0, 8, 0, 0, 0, b'O', b'B', b'L', b'I', b'V', b'J', b'B', b'4',
    ]);
    out
}

fn cli_checkpoint() -> Seeds {
    let run = RunInfo {
        id: [3; 16],
        buckets: 4,
    };
    let results = [
        BucketResult {
            rows_in: 10,
            keys_in: 9,
            keys_out: 2,
            rows: Some(vec![1, 7]),
        },
        BucketResult {
            rows_in: 5,
            keys_in: 5,
            keys_out: 0,
            rows: None,
        },
    ];
    let man = crate::files::manifest();
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let b = i as u64 + 1;
        let body = crate::files::bucket_body(run.id, b, r);
        let run_body = crate::files::run_body(run);
        // Flags 0x7 (manifest, run and bucket checksums supplied by the target) and the same
        // files given whole (flags 0).
        let flags = 7 | (b as u8) << 4;
        out.push(crate::encode_parts(&[&[flags], &[], &run_body, &body]));
        let whole = [
            &[(b as u8) << 4][..],
            &man,
            &crate::files::with_checksum(&run_body),
            &crate::files::with_checksum(&body),
        ];
        out.push(crate::encode_parts(&whole));
    }
    // Invalid: a bucket of another run, a bad count, a foreign manifest.
    let body = crate::files::bucket_body([4; 16], 0, &results[0]);
    let run_body = crate::files::run_body(run);
    out.push(crate::encode_parts(&[&[7], &[], &run_body, &body]));
    let mut body = crate::files::bucket_body(run.id, 0, &results[0]);
    let n = body.len() - 24;
    body[n] = 0xff;
    out.push(crate::encode_parts(&[&[7], &[], &run_body, &body]));
    out.push(crate::encode_parts(&[
        &[0],
        b"obliv psi checkpoint\nformat=2\n",
        &[],
        &[],
    ]));
    out
}

fn unbalanced_files() -> Seeds {
    let f = crate::unbalanced::fixture();
    let mut out = Vec::new();
    out.push([&[0u8][..], &f.set.to_bytes()].concat());
    let appended = f.set.append(&f.key, &crate::unbalanced::appended_items());
    out.push([&[0u8][..], &appended.to_bytes()].concat());
    let dir = crate::files::WorkDir::new("seed-key");
    let path = dir.path().join("key");
    f.key.save(&path).expect("save key");
    let key = std::fs::read(&path).expect("key file");
    out.push([&[1u8][..], &key].concat());
    out.push([&[2u8][..], &key[..key.len() - 32]].concat());
    let cache = std::fs::read(f.cache.path()).expect("cache file");
    out.push([&[3u8][..], &cache].concat());
    // Invalid: truncated set, key and cache.
    let set = f.set.to_bytes();
    out.push([&[0u8][..], &set[..set.len() - 1]].concat());
    out.push([&[1u8][..], &key[..20]].concat());
    out.push([&[3u8][..], &cache[..130]].concat());
    out
}

fn pir_server() -> Seeds {
    let mut out = Vec::new();
    for mode in 0..3 {
        out.extend(crate::pir::seeds(mode).0);
    }
    out.sort();
    out.dedup();
    out.push(vec![9]);
    out.push(vec![1, 5]);
    out
}

fn dpf_key() -> Seeds {
    let mut rng = AesRng::from_seed([14; 16]);
    let mut out = Vec::new();
    for (bits, alpha) in [
        (0u32, 0u64),
        (1, 1),
        (7, 100),
        (12, 4000),
        (20, 5),
        (40, 1 << 39),
    ] {
        let (a, b) = obliv_pir::dpf::gen_keys(bits, alpha, &mut rng).expect("keys");
        out.push(a.to_bytes());
        out.push(b.to_bytes());
        let beta = obliv_core::Block::from_bytes([7; 16]);
        if let Ok((a, _)) = obliv_pir::dpf::gen_block_keys(bits.min(20), alpha % 2, beta, &mut rng)
        {
            out.push(a.to_bytes());
        }
    }
    // Invalid: too large a domain, a wrong length.
    out.push(vec![41]);
    out.push(vec![3, 0, 0]);
    out
}

fn he_paillier() -> Seeds {
    let keys = crate::he::paillier_keys();
    let mut rng = AesRng::from_seed([15; 16]);
    let m = obliv_he::Integer::from(42u32);
    let ct = keys.public.encrypt_with_rng(&m, &mut rng).expect("encrypt");
    let json = |v: &dyn erased::Json| v.json();
    let mut out = vec![
        [&[0u8][..], &ct.to_bytes()].concat(),
        [&[1u8][..], &json(&keys.public)].concat(),
        [&[2u8][..], &json(&keys.secret)].concat(),
        [&[3u8][..], &json(&ct)].concat(),
    ];
    // Invalid: a ciphertext of n² itself, an even modulus.
    out.push([&[0u8][..], &keys.public.n_squared().to_be_bytes()].concat());
    out.push([&[1u8][..], &br#"{"n":"04","hs":"02"}"#[..]].concat());
    out
}

fn he_elgamal() -> Seeds {
    let mut rng = AesRng::from_seed([16; 16]);
    let ec = crate::he::ec_keys();
    let ct = ec.public_key().encrypt(5, &mut rng);
    let modp = crate::he::modp_keys();
    let mct = modp
        .public_key()
        .encrypt_value(&obliv_he::Integer::from(3u32), &mut rng)
        .expect("encrypt");
    let json = |v: &dyn erased::Json| v.json();
    vec![
        [&[0u8][..], &json(ec.public_key())].concat(),
        [&[1u8][..], &json(&ct)].concat(),
        [&[2u8][..], &json(ec)].concat(),
        [&[3u8][..], &json(modp.public_key())].concat(),
        [&[4u8][..], &json(&mct)].concat(),
        [&[5u8][..], &json(modp)].concat(),
        [&[0u8][..], &b"\"00\""[..]].concat(),
        [&[4u8][..], &br#"{"c1":"00","c2":"01"}"#[..]].concat(),
    ]
}

fn points<G: PrimeGroup>(tag: u8, out: &mut Seeds) {
    let mut rng = AesRng::from_seed([17; 16]);
    let mut all = vec![tag];
    for i in 0..3u8 {
        let p = G::mul_base(&G::random_scalar(&mut rng));
        all.extend_from_slice(G::encode(&p).as_ref());
        out.push([&[tag][..], G::encode(&G::hash_to_point(&[i])).as_ref()].concat());
    }
    out.push(all);
    // Invalid: all-ones bytes, the identity's encoding (all zero in most groups), a short one.
    out.push([&[tag][..], &vec![0xff; G::ENCODED_LEN]].concat());
    out.push([&[tag][..], &vec![0; G::ENCODED_LEN]].concat());
    out.push([&[tag][..], &vec![1; G::ENCODED_LEN - 1]].concat());
}

fn ec_points() -> Seeds {
    let mut out = Vec::new();
    points::<FourQ>(0, &mut out);
    points::<X25519>(1, &mut out);
    points::<Ristretto255>(2, &mut out);
    points::<Sm2>(3, &mut out);
    points::<Secp256k1>(4, &mut out);
    points::<P256>(5, &mut out);
    let p = obliv_fourq::Point::hash_to_curve(b"seed");
    out.push([&[6u8][..], &p.to_bytes()].concat());
    for c in 0..6u8 {
        let g = obliv_ec::DynGroup::new(obliv_ec::Curve::ALL[usize::from(c)]).expect("group");
        let k = g
            .random_secret(&mut AesRng::from_seed([18; 16]))
            .expect("secret");
        let pts = g.mul_base(&k).expect("point");
        out.push([&[7u8, c][..], &pts, &pts].concat());
    }
    out
}

fn net_frames() -> Seeds {
    let frames: [&[u8]; 3] = [b"hello", b"", &[7; 300]];
    let wire = crate::net::tcp_wire(&frames);
    let mut mux = Vec::new();
    for (id, f) in [(0u32, &b"a"[..]), (2, b"bb"), (0, b"ccc"), (9, b"zz")] {
        mux.push(id.to_le_bytes().to_vec());
        mux.push(f.to_vec());
    }
    vec![
        [&[0u8][..], &wire].concat(),
        [&[1u8][..], &wire].concat(),
        [&[2u8][..], &wire].concat(),
        [&[3u8][..], &crate::encode_frames(&mux)].concat(),
        // Invalid: a length over the limit, a truncated header, a mux id without payload.
        [&[0u8][..], &(1u64 << 40).to_le_bytes()[..], b"x"].concat(),
        vec![1, 5, 0, 0],
        [&[3u8][..], &crate::encode_frames(&[&[1u8, 0, 0, 0][..]])].concat(),
    ]
}

/// JSON encoding behind a trait object, so one closure serves every type above.
mod erased {
    /// A value with a JSON encoding.
    pub trait Json {
        /// Its JSON bytes.
        fn json(&self) -> Vec<u8>;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> Vec<u8> {
            serde_json::to_vec(self).expect("json")
        }
    }
}
