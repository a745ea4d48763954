//! Reading a stream without decoding every payload: `stats` steps over
//! them all, the symbol resolver decodes those of a few classes.

use super::StreamReader;

/// How [`StreamReader::skip_payloads`] steps over an event class's payload.
#[derive(Debug, Clone, Copy)]
pub(super) enum Skip {
    /// It always takes this many bytes.
    Fixed(usize),
    /// Field by field, measuring strings and sequences.
    Walk,
    /// Decoded: it holds a variant (whose size is its tag's doing), or
    /// its values are wanted ([`StreamReader::skip_payloads_except`]).
    Decode,
}

impl StreamReader {
    /// From now on, event payloads are stepped over, not decoded: each
    /// event's values are empty (its class, time, CPU and stream context
    /// are still there). For readers that count, such as `stats`; a payload
    /// of fixed size is one bounds check.
    pub fn skip_payloads(mut self) -> Self {
        self.fixed_payload = Some(
            self.desc
                .events
                .iter()
                .map(|c| {
                    // An aligned field's padding depends on where it is.
                    let fixed = c.fields.iter().try_fold(0usize, |n, f| {
                        (f.align == 1).then_some(())?;
                        n.checked_add(crate::value::fixed_size(&f.ty)?)
                    });
                    match fixed {
                        Some(n) => Skip::Fixed(n),
                        // A variant's size is its tag's doing: decoded.
                        None if c.fields.iter().any(|f| crate::value::has_variant(&f.ty)) => {
                            Skip::Decode
                        }
                        None => Skip::Walk,
                    }
                })
                .collect(),
        );
        self
    }

    /// [`StreamReader::skip_payloads`], but the payloads of the event
    /// classes `keep` names are decoded: a reader that needs the values of
    /// a few classes (the state dump's, for symbols) pays for those only.
    pub fn skip_payloads_except(
        mut self,
        keep: impl Fn(&crate::types::EventClass) -> bool,
    ) -> Self {
        self = self.skip_payloads();
        if let Some(f) = &mut self.fixed_payload {
            for (skip, c) in f.iter_mut().zip(&self.desc.events) {
                if keep(c) {
                    *skip = Skip::Decode;
                }
            }
        }
        self
    }
}
