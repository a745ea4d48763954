//! The messages of lttng-relayd's control and data connections, as
//! lttng-consumerd sends them (lttng-tools 2.13: `relayd.h` and
//! `sessiond-comm.h` for the structures, `relayd.c` for the client side,
//! lttng-relayd's `main.c` for what the daemon reads). Every structure is
//! packed, every integer big-endian.
//!
//! We announce protocol 2.10, the last before trace chunks: relayd answers
//! with the lower of its version and ours, and a 2.4–2.10 peer creates its
//! session by name and host, names each stream's full folder itself (no
//! trace-chunk commands), and sends 2.8+ indexes (with the stream instance
//! and the packet sequence number).
//!
//! ```text
//! control:  VERSION, CREATE_SESSION, ADD_STREAM…, STREAMS_SENT,
//!           SEND_METADATA…, SEND_INDEX (after each packet; packet_size 0:
//!           a live beacon), DATA_PENDING, CLOSE_STREAM
//! data:     [data header: stream, net_seq_num, size] [packet bytes] …
//! ```

/// The protocol version we speak (see the module doc): major...
pub const MAJOR: u32 = 2;
/// ... and minor.
pub const MINOR: u32 = 10;

/// Commands (`enum lttcomm_relayd_command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
#[allow(missing_docs)] // the names are relayd's
pub enum Command {
    AddStream = 1,
    CreateSession = 2,
    Version = 5,
    SendMetadata = 6,
    CloseStream = 7,
    DataPending = 8,
    SendIndex = 13,
    StreamsSent = 16,
    ResetMetadata = 17,
}

/// `LTTNG_OK`: the return code of a command that succeeded.
pub const LTTNG_OK: u32 = 10;

/// Size of the command header (`struct lttcomm_relayd_hdr`): circuit id
/// (unused, 0), payload size, command, command version (0).
pub const HEADER_LEN: usize = 8 + 8 + 4 + 4;
/// Size of the data header (`struct lttcomm_relayd_data_hdr`): circuit id,
/// stream id, network sequence number, data size, padding size.
pub const DATA_HEADER_LEN: usize = 8 + 8 + 8 + 4 + 4;

/// Field sizes of the 2.4 session creation and the 2.2 stream addition.
const SESSION_NAME_LEN: usize = 255;
const HOST_NAME_LEN: usize = 64;
const STREAM_NAME_LEN: usize = 264;
const PATH_LEN: usize = 4096;

/// Size of an index message at protocol 2.8 and later: ten u64.
pub const INDEX_LEN: usize = 10 * 8;

/// A command: its header followed by `payload`.
pub fn command(cmd: Command, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEADER_LEN + payload.len());
    m.extend_from_slice(&0u64.to_be_bytes());
    m.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    m.extend_from_slice(&(cmd as u32).to_be_bytes());
    m.extend_from_slice(&0u32.to_be_bytes());
    m.extend_from_slice(payload);
    m
}

/// `VERSION`: our major and minor.
pub fn version() -> Vec<u8> {
    let mut p = Vec::with_capacity(8);
    p.extend_from_slice(&MAJOR.to_be_bytes());
    p.extend_from_slice(&MINOR.to_be_bytes());
    command(Command::Version, &p)
}

/// A name in a fixed-size, NUL-terminated field; `None` if it does not fit
/// (with its NUL) or holds a NUL.
fn fixed(out: &mut Vec<u8>, s: &str, len: usize) -> Option<()> {
    if s.len() >= len || s.as_bytes().contains(&0) {
        return None;
    }
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + len - s.len(), 0);
    Some(())
}

/// `CREATE_SESSION` (2.4 form): session name, host name, the live timer
/// in µs (0: not live), not a snapshot. `None` if a name is too long.
pub fn create_session(name: &str, host: &str, live_timer_us: u32) -> Option<Vec<u8>> {
    let mut p = Vec::with_capacity(SESSION_NAME_LEN + HOST_NAME_LEN + 8);
    fixed(&mut p, name, SESSION_NAME_LEN)?;
    fixed(&mut p, host, HOST_NAME_LEN)?;
    p.extend_from_slice(&live_timer_us.to_be_bytes());
    p.extend_from_slice(&0u32.to_be_bytes());
    Some(command(Command::CreateSession, &p))
}

