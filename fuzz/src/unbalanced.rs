//! One side of an unbalanced-PSI phase (obliv-psi `unbalanced`) against a scripted peer.
//!
//! Input: `mode ‖ script`; `mode` mod 4 picks the side: 0 the client's offline phase (it
//! writes a cache from the server's frames), 1 the server's online phase (the client's
//! blinded points), 2 the client's online phase (on a cache built honestly at start-up), 3 the
//! client's append phase (on a copy of that cache).

use std::path::PathBuf;
use std::sync::OnceLock;

use obliv_core::AesRng;
use obliv_core::rand_core::SeedableRng;
use obliv_ec::Curve;
use obliv_net::Channel;
use obliv_psi::unbalanced::{self, Cache, ServerKey, ServerSet, UbConfig};

use crate::files::WorkDir;

/// Items of the server's set.
pub fn server_items() -> Vec<[u8; 8]> {
    (0..16u64).map(u64::to_le_bytes).collect()
}

/// Items of the client's query (half of them in the server's set).
pub fn client_items() -> Vec<[u8; 8]> {
    (8..16u64).chain(100..104).map(u64::to_le_bytes).collect()
}

/// Items the server appends.
pub fn appended_items() -> Vec<[u8; 8]> {
    (16..20u64).map(u64::to_le_bytes).collect()
}

/// The configuration of both sides: small batches and bounds.
pub fn config() -> UbConfig {
    UbConfig {
        curve: Curve::FourQ,
        batch_size: 8,
        max_client_items: 64,
        ..UbConfig::default()
    }
}

/// What every run shares: the server's key and set, and the client's cache of that set.
pub struct Fixture {
    /// The server's key.
    pub key: ServerKey,
    /// The server's set record.
    pub set: ServerSet,
    /// The client's cache.
    pub cache: Cache,
    _dir: WorkDir,
}

/// The fixture, built once (an honest offline phase in memory).
pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = WorkDir::new("ub-fixture");
        let mut rng = AesRng::from_seed([3; 16]);
        let key = ServerKey::generate(config().curve, &mut rng).expect("key");
        let (mut a, mut b) = obliv_net::mem_pair();
        let path = dir.path().join("cache");
        let p = path.clone();
        let client = std::thread::spawn(move || unbalanced::offline_client(&mut b, &config(), &p));
        let set = unbalanced::offline_server(&mut a, &key, &server_items(), &config(), &mut rng)
            .expect("offline server");
        let cache = client
            .join()
            .expect("client thread")
            .expect("offline client");
        Fixture {
            key,
            set,
            cache,
            _dir: dir,
        }
    })
}

/// Runs side `mode` over `ch`; returns whether it ended with `Ok`.
pub fn run_side<C: Channel + ?Sized>(mode: u8, ch: &mut C) -> bool {
    let f = fixture();
    let cfg = config();
    let mut rng = AesRng::from_seed([4; 16]);
    match mode % 4 {
        0 => {
            let dir = WorkDir::new("ub-offline");
            let path: PathBuf = dir.path().join("cache");
            match unbalanced::offline_client(ch, &cfg, &path) {
                Ok(c) => {
                    let again = Cache::open(&path).expect("a cache just written opens");
                    assert_eq!(again.len(), c.len());
                    true
                }
                Err(_) => false,
            }
        }
        1 => match unbalanced::online_server(ch, &f.key, &f.set, &cfg) {
            Ok(r) => {
                assert!(r.is_none(), "server_get_result is off");
                true
            }
            Err(_) => false,
        },
        2 => match unbalanced::online_client(ch, &client_items(), &f.cache, &cfg, &mut rng) {
            Ok(idx) => {
                assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");
                assert!(idx.iter().all(|&i| i < client_items().len()), "{idx:?}");
                true
            }
            Err(_) => false,
        },
        _ => {
            let dir = WorkDir::new("ub-append");
            let path = dir.path().join("cache");
            std::fs::copy(f.cache.path(), &path).expect("copy cache");
            let cache = Cache::open(&path).expect("cache copy");
            unbalanced::offline_append_client(ch, &cfg, &cache).is_ok()
        }
    }
}

/// The honest peer of side `mode`, for seeds.
pub fn run_peer<C: Channel + ?Sized>(mode: u8, ch: &mut C) {
    let f = fixture();
    let cfg = config();
    let mut rng = AesRng::from_seed([5; 16]);
    let _ = match mode % 4 {
        0 => unbalanced::offline_server(ch, &f.key, &server_items(), &cfg, &mut rng).map(drop),
        1 => unbalanced::online_client(ch, &client_items(), &f.cache, &cfg, &mut rng).map(drop),
        2 => unbalanced::online_server(ch, &f.key, &f.set, &cfg).map(drop),
        _ => {
            unbalanced::offline_append_server(ch, &f.key, &f.set, &appended_items(), &cfg).map(drop)
        }
    };
}

/// The body of the target.
pub fn fuzz(data: &[u8]) {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let mut ch = crate::ScriptedChannel::new(script);
    run_side(mode, &mut ch);
}

/// A seed: side `mode` against its honest peer in memory.
pub fn seed(mode: u8) -> Vec<u8> {
    fixture();
    let (a, mut b) = obliv_net::mem_pair();
    let peer = std::thread::spawn(move || run_peer(mode, &mut b));
    let mut rec = crate::Recorder::new(a);
    run_side(mode, &mut rec);
    let received = rec.into_received();
    let _ = peer.join();
    let mut out = vec![mode];
    out.extend_from_slice(&crate::encode_frames(&received));
    out
}
