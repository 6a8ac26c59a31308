//! The error type of obliv-okvs.

/// What went wrong in an OKVS call.
///
/// [`Error::SolveFailed`] and [`Error::BinOverflow`] are the expected, rare (probability
/// `≤ 2^-λ` for honest random keys) failures of encoding: retry with a new seed.
/// [`Error::DuplicateKey`] is a caller error: the same key was given twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A slice had the wrong length.
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        /// Which argument.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// More keys than the OKVS was built for.
    #[error("too many keys: the OKVS holds at most {capacity}, got {got}")]
    TooManyItems {
        /// The `items` the parameters were chosen for.
        capacity: usize,
        /// The number of keys given.
        got: usize,
    },
    /// Parameters that cannot work.
    #[error("invalid parameters: {what}")]
    InvalidParams {
        /// Which constraint was violated.
        what: &'static str,
    },
    /// The statistical security parameter λ (`ssp`) asked for cannot be delivered with these
    /// parameters; `max` is the largest λ that can (0 if none). λ is at most 128 for every
    /// OKVS. With [`Binary`](crate::Binary) dense columns the OKVS needs `d = g + λ ≤ 128`
    /// dense columns (the dense row is the 128 bits of one hash block), which caps λ below
    /// 128 depending on the number of keys: at about 100 for a handful of keys and 120 for
    /// 2^14 to 2^20. The binned form runs each bin at `λ + 1 + ⌈log2 bins⌉`, which lowers
    /// `max` by that margin. See [`PaxosParams::max_ssp`](crate::PaxosParams::max_ssp).
    #[error("statistical security {ssp} not supported here (at most {max})")]
    UnsupportedSsp {
        /// The λ asked for.
        ssp: u32,
        /// The largest λ these sizes and dense type support.
        max: u32,
    },
    /// The same key appears twice (at these input positions).
    #[error("duplicate key at positions {first} and {second}")]
    DuplicateKey {
        /// One position of the key in the input.
        first: usize,
        /// Another position of the same key.
        second: usize,
    },
    /// The system has no solution for this seed: peeling left `gap` rows whose dense part has
    /// rank `rank < gap`. Retry with another seed.
    #[error("OKVS encoding failed (gap {gap}, dense rank {rank}); retry with a new seed")]
    SolveFailed {
        /// Rows left over after peeling.
        gap: usize,
        /// The rank their reduced dense part reached.
        rank: usize,
    },
    /// A bin received more keys than its capacity. Retry with another seed.
    #[error("bin {bin} received {load} keys, capacity {capacity}; retry with a new seed")]
    BinOverflow {
        /// The bin.
        bin: usize,
        /// Its load.
        load: usize,
        /// The fixed capacity of every bin.
        capacity: usize,
    },
}

impl Error {
    /// Whether encoding again with a fresh seed can succeed (the failure was bad luck, not a
    /// bad input).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::SolveFailed { .. } | Error::BinOverflow { .. })
    }
}
