//! Unbalanced PSI: offline cache, online phase against the plain intersection, reuse,
//! tampering, `server_get_result` and appends to the server's set.
#![allow(clippy::unwrap_used)] // test helpers unwrap like the tests do

use crate::common::items;

use obliv_core::AesRng;
use obliv_net::mem_pair;
use obliv_psi::unbalanced::{
    Cache, ServerKey, ServerSet, UbConfig, offline_append_client, offline_append_server,
    offline_client, offline_server, online_client, online_server,
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

/// Both sides' results of an append (the server's error, if any, is what the test checks).
fn append(
    key: &ServerKey,
    set: &ServerSet,
    added: &[Vec<u8>],
    cfg: UbConfig,
    cache: &Cache,
) -> (Result<ServerSet, Error>, Result<Cache, Error>) {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || offline_append_server(&mut a, key, set, added, &cfg));
        let r = offline_append_client(&mut b, &cfg, cache);
        drop(b);
        (t.join().unwrap(), r)
    })
}

/// The client's and the server's results of an online phase.
type Both = (Result<Vec<usize>, Error>, Result<Option<Vec<usize>>, Error>);

/// Runs the online phase; returns the client's and the server's results.
fn online_both(
    key: &ServerKey,
    set: &ServerSet,
    client: &[Vec<u8>],
    cache: &Cache,
    cfg: UbConfig,
) -> Both {
    let (mut a, mut b) = mem_pair();
    std::thread::scope(|s| {
        let t = s.spawn(move || online_server(&mut a, key, set, &cfg));
        let r = online_client(&mut b, client, cache, &cfg, &mut AesRng::from_seed([4; 16]));
        drop(b);
        (r, t.join().unwrap())
    })
}

fn online(
    key: &ServerKey,
    set: &ServerSet,
    client: &[Vec<u8>],
    cache: &Cache,
    cfg: UbConfig,
) -> Result<Vec<usize>, Error> {
    online_both(key, set, client, cache, cfg).0
}

fn key(cfg: &UbConfig) -> ServerKey {
    ServerKey::generate(cfg.curve, &mut AesRng::from_seed([1; 16])).unwrap()
}

#[test]
fn offline_then_online_twice() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 256,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let server = items("s", 0..5000);
    let cache = offline(&key, &server, cfg, &dir.path().join("cache.bin"));
    assert_eq!(cache.len(), 5000);
    assert!(!cache.has_positions());
    for client in [
        items("s", 4990..5010),
        items("s", 0..3)
            .into_iter()
            .chain(items("z", 0..7))
            .collect(),
    ] {
        let (got, srv) = online_both(&key, &ServerSet::new(&key, &server), &client, &cache, cfg);
        assert_eq!(got.unwrap(), plain_intersection(&client, &server));
        assert_eq!(srv.unwrap(), None);
    }
    // A key saved and loaded works against the same cache.
    let kpath = dir.path().join("server.key");
    key.save(&kpath).unwrap();
    let key2 = ServerKey::load(&kpath).unwrap();
    let reopened = Cache::open(&dir.path().join("cache.bin")).unwrap();
    let client = items("s", 10..20);
    assert_eq!(
        online(
            &key2,
            &ServerSet::new(&key2, &server),
            &client,
            &reopened,
            cfg
        )
        .unwrap(),
        (0..10).collect::<Vec<_>>()
    );
    // Another key: the cache is refused.
    let other = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([9; 16])).unwrap();
    assert!(matches!(
        online(
            &other,
            &ServerSet::new(&other, &server),
            &client,
            &cache,
            cfg
        ),
        Err(Error::Cache(_))
    ));
}

/// The server's set with duplicates, the client's with duplicates and misses; both sides
/// learn the plain intersection, twice with the same cache, and with a reloaded key.
#[test]
fn server_gets_the_result_with_duplicates_twice() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 100,
        server_get_result: true,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    // 3000 items, "s7" three times and "s42" twice, in a scrambled order.
    let mut server = items("s", 0..3000);
    server.push(b"s7".to_vec());
    server.insert(1234, b"s7".to_vec());
    server.insert(17, b"s42".to_vec());
    server.rotate_left(777);
    let cache = offline(&key, &server, cfg, &dir.path().join("c.bin"));
    assert!(cache.has_positions());
    assert_eq!(cache.len(), server.len() as u64);
    let clients: [Vec<Vec<u8>>; 2] = [
        items("s", 0..50)
            .into_iter()
            .chain(items("x", 0..50))
            .chain(items("s", 5..9))
            .collect(),
        items("x", 0..99)
            .into_iter()
            .chain([b"s2999".to_vec()])
            .collect(),
    ];
    let kpath = dir.path().join("k");
    key.save(&kpath).unwrap();
    for (run, client) in clients.iter().chain(clients.iter()).enumerate() {
        let key = if run < 2 {
            &key
        } else {
            &ServerKey::load(&kpath).unwrap()
        };
        let (c, s) = online_both(key, &ServerSet::new(key, &server), client, &cache, cfg);
        assert_eq!(c.unwrap(), plain_intersection(client, &server), "run {run}");
        let s = s.unwrap().unwrap();
        assert_eq!(s, plain_intersection(&server, client), "run {run}");
    }
    // Exactly the duplicates: five server indices for the client {"s7", "s42"}.
    let client = vec![b"s42".to_vec(), b"s7".to_vec(), b"s7".to_vec()];
    let (c, s) = online_both(&key, &ServerSet::new(&key, &server), &client, &cache, cfg);
    assert_eq!(c.unwrap(), vec![0, 1, 2]);
    assert_eq!(s.unwrap().unwrap().len(), 5);
    // Empty client: the server learns the empty set.
    let (c, s) = online_both(&key, &ServerSet::new(&key, &server), &[], &cache, cfg);
    assert!(c.unwrap().is_empty());
    assert_eq!(s.unwrap(), Some(vec![]));
}