/// `ADD_STREAM` (2.2 form): the stream file's name and the folder it goes
/// to, relative to relayd's output (`HOST/SESSION-DATE`), no tracefile
/// rotation. `None` if a name is too long.
pub fn add_stream(channel: &str, path: &str) -> Option<Vec<u8>> {
    let mut p = Vec::with_capacity(STREAM_NAME_LEN + PATH_LEN + 16);
    fixed(&mut p, channel, STREAM_NAME_LEN)?;
    fixed(&mut p, path, PATH_LEN)?;
    p.extend_from_slice(&0u64.to_be_bytes());
    p.extend_from_slice(&0u64.to_be_bytes());
    Some(command(Command::AddStream, &p))
}

/// `STREAMS_SENT`: publishes the streams added so far to live viewers.
pub fn streams_sent() -> Vec<u8> {
    command(Command::StreamsSent, &[])
}

/// `SEND_METADATA`: bytes appended to the metadata stream `stream`.
pub fn metadata(stream: u64, text: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(12 + text.len());
    p.extend_from_slice(&stream.to_be_bytes());
    p.extend_from_slice(&0u32.to_be_bytes());
    p.extend_from_slice(text);
    command(Command::SendMetadata, &p)
}

/// `RESET_METADATA`: the metadata stream starts again empty (its version
/// `version`), before the whole new metadata is sent.
pub fn reset_metadata(stream: u64, version: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(16);
    p.extend_from_slice(&stream.to_be_bytes());
    p.extend_from_slice(&version.to_be_bytes());
    command(Command::ResetMetadata, &p)
}

/// The data header before a packet of `len` bytes of stream `stream`.
pub fn data_header(stream: u64, net_seq: u64, len: u32) -> [u8; DATA_HEADER_LEN] {
    let mut h = [0u8; DATA_HEADER_LEN];
    h[8..16].copy_from_slice(&stream.to_be_bytes());
    h[16..24].copy_from_slice(&net_seq.to_be_bytes());
    h[24..28].copy_from_slice(&len.to_be_bytes());
    h
}

/// What an index says of a packet (`struct lttcomm_relayd_index`): sizes
/// in bits, times in clock cycles, as in the packet's context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Index {
    /// The packet's size, padding included, in bits.
    pub packet_size: u64,
    /// The size of its header and records, in bits.
    pub content_size: u64,
    /// Time of its first record.
    pub timestamp_begin: u64,
    /// Time of its end.
    pub timestamp_end: u64,
    /// Records its buffer discarded, from its start to this packet's end.
    pub events_discarded: u64,
    /// The CTF stream class id.
    pub stream_id: u64,
    /// The buffer's id within its stream class.
    pub stream_instance_id: u64,
    /// The packet's number in its buffer.
    pub packet_seq_num: u64,
}

/// `SEND_INDEX` for packet `net_seq` of relay stream `stream`. A live
/// beacon is an index with sizes 0 and only `timestamp_end` and
/// `stream_id`: "nothing in this stream until then".
pub fn index(stream: u64, net_seq: u64, i: &Index) -> Vec<u8> {
    let mut p = Vec::with_capacity(INDEX_LEN);
    for v in [
        stream,
        net_seq,
        i.packet_size,
        i.content_size,
        i.timestamp_begin,
        i.timestamp_end,
        i.events_discarded,
        i.stream_id,
        i.stream_instance_id,
        i.packet_seq_num,
    ] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    command(Command::SendIndex, &p)
}

