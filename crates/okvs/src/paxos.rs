//! The unbinned RR22 OKVS (volePSI's `Paxos`).

use core::marker::PhantomData;

use obliv_core::Block;
use obliv_core::rand_core::Rng;
use rayon::prelude::*;

use crate::error::Error;
use crate::hash::RowHasher;
use crate::params::PaxosParams;
use crate::solver::{self, Scratch};
use crate::value::{DenseKind, DenseValue, Gf128};
use crate::{Okvs, check_len};

/// Keys per parallel decode task.
pub(crate) const DECODE_CHUNK: usize = 4096;

/// One OKVS over all keys: `m ≈ 1.23–1.27·n` sparse columns of weight 3 plus `d` dense
/// columns of kind `D` ([`Gf128`] by default, or [`Binary`](crate::Binary)), solved by
/// peeling and a small dense Gaussian elimination [RR22, §3–4].
///
/// Encoding is sequential (peeling is); decoding runs on rayon. For many keys prefer
/// [`BinnedPaxos`](crate::BinnedPaxos), which is faster (cache-sized bins) and encodes in
/// parallel.
///
/// ```
/// use obliv_okvs::{Okvs, Paxos, Binary};
/// use obliv_core::Block;
///
/// let keys: Vec<Block> = (0..1000u128).map(|i| Block(i * 7919)).collect();
/// let values: Vec<u64> = (0..1000).map(|i| i * i).collect();
/// let okvs = Paxos::<Binary>::new(keys.len(), 40, Block(42)).unwrap();
/// let p = okvs.encode(&keys, &values).unwrap();
/// assert_eq!(okvs.decode(&keys, &p).unwrap(), values);
/// ```
///
/// [RR22]: https://eprint.iacr.org/2022/320
#[derive(Clone, Debug)]
pub struct Paxos<D: DenseKind = Gf128> {
    params: PaxosParams,
    seed: Block,
    hasher: RowHasher,
    _dense: PhantomData<D>,
}

impl<D: DenseKind> Paxos<D> {
    /// An OKVS for up to `items` keys, failing to encode with probability at most `2^-ssp`,
    /// with hash functions derived from the public `seed` (both encoder and decoder use it).
    ///
    /// # Errors
    /// [`Error::InvalidParams`] or [`Error::UnsupportedSsp`] as [`PaxosParams::new`].
    pub fn new(items: usize, ssp: u32, seed: Block) -> Result<Self, Error> {
        Self::with_params(PaxosParams::new(items, ssp, D::TYPE)?, seed)
    }

    /// An OKVS with explicit parameters.
    ///
    /// The fields of [`PaxosParams`] are public, so they are checked again here as
    /// [`PaxosParams::with_sizes`] checks them.
    ///
    /// # Errors
    /// [`Error::InvalidParams`] if `params.dense_type` is not `D`'s, or the sizes are
    /// refused by [`PaxosParams::with_sizes`].
    pub fn with_params(params: PaxosParams, seed: Block) -> Result<Self, Error> {
        if params.dense_type != D::TYPE {
            return Err(Error::InvalidParams {
                what: "the parameters' dense type differs from the OKVS's",
            });
        }
        PaxosParams::with_sizes(
            params.items,
            params.sparse,
            params.dense,
            params.gap,
            params.ssp,
            params.dense_type,
        )?;
        Ok(Paxos {
            params,
            seed,
            hasher: RowHasher::new(seed, params.sparse),
            _dense: PhantomData,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &PaxosParams {
        &self.params
    }

    /// The seed the hash functions are derived from.
    pub fn seed(&self) -> Block {
        self.seed
    }

    fn check_encode<V>(&self, keys: &[Block], values: &[V], out: &[V]) -> Result<(), Error> {
        if keys.len() > self.params.items {
            return Err(Error::TooManyItems {
                capacity: self.params.items,
                got: keys.len(),
            });
        }
        check_len("values", keys.len(), values.len())?;
        check_len("encoding", self.params.size(), out.len())
    }

    fn encode_impl<V, R>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
        rng: Option<&mut R>,
    ) -> Result<(), Error>
    where
        V: DenseValue<D>,
        R: Rng + ?Sized,
    {
        self.check_encode(keys, values, out)?;
        let mut scratch = Scratch::default();
        solver::solve::<D, V, R>(
            self.params.sparse,
            self.params.dense,
            &self.hasher,
            keys,
            values,
            out,
            rng,
            &mut scratch,
        )
    }
}

impl<D: DenseKind> Okvs<D> for Paxos<D> {
    fn size(&self) -> usize {
        self.params.size()
    }

    fn items(&self) -> usize {
        self.params.items
    }

    fn encode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
    ) -> Result<(), Error> {
        self.encode_impl::<V, obliv_core::AesRng>(keys, values, out, None)
    }

    fn encode_randomized_into<V: DenseValue<D>, R: Rng + ?Sized>(
        &self,
        keys: &[Block],
        values: &[V],
        out: &mut [V],
        rng: &mut R,
    ) -> Result<(), Error> {
        self.encode_impl(keys, values, out, Some(rng))
    }

    fn decode_into<V: DenseValue<D>>(
        &self,
        keys: &[Block],
        okvs: &[V],
        out: &mut [V],
    ) -> Result<(), Error> {
        check_len("encoding", self.params.size(), okvs.len())?;
        check_len("output", keys.len(), out.len())?;
        let m = self.params.sparse;
        let mut table = solver::prepare::<D, V>(&okvs[m..]);
        let prep = table.as_deref();
        if keys.len() <= DECODE_CHUNK {
            solver::decode::<D, V>(&self.hasher, m, keys, okvs, prep, out);
        } else {
            keys.par_chunks(DECODE_CHUNK)
                .zip(out.par_chunks_mut(DECODE_CHUNK))
                .for_each(|(k, o)| solver::decode::<D, V>(&self.hasher, m, k, okvs, prep, o));
        }
        if let Some(t) = table.as_deref_mut() {
            solver::wipe_values(t);
        }
        Ok(())
    }
}