#[test]
fn server_result_option_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let on = UbConfig {
        batch_size: 64,
        server_get_result: true,
        ..UbConfig::default()
    };
    let off = UbConfig {
        server_get_result: false,
        ..on
    };
    let key = key(&on);
    let server = items("s", 0..300);
    let plain = offline(&key, &server, off, &dir.path().join("plain.bin"));
    let client = items("s", 0..5);
    // A cache without positions cannot serve server_get_result: refused before any traffic.
    assert!(matches!(
        online_client(
            &mut mem_pair().0,
            &client,
            &plain,
            &on,
            &mut AesRng::from_seed([0; 16])
        ),
        Err(Error::Cache(_))
    ));
    // A cache with positions serves both; the two sides must agree in the handshake.
    let with = offline(&key, &server, on, &dir.path().join("with.bin"));
    assert_eq!(
        online(&key, &ServerSet::new(&key, &server), &client, &with, off).unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    let (mut a, mut b) = mem_pair();
    let t = std::thread::scope(|s| {
        let t = s.spawn(|| online_server(&mut a, &key, &ServerSet::new(&key, &server), &on));
        let r = online_client(
            &mut b,
            &client,
            &with,
            &off,
            &mut AesRng::from_seed([4; 16]),
        );
        assert!(
            matches!(
                r,
                Err(Error::HandshakeMismatch {
                    field: "options",
                    ..
                })
            ),
            "{r:?}"
        );
        drop(b);
        t.join().unwrap()
    });
    assert!(t.is_err());
}

#[test]
fn appends_extend_the_cache_and_the_server_result() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 128,
        server_get_result: true,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let first = items("s", 0..1000);
    let second = items("s", 1000..1300);
    let third: Vec<Vec<u8>> = items("s", 1300..1301)
        .into_iter()
        .chain([b"s5".to_vec()]) // a duplicate of an earlier item
        .collect();
    let path = dir.path().join("c.bin");
    let cache = offline(&key, &first, cfg, &path);
    let set0 = ServerSet::new(&key, &first);
    let (set1, cache) = append(&key, &set0, &second, cfg, &cache);
    let cache = cache.unwrap();
    let (set, cache) = append(&key, &set1.unwrap(), &third, cfg, &cache);
    let set = set.unwrap();
    let cache = cache.unwrap();
    assert_eq!(set.segments(), &[1000, 300, 2]);
    assert_eq!(
        set,
        ServerSet::new(&key, &first)
            .append(&key, &second)
            .append(&key, &third)
    );
    assert_eq!(cache.len(), 1302);
    assert_eq!(Cache::open(&path).unwrap(), cache);
    let server: Vec<Vec<u8>> = [first, second, third].concat();
    let client: Vec<Vec<u8>> = items("s", 990..1010)
        .into_iter()
        .chain(items("s", 1295..1305))
        .chain(items("s", 3..7))
        .chain(items("q", 0..10))
        .collect();
    for _ in 0..2 {
        let (c, s) = online_both(&key, &set, &client, &cache, cfg);
        assert_eq!(c.unwrap(), plain_intersection(&client, &server));
        assert_eq!(s.unwrap().unwrap(), plain_intersection(&server, &client));
    }
    // The client refuses an append at another offset or under another key, and leaves the
    // cache as it was.
    let (_, r) = append(&key, &set0, &items("t", 0..3), cfg, &cache);
    assert!(matches!(r, Err(Error::Cache(_))), "{r:?}");
    let other = ServerKey::generate(cfg.curve, &mut AesRng::from_seed([9; 16])).unwrap();
    let (_, r) = append(&other, &set, &items("t", 0..3), cfg, &cache);
    assert!(matches!(r, Err(Error::Cache(_))), "{r:?}");
    assert_eq!(Cache::open(&path).unwrap(), cache);
    // An append to a tampered cache is refused (the old body's checksum is re-verified).
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() - 100;
    bytes[mid] ^= 4;
    std::fs::write(&path, &bytes).unwrap();
    let (_, r) = append(&key, &set, &items("t", 0..3), cfg, &cache);
    assert!(matches!(r, Err(Error::Cache(_))), "{r:?}");
}

