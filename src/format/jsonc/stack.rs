//! The scanner's stack of open containers, about one byte a level: a container opened
//! directly inside another gets the next id or one a few after it (after closed siblings),
//! and its keys start where its parent's do or one key later, so a stored frame is its kind,
//! its state and those two small differences from the frame above it; only other frames
//! keep their id and key index in full. A file nested millions of levels deep then costs
//! about a byte a level beside the file itself (docs/formats.md, JSONC, Nesting).

use super::scan::{Kind, State};

/// One open container, as the scanner reads and changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Frame {
    /// The container's id.
    pub id: u32,
    /// Index in the scanner's key store where this object's keys start.
    pub keys_from: u32,
    pub kind: Kind,
    pub state: State,
}

/// A stored frame's byte: kind (bits 0-1), state (2-3), and when [`DERIVED`] is set, its id
/// is the one above's minus 1 + bits 4-5 and its key index the one above's minus bit 6.
const DERIVED: u8 = 1 << 7;

fn pack(kind: Kind, state: State) -> u8 {
    let kind = match kind {
        Kind::Top => 0,
        Kind::Object => 1,
        Kind::Array => 2,
    };
    let state = match state {
        State::Key => 0,
        State::Colon => 1,
        State::Value => 2,
        State::After => 3,
    };
    kind | (state << 2)
}

fn unpack(b: u8) -> (Kind, State) {
    let kind = match b & 3 {
        0 => Kind::Top,
        1 => Kind::Object,
        _ => Kind::Array,
    };
    let state = match (b >> 2) & 3 {
        0 => State::Key,
        1 => State::Colon,
        2 => State::Value,
        _ => State::After,
    };
    (kind, state)
}

/// The open containers, outermost first; the top level is at the bottom.
pub(super) struct Stack {
    /// One byte a frame below the innermost, outermost first.
    bytes: Vec<u8>,
    /// The id and key index of each stored frame without [`DERIVED`], outermost first.
    full: Vec<(u32, u32)>,
    /// The innermost frame, unpacked: what nearly every byte of the input reads or changes.
    top: Frame,
}

impl Stack {
    /// A stack holding `bottom`.
    pub(super) fn new(bottom: Frame) -> Self {
        Self {
            bytes: Vec::new(),
            full: Vec::new(),
            top: bottom,
        }
    }

    /// The number of frames.
    pub(super) fn len(&self) -> usize {
        self.bytes.len() + 1
    }

    /// The innermost frame.
    #[inline]
    pub(super) fn top(&mut self) -> &mut Frame {
        &mut self.top
    }

    /// The innermost frame, by value.
    #[inline]
    pub(super) fn peek(&self) -> Frame {
        self.top
    }

    /// Opens `f` inside the innermost frame.
    pub(super) fn push(&mut self, f: Frame) {
        let below = std::mem::replace(&mut self.top, f);
        let mut b = pack(below.kind, below.state);
        let delta = f.id.wrapping_sub(below.id).wrapping_sub(1);
        let step = f.keys_from.wrapping_sub(below.keys_from);
        if delta <= 3 && step <= 1 {
            // Both fit in a u8: delta <= 3, step <= 1.
            b |= DERIVED | ((delta as u8) << 4) | ((step as u8) << 6);
        } else {
            self.full.push((below.id, below.keys_from));
        }
        self.bytes.push(b);
    }

    /// Closes the innermost frame and returns it; `None` when only the bottom is left.
    pub(super) fn pop(&mut self) -> Option<Frame> {
        let b = self.bytes.pop()?;
        let (kind, state) = unpack(b);
        let (id, keys_from) = if b & DERIVED != 0 {
            let delta = u32::from((b >> 4) & 3) + 1;
            let step = u32::from((b >> 6) & 1);
            (
                self.top.id.wrapping_sub(delta),
                self.top.keys_from.wrapping_sub(step),
            )
        } else {
            self.full.pop().unwrap_or_default()
        };
        let below = Frame {
            id,
            keys_from,
            kind,
            state,
        };
        Some(std::mem::replace(&mut self.top, below))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: u32, keys_from: u32, kind: Kind, state: State) -> Frame {
        Frame {
            id,
            keys_from,
            kind,
            state,
        }
    }

    /// Pushing and popping give back every frame, whatever runs they were stored in.
    #[test]
    fn frames_come_back_as_pushed() {
        let bottom = frame(0, 0, Kind::Top, State::Value);
        let mut s = Stack::new(bottom);
        let mut want = vec![bottom];
        let mut id = 1;
        let mut keys = 0;
        // Runs of arrays, of objects with one key a level, and breaks between them.
        for (kind, state, step, n) in [
            (Kind::Array, State::Value, 0, 1000),
            (Kind::Object, State::Value, 1, 500),
            (Kind::Object, State::Value, 0, 3),
            (Kind::Array, State::After, 0, 2),
            (Kind::Object, State::Key, 2, 4),
            (Kind::Array, State::Value, 0, 1),
        ] {
            for _ in 0..n {
                let f = frame(id, keys, kind, state);
                s.push(f);
                want.push(f);
                id += 1;
                keys += step;
            }
        }
        assert!(s.full.len() < 20, "{}", s.full.len());
        assert_eq!(s.len(), want.len());
        while let Some(f) = want.pop() {
            assert_eq!(s.peek(), f);
            let popped = s.pop();
            if want.is_empty() {
                assert_eq!(popped, None);
            } else {
                assert_eq!(popped, Some(f));
            }
        }
    }

    /// The innermost frame changes in place; ids that jump and keys that start far from
    /// their parent's are kept in full.
    #[test]
    fn frames_changed_in_place_and_far_apart() {
        let mut s = Stack::new(frame(0, 0, Kind::Top, State::Value));
        s.push(frame(1, 0, Kind::Array, State::Value));
        s.push(frame(2, 0, Kind::Array, State::Value));
        s.top().state = State::After;
        s.push(frame(3, 0, Kind::Array, State::Value));
        s.push(frame(9, 0, Kind::Object, State::Key));
        s.push(frame(10, 7, Kind::Object, State::Key));
        assert_eq!(s.full.len(), 2);
        assert_eq!(s.pop(), Some(frame(10, 7, Kind::Object, State::Key)));
        assert_eq!(s.pop(), Some(frame(9, 0, Kind::Object, State::Key)));
        assert_eq!(s.pop().map(|f| f.id), Some(3));
        assert_eq!(s.peek(), frame(2, 0, Kind::Array, State::After));
        assert_eq!(s.pop().map(|f| f.id), Some(2));
        assert_eq!(s.peek(), frame(1, 0, Kind::Array, State::Value));
    }
}
