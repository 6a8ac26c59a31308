//! Two-server DPF-PIR over loopback TCP (plus batch PIR and the IT-PIR baseline).

fn main() -> obliv_examples::Result<()> {
    let record = obliv_examples::pir::run(4096, 1024, 1234)?;
    println!(
        "fetched record 1234 ({} bytes) without telling either server which",
        record.len()
    );
    Ok(())
}
