//! Every protocol of obliv-ot once over real TCP (loopback), with real base OTs: the
//! setup of each extension runs the Chou–Orlandi base OTs over the socket (and SoftSpokenOT
//! its GGM puncturing and consistency check).

use obliv_core::{AesRng, Block};
use obliv_net::{TcpChannel, TcpOptions};
use obliv_ot::{iknp, kkrt, softspoken};
use rand_core::SeedableRng;

#[test]
fn iknp_and_kkrt_over_tcp() {
    let (mut a, mut b) = TcpChannel::loopback_pair(TcpOptions::default()).unwrap();
    let n = 100_000;
    let m = 5000;
    let choices = iknp::random_bits(n, &mut AesRng::from_seed([1; 16]));
    let ch = choices.clone();
    let inputs: Vec<Block> = (0..m as u128).map(|i| Block(i * 0x9e37_79b9)).collect();
    let xs = inputs.clone();
    let peer = std::thread::spawn(move || {
        let mut rng = AesRng::from_seed([2; 16]);
        let mut r = iknp::Receiver::setup(&mut b, &mut rng).unwrap();
        let ro = r.receive_random(&mut b, &ch).unwrap();
        let co = r.receive_correlated(&mut b, &ch).unwrap();
        let mut kr = kkrt::KkrtReceiver::setup(&mut b, &mut rng).unwrap();
        let ko = kr.receive(&mut b, &xs).unwrap();
        let mut sr = softspoken::Receiver::setup(&mut b, 4, &mut rng).unwrap();
        let so = sr.receive_random(&mut b, &ch[..m]).unwrap();
        (ro, co, ko, so)
    });
    let mut rng = AesRng::from_seed([3; 16]);
    let mut s = iknp::Sender::setup(&mut a, &mut rng).unwrap();
    let pairs = s.send_random(&mut a, n).unwrap();
    let q = s.send_correlated(&mut a, n).unwrap();
    let mut ks = kkrt::KkrtSender::setup(&mut a, &mut rng).unwrap();
    let key = ks.send(&mut a, m).unwrap();
    let mut ss = softspoken::Sender::setup(&mut a, 4, &mut rng).unwrap();
    let spairs = ss.send_random(&mut a, m, &mut rng).unwrap();
    let (ro, co, ko, so) = peer.join().unwrap();
    let delta = s.delta();
    for i in 0..n {
        let c = choices[i];
        assert_eq!(pairs[i][usize::from(c)], ro[i]);
        assert_ne!(pairs[i][usize::from(!c)], ro[i]);
        assert_eq!(co[i], if c { q[i] ^ delta } else { q[i] });
    }
    for i in 0..m {
        assert_eq!(key.eval(i, inputs[i]).unwrap(), ko[i]);
        assert_ne!(key.eval(i, inputs[(i + 1) % m]).unwrap(), ko[i]);
        assert_eq!(spairs[i][usize::from(choices[i])], so[i]);
    }
}
