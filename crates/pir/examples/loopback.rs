//! Two PIR servers and a client on loopback: `cargo run --release -p obliv-pir --example loopback`.
//!
//! Both servers hold the same 65 536 random records of 1 KiB (case B of BENCHMARKS.md §3);
//! the client fetches a few records with DPF-PIR, a batch of 10, and one with IT-PIR, checks
//! them against the database and prints time and traffic per query.

use std::net::TcpListener;
use std::time::Instant;

use obliv_core::AesRng;
use obliv_pir::{Database, PirClient, PirServer, ServerConfig};
use rand_core::SeedableRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = AesRng::from_seed([42; 16]);
    let db = Database::random(1 << 16, 1024, &mut rng)?;
    let mut handles = Vec::new();
    for _ in 0..2 {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        handles.push(PirServer::new(db.clone(), ServerConfig::default())?.spawn(listener)?);
    }
    let mut client = PirClient::connect(handles[0].local_addr(), handles[1].local_addr())?;
    println!("servers hold {:?}", client.info());

    for index in [0, 12_345, 65_535] {
        let before = client.stats();
        let t = Instant::now();
        let record = client.query(index)?;
        let elapsed = t.elapsed();
        let s = client.stats() - before;
        assert_eq!(record, db.record(index).ok_or("index")?);
        println!(
            "DPF-PIR record {index}: {elapsed:?}, {} B up, {} B down",
            s.bytes_sent, s.bytes_received
        );
    }

    let batch: Vec<usize> = (0..10).map(|i| i * 6_007).collect();
    let before = client.stats();
    let t = Instant::now();
    let records = client.query_batch(&batch)?;
    let elapsed = t.elapsed();
    let s = client.stats() - before;
    for (i, r) in batch.iter().zip(&records) {
        assert_eq!(r.as_slice(), db.record(*i).ok_or("index")?);
    }
    println!(
        "batch of 10: {elapsed:?} ({:?} per record), {} B up, {} B down",
        elapsed / 10,
        s.bytes_sent,
        s.bytes_received
    );

    let before = client.stats();
    let t = Instant::now();
    let record = client.query_it(777)?;
    let elapsed = t.elapsed();
    let s = client.stats() - before;
    assert_eq!(record, db.record(777).ok_or("index")?);
    println!(
        "IT-PIR record 777: {elapsed:?}, {} B up, {} B down",
        s.bytes_sent, s.bytes_received
    );
    drop(client);
    for h in handles {
        h.shutdown()?;
    }
    Ok(())
}
