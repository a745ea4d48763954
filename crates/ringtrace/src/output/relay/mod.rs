//! A client of an unmodified `lttng-relayd` (2.4 and later, 2.13 tested):
//! the control and data connections an lttng-consumerd opens, and the
//! commands it sends on them (`proto.rs`). It knows nothing of sessions or
//! buffers: the consumer (`consume/relay/`) says which streams to add and
//! which packets to send.
//!
//! Every send and every reply waits at most [`IO_TIMEOUT`]: a relayd that
//! stops reading makes a command fail (the caller drops the connection and
//! counts what it could not send), never blocks the consumer for longer.

pub mod proto;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use proto::Index;

/// lttng-relayd's default control port...
pub const DEFAULT_CONTROL_PORT: u16 = 5342;
/// ... and data port.
pub const DEFAULT_DATA_PORT: u16 = 5343;

/// Longest wait for a connection, a send or a reply.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Where a relay daemon listens: `net://HOST[:CONTROL[:DATA]]`, as `lttng
/// create --set-url` takes it (HOST a name, an IPv4 address or `[IPv6]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayUrl {
    /// Host name or address.
    pub host: String,
    /// Control port.
    pub control: u16,
    /// Data port.
    pub data: u16,
}

impl RelayUrl {
    /// Parses `net://HOST[:CONTROL[:DATA]]` (also `net6://`, `tcp://`).
    pub fn parse(s: &str) -> Result<RelayUrl, String> {
        let bad = |why: &str| {
            format!("relay URL '{s}': {why}; expected net://HOST[:CONTROL_PORT[:DATA_PORT]]")
        };
        let rest = ["net://", "net6://", "tcp://"]
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .ok_or_else(|| bad("unknown scheme"))?;
        let rest = rest.trim_end_matches('/');
        let (host, ports) = if let Some(r) = rest.strip_prefix('[') {
            let (h, after) = r
                .split_once(']')
                .ok_or_else(|| bad("no ']' after the IPv6 address"))?;
            (h.to_string(), after)
        } else {
            let h = rest.split(':').next().unwrap_or("");
            (h.to_string(), &rest[h.len()..])
        };
        if host.is_empty() || host.contains(['/', ' ']) {
            return Err(bad("no host"));
        }
        let mut nums = ports
            .strip_prefix(':')
            .map(|p| p.split(':'))
            .into_iter()
            .flatten();
        let mut port = |default: u16| -> Result<u16, String> {
            match nums.next() {
                None => Ok(default),
                Some(p) => p
                    .parse::<u16>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("bad port")),
            }
        };
        let control = port(DEFAULT_CONTROL_PORT)?;
        let data = port(control.checked_add(1).unwrap_or(DEFAULT_DATA_PORT))?;
        if nums.next().is_some() {
            return Err(bad("more than two ports"));
        }
        if !ports.is_empty() && !ports.starts_with(':') {
            return Err(bad("text after the host"));
        }
        Ok(RelayUrl {
            host,
            control,
            data,
        })
    }

    fn addrs(&self, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok((self.host.as_str(), port).to_socket_addrs()?.collect())
    }
}

impl std::fmt::Display for RelayUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "net://[{}]:{}:{}", self.host, self.control, self.data)
        } else {
            write!(f, "net://{}:{}:{}", self.host, self.control, self.data)
        }
    }
}

/// A session on a relay daemon: its control and data connections.
#[derive(Debug)]
pub struct Relay {
    control: TcpStream,
    data: TcpStream,
    /// The protocol minor both sides speak (relayd's if lower than ours).
    minor: u32,
    /// relayd's id of the session.
    pub session_id: u64,
    /// Replies of index commands sent and not read yet (see
    /// [`Relay::packet`]).
    unanswered: usize,
    /// Protocol 2.11: the trace chunk streams are added to now.
    chunk: Option<u64>,
    /// When it began, as relayd was told.
    chunk_began: SystemTime,
    /// Protocol 2.11: the session's folder, as relayd said it.
    pub output_path: String,
}

/// Now, to the second (trace chunks' times).
fn now_seconds() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(epoch_seconds(SystemTime::now()))
}

/// Seconds since the epoch of `t`.
fn epoch_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Longest path relayd may answer with (its own bound).
const MAX_PATH_REPLY: usize = 4096;

/// Index replies left unread at most: past this many, the next packet
/// waits for them (relayd, one thread for every connection, would stall
/// on a full socket of unread replies).
const MAX_UNANSWERED: usize = 64;

