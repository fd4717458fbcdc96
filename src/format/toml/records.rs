//! Statements and headers of a TOML file, in file order: plain vectors, with the few lookups
//! the placement and validation code makes.

/// Records of type `T`, appended in file order.
#[derive(Clone, Debug)]
pub(crate) struct Records<T>(Vec<T>);

impl<T> Default for Records<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T: Copy> Records<T> {
    /// Appends a record.
    pub(crate) fn push(&mut self, r: T) {
        self.0.push(r);
    }

    /// How many records there are.
    pub(crate) const fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub(crate) const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The record at index `i`.
    pub(crate) fn get(&self, i: usize) -> Option<T> {
        self.0.get(i).copied()
    }

    /// Every record, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = T> + Clone + '_ {
        self.0.iter().copied()
    }

    /// The records from index `i` on.
    pub(crate) fn iter_from(&self, i: usize) -> impl Iterator<Item = T> + Clone + '_ {
        self.0.get(i..).unwrap_or_default().iter().copied()
    }

    /// Every record.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<T> {
        self.0.clone()
    }

    /// The index of the last record `pred` holds for.
    pub(crate) fn rposition(&self, pred: impl FnMut(&T) -> bool) -> Option<usize> {
        self.0.iter().rposition(pred)
    }

    /// The number of leading records `pred` holds for (as `slice::partition_point`).
    pub(crate) fn partition_point(&self, pred: impl FnMut(&T) -> bool) -> usize {
        self.0.partition_point(pred)
    }
}
