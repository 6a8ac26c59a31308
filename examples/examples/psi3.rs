//! Three-party ECDH-PSI: party 0 learns the items all three hold.

fn main() -> obliv_examples::Result<()> {
    let n = 4000;
    let found = obliv_examples::psi3::run(n)?;
    println!(
        "party 0: {} of its {n} items are held by all three parties",
        found.len()
    );
    Ok(())
}
