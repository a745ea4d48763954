//! The messages of lttng-relayd's control and data connections, as
//! lttng-consumerd sends them (lttng-tools 2.13: `relayd.h` and
//! `sessiond-comm.h` for the structures, `relayd.c` for the client side,
//! lttng-relayd's `main.c` for what the daemon reads). Every structure is
//! packed, every integer big-endian.
//!
//! Two dialects. A session that does not rotate announces protocol 2.10,
//! the last before trace chunks: relayd answers with the lower of its
//! version and ours, and a 2.4–2.10 peer creates its session by name and
//! host, names each stream's full folder itself (no trace-chunk commands),
//! and sends 2.8+ indexes (with the stream instance and the packet
//! sequence number).
//!
//! ```text
//! control:  VERSION, CREATE_SESSION, ADD_STREAM…, STREAMS_SENT,
//!           SEND_METADATA…, SEND_INDEX (after each packet; packet_size 0:
//!           a live beacon), DATA_PENDING, CLOSE_STREAM
//! data:     [data header: stream, net_seq_num, size] [packet bytes] …
//! ```
//!
//! A session that rotates announces 2.11, whose trace chunks relayd turns
//! into archives: the session is created with a (random) session-daemon
//! UUID and its creation time, relayd names its folder
//! (`HOST/NAME-DATE`), and each stream is added to a chunk, its folder
//! relative to the chunk's. A rotation is
//!
//! ```text
//! ROTATE_STREAMS (no chunk; for each stream the network sequence number
//!                 of its first packet after the rotation; metadata at once)
//! CLOSE_TRACE_CHUNK (current id, MOVE_TO_COMPLETED)
//! ```
//!
//! and relayd renames the closed chunk to `archives/BEGIN-END-ID` once
//! every stream has written its last packet of it. The next chunk is
//! opened before the next packet (never an empty one):
//!
//! ```text
//! CREATE_TRACE_CHUNK (next id)
//! ROTATE_STREAMS (next id, the same positions)   (the first chunk: ADD_STREAM)
//! SEND_METADATA (all of it: the chunk's metadata file starts empty)
//! ``` A relayd older than
//! 2.11 answers a lower version: rotation is refused, clearly, before
//! anything is recorded.

/// The protocol version we speak (see the module doc): major...
pub const MAJOR: u32 = 2;
/// ... and minor, without trace chunks...
pub const MINOR: u32 = 10;
/// ... and with them (a session that rotates).
pub const CHUNKS_MINOR: u32 = 11;

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
    RotateStreams = 18,
    CreateTraceChunk = 19,
    CloseTraceChunk = 20,
}

/// `LTTNG_TRACE_CHUNK_COMMAND_TYPE_MOVE_TO_COMPLETED`: a closed chunk goes
/// to `archives/`.
pub const MOVE_TO_COMPLETED: u32 = 0;

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

/// `VERSION`: our major and minor (`MINOR` or `CHUNKS_MINOR`).
pub fn version(minor: u32) -> Vec<u8> {
    let mut p = Vec::with_capacity(8);
    p.extend_from_slice(&MAJOR.to_be_bytes());
    p.extend_from_slice(&minor.to_be_bytes());
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

/// A 2.11 variable-length name: its bytes and a NUL (its length, NUL
/// included, goes in the fixed part). `None` if it holds a NUL.
fn cstr(s: &str) -> Option<Vec<u8>> {
    if s.as_bytes().contains(&0) {
        return None;
    }
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    Some(v)
}

/// `CREATE_SESSION` (2.11 form): `name` (relayd appends `-DATE` of
/// `creation_time`, seconds since the epoch), `host`, no base path, not
/// live, not a snapshot, session daemon `uuid` and its `session_id`, no
/// current chunk yet. `None` if a name is too long (255 and 64 bytes with
/// the NUL, as 2.4) or holds a NUL.
pub fn create_session_2_11(
    name: &str,
    host: &str,
    uuid: &[u8; 16],
    session_id: u64,
    creation_time: u64,
) -> Option<Vec<u8>> {
    let (n, h) = (cstr(name)?, cstr(host)?);
    if n.len() > SESSION_NAME_LEN || h.len() > HOST_NAME_LEN {
        return None;
    }
    let mut p = Vec::with_capacity(59 + n.len() + h.len());
    p.extend_from_slice(&(n.len() as u32).to_be_bytes());
    p.extend_from_slice(&(h.len() as u32).to_be_bytes());
    p.extend_from_slice(&0u32.to_be_bytes()); // base path: none
    p.extend_from_slice(&0u32.to_be_bytes()); // live timer: not live
    p.push(0); // not a snapshot
    p.push(0); // the name holds no creation time
    p.extend_from_slice(uuid);
    p.extend_from_slice(&session_id.to_be_bytes());
    p.extend_from_slice(&creation_time.to_be_bytes());
    p.push(0); // current chunk: not set...
    p.extend_from_slice(&0u64.to_be_bytes()); // ...(packed optional)
    p.extend_from_slice(&n);
    p.extend_from_slice(&h);
    Some(command(Command::CreateSession, &p))
}

/// `ADD_STREAM` (2.11 form): stream file `channel` in folder `path`
/// relative to chunk `chunk`'s folder, no tracefile rotation. `None` if a
/// name is too long or holds a NUL.
pub fn add_stream_2_11(channel: &str, path: &str, chunk: u64) -> Option<Vec<u8>> {
    let (c, pa) = (cstr(channel)?, cstr(path)?);
    if c.len() > STREAM_NAME_LEN || pa.len() > SESSION_NAME_LEN {
        return None;
    }
    let mut p = Vec::with_capacity(32 + c.len() + pa.len());
    p.extend_from_slice(&(c.len() as u32).to_be_bytes());
    p.extend_from_slice(&(pa.len() as u32).to_be_bytes());
    p.extend_from_slice(&0u64.to_be_bytes());
    p.extend_from_slice(&0u64.to_be_bytes());
    p.extend_from_slice(&chunk.to_be_bytes());
    p.extend_from_slice(&c);
    p.extend_from_slice(&pa);
    Some(command(Command::AddStream, &p))
}

/// `CREATE_TRACE_CHUNK`: chunk `id`, begun at `time` (seconds since the
/// epoch), named by relayd.
pub fn create_trace_chunk(id: u64, time: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(20);
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&time.to_be_bytes());
    p.extend_from_slice(&0u32.to_be_bytes()); // no name of ours
    command(Command::CreateTraceChunk, &p)
}

