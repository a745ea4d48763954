//! How stream files are written ([`FileIo`], chosen per session) and
//! what the consumer tells a stream file of each packet ([`Hint`]); the
//! writing itself is `stream.rs`.

/// How stream files are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum FileIo {
    /// Direct I/O for a fast stream, the page cache for a slow one: a
    /// packet that holds at least half its sub-buffer (the writers, not a
    /// timer, filled it), and the packet right after one (the timer or the
    /// end caught a fast stream), is padded to the block and written
    /// directly; any other goes through the page cache unpadded, and its
    /// file stays buffered from then on. The fast streams, where the
    /// consumer's CPU matters, get direct I/O (a third of the CPU per
    /// byte), the slow ones no padding (BENCHMARKS.md, "Buffered, direct and auto I/O").
    Auto,
    /// Direct I/O (`O_DIRECT`) where the file system supports it, every
    /// packet padded to its block; buffered writes elsewhere.
    Direct,
    /// Through the page cache (`write` from the sub-buffer); packets end
    /// with their content. The default:
    /// on an AMD EPYC virtual machine (the CI's kind), whose disk takes a
    /// 1 MiB direct write in 0.8 ms and often in 2-5 ms, [`FileIo::Auto`]
    /// lost records in more runs than this (BENCHMARKS.md, "Buffered,
    /// direct and auto I/O"). (A live reader that saw a stream seconds
    /// late with direct writes was a consumer blocked in a direct write
    /// behind the page cache's writeback: `writeback.rs`, `turns.rs`.)
    #[default]
    Buffered,
}

impl FileIo {
    /// `auto`, `direct` or `buffered`, as `RINGTRACE_SESSION`'s `io=` and
    /// the command's `--io` take it.
    pub fn parse(s: &str) -> Result<FileIo, String> {
        match s {
            "auto" => Ok(FileIo::Auto),
            "direct" => Ok(FileIo::Direct),
            "buffered" => Ok(FileIo::Buffered),
            _ => Err(format!("io={s}: expected auto, direct or buffered")),
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            FileIo::Auto => "auto",
            FileIo::Direct => "direct",
            FileIo::Buffered => "buffered",
        }
    }
}

/// What the consumer knows of a packet it appends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hint {
    /// The consumer is behind the writers: the packet should go out the
    /// way that returns soonest (a direct file takes it through the page
    /// cache).
    pub behind: bool,
    /// The packet holds at least half its sub-buffer (the writers, not a
    /// timer, filled it): with [`FileIo::Auto`], the file's next packet is
    /// padded to stay direct whatever its length.
    pub fast: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_io_names() {
        assert_eq!(FileIo::parse("direct"), Ok(FileIo::Direct));
        assert_eq!(FileIo::parse("buffered"), Ok(FileIo::Buffered));
        assert_eq!(FileIo::parse("auto"), Ok(FileIo::Auto));
        assert!(FileIo::parse("fast")
            .unwrap_err()
            .contains("auto, direct or buffered"));
        assert_eq!(FileIo::default().name(), "buffered");
    }
}
