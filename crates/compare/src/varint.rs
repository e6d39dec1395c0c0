//! The compact encodings of the database's blobs: unsigned LEB128 varints, and signed values
//! as zigzag varints.

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub(crate) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded (small magnitudes, either sign, take few bytes).
#[inline]
pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads varints from a blob, failing with the offset of what does not decode.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    /// The next byte to read.
    pub(crate) at: usize,
}

/// A blob ended inside a value, or a varint longer than 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Truncated {
    /// Where the value started.
    pub(crate) offset: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Whether every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, Truncated> {
        let start = self.at;
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.bytes.get(self.at) else { return Err(Truncated { offset: start }) };
            self.at += 1;
            if shift == 63 && b > 1 {
                return Err(Truncated { offset: start });
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(Truncated { offset: start });
            }
        }
    }

    #[inline]
    pub(crate) fn i64(&mut self) -> Result<i64, Truncated> {
        let u = self.u64()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// `n` raw bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        let start = self.at;
        let end = start.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or(Truncated { offset: start })?;
        self.at = end;
        Ok(&self.bytes[start..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(vs in proptest::collection::vec(any::<i64>(), 0..50), us in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut b = Vec::new();
            for &v in &vs { put_i64(&mut b, v); }
            for &u in &us { put_u64(&mut b, u); }
            let mut r = Reader::new(&b);
            for &v in &vs { prop_assert_eq!(r.i64().unwrap(), v); }
            for &u in &us { prop_assert_eq!(r.u64().unwrap(), u); }
            prop_assert!(r.is_empty());
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut r = Reader::new(&b);
            while !r.is_empty() {
                if r.u64().is_err() { break; }
            }
        }
    }

    #[test]
    fn truncation_is_reported_where_the_value_starts() {
        let mut b = Vec::new();
        put_u64(&mut b, 5);
        b.push(0x80);
        let mut r = Reader::new(&b);
        assert_eq!(r.u64(), Ok(5));
        assert_eq!(r.u64(), Err(Truncated { offset: 1 }));
        // 11 bytes of continuation: longer than 64 bits.
        let mut r = Reader::new(&[0xff; 11]);
        assert!(r.u64().is_err());
        assert_eq!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).u64(), Ok(u64::MAX));
    }
}
