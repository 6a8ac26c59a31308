//! Secrets do not outlive a call in freed memory, on success or on error.
//!
//! This binary installs `obliv_testkit::TestAlloc`, which, while a scenario runs, looks for a
//! known secret (a "needle": base-OT scalars, Δ bits, choice bits, OPRF inputs, correlations)
//! in every block of memory before it is freed, and in the old block of every reallocation
//! (which it always moves, so a buffer that grows leaves its old copy behind for the check).
//! The needles are recomputed from the same seeded RNGs the protocols draw from.

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::scalar::Scalar;
use obliv_core::{AesRng, Block};
use obliv_net::{Channel, mem_pair};
use obliv_ot::iknp::{self, pack_bits, random_bits};
use obliv_ot::kkrt::{self, KkrtReceiver, KkrtSender};
use obliv_ot::{Error, base, softspoken};
use obliv_testkit::TestAlloc;
use rand_core::SeedableRng;

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc::new();

/// Runs `f` and returns how many freed blocks held `needle`.
fn freed_copies(needle: &[u8], f: impl FnOnce()) -> usize {
    obliv_testkit::freed_copies(&[needle], f).1
}

fn bool_bytes(bits: &[bool]) -> Vec<u8> {
    bits.iter().map(|&b| u8::from(b)).collect()
}

/// Regression: the base-OT receiver's secret scalars `b_i` were wiped only on success; a
/// peer that hung up after sending `A` left them in freed memory.
#[test]
fn base_ot_receiver_scalars_are_wiped_on_error() {
    let needle = Scalar::random(&mut AesRng::from_seed([1; 16])).to_bytes();
    let found = freed_copies(&needle, || {
        let (mut a, mut b) = mem_pair();
        a.send(RISTRETTO_BASEPOINT_POINT.compress().as_bytes())
            .unwrap();
        drop(a);
        let e = base::receive_random(&mut b, &[true, false], &mut AesRng::from_seed([1; 16]));
        assert!(matches!(e, Err(Error::Net(_))), "{e:?}");
    });
    assert_eq!(found, 0, "a scalar b_i was freed unwiped");
}

/// Regression: the setup of the IKNP, SoftSpokenOT and KKRT senders kept their secret (Δ,
/// ¬Δ, `s`) as base-OT choice bits in a vector freed unwiped.
#[test]
fn setup_choice_bits_are_wiped() {
    // IKNP: Δ is the first block drawn; its bits are the choices.
    let delta = Block::random(&mut AesRng::from_seed([2; 16]));
    let bits: Vec<bool> = (0..128).map(|j| delta.bit(j)).collect();
    let found = freed_copies(&bool_bytes(&bits), || {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            iknp::Receiver::setup(&mut b, &mut AesRng::from_seed([3; 16])).map(|_| ())
        });
        let s = iknp::Sender::setup(&mut a, &mut AesRng::from_seed([2; 16])).unwrap();
        assert_eq!(s.delta(), delta);
        t.join().unwrap().unwrap();
    });
    assert_eq!(found, 0, "IKNP: Δ bits were freed unwiped");
    // SoftSpokenOT: the choices are ¬Δ.
    let not_bits: Vec<bool> = bits.iter().map(|b| !b).collect();
    let found = freed_copies(&bool_bytes(&not_bits), || {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            softspoken::Receiver::setup(&mut b, 4, &mut AesRng::from_seed([3; 16])).map(|_| ())
        });
        let s = softspoken::Sender::setup(&mut a, 4, &mut AesRng::from_seed([2; 16])).unwrap();
        assert_eq!(s.delta(), delta);
        t.join().unwrap().unwrap();
    });
    assert_eq!(found, 0, "SoftSpokenOT: ¬Δ bits were freed unwiped");
    // KKRT: the first 128 of the 512 bits of `s`.
    let s_bits = random_bits(kkrt::CODE_BITS, &mut AesRng::from_seed([4; 16]));
    let found = freed_copies(&bool_bytes(&s_bits[..128]), || {
        let (mut a, mut b) = mem_pair();
        let t = std::thread::spawn(move || {
            KkrtReceiver::setup(&mut b, &mut AesRng::from_seed([5; 16])).map(|_| ())
        });
        KkrtSender::setup(&mut a, &mut AesRng::from_seed([4; 16])).unwrap();
        t.join().unwrap().unwrap();
    });
    assert_eq!(found, 0, "KKRT: bits of s were freed unwiped");
}

