//! Lines of a byte buffer: the one place that knows where a line starts and ends, which line
//! an offset is on, the file's line-ending style, and the UTF-8 byte-order mark.

/// The UTF-8 byte-order mark.
pub(crate) const BOM: &[u8] = b"\xef\xbb\xbf";

/// The length of the byte-order mark `src` starts with (3 or 0).
#[must_use]
pub(crate) fn bom_len(src: &[u8]) -> usize {
    if src.starts_with(BOM) { BOM.len() } else { 0 }
}

/// `src` without a leading byte-order mark.
#[must_use]
pub(crate) fn strip_bom(src: &[u8]) -> &[u8] {
    &src[bom_len(src)..]
}

/// Start of the line holding `offset`.
#[must_use]
pub(crate) fn line_start(src: &[u8], offset: usize) -> usize {
    memchr::memrchr(b'\n', &src[..offset]).map_or(0, |i| i + 1)
}

/// End of the line holding `offset`, after its `\n` (or the end of input).
#[must_use]
pub(crate) fn line_end(src: &[u8], offset: usize) -> usize {
    memchr::memchr(b'\n', &src[offset..]).map_or(src.len(), |i| offset + i + 1)
}

/// The 1-based line of byte `offset` (clamped to the input), counted from the start.
/// For many offsets use a [`LineCounter`] or a [`LineIndex`].
#[must_use]
pub(crate) fn line_of(src: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &src[..offset.min(src.len())]).count() + 1
}

/// The 1-based column (in bytes) of byte `offset` on its line.
#[must_use]
pub(crate) fn column_of(src: &[u8], offset: usize) -> usize {
    let offset = offset.min(src.len());
    offset - line_start(src, offset) + 1
}

/// The line ending style of `src`: CRLF when most of its lines end in `\r\n` (a tie goes to
/// the first line's ending), so one pasted Windows line does not make new lines CRLF.
#[must_use]
pub fn eol_of(src: &[u8]) -> &'static str {
    let lf = memchr::memchr_iter(b'\n', src).count();
    // Most files have no `\r` at all: a byte search skips them faster than a pair search.
    let crlf = memchr::memchr_iter(b'\r', src)
        .filter(|&i| src.get(i + 1) == Some(&b'\n'))
        .count();
    let first_crlf = matches!(memchr::memchr(b'\n', src), Some(i) if i > 0 && src[i - 1] == b'\r');
    if crlf * 2 > lf || (crlf * 2 == lf && first_crlf) {
        "\r\n"
    } else {
        "\n"
    }
}

/// Line numbers of byte offsets asked in any order: the offsets of every `\n`, searched.
pub(crate) struct LineIndex(Vec<usize>);

impl LineIndex {
    /// Indexes the line breaks of `src`.
    #[must_use]
    pub(crate) fn new(src: &[u8]) -> Self {
        Self(memchr::memchr_iter(b'\n', src).collect())
    }

    /// The 1-based line of byte `offset`.
    #[must_use]
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// Line numbers of byte offsets asked mostly in increasing order, counted incrementally
/// (no allocation; going back restarts from the top).
pub(crate) struct LineCounter<'a> {
    src: &'a [u8],
    pos: usize,
    line: usize,
    /// Start of the line holding `pos`.
    start: usize,
}

impl<'a> LineCounter<'a> {
    /// A counter at the start of `src`.
    #[must_use]
    pub(crate) const fn new(src: &'a [u8]) -> Self {
        Self {
            src,
            pos: 0,
            line: 1,
            start: 0,
        }
    }

    /// The 1-based line of byte `offset`.
    pub(crate) fn line_of(&mut self, offset: usize) -> usize {
        self.line_col(offset).0
    }

    /// The 1-based line and column (in bytes) of byte `offset`.
    pub(crate) fn line_col(&mut self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.src.len());
        if offset < self.pos {
            self.pos = 0;
            self.line = 1;
            self.start = 0;
        }
        let seg = &self.src[self.pos..offset];
        let n = memchr::memchr_iter(b'\n', seg).count();
        if n > 0 {
            self.line += n;
            self.start = self.pos + memchr::memrchr(b'\n', seg).map_or(0, |i| i + 1);
        }
        self.pos = offset;
        (self.line, offset - self.start + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_counting_agrees() {
        let src = b"a\r\nbb\n\nccc";
        let index = LineIndex::new(src);
        let mut counter = LineCounter::new(src);
        for offset in 0..=src.len() {
            let want = line_of(src, offset);
            assert_eq!(index.line_of(offset), want, "index at {offset}");
            assert_eq!(counter.line_of(offset), want, "counter at {offset}");
            assert_eq!(
                LineCounter::new(src).line_col(offset),
                (want, column_of(src, offset)),
                "line and column at {offset}"
            );
        }
        assert_eq!(counter.line_of(0), 1);
        assert_eq!(line_of(src, 7), 4);
        assert_eq!(column_of(src, 8), 2);
    }

    #[test]
    fn line_bounds_and_endings() {
        let src = b"ab\ncd";
        assert_eq!(line_start(src, 4), 3);
        assert_eq!(line_end(src, 0), 3);
        assert_eq!(line_end(src, 3), 5);
        assert_eq!(eol_of(b"a\r\nb\r\nc\n"), "\r\n");
        assert_eq!(eol_of(b"a\nb\r\n"), "\n");
        assert_eq!(eol_of(b"a\r\nb\n"), "\r\n");
    }

    #[test]
    fn byte_order_mark() {
        assert_eq!(bom_len(b"\xef\xbb\xbfx"), 3);
        assert_eq!(bom_len(b"x"), 0);
        assert_eq!(strip_bom(b"\xef\xbb\xbfx"), b"x");
    }
}
