//! The keys of the open mappings, innermost last, about 5 bytes a key: when a mapping closes,
//! its keys that occur more than once in it go to the output (the only ones `duplicate-key`
//! looks at), so a large file keeps neither every key nor 24 bytes for each open one.

use std::borrow::Cow;

use crate::format::repeats;
use crate::lex::{Keys, Span};

/// Names by start and length (under 255 bytes, in a file under 4 GiB); other names whole,
/// on the side, by index.
#[derive(Default)]
pub(super) struct OpenKeys {
    starts: Vec<u32>,
    lens: Vec<u8>,
    long: Vec<(usize, Span)>,
    /// The file's first repeated keys recorded so far.
    recorded: repeats::Recorded,
}

impl OpenKeys {
    /// The number of keys held.
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    /// Adds a key's name.
    pub(super) fn push(&mut self, name: Span) {
        match (u32::try_from(name.start), u8::try_from(name.len())) {
            (Ok(start), Ok(len)) if len < u8::MAX => {
                self.starts.push(start);
                self.lens.push(len);
            }
            _ => {
                self.long.push((self.starts.len(), name));
                self.starts.push(0);
                self.lens.push(u8::MAX);
            }
        }
    }

    /// The `i`th name.
    fn name(&self, i: usize) -> Span {
        match (self.starts.get(i), self.lens.get(i)) {
            (Some(&start), Some(&len)) if len < u8::MAX => {
                Span::new(start as usize, start as usize + usize::from(len))
            }
            _ => self
                .long
                .binary_search_by_key(&i, |&(j, _)| j)
                .ok()
                .and_then(|j| self.long.get(j))
                .map_or(Span::default(), |&(_, s)| s),
        }
    }

    /// Hands the repeated keys held to `out` (at the end of the input).
    pub(super) fn flush(&mut self, out: &mut Keys) {
        self.recorded.flush(out);
    }

    /// Closes the mapping `context` whose keys are those from `from`: the ones whose names
    /// occur more than once among them go to `out` (past the first repeats that can be
    /// reported, the rest only counted), and they are let go.
    pub(super) fn close(&mut self, src: &[u8], from: usize, context: u32, out: &mut Keys) {
        let len = self.len();
        let from = from.min(len);
        let n = len - from;
        let mut recorded = std::mem::take(&mut self.recorded);
        if n > 32 {
            repeats::find(n, |i| Cow::Borrowed(self.name(from + i).of(src))).record(
                out,
                &mut recorded,
                context,
                |i| self.name(from + i),
            );
        } else if n >= 2 {
            let (mut dup, mut repeat) = (0u64, 0u64);
            for i in 0..n {
                let name = self.name(from + i).of(src);
                if let Some(j) = (0..n).find(|&j| j != i && self.name(from + j).of(src) == name) {
                    dup |= 1 << i;
                    if j < i {
                        repeat |= 1 << i;
                    }
                }
            }
            if dup != 0 {
                repeats::Found::of_bits(n, dup, repeat)
                    .record(out, &mut recorded, context, |i| self.name(from + i));
            }
        }
        self.recorded = recorded;
        self.starts.truncate(from);
        self.lens.truncate(from);
        let keep = self.long.partition_point(|&(j, _)| j < from);
        self.long.truncate(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_back_short_and_long() {
        let src = format!("a: 1\n{}: 2\nb: 3\na: 4\n", "k".repeat(300));
        let mut keys = OpenKeys::default();
        let at = |k: &str| src.rfind(k).unwrap_or(0);
        let spans = [
            Span::new(0, 1),
            Span::new(5, 305),
            Span::new(at("b"), at("b") + 1),
            Span::new(at("a"), at("a") + 1),
        ];
        for s in spans {
            keys.push(s);
        }
        for (i, s) in spans.iter().enumerate() {
            assert_eq!(keys.name(i), *s);
        }
        let mut out = Keys::default();
        keys.close(src.as_bytes(), 1, 7, &mut out);
        assert!(out.is_empty());
        assert_eq!((keys.len(), keys.long.len()), (1, 0));
        keys.push(spans[3]);
        keys.close(src.as_bytes(), 0, 7, &mut out);
        keys.flush(&mut out);
        let got: Vec<(usize, u32)> = out.iter().map(|k| (k.name.start, k.context)).collect();
        assert_eq!(got, vec![(0, 7), (spans[3].start, 7)]);
    }
}
