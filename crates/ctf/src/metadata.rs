//! Finding the metadata text in a `metadata` file — CTF 1.8 TSDL, plain (`/* CTF 1.8 */`) or
//! packetized (packets starting with magic 0x75D11D57, in either byte order), or a CTF 2 JSON
//! text sequence (starting with a record separator) — then parsing it: the version is told
//! from the bytes themselves.

use crate::ir::{ByteOrder, TraceClass};
use crate::{Error, Result};

/// Magic number starting every metadata packet.
const MAGIC: u32 = 0x75D1_1D57;

/// Size of a metadata packet header in bytes: magic, uuid[16], checksum, content_size,
/// packet_size, compression_scheme, encryption_scheme, checksum_scheme, major, minor.
const HEADER_LEN: usize = 37;

/// TSDL text taken out of a metadata file, with how it was stored.
#[derive(Clone, Debug)]
pub struct MetadataText {
    /// The TSDL text.
    pub text: String,
    /// Whether it came from packetized metadata.
    pub packetized: bool,
    /// The UUID of the metadata packets, if packetized.
    pub uuid: Option<[u8; 16]>,
    /// The byte order of the metadata packet headers, if packetized (the trace's byte order
    /// must be the same).
    pub byte_order: Option<ByteOrder>,
    /// CTF 2 metadata (a JSON text sequence) rather than TSDL.
    pub ctf2: bool,
}

fn packet_err(offset: usize, message: impl Into<String>) -> Error {
    Error::MetadataPacket { offset: offset as u64, message: message.into() }
}

fn u32_at(bytes: &[u8], at: usize, bo: ByteOrder) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(match bo {
        ByteOrder::Little => u32::from_le_bytes(b),
        ByteOrder::Big => u32::from_be_bytes(b),
    })
}

/// Whether the bytes start with the packet magic (in either byte order).
fn is_packetized(bytes: &[u8]) -> bool {
    u32_at(bytes, 0, ByteOrder::Little) == Some(MAGIC)
        || u32_at(bytes, 0, ByteOrder::Big) == Some(MAGIC)
}

/// Rejects NUL characters; `base` is the file offset of `chunk`.
fn check_no_nul(chunk: &[u8], base: usize) -> Result<()> {
    match chunk.iter().position(|&b| b == 0) {
        Some(i) => Err(packet_err(base + i, "NUL character in metadata text")),
        None => Ok(()),
    }
}