/// `DATA_PENDING`: whether relayd still waits for packets of `stream` up
/// to `last_net_seq`.
pub fn data_pending(stream: u64, last_net_seq: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(16);
    p.extend_from_slice(&stream.to_be_bytes());
    p.extend_from_slice(&last_net_seq.to_be_bytes());
    command(Command::DataPending, &p)
}

/// `CLOSE_STREAM`: `stream` ends with packet `last_net_seq`.
pub fn close_stream(stream: u64, last_net_seq: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(16);
    p.extend_from_slice(&stream.to_be_bytes());
    p.extend_from_slice(&last_net_seq.to_be_bytes());
    command(Command::CloseStream, &p)
}

/// A big-endian u32 at `at` of a reply.
pub fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A big-endian u64 at `at` of a reply.
pub fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_packed_big_endian() {
        let m = command(Command::DataPending, &[1, 2, 3]);
        assert_eq!(m.len(), HEADER_LEN + 3);
        assert_eq!(&m[..8], &[0; 8], "circuit id");
        assert_eq!(be_u64(&m, 8), 3, "payload size");
        assert_eq!(be_u32(&m, 16), 8, "command");
        assert_eq!(be_u32(&m, 20), 0, "command version");
        assert_eq!(&m[24..], &[1, 2, 3]);
    }

    #[test]
    fn version_announces_2_10() {
        let m = version();
        assert_eq!(be_u32(&m, 16), 5);
        assert_eq!((be_u32(&m, 24), be_u32(&m, 28)), (2, 10));
    }

    #[test]
    fn create_session_has_the_2_4_layout() {
        let m = create_session("demo", "host-1", 1_000_000).unwrap();
        let p = &m[HEADER_LEN..];
        // 255 + 64 + 4 + 4, packed.
        assert_eq!(p.len(), 327);
        assert_eq!(&p[..5], b"demo\0");
        assert!(p[4..255].iter().all(|&b| b == 0));
        assert_eq!(&p[255..262], b"host-1\0");
        assert_eq!(be_u32(p, 319), 1_000_000);
        assert_eq!(be_u32(p, 323), 0, "not a snapshot");
        // A name that fills its field leaves no room for the NUL.
        assert!(create_session(&"n".repeat(255), "h", 0).is_none());
        assert!(create_session("n", &"h".repeat(64), 0).is_none());
        assert!(create_session("a\0b", "h", 0).is_none());
    }

    #[test]
    fn add_stream_has_the_2_2_layout() {
        let m = add_stream("channel0_1", "h/s-20260101-000000").unwrap();
        let p = &m[HEADER_LEN..];
        assert_eq!(p.len(), 264 + 4096 + 16);
        assert_eq!(&p[..11], b"channel0_1\0");
        assert_eq!(&p[264..284], b"h/s-20260101-000000\0");
        assert_eq!(be_u64(p, 4360), 0, "tracefile size");
        assert_eq!(be_u64(p, 4368), 0, "tracefile count");
    }

    #[test]
    fn data_header_and_index() {
        let h = data_header(7, 3, 4096);
        assert_eq!(
            h,
            [
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 16,
                0, 0, 0, 0, 0
            ]
        );
        let i = Index {
            packet_size: 4096 * 8,
            content_size: 100 * 8,
            timestamp_begin: 11,
            timestamp_end: 12,
            events_discarded: 13,
            stream_id: 1,
            stream_instance_id: 2,
            packet_seq_num: 14,
        };
        let m = index(7, 3, &i);
        let p = &m[HEADER_LEN..];
        assert_eq!(p.len(), INDEX_LEN);
        let got: Vec<u64> = (0..10).map(|k| be_u64(p, k * 8)).collect();
        assert_eq!(got, [7, 3, 32768, 800, 11, 12, 13, 1, 2, 14]);
        let m = metadata(9, b"/* CTF */");
        assert_eq!(be_u64(&m, 8), 12 + 9);
        assert_eq!(be_u64(&m, HEADER_LEN), 9);
        assert_eq!(&m[HEADER_LEN + 12..], b"/* CTF */");
    }
}
