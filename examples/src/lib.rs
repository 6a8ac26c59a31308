//! Integration templates for obliv. Each module is one example: its `run` function holds the
//! whole logic, the example in `examples/` calls it (and prints), and `tests/examples.rs`
//! calls it in CI. Every module uses only the public API of the obliv crates.
//!
//! | example | module | run it |
//! |---|---|---|
//! | two-party ECDH PSI over TCP | [`psi_tcp`] | `cargo run --release -p obliv-examples --example psi_tcp` (or two processes, see the module) |
//! | RR22 PSI in buckets over TCP | [`psi_buckets`] | `cargo run --release -p obliv-examples --example rr22` |
//! | KKRT16 PSI in buckets over TCP | [`psi_buckets`] | `cargo run --release -p obliv-examples --example kkrt` |
//! | three-party ECDH PSI | [`psi3`] | `cargo run --release -p obliv-examples --example psi3` |
//! | unbalanced PSI offline / online | [`unbalanced`] | `cargo run --release -p obliv-examples --example unbalanced` |
//! | Paillier private sum | [`paillier_sum`] | `cargo run --release -p obliv-examples --example paillier_sum` |
//! | EC ElGamal | [`ec_elgamal`] | `cargo run --release -p obliv-examples --example ec_elgamal` |
//! | DPF-PIR client and servers | [`pir`] | `cargo run --release -p obliv-examples --example pir` |
//! | OT and VOLE directly | [`ot_vole`] | `cargo run --release -p obliv-examples --example ot_vole` |
#![forbid(unsafe_code)]

/// Errors of the examples: whatever the obliv crate underneath reports.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Result of an example.
pub type Result<T> = std::result::Result<T, Error>;

/// Joins a thread, turning its panic into an error.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join()
        .map_err(|_| Error::from("a party's thread panicked"))?
}

/// `n` items `"user-<i>"` for `i` in `range`: overlapping ranges give a known intersection.
pub fn ids(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("user-{i}")).collect()
}

pub mod psi_tcp {
    //! Two-party ECDH-PSI over TCP. The receiver listens, the sender connects; the receiver
    //! learns the indices of its items that the sender also holds, the sender learns nothing
    //! but the receiver's set size.
    //!
    //! As two processes (two terminals, or two machines with the address changed):
    //! ```text
    //! cargo run --release -p obliv-examples --example psi_tcp -- receiver 127.0.0.1:7700
    //! cargo run --release -p obliv-examples --example psi_tcp -- sender 127.0.0.1:7700
    //! ```
    //! Without arguments the example runs both parties on two threads over loopback TCP.

    use std::net::{SocketAddr, TcpListener};
    use std::time::Duration;

    use obliv_core::AesRng;
    use obliv_net::{ConnectOptions, TcpChannel, TcpOptions};
    use obliv_psi::ecdh::{self, EcdhConfig, Role};

    use crate::Result;

    /// The receiver's side: accepts one connection on `listener` and runs the protocol.
    /// Returns the indices (ascending) of `items` in the intersection.
    pub fn receiver(listener: &TcpListener, items: &[String]) -> Result<Vec<usize>> {
        let mut ch = TcpChannel::accept(
            listener,
            Some(Duration::from_secs(60)),
            TcpOptions::default(),
        )?;
        // Both parties must use the same configuration (checked by the handshake).
        let cfg = EcdhConfig::default();
        let out = ecdh::run(
            &mut ch,
            Role::Receiver,
            items,
            &cfg,
            &mut AesRng::from_entropy(),
        )?;
        out.ok_or_else(|| "the receiver always gets the result".into())
    }

    /// The sender's side: connects to `addr` (retrying while the receiver starts up).
    pub fn sender(addr: SocketAddr, items: &[String]) -> Result<()> {
        let mut ch = TcpChannel::connect(addr, &ConnectOptions::default())?;
        ecdh::run(
            &mut ch,
            Role::Sender,
            items,
            &EcdhConfig::default(),
            &mut AesRng::from_entropy(),
        )?;
        Ok(())
    }

