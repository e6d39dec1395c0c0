//! Writers of numbers, times and strings that the printers share, without allocation:
//! decimal and radix integers, C's `%g`, babeltrace2's string escapes (and the same escapes of
//! control characters for any text meant for a terminal), broken-down local or UTC times,
//! UUIDs; and [`OutBuf`], the buffered writer the printers write through.

use std::io::{self, Write};

/// The two decimal digits of 0 to 99, in order.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `v` at the end of `buf`; returns where they start.
#[inline]
fn digits(buf: &mut [u8; 24], v: u64) -> usize {
    digits_before(buf, 24, v)
}

/// Writes the decimal digits of `v` into `buf` ending before `end`, four at a time while there
/// are more than four (one division of the 64-bit value, then 32-bit ones), then two; returns
/// where they start.
#[inline(always)]
fn digits_before(buf: &mut [u8], end: usize, mut v: u64) -> usize {
    let mut i = end;
    let pair = |x: u32| -> [u8; 2] { [DIGIT_PAIRS[x as usize * 2], DIGIT_PAIRS[x as usize * 2 + 1]] };
    while v >= 10_000 {
        let r = (v % 10_000) as u32;
        v /= 10_000;
        i -= 4;
        buf[i..i + 2].copy_from_slice(&pair(r / 100));
        buf[i + 2..i + 4].copy_from_slice(&pair(r % 100));
    }
    let mut v = v as u32;
    if v >= 100 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&pair(v % 100));
        v /= 100;
    }
    if v >= 10 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&pair(v));
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    i
}

/// The two upper-case hexadecimal digits of 0 to 255, in order.
const HEX_PAIRS: [u8; 512] = {
    let mut t = [0u8; 512];
    let mut i = 0;
    while i < 256 {
        t[2 * i] = b"0123456789ABCDEF"[i >> 4];
        t[2 * i + 1] = b"0123456789ABCDEF"[i & 15];
        i += 1;
    }
    t
};

/// How many decimal digits `v` has: `bits · log10 2` (1233/4096) is the count or one less,
/// which one a comparison with a power of ten tells (`0` in the first slot counts 0's digit).
#[inline(always)]
fn decimal_len(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut t = [0u64; 20];
        let mut i = 1;
        let mut p = 10u64;
        while i < 20 {
            t[i] = p;
            p = p.wrapping_mul(10);
            i += 1;
        }
        t
    };
    let t = (((64 - (v | 1).leading_zeros()) * 1233) >> 12) as usize;
    t + usize::from(v >= POW10[t])
}

/// Puts `v` in decimal at the start of `dst` (which has room for 20 digits); returns how many
/// bytes.
#[inline(always)]
pub(crate) fn put_decimal(dst: &mut [u8], v: u64) -> usize {
    let n = decimal_len(v);
    digits_before(dst, n, v);
    n
}

/// Puts `0x` and `v` in upper-case hexadecimal without leading zeros (as
/// [`write_hex_upper`]) at the start of `dst` (which has room for 18 bytes); returns how many
/// bytes. The digits go in pairs from the last one back, the pair of an odd count's first
/// digit writing its `0` where the `x` then goes.
#[inline(always)]
pub(crate) fn put_hex_upper(dst: &mut [u8], v: u64) -> usize {
    let n = ((64 - v.leading_zeros()).max(1) as usize).div_ceil(4);
    let end = 2 + n;
    let mut x = v;
    for pair in 0..n.div_ceil(2) {
        let e = end - 2 * pair;
        let p = (x & 0xff) as usize * 2;
        dst[e - 2..e].copy_from_slice(&HEX_PAIRS[p..p + 2]);
        x >>= 8;
    }
    dst[..2].copy_from_slice(b"0x");
    end
}

/// Writes `0x` and `v` in upper-case hexadecimal without leading zeros (`0x0` for 0), in one
/// write ([`put_hex_upper`] on the stack).
#[inline]
pub(crate) fn write_hex_upper<W: Write + ?Sized>(out: &mut W, v: u64) -> io::Result<()> {
    let mut buf = [0u8; 18];
    let n = put_hex_upper(&mut buf, v);
    out.write_all(&buf[..n])
}