/// Regression: the KKRT receiver copied its inputs into a vector that it then grew (freeing
/// the first copy unwiped) and wiped its buffers only on success.
#[test]
fn kkrt_receiver_inputs_are_wiped() {
    let x = Block(0x5ec7_e7a1_1c0f_fee0_d15e_a5e5_0bad_cafe);
    let inputs: Vec<Block> = (0..200u128).map(|i| Block(x.0 ^ (i << 100))).collect();
    let (bs, br) = base::insecure_dealer(kkrt::CODE_BITS, &mut AesRng::from_seed([6; 16]));
    // On success.
    let found = freed_copies(&x.to_bytes(), || {
        let mut r = KkrtReceiver::new_with_base(&bs, Block(7)).unwrap();
        let mut s = KkrtSender::new_with_base(&br, Block(7)).unwrap();
        let (mut a, mut b) = mem_pair();
        let (key, out) = std::thread::scope(|sc| {
            let t = sc.spawn(|| r.receive(&mut b, &inputs).unwrap());
            (s.send(&mut a, inputs.len()).unwrap(), t.join().unwrap())
        });
        assert_eq!(key.eval(0, x).unwrap(), out[0]);
    });
    assert_eq!(found, 0, "inputs were freed unwiped after a batch");
    // On error: the sender is gone.
    let found = freed_copies(&x.to_bytes(), || {
        let mut r = KkrtReceiver::new_with_base(&bs, Block(7)).unwrap();
        let (_, mut b) = mem_pair();
        assert!(matches!(r.receive(&mut b, &inputs), Err(Error::Net(_))));
    });
    assert_eq!(found, 0, "inputs were freed unwiped after an error");
}

/// Regression: the IKNP and SoftSpokenOT receivers wiped their packed choice bits only on
/// success; a failed send left them in freed memory.
#[test]
fn receiver_choice_bits_are_wiped_on_error() {
    let choices = random_bits(300, &mut AesRng::from_seed([8; 16]));
    let mut packed = [Block::ZERO; 1];
    pack_bits(&choices[..128], &mut packed);
    let needle = packed[0].to_bytes();
    let (bs, _) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([9; 16]));
    let found = freed_copies(&needle, || {
        let mut r = iknp::Receiver::new_with_base(&bs).unwrap();
        let (_, mut b) = mem_pair();
        assert!(matches!(
            r.receive_correlated(&mut b, &choices),
            Err(Error::Net(_))
        ));
    });
    assert_eq!(found, 0, "IKNP: packed choice bits were freed unwiped");
    let found = freed_copies(&needle, || {
        let (mut a, mut b) = mem_pair();
        let mut r =
            softspoken::Receiver::new_with_base(&mut b, &bs, 4, &mut AesRng::from_seed([10; 16]))
                .unwrap();
        drop(a.recv().unwrap());
        drop(a);
        assert!(matches!(
            r.receive_correlated(&mut b, &choices),
            Err(Error::Net(_))
        ));
    });
    assert_eq!(
        found, 0,
        "SoftSpokenOT: packed choice bits were freed unwiped"
    );
}

/// Regression: a SoftSpokenOT sender whose consistency check failed dropped the correlations
/// it had computed (`q_i`, never handed out) unwiped. With all choice bits 0, `q_i = t_i`,
/// which an honest run with the same seeds reveals.
#[test]
fn softspoken_sender_wipes_outputs_when_the_check_fails() {
    let (bs, br) = base::insecure_dealer(iknp::KAPPA, &mut AesRng::from_seed([11; 16]));
    let n = 256;
    let run = |corrupt: bool| {
        let (mut a, mut b) = mem_pair();
        let bs = bs.clone();
        let t = std::thread::spawn(move || {
            let mut r = softspoken::Receiver::new_with_base(
                &mut b,
                &bs,
                3,
                &mut AesRng::from_seed([12; 16]),
            )
            .unwrap();
            if corrupt {
                r.receive_correlated(&mut Corrupt(&mut b), &vec![false; n])
            } else {
                r.receive_correlated(&mut b, &vec![false; n])
            }
        });
        let mut s = softspoken::Sender::new_with_base(&mut a, &br, 3).unwrap();
        let q = s.send_correlated(&mut a, n, &mut AesRng::from_seed([13; 16]));
        (q, t.join().unwrap().unwrap())
    };
    let (q, t) = run(false);
    assert_eq!(q.unwrap(), t);
    let needle = t[5].to_bytes();
    let mut kept = None;
    let found = freed_copies(&needle, || {
        let (q, t) = run(true);
        assert!(matches!(q, Err(Error::ConsistencyCheck)), "{q:?}");
        kept = Some(t); // the receiver's own copy, freed after the check below
    });
    drop(kept);
    assert_eq!(found, 0, "the failed sender's q_i were freed unwiped");
}

/// Flips a bit of the receiver's answer to the consistency check (its only 32-byte frame).
struct Corrupt<'a, C: Channel>(&'a mut C);

impl<C: Channel> Channel for Corrupt<'_, C> {
    fn send(&mut self, msg: &[u8]) -> obliv_net::Result<()> {
        let mut m = msg.to_vec();
        if m.len() == 32 {
            m[0] ^= 1;
        }
        self.0.send(&m)
    }
    fn recv_frame(
        &mut self,
        max_len: usize,
        buf: &mut dyn obliv_net::RecvBuf,
    ) -> obliv_net::Result<()> {
        self.0.recv_frame(max_len, buf)
    }
    fn flush(&mut self) -> obliv_net::Result<()> {
        self.0.flush()
    }
    fn stats(&self) -> obliv_net::Stats {
        self.0.stats()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.0.set_deadline(deadline)
    }
    fn set_max_frame_len(&mut self, max: usize) {
        self.0.set_max_frame_len(max);
    }
}
