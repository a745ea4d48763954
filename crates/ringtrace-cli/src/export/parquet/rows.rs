//! Rows of the Parquet export held column by column until a row group is
//! full, then written with the `parquet` crate's column writers (values
//! and definition levels: 1 for a value, 0 for a null).

use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

use super::schema::{Column, Kind};

/// Rows per row group: 262,144 events (about 20 MiB of buffers each).
pub(super) const ROW_GROUP: usize = 1 << 18;

/// One column's values so far.
enum Vals {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Bytes(Vec<ByteArray>),
}

struct Buf {
    vals: Vals,
    /// Definition levels (optional columns only).
    defs: Vec<i16>,
    required: bool,
}

/// A value for a column.
pub(super) enum Cell {
    I64(i64),
    F64(f64),
    Bool(bool),
    Bytes(ByteArray),
}

/// The rows not yet written.
pub(super) struct Rows {
    bufs: Vec<Buf>,
    /// Rows begun.
    pub len: usize,
}

impl Rows {
    /// Empty buffers for `columns`.
    pub fn new(columns: &[Column]) -> Rows {
        Rows {
            bufs: columns
                .iter()
                .map(|c| Buf {
                    vals: match c.kind {
                        Kind::I64 | Kind::U64 | Kind::Time => Vals::I64(Vec::new()),
                        Kind::F64 => Vals::F64(Vec::new()),
                        Kind::Bool => Vals::Bool(Vec::new()),
                        Kind::Str => Vals::Bytes(Vec::new()),
                    },
                    defs: Vec::new(),
                    required: c.required,
                })
                .collect(),
            len: 0,
        }
    }

    /// Begins a row: the caller then sets or nulls every column, the
    /// required ones set.
    pub fn begin(&mut self) {
        self.len += 1;
    }

    /// Sets column `i` of the current row (the first value set wins: a
    /// class with two fields of one name and kind keeps the first).
    pub fn set(&mut self, i: usize, c: Cell) {
        let b = &mut self.bufs[i];
        if !b.required {
            if b.defs.len() == self.len {
                return;
            }
            b.defs.push(1);
        }
        match (&mut b.vals, c) {
            (Vals::I64(v), Cell::I64(x)) => v.push(x),
            (Vals::F64(v), Cell::F64(x)) => v.push(x),
            (Vals::Bool(v), Cell::Bool(x)) => v.push(x),
            (Vals::Bytes(v), Cell::Bytes(x)) => v.push(x),
            // The schema gives each field the column of its kind.
            _ => unreachable!("a cell of another kind than its column"),
        }
    }

    /// Column `i` (optional) is null in the current row.
    pub fn null(&mut self, i: usize) {
        let b = &mut self.bufs[i];
        if b.defs.len() < self.len {
            b.defs.push(0);
        }
    }

    /// Nulls in the optional columns the current row did not set (rows
    /// whose columns were all set or nulled are left as they are).
    fn end(&mut self) {
        for b in &mut self.bufs {
            if !b.required && b.defs.len() < self.len {
                b.defs.push(0);
            }
        }
    }

    /// Writes the rows as one row group of `w` and empties the buffers.
    pub fn flush<W: std::io::Write + Send>(
        &mut self,
        w: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
        self.end();
        if self.len == 0 {
            return Ok(());
        }
        let mut rg = w.next_row_group()?;
        let mut bufs = self.bufs.iter_mut();
        while let Some(mut col) = rg.next_column()? {
            let b = bufs
                .next()
                .ok_or_else(|| ParquetError::General("more columns than buffers".into()))?;
            let defs = (!b.required).then_some(&b.defs[..]);
            match (col.untyped(), &mut b.vals) {
                (ColumnWriter::Int64ColumnWriter(w), Vals::I64(v)) => {
                    w.write_batch(v, defs, None)?;
                    v.clear();
                }
                (ColumnWriter::DoubleColumnWriter(w), Vals::F64(v)) => {
                    w.write_batch(v, defs, None)?;
                    v.clear();
                }
                (ColumnWriter::BoolColumnWriter(w), Vals::Bool(v)) => {
                    w.write_batch(v, defs, None)?;
                    v.clear();
                }
                (ColumnWriter::ByteArrayColumnWriter(w), Vals::Bytes(v)) => {
                    w.write_batch(v, defs, None)?;
                    v.clear();
                }
                _ => return Err(ParquetError::General("a column of another type".into())),
            }
            b.defs.clear();
            col.close()?;
        }
        rg.close()?;
        self.len = 0;
        Ok(())
    }
}