/// Puts the 9 decimal digits of `v` (< 10⁹, zero-padded) at the start of `buf`.
#[inline]
pub(crate) fn nine_digits(buf: &mut [u8], v: u32) {
    let (hi, lo) = (v / 10_000, v % 10_000);
    let pair = |x: u32| -> [u8; 2] { [DIGIT_PAIRS[x as usize * 2], DIGIT_PAIRS[x as usize * 2 + 1]] };
    buf[0] = b'0' + (hi / 10_000 % 10) as u8;
    buf[1..3].copy_from_slice(&pair(hi / 100 % 100));
    buf[3..5].copy_from_slice(&pair(hi % 100));
    buf[5..7].copy_from_slice(&pair(lo / 100));
    buf[7..9].copy_from_slice(&pair(lo % 100));
}

/// Writes `v` in decimal.
#[inline]
pub(crate) fn write_u64<W: Write + ?Sized>(out: &mut W, v: u64) -> io::Result<()> {
    let mut buf = [0u8; 24];
    let i = digits(&mut buf, v);
    out.write_all(&buf[i..])
}

/// Writes `v` in decimal.
#[inline]
pub(crate) fn write_i64<W: Write + ?Sized>(out: &mut W, v: i64) -> io::Result<()> {
    if v < 0 {
        out.write_all(b"-")?;
    }
    write_u64(out, v.unsigned_abs())
}

/// Writes `v` zero-padded to `width` digits.
#[inline]
pub(crate) fn write_u64_pad<W: Write + ?Sized>(out: &mut W, v: u64, width: usize) -> io::Result<()> {
    let mut buf = [b'0'; 24];
    let i = digits(&mut buf, v);
    let start = (buf.len() - width.min(buf.len())).min(i);
    out.write_all(&buf[start..])
}

/// Writes `v` in octal, without leading zeros (`0` for 0).
pub(crate) fn write_octal<W: Write + ?Sized>(out: &mut W, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 22];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v & 7) as u8;
        v >>= 3;
        if v == 0 {
            break;
        }
    }
    out.write_all(&buf[i..])
}

/// A buffered writer for the printers' many short writes (a field, a separator, a number): like
/// [`std::io::BufWriter`], but a slice of up to [`OutBuf::SHORT`] bytes is copied with two
/// fixed-size moves (overlapping when shorter) instead of a call to `memcpy`, which is most of
/// the cost of a 2-byte `", "`. Flushed when full, by [`Write::flush`] and when dropped
/// (errors then ignored: call `flush` to see them).
pub struct OutBuf<W: Write> {
    inner: W,
    buf: Box<[u8]>,
    /// Bytes of `buf` in use.
    pos: usize,
}

impl<W: Write> OutBuf<W> {
    /// Slices this long or shorter take the fast copy.
    pub const SHORT: usize = 64;

    /// A writer to `inner` with a buffer of `capacity` bytes (at least 4 KiB).
    pub fn with_capacity(capacity: usize, inner: W) -> OutBuf<W> {
        OutBuf { inner, buf: vec![0; capacity.max(4096)].into_boxed_slice(), pos: 0 }
    }

    /// The inner writer (without the bytes still in the buffer).
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// A writer to `inner` whose buffer is `buf` (of any size, at least 4 KiB; its contents
    /// are overwritten): with a buffer larger than all that is written, the output stays in
    /// it, to be taken back with [`OutBuf::take_buffer`].
    pub fn with_buffer(buf: Box<[u8]>, inner: W) -> OutBuf<W> {
        let buf = if buf.len() < 4096 { vec![0; 4096].into_boxed_slice() } else { buf };
        OutBuf { inner, buf, pos: 0 }
    }

