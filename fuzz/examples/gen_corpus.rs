//! Writes the seed corpus: `corpus/<target>/<BLAKE3 of the content>` for every seed of
//! `obliv_fuzz::corpus::all`, replacing what each target directory held. Run in `fuzz/`:
//! `cargo run --release --example gen_corpus`.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let only: Vec<String> = std::env::args().skip(1).collect();
    for (target, seeds) in obliv_fuzz::corpus::all() {
        if !only.is_empty() && !only.iter().any(|t| t == target) {
            continue;
        }
        let dir = root.join(target);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        for s in &seeds {
            let name = blake3::hash(s).to_hex();
            std::fs::write(dir.join(&name[..16]), s)?;
        }
        println!("{target}: {} seeds", seeds.len());
    }
    Ok(())
}