    /// Both parties on two threads over loopback TCP: receiver `user-0..n`, sender
    /// `user-n/2..3n/2`. Returns the receiver's result.
    pub fn run(n: usize) -> Result<Vec<usize>> {
        let listener = TcpChannel::listen("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (mine, theirs) = (crate::ids(0..n), crate::ids(n / 2..n + n / 2));
        std::thread::scope(|s| {
            let t = s.spawn(|| sender(addr, &theirs));
            let found = receiver(&listener, &mine);
            crate::join(t)?;
            found
        })
    }
}

pub mod psi_buckets {
    //! RR22 or KKRT16 PSI on sets split into buckets, through the bucket driver, over TCP.
    //!
    //! Both parties split their items into `buckets` by a public hash of the item (the same
    //! function on both sides, so equal items meet in the same bucket), make one session of
    //! the protocol (every protocol is an [`obliv_psi::PsiSession`]) and hand the driver the
    //! buckets in order. With `workers > 1` the driver runs that many buckets side by side on
    //! one connection. The receiver maps each bucket's result back to its items.
    //!
    //! Bucket sizes are announced in each bucket's handshake: with a public split function
    //! they reveal how many of a party's items hash into each bucket, which says nothing
    //! about the items when the hash is uniform and the bucket count small (the `obliv` CLI
    //! fixes the count from public data for that reason).

    use std::time::Duration;

    use obliv_core::AesRng;
    use obliv_net::{ConnectOptions, TcpChannel, TcpOptions};
    use obliv_psi::{PsiSession, Role, driver};

    use crate::Result;

    /// Which bucket an item goes to: the first 8 bytes of its BLAKE3 hash (keyed by a public
    /// domain string), reduced.
    pub fn bucket_of(item: &[u8], buckets: usize) -> usize {
        let h = blake3::derive_key("obliv-examples psi_buckets v1 bucket", item);
        let v = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        usize::try_from(v % buckets as u64).unwrap_or(0)
    }

    /// `items` split into `buckets` buckets (the items' byte strings, in input order).
    pub fn split(items: &[String], buckets: usize) -> Vec<Vec<Vec<u8>>> {
        let mut out = vec![Vec::new(); buckets];
        for it in items {
            out[bucket_of(it.as_bytes(), buckets)].push(it.as_bytes().to_vec());
        }
        out
    }

    /// One party over `ch`: runs `session` on the buckets of `items` and returns, for the
    /// receiver, the items in the intersection (sorted); nothing for the sender.
    pub fn party<P: PsiSession + 'static>(
        ch: TcpChannel,
        session: P,
        items: &[String],
        buckets: usize,
        workers: usize,
    ) -> Result<Vec<String>> {
        let mut rng = AesRng::from_entropy();
        let mut found = Vec::new();
        for out in driver::run_buckets(ch, session, workers, split(items, buckets), &mut rng)? {
            let out = out?;
            for i in out.result.unwrap_or_default() {
                found.push(String::from_utf8_lossy(&out.bucket[i]).into_owned());
            }
        }
        found.sort();
        Ok(found)
    }

    /// Both parties on two threads over loopback TCP, with sessions from `make` (called
    /// with each role): receiver `user-0..n`, sender `user-n/2..3n/2`. Returns the
    /// receiver's result.
    pub fn run<P, F>(make: F, n: usize, buckets: usize, workers: usize) -> Result<Vec<String>>
    where
        P: PsiSession + 'static,
        F: Fn(Role) -> obliv_psi::Result<P> + Sync,
    {
        let listener = TcpChannel::listen("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let (mine, theirs) = (crate::ids(0..n), crate::ids(n / 2..n + n / 2));
        std::thread::scope(|s| {
            let t = s.spawn(|| -> Result<Vec<String>> {
                let ch = TcpChannel::connect(addr, &ConnectOptions::default())?;
                party(ch, make(Role::Sender)?, &theirs, buckets, workers)
            });
            let ch = TcpChannel::accept(
                &listener,
                Some(Duration::from_secs(60)),
                TcpOptions::default(),
            )?;
            let found = party(ch, make(Role::Receiver)?, &mine, buckets, workers);
            crate::join(t)?;
            found
        })
    }
}

pub mod psi3 {
    //! Three-party ECDH-PSI (SecretFlow's construction): parties 0, 1, 2 each hold a set and
    //! party 0 learns the three-way intersection (and `|X_1 ∩ X_2|`). Here the three parties
    //! are threads over an in-memory mesh; over the network use
    //! `obliv_net::Session::tcp(rank, &addrs, &ConnectOptions::default())` in each process.

    use obliv_core::AesRng;
    use obliv_net::{Channel, Session, run_parties};
    use obliv_psi::ecdh::EcdhConfig;
    use obliv_psi::ecdh3;

    use crate::Result;

    /// One party's part: runs the protocol with receiver rank 0.
    pub fn party<C: Channel>(
        session: &mut Session<C>,
        items: &[String],
    ) -> Result<Option<Vec<usize>>> {
        let cfg = EcdhConfig::default();
        Ok(ecdh3::run(
            session,
            0,
            items,
            &cfg,
            &mut AesRng::from_entropy(),
        )?)
    }