fn connect(url: &RelayUrl, port: u16) -> std::io::Result<TcpStream> {
    let mut last = None;
    for a in url.addrs(port)? {
        match TcpStream::connect_timeout(&a, IO_TIMEOUT) {
            Ok(s) => {
                s.set_read_timeout(Some(IO_TIMEOUT))?;
                s.set_write_timeout(Some(IO_TIMEOUT))?;
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .unwrap_or_else(|| std::io::Error::other(format!("{} resolves to no address", url.host))))
}

fn refused(what: &str, code: u32) -> std::io::Error {
    std::io::Error::other(format!("relayd refused {what} (code {code})"))
}

impl Relay {
    /// Connects both ports, agrees on the protocol version and creates
    /// session `name` of host `host` (live if `live_timer_us` is not 0).
    /// With `chunks` (a session that rotates) it speaks 2.11: relayd
    /// names the session's folder `HOST/NAME-DATE`, and streams are added
    /// to the trace chunk [`Relay::create_chunk`] opens (see the module
    /// `proto`); a relayd older than 2.11 is refused with an error of kind
    /// `Unsupported`.
    pub fn connect(
        url: &RelayUrl,
        name: &str,
        host: &str,
        live_timer_us: u32,
        chunks: bool,
    ) -> std::io::Result<Relay> {
        let too_long = || {
            std::io::Error::other(format!(
                "session name '{name}' or host name '{host}' too long for relayd (254 and 63 bytes)"
            ))
        };
        let create = match chunks {
            false => proto::create_session(name, host, live_timer_us),
            true => {
                // A session daemon's instance, as relayd keys trace chunks.
                let uuid = crate::sys::random::uuid();
                proto::create_session_2_11(name, host, &uuid, 1, epoch_seconds(now_seconds()))
            }
        }
        .ok_or_else(too_long)?;
        let mut control = connect(url, url.control)?;
        let data = connect(url, url.data)?;
        let ours = if chunks {
            proto::CHUNKS_MINOR
        } else {
            proto::MINOR
        };
        control.write_all(&proto::version(ours))?;
        let mut v = [0u8; 8];
        control.read_exact(&mut v)?;
        let (major, minor) = (proto::be_u32(&v, 0), proto::be_u32(&v, 4));
        if major != proto::MAJOR || minor < 8 {
            return Err(std::io::Error::other(format!(
                "relayd speaks protocol {major}.{minor}; ringtrace needs 2.8 or later (lttng-relayd 2.8+)"
            )));
        }
        if chunks && minor < proto::CHUNKS_MINOR {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!(
                    "relayd speaks protocol {major}.{minor}: it has no trace chunks, so it cannot \
                     rotate a session (lttng-relayd 2.11 or later can); stream without rotation, \
                     or rotate a local trace"
                ),
            ));
        }
        let mut r = Relay {
            control,
            data,
            minor: minor.min(ours),
            session_id: 0,
            unanswered: 0,
            chunk: None,
            chunk_began: UNIX_EPOCH,
            output_path: String::new(),
        };
        r.control.write_all(&create)?;
        let mut reply = [0u8; 12];
        r.control.read_exact(&mut reply)?;
        let code = proto::be_u32(&reply, 8);
        if chunks {
            r.output_path = r.read_path()?;
        }
        if code != proto::LTTNG_OK {
            return Err(refused("the session", code));
        }
        r.session_id = proto::be_u64(&reply, 0);
        Ok(r)
    }

    /// A 2.11 reply's path: its length (NUL included), then its bytes.
    fn read_path(&mut self) -> std::io::Result<String> {
        let mut l = [0u8; 4];
        self.control.read_exact(&mut l)?;
        let len = proto::be_u32(&l, 0) as usize;
        if len > MAX_PATH_REPLY {
            return Err(std::io::Error::other(format!(
                "relayd answered a path of {len} bytes (at most {MAX_PATH_REPLY})"
            )));
        }
        let mut p = vec![0u8; len];
        self.control.read_exact(&mut p)?;
        let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
        Ok(String::from_utf8_lossy(&p[..end]).into_owned())
    }

    /// Protocol 2.11: the trace chunk streams are added to now.
    pub fn chunk(&self) -> Option<u64> {
        self.chunk
    }

    /// Protocol 2.11: opens trace chunk `id`, where streams are added from
    /// now on (the first one is the session's folder itself).
    pub fn create_chunk(&mut self, id: u64) -> std::io::Result<()> {
        self.collect(true)?;
        let began = now_seconds();
        self.control
            .write_all(&proto::create_trace_chunk(id, epoch_seconds(began)))?;
        self.reply(&format!("trace chunk {id}"))?;
        self.chunk = Some(id);
        self.chunk_began = began;
        Ok(())
    }

    /// Protocol 2.11: moves streams to chunk `next` (`None`: out of any
    /// chunk, their files closed), each `(stream, seq)` from its packet
    /// `seq` on (the metadata stream at once).
    pub fn rotate_streams(
        &mut self,
        next: Option<u64>,
        positions: &[(u64, u64)],
    ) -> std::io::Result<()> {
        self.collect(true)?;
        self.control
            .write_all(&proto::rotate_streams(next, positions))?;
        self.reply("the rotation of the streams")
    }

    /// Protocol 2.11: closes trace chunk `id`, which relayd moves to
    /// `archives/` once its streams have left it; returns where (relayd's
    /// path).
    pub fn close_chunk(&mut self, id: u64) -> std::io::Result<String> {
        self.collect(true)?;
        let end = now_seconds();
        self.control
            .write_all(&proto::close_trace_chunk(id, epoch_seconds(end)))?;
        let mut r = [0u8; 4];
        self.control.read_exact(&mut r)?;
        let code = proto::be_u32(&r, 0);
        let path = self.read_path()?;
        if code != proto::LTTNG_OK {
            return Err(refused(&format!("the close of trace chunk {id}"), code));
        }
        if self.chunk == Some(id) {
            self.chunk = None;
        }
        // The session's first chunk was its folder: relayd answers that
        // folder, and moves the chunk to `archives/`, named as LTTng names
        // archives (relayd's local time: ours, on one host).
        if path.contains("/archives/") {
            return Ok(path);
        }
        Ok(format!(
            "{path}/archives/{}-{}-{id}",
            super::iso_local_time(self.chunk_began),
            super::iso_local_time(end)
        ))
    }

    /// The protocol version in use.
    pub fn version(&self) -> (u32, u32) {
        (proto::MAJOR, self.minor)
    }

    /// Reads the replies of the index commands sent so far: all of them
    /// (`wait`), or those already here.
    fn collect(&mut self, wait: bool) -> std::io::Result<()> {
        use std::os::unix::io::AsRawFd;
        while self.unanswered > 0 {
            let mut r = [0u8; 4];
            if !wait {
                // SAFETY: a 4-byte buffer we own; the socket is open. Only
                // a whole reply is taken (MSG_PEEK first), so a partial one
                // stays for the blocking read.
                let n = unsafe {
                    libc::recv(
                        self.control.as_raw_fd(),
                        r.as_mut_ptr().cast(),
                        4,
                        libc::MSG_DONTWAIT | libc::MSG_PEEK,
                    )
                };
                if n < 4 {
                    return Ok(());
                }
            }
            self.unanswered -= 1;
            self.reply("a packet index")?;
        }
        Ok(())
    }

    fn reply(&mut self, what: &str) -> std::io::Result<()> {
        let mut r = [0u8; 4];
        self.control.read_exact(&mut r)?;
        match proto::be_u32(&r, 0) {
            proto::LTTNG_OK => Ok(()),
            code => Err(refused(what, code)),
        }
    }

    /// Adds stream file `channel` in folder `path` (relative to relayd's
    /// output); returns relayd's id of the stream.
    /// (Protocol 2.11: relative to the current trace chunk's folder.)
    pub fn add_stream(&mut self, channel: &str, path: &str) -> std::io::Result<u64> {
        self.collect(true)?;
        let m = match self.chunk {
            None => proto::add_stream(channel, path),
            Some(c) => proto::add_stream_2_11(channel, path, c),
        };
        let m = m.ok_or_else(|| {
            std::io::Error::other(format!("stream path too long: {path}/{channel}"))
        })?;
        self.control.write_all(&m)?;
        let mut r = [0u8; 12];
        self.control.read_exact(&mut r)?;
        match proto::be_u32(&r, 8) {
            proto::LTTNG_OK => Ok(proto::be_u64(&r, 0)),
            code => Err(refused(&format!("stream {path}/{channel}"), code)),
        }
    }

    /// Publishes the streams added so far to live viewers.
    pub fn streams_sent(&mut self) -> std::io::Result<()> {
        self.collect(true)?;
        self.control.write_all(&proto::streams_sent())?;
        self.reply("the streams")
    }

    /// Appends `text` to metadata stream `stream` (relayd does not answer).
    pub fn metadata(&mut self, stream: u64, text: &[u8]) -> std::io::Result<()> {
        self.control.write_all(&proto::metadata(stream, text))
    }

    /// Empties metadata stream `stream` before the whole metadata is sent
    /// again (version `version`).
    pub fn reset_metadata(&mut self, stream: u64, version: u64) -> std::io::Result<()> {
        self.collect(true)?;
        self.control
            .write_all(&proto::reset_metadata(stream, version))?;
        self.reply("the metadata reset")
    }

    /// Sends packet `net_seq` of `stream`: its first `content` bytes on the
    /// data connection (relayd writes `padding` zero bytes after them), then
    /// its index on the control connection, whose reply is read with the
    /// next command's (an error in it fails that command).
    pub fn packet(
        &mut self,
        stream: u64,
        net_seq: u64,
        content: &[u8],
        padding: u32,
        index: &Index,
    ) -> std::io::Result<()> {
        let len =
            u32::try_from(content.len()).map_err(|_| std::io::Error::other("packet over 4 GiB"))?;
        let mut h = proto::data_header(stream, net_seq, len);
        h[28..32].copy_from_slice(&padding.to_be_bytes());
        let parts = [std::io::IoSlice::new(&h), std::io::IoSlice::new(content)];
        write_all_vectored(&mut self.data, &parts)?;
        self.control
            .write_all(&proto::index(stream, net_seq, index))?;
        self.reply("a packet index")
    }

    /// A live beacon: `stream` has nothing new up to `timestamp_end` (CTF
    /// stream class `stream_class`), so viewers need not wait for it.
    pub fn beacon(
        &mut self,
        stream: u64,
        stream_class: u64,
        timestamp_end: u64,
    ) -> std::io::Result<()> {
        let i = Index {
            timestamp_end,
            stream_id: stream_class,
            ..Index::default()
        };
        self.control.write_all(&proto::index(stream, 0, &i))?;
        self.unanswered += 1;
        self.collect(self.unanswered > MAX_UNANSWERED)
    }

    /// Whether relayd has not yet written every packet of `stream` up to
    /// `last_net_seq`.
    pub fn data_pending(&mut self, stream: u64, last_net_seq: u64) -> std::io::Result<bool> {
        self.collect(true)?;
        self.control
            .write_all(&proto::data_pending(stream, last_net_seq))?;
        let mut r = [0u8; 4];
        self.control.read_exact(&mut r)?;
        // 1: pending; 0: written; anything else (-1: no such stream, it
        // closed after its last packet): nothing to wait for.
        Ok(proto::be_u32(&r, 0) == 1)
    }

    /// Closes `stream` after packet `last_net_seq`.
    pub fn close_stream(&mut self, stream: u64, last_net_seq: u64) -> std::io::Result<()> {
        self.collect(true)?;
        self.control
            .write_all(&proto::close_stream(stream, last_net_seq))?;
        self.reply("the stream's close")
    }
}

