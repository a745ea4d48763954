//! Rows of the Parquet export, held until a row group is full, grouped by
//! event class: each class keeps the columns it fills (every event of a
//! class fills the same ones), so a row costs no null bookkeeping, and a
//! row group is written class after class, in time order within each.
//! The columns a class leaves empty are then long runs of nulls, which
//! cost nearly nothing, and a class's values sit together (request ids
//! that grow by one, a status that repeats): the file is about a quarter
//! smaller than in time order. Readers order by `timestamp` as they
//! need; a row group's statistics still bound its times.
//!
//! The event name column is the class itself, and the thread name column
//! holds indices into a dictionary the reader keeps (`Rows::dicts`): the
//! writing thread turns both into strings, so the reader touches no
//! shared string per event.

use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

use super::schema::{Column, Kind, EVENT, THREAD};

/// Rows per row group: 262,144 events (about 20 MiB of buffers each).
pub(super) const ROW_GROUP: usize = 1 << 18;

/// One column's values so far.
enum Vals {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Bytes(Vec<ByteArray>),
    /// Indices into the column's dictionary.
    Dict(Vec<u32>),
}

impl Vals {
    fn of(kind: Kind, dict: bool) -> Vals {
        match kind {
            _ if dict => Vals::Dict(Vec::new()),
            Kind::I64 | Kind::U64 | Kind::Time => Vals::I64(Vec::new()),
            Kind::F64 => Vals::F64(Vec::new()),
            Kind::Bool => Vals::Bool(Vec::new()),
            Kind::Str => Vals::Bytes(Vec::new()),
        }
    }

    fn clear(&mut self) {
        match self {
            Vals::I64(v) => v.clear(),
            Vals::F64(v) => v.clear(),
            Vals::Bool(v) => v.clear(),
            Vals::Bytes(v) => v.clear(),
            Vals::Dict(v) => v.clear(),
        }
    }
}

/// A value for a column.
pub(super) enum Cell {
    I64(i64),
    F64(f64),
    Bool(bool),
    Bytes(ByteArray),
    /// Entry of the column's dictionary.
    Dict(u32),
    /// No value (a context that is not a number, say).
    Null,
}

/// The rows of one event class: the columns it fills, in the order the
/// reader gives them, and their values.
pub(super) struct ClassRows {
    cols: Vec<usize>,
    vals: Vec<Vals>,
    /// Per column, its definition levels once it had a null (until then
    /// every row has a value).
    defs: Vec<Option<Vec<i16>>>,
    /// The next value of the current row goes to `vals[at]`.
    at: usize,
    n: usize,
}

impl ClassRows {
    /// The next value of the current row (in the order of the class's
    /// plan: see [`Rows::new`]).
    #[inline(always)]
    pub fn push(&mut self, c: Cell) {
        let at = self.at;
        self.at += 1;
        match (&mut self.vals[at], c) {
            (Vals::I64(v), Cell::I64(x)) => v.push(x),
            (Vals::F64(v), Cell::F64(x)) => v.push(x),
            (Vals::Bool(v), Cell::Bool(x)) => v.push(x),
            (Vals::Bytes(v), Cell::Bytes(x)) => v.push(x),
            (Vals::Dict(v), Cell::Dict(x)) => v.push(x),
            (_, Cell::Null) => {
                match &mut self.defs[at] {
                    Some(d) => d.push(0),
                    None => self.first_null(at),
                }
                return;
            }
            // The schema gives each field the column of its kind.
            _ => unreachable!("a cell of another kind than its column"),
        }
        if let Some(d) = &mut self.defs[at] {
            d.push(1);
        }
    }

    /// The next value of the current row, an integer (time, CPU, ids and
    /// integer fields: most values), without building a [`Cell`].
    #[inline(always)]
    pub fn push_i64(&mut self, x: i64) {
        let at = self.at;
        self.at += 1;
        match &mut self.vals[at] {
            Vals::I64(v) => v.push(x),
            _ => unreachable!("an integer for a column of another kind"),
        }
        if let Some(d) = &mut self.defs[at] {
            d.push(1);
        }
    }

    /// Column `at`'s first null, in the current row: the rows before had
    /// values.
    #[cold]
    fn first_null(&mut self, at: usize) {
        let mut d = vec![1i16; self.n];
        d.push(0);
        self.defs[at] = Some(d);
    }
}

/// The rows not yet written.
pub(super) struct Rows {
    classes: Vec<ClassRows>,
    columns: Vec<Column>,
    /// Rows in all classes.
    pub len: usize,
    /// Per column, the dictionary its indices refer to: the thread names
    /// (set before the rows are written), and the event names (by class).
    pub dicts: Vec<Vec<ByteArray>>,
}

impl Rows {
    /// Empty rows for `columns`; `plans[k]` lists the columns event class
    /// `k` fills, in the order its values will be pushed (the event name
    /// column is the class itself and is not in it).
    pub fn new(columns: &[Column], plans: &[Vec<usize>]) -> Rows {
        Rows {
            classes: plans
                .iter()
                .map(|p| ClassRows {
                    cols: p.clone(),
                    vals: p
                        .iter()
                        .map(|&c| Vals::of(columns[c].kind, c == THREAD))
                        .collect(),
                    defs: vec![None; p.len()],
                    at: 0,
                    n: 0,
                })
                .collect(),
            columns: columns.to_vec(),
            len: 0,
            dicts: vec![Vec::new(); columns.len()],
        }
    }

