//! Packetized metadata (CTF 1.8, "Metadata"): the TSDL text cut into
//! packets, each behind a 37-byte header, as LTTng writes it. The header,
//! in the producer's byte order (its magic says which):
//!
//! ```text
//! magic u32 = 0x75D11D57 | uuid [16]u8 | checksum u32 | content_size u32 (bits)
//! | packet_size u32 (bits) | compression u8 | encryption u8 | checksum scheme u8
//! | major u8 | minor u8
//! ```
//!
//! The text is the concatenation of each packet's content after its
//! header; padding up to `packet_size` is skipped.

/// The magic number of a metadata packet.
pub const METADATA_MAGIC: u32 = 0x75D1_1D57;

/// Bytes of a metadata packet header.
const HEADER: usize = 37;

/// Whether `bytes` start with a metadata packet (either byte order).
pub fn is_packetized(bytes: &[u8]) -> bool {
    bytes.len() >= 4
        && (bytes[..4] == METADATA_MAGIC.to_le_bytes()
            || bytes[..4] == METADATA_MAGIC.to_be_bytes())
}

/// The TSDL text of packetized metadata, or the offset and reason of the
/// first packet that cannot be read.
pub fn text(bytes: &[u8]) -> Result<Vec<u8>, (u64, String)> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let err = |msg: String| Err((at as u64, msg));
        if rest.len() < HEADER {
            return err(format!(
                "metadata packet header cut short ({} of {HEADER} bytes)",
                rest.len()
            ));
        }
        let big = if rest[..4] == METADATA_MAGIC.to_le_bytes() {
            false
        } else if rest[..4] == METADATA_MAGIC.to_be_bytes() {
            true
        } else {
            return err(format!(
                "bad metadata packet magic {:02x?} (expected 0x75d11d57)",
                &rest[..4]
            ));
        };
        let u32_at = |o: usize| {
            let b: [u8; 4] = rest[o..o + 4].try_into().expect("4 bytes");
            if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (content_bits, packet_bits) = (u32_at(24) as usize, u32_at(28) as usize);
        let (compression, encryption, checksum) = (rest[32], rest[33], rest[34]);
        if compression != 0 || encryption != 0 || checksum != 0 {
            return err(format!(
                "metadata packet with compression {compression}, encryption {encryption}, checksum \
                 scheme {checksum}: only plain packets (0, 0, 0) are supported"
            ));
        }
        if content_bits % 8 != 0 || packet_bits % 8 != 0 {
            return err(format!(
                "metadata packet sizes are not whole bytes (content {content_bits} bits, packet \
                 {packet_bits} bits)"
            ));
        }
        let (content, packet) = (content_bits / 8, packet_bits / 8);
        if content < HEADER || content > packet || packet > rest.len() {
            return err(format!(
                "metadata packet of {packet} bytes with {content} bytes of content (header \
                 {HEADER}, {} bytes left in the file)",
                rest.len()
            ));
        }
        out.extend_from_slice(&rest[HEADER..content]);
        at += packet;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(text: &str, pad: usize, big: bool) -> Vec<u8> {
        let content = (HEADER + text.len()) as u32 * 8;
        let size = content + pad as u32 * 8;
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut p = w(METADATA_MAGIC).to_vec();
        p.extend([7u8; 16]);
        p.extend(w(0));
        p.extend(w(content));
        p.extend(w(size));
        p.extend([0, 0, 0, 1, 8]);
        p.extend(text.as_bytes());
        p.extend(vec![0u8; pad]);
        p
    }

    #[test]
    fn joins_the_packets_text_in_either_byte_order() {
        for big in [false, true] {
            let mut b = packet("/* CTF 1.8 */ trace {", 11, big);
            b.extend(packet(" major = 1; };", 0, big));
            assert!(is_packetized(&b));
            assert_eq!(text(&b).unwrap(), b"/* CTF 1.8 */ trace { major = 1; };");
        }
        assert!(!is_packetized(b"/* CTF 1.8 */"));
    }

    #[test]
    fn damaged_packets_are_errors_naming_where() {
        let good = packet("abc", 0, false);
        let mut two = good.clone();
        two.extend(&good[..20]);
        assert_eq!(text(&two).unwrap_err().0, good.len() as u64);
        let mut zero = good.clone();
        zero[28..32].copy_from_slice(&0u32.to_le_bytes());
        assert!(text(&zero)
            .unwrap_err()
            .1
            .contains("metadata packet of 0 bytes"));
        let mut compressed = good.clone();
        compressed[32] = 1;
        assert!(text(&compressed).unwrap_err().1.contains("compression 1"));
        let mut long = good;
        long[28..32].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert!(text(&long)
            .unwrap_err()
            .1
            .contains("bytes left in the file"));
    }
}