/// Extracts the TSDL text from the bytes of a `metadata` file (plain or packetized).
///
/// Plain text may start with a UTF-8 byte order mark and may use CRLF line endings. Packetized
/// metadata is checked packet by packet (framing within the file, sizes, one byte order and one
/// UUID for all packets, no compression/encryption/checksum scheme, version 1.8).
pub fn unpacketize(bytes: &[u8]) -> Result<MetadataText> {
    if !is_packetized(bytes) {
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let base = bytes.len() - body.len();
        check_no_nul(body, base)?;
        let text = match std::str::from_utf8(body) {
            Ok(s) => s.to_string(),
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        let ctf2 = crate::ctf2::is_ctf2(body);
        return Ok(MetadataText { text, packetized: false, uuid: None, byte_order: None, ctf2 });
    }

    let mut text = Vec::with_capacity(bytes.len());
    let mut order: Option<ByteOrder> = None;
    let mut uuid: Option<[u8; 16]> = None;
    let mut off = 0usize;
    while off < bytes.len() {
        let Some(head) = bytes.get(off..off + HEADER_LEN) else {
            return Err(packet_err(
                off,
                format!(
                    "truncated metadata packet header ({} of {HEADER_LEN} bytes)",
                    bytes.len() - off
                ),
            ));
        };
        let bo = if u32_at(head, 0, ByteOrder::Little) == Some(MAGIC) {
            ByteOrder::Little
        } else if u32_at(head, 0, ByteOrder::Big) == Some(MAGIC) {
            ByteOrder::Big
        } else {
            return Err(packet_err(off, "bad metadata packet magic"));
        };
        match order {
            Some(o) if o != bo => {
                return Err(packet_err(
                    off,
                    "metadata packet byte order differs from the first packet's",
                ))
            }
            _ => order = Some(bo),
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&head[4..20]);
        match uuid {
            Some(u) if u != id => {
                return Err(packet_err(
                    off + 4,
                    "metadata packet UUID differs from the first packet's",
                ))
            }
            _ => uuid = Some(id),
        }
        let content_bits = u32_at(head, 24, bo).unwrap_or(0);
        let packet_bits = u32_at(head, 28, bo).unwrap_or(0);
        let [compression, encryption, checksum, major, minor] =
            [head[32], head[33], head[34], head[35], head[36]];
        if compression != 0 {
            return Err(packet_err(
                off + 32,
                format!("unsupported metadata compression scheme {compression}"),
            ));
        }
        if encryption != 0 {
            return Err(packet_err(
                off + 33,
                format!("unsupported metadata encryption scheme {encryption}"),
            ));
        }
        if checksum != 0 {
            return Err(packet_err(
                off + 34,
                format!("unsupported metadata checksum scheme {checksum}"),
            ));
        }
        if (major, minor) != (1, 8) {
            return Err(packet_err(
                off + 35,
                format!("unsupported metadata packet version {major}.{minor}"),
            ));
        }
        if packet_bits == 0 || packet_bits & 7 != 0 {
            return Err(packet_err(
                off + 28,
                format!("invalid metadata packet size {packet_bits} bits"),
            ));
        }
        if content_bits & 7 != 0 || (content_bits as usize) < HEADER_LEN * 8 {
            return Err(packet_err(
                off + 24,
                format!("invalid metadata content size {content_bits} bits"),
            ));
        }
        if content_bits > packet_bits {
            return Err(packet_err(
                off + 24,
                format!("metadata content size ({content_bits} bits) larger than packet size ({packet_bits} bits)"),
            ));
        }
        let packet_len = packet_bits as usize / 8;
        let content_len = content_bits as usize / 8;
        if packet_len > bytes.len() - off {
            return Err(packet_err(
                off + 28,
                format!("metadata packet of {packet_len} bytes goes past the end of the file ({} bytes left)", bytes.len() - off),
            ));
        }
        let chunk = &bytes[off + HEADER_LEN..off + content_len];
        check_no_nul(chunk, off + HEADER_LEN)?;
        text.extend_from_slice(chunk);
        off += packet_len;
    }
    let text = match String::from_utf8(text) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(MetadataText { text, packetized: true, uuid, byte_order: order, ctf2: false })
}

/// Parses the bytes of a `metadata` file (plain or packetized TSDL, or CTF 2 JSON) into a
/// [`TraceClass`].
///
/// For packetized metadata, the trace's `byte_order` must be the packets' byte order (`native`
/// means the packets' byte order).
pub fn parse_metadata(bytes: &[u8]) -> Result<TraceClass> {
    unpacketize(bytes)?.parse()
}

impl MetadataText {
    /// Parses the TSDL text into a [`TraceClass`], checking that the trace's byte order is the
    /// metadata packets' one (if packetized; `native` then means the packets' byte order).
    pub fn parse(&self) -> Result<TraceClass> {
        let m = self;
        if m.ctf2 {
            return crate::ctf2::parse(&m.text);
        }
        let trace =
            crate::tsdl::parse_with_native(&m.text, m.byte_order.unwrap_or(ByteOrder::Little))?;
        if let Some(bo) = m.byte_order {
            if trace.byte_order != bo {
                return Err(packet_err(
                    0,
                    format!(
                        "metadata packets are {} but the trace's byte order is {}",
                        if bo == ByteOrder::Big { "big-endian" } else { "little-endian" },
                        if trace.byte_order == ByteOrder::Big {
                            "big-endian"
                        } else {
                            "little-endian"
                        },
                    ),
                ));
            }
        }
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(bo: ByteOrder, body: &[u8], pad: usize) -> Vec<u8> {
        let content = (HEADER_LEN + body.len()) as u32 * 8;
        let size = content + pad as u32 * 8;
        let w = |v: u32| match bo {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        let mut p = Vec::new();
        p.extend_from_slice(&w(MAGIC));
        p.extend_from_slice(&[7u8; 16]);
        p.extend_from_slice(&w(0));
        p.extend_from_slice(&w(content));
        p.extend_from_slice(&w(size));
        p.extend_from_slice(&[0, 0, 0, 1, 8]);
        p.extend_from_slice(body);
        p.resize(p.len() + pad, 0);
        p
    }

    const TSDL_LE: &str = "/* CTF 1.8 */ trace { major = 1; minor = 8; byte_order = le; };";

    #[test]
    fn plain_text() {
        let m = unpacketize(TSDL_LE.as_bytes()).unwrap();
        assert!(!m.packetized);
        assert_eq!(m.text, TSDL_LE);
        assert!(unpacketize(b"trace {\0};").is_err());
    }

    #[test]
    fn packets_in_both_orders() {
        for bo in [ByteOrder::Little, ByteOrder::Big] {
            let (a, b) = TSDL_LE.split_at(20);
            let mut bytes = packet(bo, a.as_bytes(), 5);
            bytes.extend(packet(bo, b.as_bytes(), 0));
            let m = unpacketize(&bytes).unwrap();
            assert!(m.packetized);
            assert_eq!(m.text, TSDL_LE);
            assert_eq!(m.uuid, Some([7; 16]));
            assert_eq!(m.byte_order, Some(bo));
        }
        let bytes = packet(ByteOrder::Little, TSDL_LE.as_bytes(), 0);
        assert!(parse_metadata(&bytes).is_ok());
        let bytes = packet(ByteOrder::Big, TSDL_LE.as_bytes(), 0);
        assert!(matches!(parse_metadata(&bytes), Err(Error::MetadataPacket { .. })));
    }

    #[test]
    fn broken_packets() {
        let good = packet(ByteOrder::Little, TSDL_LE.as_bytes(), 3);
        // Truncated file.
        assert!(unpacketize(&good[..good.len() - 1]).is_err());
        // Truncated header of a second packet.
        let mut two = good.clone();
        two.extend_from_slice(&good[..10]);
        assert!(unpacketize(&two).is_err());
        // Mixed byte orders.
        let mut mixed = good.clone();
        mixed.extend(packet(ByteOrder::Big, b" ", 0));
        assert!(unpacketize(&mixed).is_err());
        // Content size > packet size, zero packet size, compression, NUL in text.
        let mut bad = good.clone();
        bad[24..28].copy_from_slice(&(u32::MAX - 7).to_le_bytes());
        assert!(unpacketize(&bad).is_err());
        let mut bad = good.clone();
        bad[28..32].copy_from_slice(&0u32.to_le_bytes());
        assert!(unpacketize(&bad).is_err());
        let mut bad = good.clone();
        bad[32] = 1;
        assert!(unpacketize(&bad).is_err());
        let mut bad = good;
        bad[40] = 0;
        match unpacketize(&bad) {
            Err(Error::MetadataPacket { offset, .. }) => assert_eq!(offset, 40),
            r => panic!("unexpected {r:?}"),
        }
    }
}