    /// Begins a row of class `k`: push its values in the plan's order,
    /// then call [`Rows::end_row`].
    #[inline]
    pub fn row(&mut self, k: usize) -> &mut ClassRows {
        &mut self.classes[k]
    }

    /// Ends the row of class `k` begun last; planned values not pushed
    /// (an event whose payload was cut short) are nulls.
    #[inline]
    pub fn end_row(&mut self, k: usize) {
        let c = &mut self.classes[k];
        while c.at < c.cols.len() {
            c.push(Cell::Null);
        }
        c.at = 0;
        c.n += 1;
        self.len += 1;
    }

    /// Empty rows of the same plans, reusing `old`'s buffers if it has
    /// them (a row group written), else new ones.
    pub fn fresh(&self, old: Option<Rows>) -> Rows {
        match old {
            Some(o) if o.len == 0 && o.plans_equal(self) => o,
            _ => Rows {
                classes: self
                    .classes
                    .iter()
                    .map(|c| ClassRows {
                        cols: c.cols.clone(),
                        vals: c
                            .cols
                            .iter()
                            .map(|&k| Vals::of(self.columns[k].kind, k == THREAD))
                            .collect(),
                        defs: vec![None; c.cols.len()],
                        at: 0,
                        n: 0,
                    })
                    .collect(),
                columns: self.columns.clone(),
                len: 0,
                dicts: vec![Vec::new(); self.columns.len()],
            },
        }
    }

    fn plans_equal(&self, o: &Rows) -> bool {
        self.columns == o.columns
            && self.classes.len() == o.classes.len()
            && self
                .classes
                .iter()
                .zip(&o.classes)
                .all(|(a, b)| a.cols == b.cols)
    }

    /// Writes the rows as one row group of `w` and empties the buffers.
    pub fn flush<W: std::io::Write + Send>(
        &mut self,
        w: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
        if self.len == 0 {
            return Ok(());
        }
        let most = self.classes.iter().map(|c| c.n).max().unwrap_or(0);
        let (ones, zeros) = (vec![1i16; most], vec![0i16; most]);
        let mut rg = w.next_row_group()?;
        let mut ci = 0;
        while let Some(mut col) = rg.next_column()? {
            let column = self
                .columns
                .get(ci)
                .ok_or_else(|| ParquetError::General("more columns than buffers".into()))?;
            let required = column.required;
            for (k, class) in self.classes.iter_mut().enumerate() {
                let n = class.n;
                if n == 0 {
                    continue;
                }
                let slot = class.cols.iter().position(|&c| c == ci);
                let defs = match slot.and_then(|s| class.defs[s].as_deref()) {
                    Some(_) if required => {
                        return Err(ParquetError::General(format!(
                            "a null in required column {}",
                            column.name
                        )))
                    }
                    Some(d) => Some(d),
                    None => (!required).then_some(&ones[..n]),
                };
                match (col.untyped(), slot.map(|s| &mut class.vals[s])) {
                    (ColumnWriter::ByteArrayColumnWriter(w), None) if ci == EVENT => {
                        let name = self.dicts[EVENT].get(k).cloned().ok_or_else(|| {
                            ParquetError::General("an event class without a name".into())
                        })?;
                        w.write_batch(&vec![name; n], defs, None)?;
                    }
                    (_, None) if required => {
                        return Err(ParquetError::General(format!(
                            "event class {k} has no value for required column {}",
                            column.name
                        )))
                    }
                    // Not a column of this class: nulls.
                    (ColumnWriter::Int64ColumnWriter(w), None) => {
                        w.write_batch(&[], Some(&zeros[..n]), None)?;
                    }
                    (ColumnWriter::DoubleColumnWriter(w), None) => {
                        w.write_batch(&[], Some(&zeros[..n]), None)?;
                    }
                    (ColumnWriter::BoolColumnWriter(w), None) => {
                        w.write_batch(&[], Some(&zeros[..n]), None)?;
                    }
                    (ColumnWriter::ByteArrayColumnWriter(w), None) => {
                        w.write_batch(&[], Some(&zeros[..n]), None)?;
                    }
                    (ColumnWriter::Int64ColumnWriter(w), Some(Vals::I64(v))) => {
                        w.write_batch(v, defs, None)?;
                    }
                    (ColumnWriter::DoubleColumnWriter(w), Some(Vals::F64(v))) => {
                        w.write_batch(v, defs, None)?;
                    }
                    (ColumnWriter::BoolColumnWriter(w), Some(Vals::Bool(v))) => {
                        w.write_batch(v, defs, None)?;
                    }
                    (ColumnWriter::ByteArrayColumnWriter(w), Some(Vals::Bytes(v))) => {
                        w.write_batch(v, defs, None)?;
                    }
                    (ColumnWriter::ByteArrayColumnWriter(w), Some(Vals::Dict(v))) => {
                        let dict = &self.dicts[ci];
                        let strings = v
                            .iter()
                            .map(|&x| dict.get(x as usize).cloned())
                            .collect::<Option<Vec<ByteArray>>>()
                            .ok_or_else(|| {
                                ParquetError::General("an index past its dictionary".into())
                            })?;
                        w.write_batch(&strings, defs, None)?;
                    }
                    _ => return Err(ParquetError::General("a column of another type".into())),
                }
            }
            col.close()?;
            ci += 1;
        }
        rg.close()?;
        for c in &mut self.classes {
            c.vals.iter_mut().for_each(Vals::clear);
            c.defs.iter_mut().for_each(|d| *d = None);
            c.n = 0;
        }
        self.len = 0;
        Ok(())
    }
}