    /// How many more bytes the buffer takes before it is passed to the inner writer.
    pub fn spare(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes in the buffer, not yet passed to the inner writer.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// Takes the buffer and how many of its bytes are in use, leaving an empty one (writes
    /// after this fail to reach the buffer and go to the inner writer directly).
    pub fn take_buffer(&mut self) -> (Box<[u8]>, usize) {
        (std::mem::take(&mut self.buf), std::mem::take(&mut self.pos))
    }

    /// The inner writer, mutably (write to it only after a [`Write::flush`]).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    #[inline(always)]
    fn put(&mut self, s: &[u8]) -> io::Result<()> {
        let n = s.len();
        let pos = self.pos;
        let Some(dst) = self.buf.get_mut(pos..pos + Self::SHORT).filter(|_| n <= Self::SHORT) else { return self.put_long(s) };
        // Two moves of a fixed size cover any length between it and twice it.
        if n >= 32 {
            dst[..32].copy_from_slice(&s[..32]);
            dst[n - 32..n].copy_from_slice(&s[n - 32..]);
        } else if n >= 16 {
            dst[..16].copy_from_slice(&s[..16]);
            dst[n - 16..n].copy_from_slice(&s[n - 16..]);
        } else if n >= 8 {
            dst[..8].copy_from_slice(&s[..8]);
            dst[n - 8..n].copy_from_slice(&s[n - 8..]);
        } else if n >= 4 {
            dst[..4].copy_from_slice(&s[..4]);
            dst[n - 4..n].copy_from_slice(&s[n - 4..]);
        } else if n > 0 {
            dst[0] = s[0];
            dst[n / 2] = s[n / 2];
            dst[n - 1] = s[n - 1];
        }
        self.pos = pos + n;
        Ok(())
    }

    /// A long slice, or one that does not fit what is left of the buffer.
    #[cold]
    fn put_long(&mut self, s: &[u8]) -> io::Result<()> {
        if s.len() >= self.buf.len() / 2 {
            self.flush_buf()?;
            return self.inner.write_all(s);
        }
        if self.buf.len() - self.pos < s.len().max(Self::SHORT) {
            self.flush_buf()?;
        }
        self.buf[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
        Ok(())
    }

    /// Writes the buffer's bytes to the inner writer (dropped on an error: the output is
    /// broken then).
    fn flush_buf(&mut self) -> io::Result<()> {
        let n = std::mem::take(&mut self.pos);
        self.inner.write_all(&self.buf[..n])
    }
}

impl<W: Write> Write for OutBuf<W> {
    #[inline]
    fn write(&mut self, s: &[u8]) -> io::Result<usize> {
        self.put(s)?;
        Ok(s.len())
    }

    #[inline(always)]
    fn write_all(&mut self, s: &[u8]) -> io::Result<()> {
        self.put(s)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buf()?;
        self.inner.flush()
    }
}

/// A writer that can lend the room for a line, so that a printer writes the line's bytes in
/// place (literals in fixed-size moves, digits where they go) instead of through one
/// [`Write::write_all`] per piece. Writers without such room (the default) are written through
/// [`Write`]; the output is the same.
pub trait LineOut: Write {
    /// Room for at least `n` bytes, to be written from its start and then marked with
    /// [`LineOut::filled`]; `None` when this writer has none that large.
    fn room(&mut self, n: usize) -> io::Result<Option<&mut [u8]>> {
        let _ = n;
        Ok(None)
    }

    /// Marks the first `n` bytes of the room last lent as written.
    fn filled(&mut self, n: usize) {
        let _ = n;
    }
}

impl LineOut for Vec<u8> {}

impl<L: LineOut + ?Sized> LineOut for &mut L {
    #[inline]
    fn room(&mut self, n: usize) -> io::Result<Option<&mut [u8]>> {
        (**self).room(n)
    }

    #[inline]
    fn filled(&mut self, n: usize) {
        (**self).filled(n)
    }
}

impl<W: Write> LineOut for OutBuf<W> {
    /// What is left of the buffer, passed to the inner writer first when less than `n`.
    #[inline]
    fn room(&mut self, n: usize) -> io::Result<Option<&mut [u8]>> {
        if self.buf.len() - self.pos < n {
            if self.buf.len() < n {
                return Ok(None);
            }
            self.flush_buf()?;
        }
        Ok(Some(&mut self.buf[self.pos..]))
    }

    #[inline]
    fn filled(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }
}

impl<W: Write> Drop for OutBuf<W> {
    fn drop(&mut self) {
        let _ = self.flush_buf();
    }
}

/// A fixed-size stack buffer usable with `write!`.
pub(crate) struct StackBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    pub(crate) fn new() -> Self {
        StackBuf { buf: [0; N], len: 0 }
    }
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> std::fmt::Write for StackBuf<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let b = s.as_bytes();
        let end = self.len.checked_add(b.len()).filter(|&e| e <= N).ok_or(std::fmt::Error)?;
        self.buf[self.len..end].copy_from_slice(b);
        self.len = end;
        Ok(())
    }
}

