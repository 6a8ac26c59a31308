//! Bit-matrix transposition, as OT extension needs it (128 × n and n × 128).
//!
//! Matrices are stored row-major with LSB-first bits: column `c` of a row is bit `c % 8` of
//! byte `c / 8` of that row. The kernel is the classic SSE2 one (as in emp-toolkit's
//! `sse_trans`): gather one byte from each of 16 rows into a 128-bit register, then 8 rounds of
//! `pmovmskb` (top bit of every byte) and a shift produce 8 output rows of 16 bits each. On
//! CPUs without SSE2 the same steps run on integers (`backend::movemask_planes_portable`).

use crate::backend;
use crate::block::Block;
use crate::error::Error;

/// Transposes a `rows × cols` bit matrix into a `cols × rows` one.
///
/// `input` holds `rows` rows of `cols / 8` bytes; `out` receives `cols` rows of `rows / 8`
/// bytes. `rows` must be a multiple of 16 and `cols` a multiple of 8.
pub fn transpose_bits(input: &[u8], rows: usize, cols: usize, out: &mut [u8]) -> Result<(), Error> {
    if !rows.is_multiple_of(16) || !cols.is_multiple_of(8) {
        return Err(Error::InvalidShape {
            what: "transpose: rows must be a multiple of 16 and cols of 8",
        });
    }
    let in_row = cols / 8;
    let expected = rows * in_row;
    if input.len() != expected || out.len() != expected {
        return Err(Error::UnexpectedLength {
            expected,
            got: input.len().max(out.len()),
        });
    }
    backend::transpose_tiles(input, rows, cols, out);
    Ok(())
}

/// Transposes 128 rows of `n` bits (`input`: 128 rows of `n / 8` bytes, row-major) into `n`
/// blocks: bit `i` of `out[j]` is bit `j` of row `i`. `n` must be a multiple of 8.
pub fn transpose_128_rows(input: &[u8], n: usize, out: &mut [Block]) -> Result<(), Error> {
    if out.len() != n {
        return Err(Error::UnexpectedLength {
            expected: n,
            got: out.len(),
        });
    }
    transpose_bits(input, 128, n, Block::slice_as_bytes_mut(out))
}

/// The inverse of [`transpose_128_rows`]: `n` blocks into 128 rows of `n` bits (`out`: 128 rows
/// of `n / 8` bytes). `n` must be a multiple of 16.
pub fn transpose_blocks_to_rows(blocks: &[Block], out: &mut [u8]) -> Result<(), Error> {
    transpose_bits(Block::slice_as_bytes(blocks), blocks.len(), 128, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn get(m: &[u8], cols: usize, r: usize, c: usize) -> bool {
        (m[r * cols / 8 + c / 8] >> (c % 8)) & 1 == 1
    }

    proptest! {
        #[test]
        fn transpose_moves_every_bit(rows16 in 1usize..5, cols8 in 1usize..10, seed in any::<u64>()) {
            let (rows, cols) = (rows16 * 16, cols8 * 8);
            let mut prg = crate::aes::Prg::new(Block(u128::from(seed)));
            let mut m = vec![0u8; rows * cols / 8];
            prg.fill_bytes(&mut m);
            let mut t = vec![0u8; m.len()];
            transpose_bits(&m, rows, cols, &mut t).unwrap();
            for r in 0..rows {
                for c in 0..cols {
                    prop_assert_eq!(get(&m, cols, r, c), get(&t, rows, c, r));
                }
            }
            if cols % 16 == 0 {
                let mut back = vec![0u8; m.len()];
                transpose_bits(&t, cols, rows, &mut back).unwrap();
                prop_assert_eq!(back, m);
            }
        }
    }

    #[test]
    fn blocks_round_trip() {
        let n = 1024;
        let mut rows = vec![0u8; 128 * n / 8];
        crate::aes::Prg::new(Block(9)).fill_bytes(&mut rows);
        let mut blocks = vec![Block::ZERO; n];
        transpose_128_rows(&rows, n, &mut blocks).unwrap();
        for j in [0, 1, 7, 8, 500, 1023] {
            for i in [0, 1, 63, 64, 127] {
                assert_eq!(blocks[j].bit(i), get(&rows, n, i, j));
            }
        }
        let mut back = vec![0u8; rows.len()];
        transpose_blocks_to_rows(&blocks, &mut back).unwrap();
        assert_eq!(back, rows);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let mut out = vec![0u8; 16];
        assert!(transpose_bits(&[0u8; 16], 8, 16, &mut out).is_err());
        assert!(transpose_bits(&[0u8; 15], 16, 8, &mut out).is_err());
        assert!(transpose_128_rows(&[0u8; 16], 1, &mut [Block::ZERO; 2]).is_err());
    }
}
