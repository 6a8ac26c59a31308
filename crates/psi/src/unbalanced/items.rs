//! [`ItemList`]: the server's items as the offline phase reads them, by index.

/// The server's items, read by index: the offline phase reads them in the order of its
/// shuffled stream, so it needs random access, not an iterator.
///
/// Implemented for slices, arrays and vectors of anything that is `AsRef<[u8]>`. A large set
/// is better kept in one buffer with an end offset per item (as `obliv-cli` keeps the keys of
/// a CSV file) than as one allocation per item, which costs tens of bytes per item on top of
/// the item itself; such a type implements this trait and is passed as it is.
pub trait ItemList: Sync {
    /// The number of items.
    fn len(&self) -> usize;

    /// Item `i`, for `i < self.len()` (implementations may panic otherwise).
    fn item(&self, i: usize) -> &[u8];

    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: AsRef<[u8]> + Sync> ItemList for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }

    fn item(&self, i: usize) -> &[u8] {
        self[i].as_ref()
    }
}

impl<T: AsRef<[u8]> + Sync, const N: usize> ItemList for [T; N] {
    fn len(&self) -> usize {
        N
    }

    fn item(&self, i: usize) -> &[u8] {
        self[i].as_ref()
    }
}

impl<T: AsRef<[u8]> + Sync> ItemList for Vec<T> {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }

    fn item(&self, i: usize) -> &[u8] {
        self[i].as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::ItemList;

    fn all<L: ItemList + ?Sized>(l: &L) -> Vec<Vec<u8>> {
        (0..l.len()).map(|i| l.item(i).to_vec()).collect()
    }

    #[test]
    fn slices_arrays_and_vectors_list_their_items() {
        let v = vec![b"a".to_vec(), b"bc".to_vec()];
        let want = vec![b"a".to_vec(), b"bc".to_vec()];
        assert_eq!(all(&v), want);
        assert_eq!(all(&v[..]), want);
        assert_eq!(all(&[b"a".as_slice(), b"bc"]), want);
        assert!(ItemList::is_empty(&Vec::<Vec<u8>>::new()));
        assert!(!ItemList::is_empty(&v));
    }
}
