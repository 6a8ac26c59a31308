//! RR22 PSI (fast variant) on bucketed sets over loopback TCP, two buckets side by side.

use obliv_psi::rr22::{Rr22Config, Rr22Session, Variant};

fn main() -> obliv_examples::Result<()> {
    let (n, buckets, workers) = (200_000, 8, 2);
    let found = obliv_examples::psi_buckets::run(
        |role| Rr22Session::new(role, &Rr22Config::new(Variant::Fast)),
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
