//! Unbalanced PSI: offline cache, online phase against the plain intersection, reuse, tampering.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

mod common;
use common::items;

use obliv_core::AesRng;
use obliv_net::mem_pair;
use obliv_psi::unbalanced::{
    Cache, ServerKey, UbConfig, offline_client, offline_server, online_client, online_server,
};
use obliv_psi::{Error, plain_intersection};
use rand_core::SeedableRng;

fn offline(key: &ServerKey, server: &[Vec<u8>], cfg: UbConfig, path: &std::path::Path) -> Cache {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        s.spawn(|| {
            offline_server(&mut a, key, server, &cfg, &mut AesRng::from_seed([3; 16])).unwrap()
        });
        offline_client(&mut b, &cfg, path).unwrap()
    })
}

fn online(
    key: &ServerKey,
    n_server: usize,
    client: &[Vec<u8>],
    cache: &Cache,
    cfg: UbConfig,
) -> Result<Vec<usize>, Error> {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || online_server(&mut a, key, n_server, &cfg));
        let r = online_client(&mut b, client, cache, &cfg, &mut AesRng::from_seed([4; 16]));
        drop(b);
        let _ = t.join().unwrap();
        r
    })
}

#[test]
fn offline_then_online_twice() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 256,
        ..UbConfig::default()
    };
    let key = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).unwrap();
    let server = items("s", 0..5000);
    let cache = offline(&key, &server, cfg, &dir.path().join("cache.bin"));
    assert_eq!(cache.len(), 5000);
    for client in [
        items("s", 4990..5010),
        items("s", 0..3)
            .into_iter()
            .chain(items("z", 0..7))
            .collect(),
    ] {
        let got = online(&key, server.len(), &client, &cache, cfg).unwrap();
        assert_eq!(got, plain_intersection(&client, &server));
    }
    // A key saved and loaded works against the same cache.
    let kpath = dir.path().join("server.key");
    key.save(&kpath).unwrap();
    let key2 = ServerKey::load(&kpath).unwrap();
    let reopened = Cache::open(&dir.path().join("cache.bin")).unwrap();
    let client = items("s", 10..20);
    assert_eq!(
        online(&key2, server.len(), &client, &reopened, cfg).unwrap(),
        (0..10).collect::<Vec<_>>()
    );
    // Another key: the cache is refused.
    let other = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([9; 16])).unwrap();
    assert!(matches!(
        online(&other, server.len(), &client, &cache, cfg),
        Err(Error::Cache(_))
    ));
}

#[test]
fn external_sort_with_many_runs_and_empty_sets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 4096,
        ..UbConfig::default()
    };
    let key = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).unwrap();
    let empty: Vec<Vec<u8>> = vec![];
    let cache = offline(&key, &empty, cfg, &dir.path().join("empty.bin"));
    assert!(cache.is_empty());
    assert_eq!(
        online(&key, 0, &items("a", 0..5), &cache, cfg).unwrap(),
        Vec::<usize>::new()
    );
    let server = items("s", 0..3000);
    let cache = offline(&key, &server, cfg, &dir.path().join("c.bin"));
    assert_eq!(
        online(&key, 3000, &empty, &cache, cfg).unwrap(),
        Vec::<usize>::new()
    );
}

#[test]
fn tampered_cache_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 128,
        ..UbConfig::default()
    };
    let key = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).unwrap();
    let server = items("s", 0..1000);
    let path = dir.path().join("cache.bin");
    let cache = offline(&key, &server, cfg, &path);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let r = online(&key, 1000, &items("s", 0..10), &cache, cfg);
    assert!(matches!(r, Err(Error::Cache(_))), "{r:?}");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    assert!(matches!(Cache::open(&path), Err(Error::Cache(_))));
    std::fs::write(&path, b"not a cache").unwrap();
    assert!(Cache::open(&path).is_err());
    std::fs::write(
        dir.path().join("bad.key"),
        b"OBUBKEY1 garbage garbage garbage garbage garbage",
    )
    .unwrap();
    assert!(ServerKey::load(&dir.path().join("bad.key")).is_err());
}
