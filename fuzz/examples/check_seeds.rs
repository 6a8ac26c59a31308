//! Replays the seeds of the protocol targets made from honest runs and prints whether each
//! ends with `Ok` (they should, but for the deliberately invalid ones): a check that the
//! corpus still follows the protocols. Run in `fuzz/`: `cargo run --release --example
//! check_seeds`.

use std::path::Path;

use obliv_fuzz::psi::{Family, items_of, run_side};
use obliv_fuzz::{ScriptedChannel, cli, unbalanced};

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut names: Vec<&str> = vec![
        "psi_ecdh",
        "psi_kkrt",
        "psi_rr22",
        "psi_unbalanced",
        "cli_job_hello",
    ];
    let only: Vec<String> = std::env::args().skip(1).collect();
    if !only.is_empty() {
        names.retain(|n| only.iter().any(|o| o == n));
    }
    for name in names {
        let mut files: Vec<_> = std::fs::read_dir(root.join(name))?
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        let (mut ok, mut err) = (0, 0);
        for f in files {
            let data = std::fs::read(&f)?;
            let result: Result<(), String> = match name {
                "psi_unbalanced" => match data.split_first() {
                    Some((&m, s)) => unbalanced::run_side(m, &mut ScriptedChannel::new(s))
                        .then_some(())
                        .ok_or_else(|| "Err".to_string()),
                    None => Err("empty".into()),
                },
                "cli_job_hello" => match data.split_first() {
                    Some((&m, s)) => cli::run_against(m, s)
                        .0
                        .map(drop)
                        .map_err(|e| e.to_string()),
                    None => Err("empty".into()),
                },
                _ => {
                    let family = match name {
                        "psi_ecdh" => Family::Ecdh,
                        "psi_kkrt" => Family::Kkrt,
                        _ => Family::Rr22,
                    };
                    match data.as_slice() {
                        [m, n, s @ ..] => {
                            run_side(family, *m, &items_of(*n), 1, &mut ScriptedChannel::new(s))
                                .map_err(|e| e.to_string())
                        }
                        _ => Err("short".into()),
                    }
                }
            };
            match result {
                Ok(()) => ok += 1,
                Err(e) => {
                    err += 1;
                    println!(
                        "  {name}/{}: {e}",
                        f.file_name().unwrap_or_default().to_string_lossy()
                    );
                }
            }
        }
        println!("{name}: {ok} Ok, {err} Err");
    }
    Ok(())
}