/// Writes `v` like C's `printf("%g", v)` (glibc: `nan`, `-nan`, `inf`, `-0`, `1e+10` ...).
pub(crate) fn write_g<W: Write + ?Sized>(out: &mut W, v: f64) -> io::Result<()> {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is 64 bytes and snprintf writes at most that many, NUL included; "%g"
    // of a double never needs more than ~15 characters.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr() as *mut libc::c_char, buf.len(), c"%g".as_ptr(), v) };
    if n < 0 {
        return out.write_all(b"?");
    }
    out.write_all(&buf[..(n as usize).min(buf.len() - 1)])
}

/// Writes `s` between double quotes, escaped as babeltrace2 does: `\\`, `\'`, `\"`, `\?`, and
/// control characters as [`write_control`] writes them; everything else (including bytes of
/// invalid UTF-8) is written as is. Stops at the first NUL.
pub(crate) fn write_escaped<W: Write + ?Sized>(out: &mut W, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut rest = s;
    loop {
        let i = plain_prefix(rest, &TEXT_PLAIN);
        out.write_all(&rest[..i])?;
        match rest.get(i) {
            None | Some(0) => break,
            Some(&c) => {
                let (esc, n) = text_escape(c);
                out.write_all(&esc[..n])?;
            }
        }
        rest = &rest[i + 1..];
    }
    out.write_all(b"\"")
}

/// [`write_escaped`] at the start of `dst`, which has room for `4 * s.len() + 6` bytes;
/// returns how many bytes it wrote and how many of `s` it read (up to its first NUL).
#[inline]
pub(crate) fn put_escaped(dst: &mut [u8], s: &[u8]) -> (usize, usize) {
    dst[0] = b'"';
    let mut pos = 1;
    let mut rest = s;
    loop {
        let i = plain_prefix(rest, &TEXT_PLAIN);
        dst[pos..pos + i].copy_from_slice(&rest[..i]);
        pos += i;
        match rest.get(i) {
            None | Some(0) => {
                rest = &rest[i..];
                break;
            }
            Some(&c) => {
                let (esc, n) = text_escape(c);
                dst[pos..pos + 4].copy_from_slice(&esc);
                pos += n;
            }
        }
        rest = &rest[i + 1..];
    }
    dst[pos] = b'"';
    (pos + 1, s.len() - rest.len())
}

/// How [`write_escaped`] writes the byte `c` that [`TEXT_PLAIN`] does not pass: the escape
/// and its length (2 or 4).
fn text_escape(c: u8) -> ([u8; 4], usize) {
    match c {
        b'\\' | b'\'' | b'"' | b'?' => ([b'\\', c, 0, 0], 2),
        _ => control_escape(c),
    }
}

/// The bytes [`write_escaped`] writes as they are (not a NUL, which ends a string, nor one it
/// escapes).
pub(crate) const TEXT_PLAIN: [bool; 256] = {
    let mut t = [true; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = !(is_control(b) || b == b'\\' || b == b'\'' || b == b'"' || b == b'?');
        c += 1;
    }
    t
};

/// How many bytes at the start of `s` are plain by `table` (all of them: `s.len()`).
#[inline]
pub(crate) fn plain_prefix(s: &[u8], table: &[bool; 256]) -> usize {
    s.iter().position(|&c| !table[c as usize]).unwrap_or(s.len())
}

const fn is_control(c: u8) -> bool {
    c < 32 || c == 127
}

/// Writes the control byte `c` escaped as babeltrace2 does: the C escapes `\a`, `\b`, `\e`,
/// `\f`, `\n`, `\r`, `\t`, `\v`, else `\xNN`.
fn write_control<W: Write + ?Sized>(out: &mut W, c: u8) -> io::Result<()> {
    let (esc, n) = control_escape(c);
    out.write_all(&esc[..n])
}

