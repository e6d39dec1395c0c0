//! The spool: what the recording loop saves of one CPU's ring buffer while recording, read
//! back when converting to CTF. A sequence of records, each a u32 tag, a u32 length and that
//! many bytes (native byte order): a page as `trace_pipe_raw` returned it, or a count of
//! events the kernel lost at that point.

use std::io::{self, BufRead, Write};

const TAG_PAGE: u32 = 1;
const TAG_LOST: u32 = 2;

/// One record of a spool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A ring-buffer page (possibly shorter than a full page), in the buffer given to
    /// [`Reader::next_into`].
    Page,
    /// Events lost here.
    Lost(u64),
}

/// Appends a page.
pub fn write_page(w: &mut impl Write, page: &[u8]) -> io::Result<()> {
    w.write_all(&TAG_PAGE.to_ne_bytes())?;
    w.write_all(&(page.len() as u32).to_ne_bytes())?;
    w.write_all(page)
}

/// Appends a lost-events count.
pub fn write_lost(w: &mut impl Write, count: u64) -> io::Result<()> {
    w.write_all(&TAG_LOST.to_ne_bytes())?;
    w.write_all(&8u32.to_ne_bytes())?;
    w.write_all(&count.to_ne_bytes())
}

/// Reads spool records one at a time.
pub struct Reader<R> {
    inner: R,
    /// Records read so far.
    pub records: u64,
}

impl<R: BufRead> Reader<R> {
    /// A reader of the spool `inner`.
    pub fn new(inner: R) -> Reader<R> {
        Reader { inner, records: 0 }
    }

    /// The next record into `page` (reused), or None at the end. A record cut short (the
    /// recorder was killed while writing it) ends the spool.
    pub fn next_into(&mut self, page: &mut Vec<u8>) -> io::Result<Option<Item>> {
        let mut head = [0u8; 8];
        match read_full(&mut self.inner, &mut head)? {
            0 => return Ok(None),
            8 => {}
            _ => return Ok(None),
        }
        let tag = u32::from_ne_bytes(head[0..4].try_into().expect("4"));
        let len = u32::from_ne_bytes(head[4..8].try_into().expect("4")) as usize;
        if len > 256 << 20 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("spool record {} has an impossible length {len}", self.records)));
        }
        page.clear();
        page.resize(len, 0);
        if read_full(&mut self.inner, page)? != len {
            return Ok(None);
        }
        self.records += 1;
        match tag {
            TAG_PAGE => Ok(Some(Item::Page)),
            TAG_LOST if len == 8 => Ok(Some(Item::Lost(u64::from_ne_bytes(page[..8].try_into().expect("8"))))),
            _ => Err(io::Error::new(io::ErrorKind::InvalidData, format!("spool record {} has an unknown tag {tag}", self.records - 1))),
        }
    }
}

fn read_full(r: &mut impl io::Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut buf = Vec::new();
        write_page(&mut buf, &[1, 2, 3]).unwrap();
        write_lost(&mut buf, 77).unwrap();
        write_page(&mut buf, &[4; 10]).unwrap();
        let mut r = Reader::new(&buf[..]);
        let mut page = Vec::new();
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Page));
        assert_eq!(page, vec![1, 2, 3]);
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Lost(77)));
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Page));
        assert_eq!(page, vec![4; 10]);
        assert_eq!(r.next_into(&mut page).unwrap(), None);
        // Cut in the middle of the last record: the spool ends before it.
        let cut = &buf[..buf.len() - 3];
        let mut r = Reader::new(cut);
        let mut n = 0;
        while r.next_into(&mut page).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 2);
    }
}
