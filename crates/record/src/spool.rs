//! The spool: what the recording loop saves of one CPU's ring buffer while recording, read
//! back by the converter. A sequence of records, each a u32 tag, a u32 length and that many
//! bytes (native byte order): a page as `trace_pipe_raw` returned it, or a count of events
//! the kernel lost at that point.
//!
//! While recording, a CPU's spool is a chain of segment files `cpuN.SEQ`
//! ([`SegmentWriter`]): the recorder starts a new one after every [`SEGMENT_BYTES`], and the
//! converter, which reads them as they grow ([`SegmentReader`], up to the [`Position`] the
//! recorder last published), deletes each one it has read to the end. The spool on disk is
//! then only what the converter has not caught up with yet, whatever the recording's length.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

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

/// Where spool records come from, one at a time: a whole spool ([`Reader`]), or one still
/// being written ([`SegmentReader`]).
pub trait Records {
    /// The next record into `page` (reused), or None when there is none (yet, for a spool
    /// still being written).
    fn next_record(&mut self, page: &mut Vec<u8>) -> io::Result<Option<Item>>;
}

impl<R: BufRead> Records for Reader<R> {
    fn next_record(&mut self, page: &mut Vec<u8>) -> io::Result<Option<Item>> {
        self.next_into(page)
    }
}

/// Bytes after which a [`SegmentWriter`] starts a new segment file.
pub const SEGMENT_BYTES: u64 = 4 << 20;

/// How many bits of a packed [`Position`] hold the offset.
const OFFSET_BITS: u32 = 40;

/// A place in a CPU's segmented spool: segment number and byte offset in that segment,
/// ordered as that pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The segment (file `cpuN.SEQ`).
    pub segment: u32,
    /// Bytes into the segment.
    pub offset: u64,
}

impl Position {
    /// Past every record: a limit that lets a [`SegmentReader`] read all segments there are.
    pub const END: Position = Position { segment: (1 << (64 - OFFSET_BITS)) - 1, offset: (1 << OFFSET_BITS) - 1 };

    /// The position in one u64 (to publish it atomically), ordered like the position. The
    /// segment is kept to 24 bits and the offset to 40 (64 TiB of 4 MiB segments).
    pub fn pack(self) -> u64 {
        ((self.segment as u64).min(Self::END.segment as u64) << OFFSET_BITS) | self.offset.min(Self::END.offset)
    }

    /// The position packed by [`Position::pack`].
    pub fn unpack(v: u64) -> Position {
        Position { segment: (v >> OFFSET_BITS) as u32, offset: v & Self::END.offset }
    }
}

/// The file of segment `segment` of CPU `cpu`'s spool in `dir`.
pub fn segment_path(dir: &Path, cpu: u32, segment: u32) -> PathBuf {
    dir.join(format!("cpu{cpu}.{segment:06}"))
}

/// Writes one CPU's spool as segment files of about [`SEGMENT_BYTES`] (see the module
/// documentation). Records never span two segments.
pub struct SegmentWriter {
    dir: PathBuf,
    cpu: u32,
    segment_bytes: u64,
    path: PathBuf,
    out: BufWriter<File>,
    at: Position,
}

impl SegmentWriter {
    /// Creates the first segment of CPU `cpu`'s spool in `dir`; a new segment is started after
    /// `segment_bytes`.
    pub fn create(dir: &Path, cpu: u32, segment_bytes: u64) -> io::Result<SegmentWriter> {
        let path = segment_path(dir, cpu, 0);
        let out = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        Ok(SegmentWriter { dir: dir.to_path_buf(), cpu, segment_bytes: segment_bytes.max(1), path, out, at: Position::default() })
    }

    /// The segment file being written (for error messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the next record goes.
    pub fn position(&self) -> Position {
        self.at
    }

    fn room(&mut self) -> io::Result<()> {
        if self.at.offset >= self.segment_bytes {
            // The segment is complete on disk before the next one exists, so that a reader
            // that finds the next one may read this one to its end.
            self.out.flush()?;
            let segment = self.at.segment + 1;
            self.path = segment_path(&self.dir, self.cpu, segment);
            self.out = BufWriter::with_capacity(1 << 20, File::create(&self.path)?);
            self.at = Position { segment, offset: 0 };
        }
        Ok(())
    }

    /// Appends a page.
    pub fn write_page(&mut self, page: &[u8]) -> io::Result<()> {
        self.room()?;
        write_page(&mut self.out, page)?;
        self.at.offset += 8 + page.len() as u64;
        Ok(())
    }

    /// Appends a lost-events count.
    pub fn write_lost(&mut self, count: u64) -> io::Result<()> {
        self.room()?;
        write_lost(&mut self.out, count)?;
        self.at.offset += 16;
        Ok(())
    }

    /// Writes out what is buffered: every record before the position returned is then in
    /// the files.
    pub fn flush(&mut self) -> io::Result<Position> {
        self.out.flush()?;
        Ok(self.at)
    }
}

/// Reads one CPU's segmented spool while it is written: records up to a limit (what the
/// writer has flushed, see [`SegmentReader::set_limit`]), going on to the next segment at the
/// end of one the writer has left, and deleting each segment read to its end (unless asked
/// to keep them).
pub struct SegmentReader {
    dir: PathBuf,
    cpu: u32,
    delete: bool,
    reader: Option<Reader<BufReader<File>>>,
    at: Position,
    limit: Position,
}

