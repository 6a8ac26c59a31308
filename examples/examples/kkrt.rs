//! KKRT16 PSI on bucketed sets over loopback TCP, two buckets side by side.

use obliv_psi::kkrt::{KkrtConfig, KkrtSession};

fn main() -> obliv_examples::Result<()> {
    let (n, buckets, workers) = (200_000, 8, 2);
    let found = obliv_examples::psi_buckets::run(
        |role| KkrtSession::new(role, &KkrtConfig::default()),
        n,
        buckets,
        workers,
    )?;
    println!(
        "receiver: {} of its {n} items are in the intersection ({buckets} buckets, {workers} workers)",
        found.len()
    );
    Ok(())
}
