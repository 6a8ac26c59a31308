//! IKNP random OT and silent VOLE, used directly.

fn main() -> obliv_examples::Result<()> {
    let n = obliv_examples::ot_vole::run(1 << 16)?;
    println!("{n} random OTs and {n} VOLE correlations, checked");
    Ok(())
}