    /// Party 0 holds `user-0..n`, party 1 `user-n/2..2n`, party 2 `user-0..3n/4`: the
    /// intersection is `user-n/2..3n/4`. Returns party 0's result.
    pub fn run(n: usize) -> Result<Vec<usize>> {
        let sets = [
            crate::ids(0..n),
            crate::ids(n / 2..2 * n),
            crate::ids(0..3 * n / 4),
        ];
        let results = run_parties(Session::mem_mesh(3), |s| {
            let rank = s.rank();
            party(s, &sets[rank])
        });
        let mut results = results.into_iter();
        let first = results.next().ok_or("no party 0")??;
        for r in results {
            r?;
        }
        first.ok_or_else(|| "party 0 is the receiver".into())
    }
}

pub mod unbalanced {
    //! Unbalanced ECDH-OPRF PSI: a server with a large set and a client with a small one.
    //! Offline, once, the server streams its OPRF values and the client stores them in a
    //! cache file; online, per query, the client blinds its items, the server raises them to
    //! its key, and the client looks the results up in its cache. The server's key is kept
    //! (`ServerKey::save` / `load`) so the cache stays valid across online runs.

    use obliv_core::AesRng;
    use obliv_net::run_mem;
    use obliv_psi::unbalanced::{self, Cache, ServerKey, UbConfig};

    use crate::Result;

    /// Server `user-0..n_server`; the client holds `n_client` items, half of them the
    /// server's. Runs the offline phase, then two online queries on the same cache. Returns
    /// the second query's result (indices into the client's items).
    pub fn run(n_server: usize, n_client: usize) -> Result<Vec<usize>> {
        let cfg = UbConfig::default();
        let key = ServerKey::generate(cfg.curve, &mut AesRng::from_entropy())?;
        let server_items = crate::ids(0..n_server);
        let client_items = crate::ids(n_server - n_client / 2..n_server + n_client - n_client / 2);
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("server-values.cache");

        // Offline: the whole server set, once.
        let (set, cache) = run_mem(
            |ch| {
                unbalanced::offline_server(
                    ch,
                    &key,
                    &server_items,
                    &cfg,
                    &mut AesRng::from_entropy(),
                )
            },
            |ch| unbalanced::offline_client(ch, &cfg, &path),
        );
        // The server keeps the digest of the set the client's cache now holds.
        let set = set?;
        let cache: Cache = cache?;

        // Online: each query costs two scalar multiplications per client item only.
        let mut last = Vec::new();
        for _ in 0..2 {
            let (served, found) = run_mem(
                |ch| unbalanced::online_server(ch, &key, &set, &cfg),
                |ch| {
                    unbalanced::online_client(
                        ch,
                        &client_items,
                        &cache,
                        &cfg,
                        &mut AesRng::from_entropy(),
                    )
                },
            );
            served?;
            last = found?;
        }
        Ok(last)
    }
}

pub mod paillier_sum {
    //! A private sum with Paillier: an analyst publishes a public key, every party encrypts
    //! its value, an aggregator multiplies the ciphertexts (adds the plaintexts) without
    //! learning any value, and only the analyst decrypts the total.

    use obliv_he::paillier::{Ciphertext, Keypair};

    use crate::Result;

    /// Sums `values` (one per party) under 2048-bit Paillier; returns the decrypted sum.
    pub fn run(values: &[i64]) -> Result<i64> {
        // The analyst: key pair, public key sent to everyone (serde or `n` as bytes).
        let keys = Keypair::generate(2048)?;
        let pk = keys.public.clone();
        // Every party: encrypt its own value; only the ciphertext bytes leave the party.
        let wire: Vec<Vec<u8>> = values
            .iter()
            .map(|&v| Ok(pk.encrypt_i64(v)?.to_bytes()))
            .collect::<Result<_>>()?;
        // The aggregator: parse, check each ciphertext is well formed, add them up.
        let cts: Vec<Ciphertext> = wire
            .iter()
            .map(|b| Ciphertext::from_bytes(b))
            .collect::<std::result::Result<_, _>>()?;
        pk.validate_batch(&cts)?;
        let total = pk.sum(&cts);
        // The analyst: decrypt the total only.
        Ok(keys.secret.decrypt_i64(&total)?)
    }
}

pub mod ec_elgamal {
    //! Additive EC ElGamal on Ristretto: encrypt small integers, add and subtract ciphertexts,
    //! multiply by a plaintext, and decrypt with a baby-step giant-step table (messages below
    //! 2^32; build the table once and share it).

    use curve25519_dalek::RistrettoPoint;
    use obliv_he::elgamal::ec::{BsgsTable, SecretKey};