/// The escape of the control character `c` (`\n`, `\x01`...) and its length.
fn control_escape(c: u8) -> ([u8; 4], usize) {
    let letter = match c {
        7 => b'a',
        8 => b'b',
        27 => b'e',
        12 => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        11 => b'v',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            return ([b'\\', b'x', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]], 4);
        }
    };
    ([b'\\', letter, 0, 0], 2)
}

/// `s` with its control characters escaped as `print` escapes them in strings (`\e`, `\n`,
/// `\x01`...), for text meant for a terminal: a thread or file name from a trace must not
/// reach it raw (an `ESC ] 0 ; ... BEL` in a name would retitle the window, other sequences do
/// worse). Other characters are kept.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.bytes().any(is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    for &c in s.as_bytes() {
        if is_control(c) {
            // Writing to a vector cannot fail.
            let _ = write_control(&mut out, c);
        } else {
            out.push(c);
        }
    }
    // Only ASCII bytes were replaced, by ASCII: still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_default())
}

/// Broken-down time of `secs` (local time, or UTC when `gmt`): (year, month 1-12, day, hour,
/// minute, second).
pub(crate) fn broken_down(secs: i64, gmt: bool) -> Option<(i32, u32, u32, u32, u32, u32)> {
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain old data, filled by the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let r = unsafe {
        if gmt {
            libc::gmtime_r(&t, &mut tm)
        } else {
            libc::localtime_r(&t, &mut tm)
        }
    };
    if r.is_null() {
        return None;
    }
    Some((tm.tm_year + 1900, (tm.tm_mon + 1) as u32, tm.tm_mday as u32, tm.tm_hour as u32, tm.tm_min as u32, tm.tm_sec as u32))
}

extern "C" {
    fn tzset();
}

/// Reads `TZ` and the system's time zone, once per process (the printers call it when
/// created; the later calls do nothing). `tzset` takes a process-wide lock and looks at
/// `/etc/localtime` each time: `print -j N`'s workers, each creating its printer at once,
/// waited for one another there, for milliseconds when the file's pages had to be read.
pub fn init_timezone() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: tzset only reads the environment and sets libc's timezone globals.
    ONCE.call_once(|| unsafe { tzset() });
}