#[test]
fn appends_without_server_result() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 4096,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let empty: Vec<Vec<u8>> = vec![];
    let cache = offline(&key, &empty, cfg, &dir.path().join("c.bin"));
    let (set, cache) = append(
        &key,
        &ServerSet::new(&key, &empty),
        &items("s", 0..5000),
        cfg,
        &cache,
    );
    let cache = cache.unwrap();
    let (set, cache) = append(&key, &set.unwrap(), &empty, cfg, &cache);
    let set = set.unwrap();
    let cache = cache.unwrap();
    assert_eq!(cache.len(), 5000);
    let client = items("s", 4995..5005);
    assert_eq!(
        online(&key, &set, &client, &cache, cfg).unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    // The option must match the cache's.
    let on = UbConfig {
        server_get_result: true,
        ..cfg
    };
    let (_, r) = append(&key, &set, &client, on, &cache);
    assert!(matches!(r, Err(Error::Cache(_))), "{r:?}");
}

#[test]
fn external_sort_with_many_runs_and_empty_sets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 4096,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let empty: Vec<Vec<u8>> = vec![];
    let cache = offline(&key, &empty, cfg, &dir.path().join("empty.bin"));
    assert!(cache.is_empty());
    assert_eq!(
        online(
            &key,
            &ServerSet::new(&key, &empty),
            &items("a", 0..5),
            &cache,
            cfg
        )
        .unwrap(),
        Vec::<usize>::new()
    );
    let server = items("s", 0..3000);
    let cache = offline(&key, &server, cfg, &dir.path().join("c.bin"));
    assert_eq!(
        online(&key, &ServerSet::new(&key, &server), &empty, &cache, cfg).unwrap(),
        Vec::<usize>::new()
    );
}

#[test]
fn tampered_cache_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 128,
        server_get_result: true,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let server = items("s", 0..1000);
    let path = dir.path().join("cache.bin");
    let cache = offline(&key, &server, cfg, &path);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1; // a position byte
    std::fs::write(&path, &bytes).unwrap();
    let r = online(
        &key,
        &ServerSet::new(&key, &server),
        &items("s", 0..10),
        &cache,
        cfg,
    );
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

/// The online server refuses a client announcing more than `max_client_items`, and a key
/// past its lifetime budget `max_key_queries` — also after the key is saved and reloaded.
#[test]
fn online_server_enforces_client_items_and_key_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 64,
        max_client_items: 30,
        max_key_queries: 45,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let server = items("s", 0..200);
    let cache = offline(&key, &server, cfg, &dir.path().join("cache.bin"));
    let protocol = |r: Result<Option<Vec<usize>>, Error>, field: &str| match r {
        Err(Error::Protocol(m)) => assert!(m.contains(field), "{m}"),
        other => panic!("expected a refusal naming {field}, got {other:?}"),
    };
    // Too many items in one phase: refused before anything is answered or counted.
    let (c, s) = online_both(
        &key,
        &ServerSet::new(&key, &server),
        &items("s", 0..31),
        &cache,
        cfg,
    );
    assert!(c.is_err());
    protocol(s, "max_client_items");
    assert_eq!(key.queries_served(), 0);
    // 30 + 10 fit the budget of 45; 10 more do not.
    for n in [30, 10] {
        let client = items("s", 0..n);
        let (c, s) = online_both(&key, &ServerSet::new(&key, &server), &client, &cache, cfg);
        assert_eq!(c.unwrap(), (0..n).collect::<Vec<_>>());
        s.unwrap();
    }
    assert_eq!(key.queries_served(), 40);
    let (c, s) = online_both(
        &key,
        &ServerSet::new(&key, &server),
        &items("s", 0..10),
        &cache,
        cfg,
    );
    assert!(c.is_err());
    protocol(s, "max_key_queries");
    // The count is in the key file: a reloaded key has 5 left, and records what it uses.
    let kpath = dir.path().join("server.key");
    key.save(&kpath).unwrap();
    let reloaded = ServerKey::load(&kpath).unwrap();
    assert_eq!(reloaded.queries_served(), 40);
    let (c, s) = online_both(
        &reloaded,
        &ServerSet::new(&reloaded, &server),
        &items("s", 0..6),
        &cache,
        cfg,
    );
    assert!(c.is_err());
    protocol(s, "max_key_queries");
    let (c, s) = online_both(
        &reloaded,
        &ServerSet::new(&reloaded, &server),
        &items("s", 0..5),
        &cache,
        cfg,
    );
    assert_eq!(c.unwrap().len(), 5);
    s.unwrap();
    assert_eq!(ServerKey::load(&kpath).unwrap().queries_served(), 45);
}

