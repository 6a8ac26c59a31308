//! The HE study's pipeline end to end: data owners Paillier-encrypt their inputs, an evaluator
//! computes `(a + b)·(c + d)` and a simple linear regression with the help of trusted
//! re-encryption agents (Paillier ↔ multiplicative ElGamal), and the results are checked
//! against plain arithmetic. Timings are wall clock.
//!
//! `cargo run --release -p obliv-he --example reencryption`
#![allow(clippy::unwrap_used, missing_docs, clippy::cast_precision_loss)]

use std::time::Instant;

use obliv_he::Integer;
use obliv_he::elgamal::modp::{self, GroupId};
use obliv_he::paillier::Keypair;
use obliv_he::reencrypt::{Agent, linear_regression, product_of_sums};

fn main() {
    let mut rng = rand::rng();
    let keys = Keypair::generate(2048).unwrap();
    let agent = Agent::new(
        keys.secret.clone(),
        modp::SecretKey::generate(GroupId::Modp2048, &mut rng),
    );
    let pk = agent.public_keys();

    // (a + b)·(c + d), encrypting inside the timed region and with pre-encrypted inputs.
    let (a, b, c, d) = (1234i64, 5678, 91011, 121314);
    let t = Instant::now();
    let e = |v: i64| pk.paillier.encrypt_i64(v).unwrap();
    let (ea, eb, ec, ed) = (e(a), e(b), e(c), e(d));
    let pre = t.elapsed();
    let t = Instant::now();
    let r = product_of_sums(&pk, &agent, &ea, &eb, &ec, &ed).unwrap();
    let eval = t.elapsed();
    let got = agent.reveal(&r).unwrap();
    assert_eq!(got, Integer::from(a + b) * Integer::from(c + d));
    println!("(a+b)(c+d) = {got}: encryption {pre:?}, evaluation with the agent {eval:?}");

    // Linear regression on 32 encrypted points, one agent and two agents in parallel.
    let xs: Vec<i64> = (1..=32).collect();
    let ys: Vec<i64> = xs.iter().map(|x| 3 * x + 7 + (x % 5)).collect();
    let ex = pk.paillier.encrypt_i64_batch(&xs).unwrap();
    let ey = pk.paillier.encrypt_i64_batch(&ys).unwrap();
    let n = xs.len() as f64;
    let sx: f64 = xs.iter().map(|&v| v as f64).sum();
    let sy: f64 = ys.iter().map(|&v| v as f64).sum();
    let sxx: f64 = xs.iter().map(|&v| (v * v) as f64).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(&x, &y)| (x * y) as f64).sum();
    let b1 = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    let b0 = (sy - b1 * sx) / n;
    for agents in [vec![agent.clone()], vec![agent.clone(), agent.split()]] {
        let t = Instant::now();
        let reg = linear_regression(&pk, &agents, &ex, &ey).unwrap();
        let took = t.elapsed();
        let (g0, g1) = reg.reveal(&agent).unwrap();
        assert!((g0 - b0).abs() < 1e-9 && (g1 - b1).abs() < 1e-9);
        println!(
            "regression, {} agent(s): y = {g0:.6} + {g1:.6}·x (plain: {b0:.6} + {b1:.6}·x) in {took:?}",
            agents.len()
        );
    }
}