/// The UUID in its canonical lowercase form.
pub(crate) fn write_uuid<W: Write + ?Sized>(out: &mut W, u: &[u8; 16]) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 36];
    let mut j = 0;
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            buf[j] = b'-';
            j += 1;
        }
        buf[j] = HEX[(b >> 4) as usize];
        buf[j + 1] = HEX[(b & 15) as usize];
        j += 2;
    }
    out.write_all(&buf)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What `f` writes, as text.
    pub(crate) fn written(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8_lossy(&v).into_owned()
    }

    #[test]
    fn g_format() {
        assert_eq!(written(|o| write_g(o, 2.0)), "2");
        assert_eq!(written(|o| write_g(o, 1.5)), "1.5");
        assert_eq!(written(|o| write_g(o, 2222.0)), "2222");
        assert_eq!(written(|o| write_g(o, 1e10)), "1e+10");
        assert_eq!(written(|o| write_g(o, 0.0001)), "0.0001");
        assert_eq!(written(|o| write_g(o, 0.00001)), "1e-05");
        assert_eq!(written(|o| write_g(o, -0.0)), "-0");
        assert_eq!(written(|o| write_g(o, f64::INFINITY)), "inf");
        assert_eq!(written(|o| write_g(o, f64::NEG_INFINITY)), "-inf");
        assert_eq!(written(|o| write_g(o, f64::NAN)), "nan");
        assert_eq!(written(|o| write_g(o, 1.234567891)), "1.23457");
        assert_eq!(written(|o| write_g(o, 123456789.0)), "1.23457e+08");
        assert_eq!(written(|o| write_g(o, 1e-40)), "1e-40");
    }

    #[test]
    fn out_buf_keeps_every_byte_in_order() {
        // Every length around the fast copy's cases and the buffer's size, in a buffer small
        // enough to be flushed often.
        let mut expect = Vec::new();
        let mut out = OutBuf::with_capacity(0, Vec::new());
        let mut k = 0u8;
        for round in 0..40 {
            for n in (0..=70).chain([2047, 2048, 2049, 5000]) {
                let s: Vec<u8> = (0..n).map(|_| {
                    k = k.wrapping_mul(31).wrapping_add(7 + round);
                    k
                }).collect();
                out.write_all(&s).unwrap();
                expect.extend_from_slice(&s);
            }
        }
        out.flush().unwrap();
        assert!(out.inner == expect, "bytes lost or out of order");
        // Dropping flushes too.
        let mut v = Vec::new();
        {
            let mut o = OutBuf::with_capacity(1 << 16, &mut v);
            o.write_all(b"abc").unwrap();
        }
        assert_eq!(v, b"abc");
    }

    #[test]
    fn decimal() {
        for v in [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 1_000_000_000, 999_999_999, u64::MAX, u64::MAX - 1] {
            assert_eq!(written(|o| write_u64(o, v)), v.to_string());
            assert_eq!(written(|o| write_u64_pad(o, v, 9)), format!("{v:09}"));
        }
        assert_eq!(written(|o| write_i64(o, i64::MIN)), i64::MIN.to_string());
        assert_eq!(written(|o| write_u64_pad(o, 5, 24)), format!("{:024}", 5));
    }

    /// Every power of ten and of two, one below and one above, and a spread of other values,
    /// against the standard library's formatting.
    fn spread() -> impl Iterator<Item = u64> {
        let tens = (0..20).map(|e| 10u64.pow(e));
        let twos = (0..64).map(|e| 1u64 << e);
        let edges = tens.chain(twos).flat_map(|p| [p.wrapping_sub(1), p, p.wrapping_add(1)]);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let others = (0..5000).map(move |i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (i % 64)
        });
        edges.chain(others).chain([u64::MAX])
    }

    #[test]
    fn decimal_and_hexadecimal_like_std() {
        for v in spread() {
            assert_eq!(written(|o| write_u64(o, v)), v.to_string());
            assert_eq!(written(|o| write_i64(o, v as i64)), (v as i64).to_string());
            assert_eq!(written(|o| write_u64_pad(o, v, 12)), format!("{v:012}"));
            assert_eq!(written(|o| write_hex_upper(o, v)), format!("0x{v:X}"));
            assert_eq!(written(|o| write_octal(o, v)), format!("{v:o}"));
            let mut b = [0u8; 24];
            let n = put_decimal(&mut b, v);
            assert_eq!(&b[..n], v.to_string().as_bytes());
            // In place, with bytes around that must stay.
            let mut b = [b'#'; 24];
            let n = put_decimal(&mut b[1..], v);
            assert_eq!((&b[1..1 + n], b[1 + n]), (v.to_string().as_bytes(), b'#'));
            let mut b = [b'#'; 24];
            let n = put_hex_upper(&mut b[1..], v);
            assert_eq!((&b[1..1 + n], b[1 + n], b[0]), (format!("0x{v:X}").as_bytes(), b'#', b'#'));
        }
    }

    #[test]
    fn escaped_in_place_as_written() {
        let mut all: Vec<u8> = (1..=255).collect();
        all.extend_from_slice(b"tail\0after");
        for s in [&b""[..], b"plain", b"a\\b'c\"d?e\nf\x01\x7f\xff", b"ab\0cd", &all] {
            let mut room = vec![b'#'; 4 * s.len() + 8];
            let (n, read) = put_escaped(&mut room, s);
            assert_eq!(String::from_utf8_lossy(&room[..n]), written(|o| write_escaped(o, s)));
            assert_eq!(read, s.iter().position(|&c| c == 0).unwrap_or(s.len()));
        }
    }

    #[test]
    fn escapes() {
        assert_eq!(written(|o| write_escaped(o, b"a\\b'c\"d?e\nf\x01\x7f\xff")), "\"a\\\\b\\'c\\\"d\\?e\\nf\\x01\\x7f\u{fffd}\"");
        assert_eq!(written(|o| write_escaped(o, b"ab\0cd")), "\"ab\"");
        assert_eq!(escape_controls("plain"), "plain");
        assert_eq!(escape_controls("a\u{1b}]0;x\u{7}b\u{0}\u{7f}é"), "a\\e]0;x\\ab\\x00\\x7fé");
    }
}