    use crate::Result;

    /// Computes `3·(a + b) − c` under encryption and decrypts it.
    pub fn run(a: u64, b: u64, c: u64) -> Result<u64> {
        let mut rng = rand::rng();
        let sk = SecretKey::<RistrettoPoint>::generate(&mut rng);
        let pk = sk.public_key().clone();
        let (ea, eb, ec) = (
            pk.encrypt(a, &mut rng),
            pk.encrypt(b, &mut rng),
            pk.encrypt(c, &mut rng),
        );
        let e = pk.sub(&pk.mul_i64(&pk.add(&ea, &eb), 3), &ec);
        let table = BsgsTable::<RistrettoPoint>::default_32()?;
        Ok(sk.decrypt(&e, &table)?)
    }
}

pub mod pir {
    //! Two-server DPF-PIR over TCP: both servers hold the same database; the client sends
    //! each a DPF key, XORs the two answers and gets record `i`, and neither server alone
    //! learns `i`. Also one batch query and one IT-PIR query (the baseline).

    use std::net::TcpListener;

    use obliv_core::AesRng;
    use obliv_pir::{Database, PirClient, PirServer, ServerConfig};
    use rand_core::SeedableRng;

    use crate::Result;

    /// A random database of `n` records of `len` bytes on two loopback servers; fetches
    /// record `index` with DPF-PIR, records `index, index+1` in a batch and `index` with
    /// IT-PIR, checks them against the database, and returns the record.
    pub fn run(n: usize, len: usize, index: usize) -> Result<Vec<u8>> {
        let db = Database::random(n, len, &mut AesRng::from_seed([1; 16]))?;
        let servers = [0, 1].map(|_| -> Result<_> {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            Ok(PirServer::new(db.clone(), ServerConfig::default())?.spawn(listener)?)
        });
        let [s0, s1] = servers;
        let (s0, s1) = (s0?, s1?);
        let mut client = PirClient::connect(s0.local_addr(), s1.local_addr())?;
        let record = client.query(index)?;
        let want = db.record(index).ok_or("index out of range")?;
        if record != want {
            return Err("DPF-PIR returned a wrong record".into());
        }
        let next = (index + 1) % n;
        let batch = client.query_batch(&[index, next])?;
        if batch.len() != 2 || batch[0] != want || Some(&batch[1][..]) != db.record(next) {
            return Err("batch PIR returned wrong records".into());
        }
        if client.query_it(index)? != want {
            return Err("IT-PIR returned a wrong record".into());
        }
        drop(client);
        s0.shutdown()?;
        s1.shutdown()?;
        Ok(record)
    }
}

pub mod ot_vole {
    //! Oblivious transfer and VOLE used directly. IKNP random OT: the sender gets pairs
    //! `(m0, m1)`, the receiver `m_{c}` for its choice bit `c`. Silent VOLE over GF(2^128):
    //! the sender gets `Δ, B`, the receiver `A, C` with `C = B + A·Δ`.

    use obliv_core::{AesRng, gf128};
    use obliv_net::run_mem;
    use obliv_ot::iknp;
    use obliv_vole::{VoleConfig, vole_receive, vole_send};

    use crate::Result;

    /// `n` random OTs and `n` VOLE correlations, both checked; returns how many OTs the
    /// receiver got.
    pub fn run(n: usize) -> Result<usize> {
        let choices = iknp::random_bits(n, &mut AesRng::from_entropy());
        let (pairs, got) = run_mem(
            |ch| -> Result<_> {
                let mut s = iknp::Sender::setup(ch, &mut AesRng::from_entropy())?; // 128 base OTs
                Ok(s.send_random(ch, n)?)
            },
            |ch| -> Result<_> {
                let mut r = iknp::Receiver::setup(ch, &mut AesRng::from_entropy())?;
                Ok(r.receive_random(ch, &choices)?)
            },
        );
        let (pairs, got) = (pairs?, got?);
        for ((pair, c), m) in pairs.iter().zip(&choices).zip(&got) {
            if pair[usize::from(*c)] != *m {
                return Err("random OT outputs do not match".into());
            }
        }

        let cfg = VoleConfig::default();
        let (sent, received) = run_mem(
            |ch| vole_send(ch, n, cfg, &mut AesRng::from_entropy()),
            |ch| vole_receive(ch, n, cfg, &mut AesRng::from_entropy()),
        );
        let ((delta, b), (a, c)) = (sent?, received?);
        if (0..n).any(|i| c[i] != b[i] ^ gf128::mul(a[i], delta)) {
            return Err("VOLE correlation does not hold".into());
        }
        Ok(got.len())
    }
}
