//! Private sum with Paillier: parties encrypt, an aggregator adds, the analyst decrypts.

fn main() -> obliv_examples::Result<()> {
    let salaries = [5200, 6100, 4800, 7300, -150];
    let total = obliv_examples::paillier_sum::run(&salaries)?;
    println!("sum of {} private values: {total}", salaries.len());
    Ok(())
}