/// `ROTATE_STREAMS` to chunk `next` (`None`: to no chunk, the streams'
/// files closed): each `(stream, seq)` moves from its packet `seq` on (the
/// metadata stream at once). The optional chunk id is laid out as
/// lttng-consumerd 2.11–2.13 sends it on x86-64 (the flag, 7 bytes of
/// padding, the id): what those relayds read, and what later ones
/// recognize by the message's size.
pub fn rotate_streams(next: Option<u64>, positions: &[(u64, u64)]) -> Vec<u8> {
    let mut p = Vec::with_capacity(20 + 16 * positions.len());
    p.extend_from_slice(&(positions.len() as u32).to_be_bytes());
    p.push(u8::from(next.is_some()));
    p.extend_from_slice(&[0; 7]);
    p.extend_from_slice(&next.unwrap_or(0).to_be_bytes());
    for (stream, seq) in positions {
        p.extend_from_slice(&stream.to_be_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
    }
    command(Command::RotateStreams, &p)
}

/// `CLOSE_TRACE_CHUNK`: chunk `id` ends at `time` and goes to
/// `archives/` (`MOVE_TO_COMPLETED`, a packed optional).
pub fn close_trace_chunk(id: u64, time: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(21);
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&time.to_be_bytes());
    p.push(1);
    p.extend_from_slice(&MOVE_TO_COMPLETED.to_be_bytes());
    command(Command::CloseTraceChunk, &p)
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
    fn version_announces_2_10_or_2_11() {
        let m = version(MINOR);
        assert_eq!(be_u32(&m, 16), 5);
        assert_eq!((be_u32(&m, 24), be_u32(&m, 28)), (2, 10));
        assert_eq!(be_u32(&version(CHUNKS_MINOR), 28), 11);
    }

    #[test]
    fn trace_chunk_messages_have_the_2_11_layout() {
        let uuid = [7u8; 16];
        let m = create_session_2_11("demo-12", "host", &uuid, 3, 1_700_000_000).unwrap();
        assert_eq!(be_u32(&m, 16), 2);
        let p = &m[HEADER_LEN..];
        // 4 lengths, 2 flags, UUID, id, time, packed optional chunk: 59.
        assert_eq!(p.len(), 59 + 8 + 5);
        assert_eq!((be_u32(p, 0), be_u32(p, 4), be_u32(p, 8)), (8, 5, 0));
        assert_eq!(be_u32(p, 12), 0, "not live");
        assert_eq!(&p[16..18], &[0, 0]);
        assert_eq!(&p[18..34], &uuid);
        assert_eq!(be_u64(p, 34), 3);
        assert_eq!(be_u64(p, 42), 1_700_000_000);
        assert_eq!(p[50], 0, "no current chunk");
        assert_eq!(&p[59..], b"demo-12\0host\0");
        assert!(create_session_2_11(&"n".repeat(255), "h", &uuid, 1, 0).is_none());
        assert!(create_session_2_11("a\0b", "h", &uuid, 1, 0).is_none());

        let m = add_stream_2_11("c_0", "demo", 4).unwrap();
        let p = &m[HEADER_LEN..];
        assert_eq!(p.len(), 32 + 4 + 5);
        assert_eq!((be_u32(p, 0), be_u32(p, 4)), (4, 5));
        assert_eq!((be_u64(p, 8), be_u64(p, 16), be_u64(p, 24)), (0, 0, 4));
        assert_eq!(&p[32..], b"c_0\0demo\0");

        let m = create_trace_chunk(2, 99);
        assert_eq!(be_u32(&m, 16), 19);
        assert_eq!(
            &m[HEADER_LEN..],
            &[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0]
        );

        assert_eq!(rotate_streams(None, &[])[HEADER_LEN + 4], 0, "no chunk");
        let m = rotate_streams(Some(2), &[(10, 5), (11, 0)]);
        assert_eq!(be_u32(&m, 16), 18);
        let p = &m[HEADER_LEN..];
        assert_eq!(p.len(), 20 + 32);
        assert_eq!(be_u32(p, 0), 2);
        assert_eq!(&p[4..12], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(be_u64(p, 12), 2);
        let pos: Vec<u64> = (0..4).map(|k| be_u64(p, 20 + 8 * k)).collect();
        assert_eq!(pos, [10, 5, 11, 0]);

        let m = close_trace_chunk(1, 100);
        assert_eq!(be_u32(&m, 16), 20);
        let p = &m[HEADER_LEN..];
        assert_eq!(p.len(), 21);
        assert_eq!((be_u64(p, 0), be_u64(p, 8)), (1, 100));
        assert_eq!(&p[16..], &[1, 0, 0, 0, 0], "set, MOVE_TO_COMPLETED");
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
