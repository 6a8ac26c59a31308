//! Unbalanced PSI: a large server set processed once offline, small client queries online.

fn main() -> obliv_examples::Result<()> {
    let (n_server, n_client) = (100_000, 1000);
    let found = obliv_examples::unbalanced::run(n_server, n_client)?;
    println!(
        "client: {} of {n_client} items are in the server's {n_server}",
        found.len()
    );
    Ok(())
}
