//! Event ids to event classes, in memory proportional to the classes a
//! metadata declares (not to the range of their ids).

/// Event id → event class index: a vector indexed by id when the ids are
/// dense (ringtrace's and LTTng's are: 0, 1, 2, …), sorted pairs searched
/// otherwise, so that a metadata naming ids in the millions costs memory
/// for the classes it declares, not for the ids' range.
#[derive(Debug, Clone)]
pub(super) enum IdTable {
    Dense(Vec<Option<usize>>),
    Sparse(Vec<(u64, usize)>),
}

impl IdTable {
    pub(super) fn new(mut pairs: Vec<(u64, usize)>) -> IdTable {
        let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
        if max < 2 * pairs.len() as u64 + 64 {
            let mut v = vec![None; max as usize + 1];
            for (id, k) in pairs {
                v[id as usize] = Some(k);
            }
            IdTable::Dense(v)
        } else {
            pairs.sort_unstable();
            IdTable::Sparse(pairs)
        }
    }

    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<usize> {
        match self {
            IdTable::Dense(v) => usize::try_from(id)
                .ok()
                .and_then(|i| v.get(i).copied().flatten()),
            IdTable::Sparse(v) => v.binary_search_by_key(&id, |p| p.0).ok().map(|i| v[i].1),
        }
    }
}
