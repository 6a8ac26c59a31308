//! Additive EC ElGamal: computes 3·(a + b) − c on ciphertexts.

fn main() -> obliv_examples::Result<()> {
    let v = obliv_examples::ec_elgamal::run(1200, 34, 100)?;
    println!("3·(1200 + 34) − 100 = {v}, computed under encryption");
    Ok(())
}
