//! Two-party ECDH-PSI over TCP. No arguments: both parties on two threads over loopback.
//! Two processes: `-- receiver 127.0.0.1:7700` in one terminal, `-- sender 127.0.0.1:7700`
//! in the other (see `obliv_examples::psi_tcp`).

use obliv_examples::{Result, ids, psi_tcp};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = 10_000;
    match args.first().map(String::as_str) {
        Some("receiver") => {
            let addr = args.get(1).map_or("127.0.0.1:7700", String::as_str);
            let listener = std::net::TcpListener::bind(addr)?;
            let found = psi_tcp::receiver(&listener, &ids(0..n))?;
            println!("receiver: {} items in common", found.len());
        }
        Some("sender") => {
            let addr = args
                .get(1)
                .map_or("127.0.0.1:7700", String::as_str)
                .parse()?;
            psi_tcp::sender(addr, &ids(n / 2..n + n / 2))?;
            println!("sender: done (the sender learns nothing)");
        }
        _ => {
            let found = psi_tcp::run(n)?;
            println!("{} of {n} items in common", found.len());
        }
    }
    Ok(())
}