/// The key file is replaced atomically with mode 0600 (even over a file that had another
/// mode), leaves no temporary file, and is never written through a symbolic link.
#[cfg(unix)]
#[test]
fn key_file_is_private_atomic_and_follows_no_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig::default();
    let key = key(&cfg);
    let path = dir.path().join("server.key");
    std::fs::write(&path, b"an older, world-readable file").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    key.save(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        ServerKey::load(&path).unwrap().fingerprint().unwrap(),
        key.fingerprint().unwrap()
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("server.key")]);
    // A symbolic link at the destination: refused, its target untouched.
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, b"not a key").unwrap();
    let link = dir.path().join("linked.key");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(matches!(key.save(&link), Err(Error::Io { .. })));
    assert_eq!(std::fs::read(&target).unwrap(), b"not a key");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// The cache is bound to the server's items, not just their number: an online phase on a set
/// with one item changed, two items swapped or the same items split into other segments is
/// refused by the client before it sends a point, and the server's phase fails with it.
#[test]
fn a_server_set_that_changed_since_the_offline_phase_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = UbConfig {
        batch_size: 64,
        server_get_result: true,
        ..UbConfig::default()
    };
    let key = key(&cfg);
    let server = items("s", 0..500);
    let (mut a, mut b) = mem_pair();
    let path = dir.path().join("c.bin");
    let (set, cache) = std::thread::scope(|s| {
        let t = s
            .spawn(|| offline_server(&mut a, &key, &server, &cfg, &mut AesRng::from_seed([3; 16])));
        let c = offline_client(&mut b, &cfg, &path).unwrap();
        (t.join().unwrap().unwrap(), c)
    });
    assert_eq!(set, ServerSet::new(&key, &server));
    let client = items("s", 490..510);
    let mut edited = server.clone();
    edited[123] = b"not the same".to_vec();
    let mut swapped = server.clone();
    swapped.swap(10, 11);
    let resplit = ServerSet::new(&key, &server[..200]).append(&key, &server[200..]);
    for (what, changed) in [
        ("an edited item", ServerSet::new(&key, &edited)),
        ("two items swapped", ServerSet::new(&key, &swapped)),
        ("other segments", resplit),
    ] {
        let (c, s) = online_both(&key, &changed, &client, &cache, cfg);
        match c {
            Err(Error::Cache(m)) => assert!(m.contains("changed"), "{what}: {m}"),
            other => panic!("{what}: expected a refusal, got {other:?}"),
        }
        assert!(s.is_err(), "{what}: the server's phase must fail too");
    }
    // The right set still works.
    let (c, s) = online_both(&key, &set, &client, &cache, cfg);
    assert_eq!(c.unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(s.unwrap().unwrap(), (490..500).collect::<Vec<_>>());
}

/// A server announcing more values than the client agreed to hold (its cache takes `width`
/// bytes per value) is refused before any value arrives, in the offline phase and in an
/// append that would take the cache past the bound: a hostile server cannot fill the
/// client's disk.
#[test]
fn a_server_above_max_server_items_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server_cfg = UbConfig {
        batch_size: 256,
        ..UbConfig::default()
    };
    let client_cfg = UbConfig {
        max_server_items: 1000,
        ..server_cfg
    };
    let key = key(&server_cfg);
    let path = dir.path().join("cache.bin");
    let (mut a, mut b) = mem_pair();
    let big = items("s", 0..1001);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let _ = offline_server(
                &mut a,
                &key,
                &big,
                &server_cfg,
                &mut AesRng::from_seed([3; 16]),
            );
        });
        let r = offline_client(&mut b, &client_cfg, &path);
        drop(b);
        r
    });
    let e = r.unwrap_err();
    assert_eq!(e.kind(), obliv_psi::ErrorKind::PeerMisbehaved, "{e}");
    assert!(!path.exists());
    // At the bound: accepted; one more value in an append: refused, the cache unchanged.
    let full = items("s", 0..1000);
    let cache = offline(&key, &full, client_cfg, &path);
    assert_eq!(cache.len(), 1000);
    let (_, r) = append(
        &key,
        &ServerSet::new(&key, &full),
        &items("t", 0..1),
        client_cfg,
        &cache,
    );
    assert_eq!(r.unwrap_err().kind(), obliv_psi::ErrorKind::PeerMisbehaved);
    assert_eq!(Cache::open(&path).unwrap().len(), 1000);
}
