//! The state dump's events, declared as LTTng-UST 2.13 declares them
//! (`lttng_ust_statedump:*`: same names, field names and CTF types), so
//! that babeltrace2's `flt.lttng-utils.debug-info` and Trace Compass read
//! ringtrace's dumps as theirs:
//!
//! ```text
//! start       (no field)
//! procname    procname: char[16] text
//! bin_info    baddr: u64 hex, memsz: u64, path: string, is_pic: u8, has_build_id: u8, has_debug_link: u8
//! build_id    baddr: u64 hex, build_id: u8 hex sequence (u64 length)
//! debug_link  baddr: u64 hex, crc: u32, filename: string
//! end         (no field)
//!
//! lttng_ust_lib:load        baddr, memsz, path, has_build_id, has_debug_link (as bin_info)
//! lttng_ust_lib:build_id    as build_id above
//! lttng_ust_lib:debug_link  as debug_link above
//! lttng_ust_lib:unload      baddr
//! ```
//!
//! These descriptors are not the program's call sites: no rule enables
//! them and no probe list holds them. The dump records them directly into
//! the channels of the session it is made for (`mod.rs`), as LTTng-UST
//! records a dump only into the session that asked for it.

use std::sync::OnceLock;

use ctf::types::{Field, FieldType, IntType};
use ringtrace_core::desc::{EventDesc, FieldDesc};
use ringtrace_core::field::FieldKind;
use ringtrace_core::level::Level;

/// The state dump's provider name.
pub const PROVIDER: &str = "lttng_ust_statedump";

/// The provider of objects loaded and unloaded after a dump.
const LIB_PROVIDER: &str = "lttng_ust_lib";

/// The six descriptors.
pub(crate) struct Descs {
    pub(crate) start: &'static EventDesc,
    pub(crate) procname: &'static EventDesc,
    pub(crate) bin_info: &'static EventDesc,
    pub(crate) build_id: &'static EventDesc,
    pub(crate) debug_link: &'static EventDesc,
    pub(crate) end: &'static EventDesc,
    /// `lttng_ust_lib:load`: `bin_info` without `is_pic`.
    pub(crate) lib_load: &'static EventDesc,
    pub(crate) lib_build_id: &'static EventDesc,
    pub(crate) lib_debug_link: &'static EventDesc,
    /// `lttng_ust_lib:unload`: `baddr` alone.
    pub(crate) lib_unload: &'static EventDesc,
}

/// The descriptors, made once (they live as long as the program).
pub(crate) fn descs() -> &'static Descs {
    static DESCS: OnceLock<Descs> = OnceLock::new();
    DESCS.get_or_init(|| {
        let u = |bits| IntType::unsigned(bits);
        let hex = |bits| IntType {
            base: 16,
            ..u(bits)
        };
        let baddr = ("baddr", FieldType::Int(hex(64)));
        let build_id = vec![
            baddr.clone(),
            (
                "build_id",
                FieldType::SequenceOf {
                    len: u(64),
                    elem: hex(8),
                },
            ),
        ];
        let debug_link = vec![
            baddr.clone(),
            ("crc", FieldType::Int(u(32))),
            ("filename", FieldType::String),
        ];
        let lib = |name, fields| desc(LIB_PROVIDER, name, fields);
        let desc = |name, fields| desc(PROVIDER, name, fields);
        Descs {
            lib_load: lib(
                "load",
                vec![
                    baddr.clone(),
                    ("memsz", FieldType::Int(u(64))),
                    ("path", FieldType::String),
                    ("has_build_id", FieldType::Int(u(8))),
                    ("has_debug_link", FieldType::Int(u(8))),
                ],
            ),
            lib_build_id: lib("build_id", build_id.clone()),
            lib_debug_link: lib("debug_link", debug_link.clone()),
            lib_unload: lib("unload", vec![baddr.clone()]),
            start: desc("start", vec![]),
            procname: desc("procname", vec![("procname", FieldType::Text(16))]),
            bin_info: desc(
                "bin_info",
                vec![
                    baddr.clone(),
                    ("memsz", FieldType::Int(u(64))),
                    ("path", FieldType::String),
                    ("is_pic", FieldType::Int(u(8))),
                    ("has_build_id", FieldType::Int(u(8))),
                    ("has_debug_link", FieldType::Int(u(8))),
                ],
            ),
            build_id: desc("build_id", build_id),
            debug_link: desc("debug_link", debug_link),
            end: desc("end", vec![]),
        }
    })
}

/// A descriptor of `provider`'s event `name` with `fields`, leaked (made
/// once per process).
fn desc(
    provider: &'static str,
    name: &'static str,
    fields: Vec<(&'static str, FieldType)>,
) -> &'static EventDesc {
    let fields: Vec<FieldDesc> = fields
        .into_iter()
        .map(|(n, ty)| FieldDesc {
            name: n,
            kind: FieldKind::Ctf(Box::leak(Box::new(Field::new(n, ty)))),
        })
        .collect();
    Box::leak(Box::new(EventDesc::new(
        provider,
        name,
        // What LTTng-UST gives an event declared without a level.
        Level::DebugLine,
        Box::leak(fields.into_boxed_slice()),
        file!(),
        line!(),
    )))
}

/// A payload in the fields' order and encoding (little-endian, packed).
#[derive(Default)]
pub(crate) struct Payload(pub(crate) Vec<u8>);

impl Payload {
    pub(crate) fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }

    pub(crate) fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A NUL-terminated string (cut at an interior NUL).
    pub(crate) fn str(mut self, s: &str) -> Self {
        let b = s.as_bytes();
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        self.0.extend_from_slice(&b[..end]);
        self.0.push(0);
        self
    }

    /// `n` bytes of text, NUL-padded (cut to `n - 1`).
    pub(crate) fn text(mut self, s: &str, n: usize) -> Self {
        let b = s.as_bytes();
        let len = b.len().min(n - 1);
        self.0.extend_from_slice(&b[..len]);
        self.0.resize(self.0.len() + n - len, 0);
        self
    }

    /// A u64 length, then the bytes.
    pub(crate) fn bytes(mut self, b: &[u8]) -> Self {
        self = self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
}