/// `write_all` of several slices in one `sendmsg` (header and packet in
/// one system call in the usual case), with `MSG_NOSIGNAL`: a relayd gone
/// away must give an error, not a `SIGPIPE` that kills the traced program
/// (`writev`, which `write_vectored` uses, would raise it).
fn write_all_vectored(out: &mut TcpStream, parts: &[std::io::IoSlice<'_>]) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        // The bytes from `done` on.
        let mut skip = done;
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(parts.len());
        for p in parts {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            let rest = &p[skip..];
            iov.push(libc::iovec {
                iov_base: rest.as_ptr() as *mut libc::c_void,
                iov_len: rest.len(),
            });
            skip = 0;
        }
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len() as _;
        // SAFETY: the descriptor is the open socket `out` owns; the iovecs
        // point into `parts`, borrowed for the call, and the kernel only
        // reads them.
        let n = unsafe { libc::sendmsg(out.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = |s: &str| RelayUrl::parse(s);
        assert_eq!(
            u("net://relay.example").unwrap(),
            RelayUrl {
                host: "relay.example".into(),
                control: 5342,
                data: 5343
            }
        );
        assert_eq!(u("net://127.0.0.1:6000").unwrap().data, 6001);
        let v = u("net://127.0.0.1:6000:7000").unwrap();
        assert_eq!((v.control, v.data), (6000, 7000));
        let v6 = u("net6://[::1]:6000:7000").unwrap();
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.to_string(), "net://[::1]:6000:7000");
        assert_eq!(v.to_string(), "net://127.0.0.1:6000:7000");
        for bad in [
            "file:///tmp",
            "net://",
            "net://h:0",
            "net://h:70000",
            "net://h:1:2:3",
            "net://[::1",
            "net://h:x",
        ] {
            let e = u(bad).unwrap_err();
            assert!(e.contains("net://HOST"), "{bad}: {e}");
        }
    }
}