impl SegmentReader {
    /// A reader of CPU `cpu`'s spool in `dir`, with nothing to read until
    /// [`SegmentReader::set_limit`]. `delete`: remove segments once read.
    pub fn new(dir: &Path, cpu: u32, delete: bool) -> SegmentReader {
        SegmentReader { dir: dir.to_path_buf(), cpu, delete, reader: None, at: Position::default(), limit: Position::default() }
    }

    /// Records before `limit` may be read: the writer has flushed them ([`Position::END`]:
    /// every segment there is is complete).
    pub fn set_limit(&mut self, limit: Position) {
        self.limit = self.limit.max(limit);
    }

    /// Where the next record is read from.
    pub fn position(&self) -> Position {
        self.at
    }

    /// The next record before the limit into `page`, or None when there is none yet.
    pub fn next_into(&mut self, page: &mut Vec<u8>) -> io::Result<Option<Item>> {
        loop {
            if self.at >= self.limit {
                return Ok(None);
            }
            let reader = match &mut self.reader {
                Some(r) => r,
                None => {
                    let path = segment_path(&self.dir, self.cpu, self.at.segment);
                    match File::open(&path) {
                        Ok(f) => self.reader.insert(Reader::new(BufReader::with_capacity(1 << 20, f))),
                        // A complete spool ends with its last segment.
                        Err(e) if e.kind() == io::ErrorKind::NotFound && self.limit == Position::END => return Ok(None),
                        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
                    }
                }
            };
            match reader.next_into(page)? {
                Some(item) => {
                    self.at.offset += 8 + page.len() as u64;
                    return Ok(Some(item));
                }
                // The end of a segment the writer has left: on to the next one.
                None if self.limit.segment > self.at.segment => {
                    self.reader = None;
                    if self.delete {
                        let path = segment_path(&self.dir, self.cpu, self.at.segment);
                        std::fs::remove_file(&path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                    }
                    self.at = Position { segment: self.at.segment + 1, offset: 0 };
                }
                None => return Ok(None),
            }
        }
    }
}

impl Records for SegmentReader {
    fn next_record(&mut self, page: &mut Vec<u8>) -> io::Result<Option<Item>> {
        self.next_into(page)
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

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tracelens-spool-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn positions_pack_in_order() {
        let ps = [Position { segment: 0, offset: 0 }, Position { segment: 0, offset: 77 }, Position { segment: 1, offset: 0 }, Position { segment: 3, offset: 1 << 30 }, Position::END];
        for w in ps.windows(2) {
            assert!(w[0] < w[1] && w[0].pack() < w[1].pack());
        }
        for p in ps {
            assert_eq!(Position::unpack(p.pack()), p);
        }
    }

    #[test]
    fn segments_are_tailed_up_to_the_limit_and_deleted_once_read() {
        let dir = scratch("segments");
        // Segments of at least 100 bytes: 3 records of 58 + 16 + 58 bytes go in the first
        // two segments.
        let mut w = SegmentWriter::create(&dir, 3, 100).unwrap();
        let mut r = SegmentReader::new(&dir, 3, true);
        let mut page = Vec::new();
        assert_eq!(r.next_into(&mut page).unwrap(), None, "nothing published");
        w.write_page(&[1; 50]).unwrap();
        w.write_lost(9).unwrap();
        // Written but not flushed or published: not read.
        assert_eq!(r.next_into(&mut page).unwrap(), None);
        let end = w.flush().unwrap();
        assert_eq!(end, Position { segment: 0, offset: 74 });
        r.set_limit(end);
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Page));
        assert_eq!(page, vec![1; 50]);
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Lost(9)));
        assert_eq!(r.next_into(&mut page).unwrap(), None, "at the limit");
        w.write_page(&[2; 50]).unwrap();
        w.write_page(&[3; 50]).unwrap();
        let end = w.flush().unwrap();
        assert_eq!(end, Position { segment: 1, offset: 58 });
        assert!(segment_path(&dir, 3, 0).exists() && segment_path(&dir, 3, 1).exists());
        r.set_limit(end);
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Page));
        assert_eq!(page, vec![2; 50]);
        // The first segment is read to its end and deleted when the reader moves on.
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Page));
        assert_eq!(page, vec![3; 50]);
        assert!(!segment_path(&dir, 3, 0).exists() && segment_path(&dir, 3, 1).exists());
        assert_eq!(r.position(), end);
        assert_eq!(r.next_into(&mut page).unwrap(), None);
        // A limit never goes back.
        r.set_limit(Position::default());
        w.write_lost(1).unwrap();
        r.set_limit(w.flush().unwrap());
        assert_eq!(r.next_into(&mut page).unwrap(), Some(Item::Lost(1)));
        drop(w);
        // A complete spool kept (not deleted) is read whole with the END limit.
        let mut w = SegmentWriter::create(&dir, 4, 20).unwrap();
        for i in 0..5u8 {
            w.write_page(&[i; 30]).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let mut r = SegmentReader::new(&dir, 4, false);
        r.set_limit(Position::END);
        let mut seen = Vec::new();
        while let Some(item) = r.next_into(&mut page).unwrap() {
            assert_eq!(item, Item::Page);
            seen.push(page[0]);
        }
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert!((0..5).all(|s| segment_path(&dir, 4, s).exists()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
