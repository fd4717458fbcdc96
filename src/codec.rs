//! How a file's bytes on disk become the text demarcate reads and edits, and back: the
//! encoding (`--encoding`) and, for lines that end in CR alone, the line ending
//! (`--line-ending cr`). Every edit goes through [`Codec::decode`] right after the read and
//! [`Codec::encode`] right before the write; everything in between (lexing, planning,
//! checking) sees UTF-8 text with LF or CRLF line breaks.
//!
//! UTF-8 is the default and is not touched: its bytes are the text (a UTF-8 byte-order mark
//! and, in shell and env files, bytes that are not UTF-8 stay as they are). Other encodings
//! are decoded with `encoding_rs` (without replacement: a byte sequence the encoding does not
//! allow is an error, never a U+FFFD) and written back in the same encoding, with the
//! byte-order mark the file had.

use std::borrow::Cow;

use crate::lines::BOM;

/// A file's text encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (the default): the bytes are read and written as they are.
    #[default]
    Utf8,
    /// UTF-16, little endian (Windows PowerShell 5.1 profiles, `Out-File` in Windows).
    Utf16Le,
    /// UTF-16, big endian.
    Utf16Be,
    /// ISO-8859-1: every byte is the code point of the same number.
    Latin1,
    /// Windows-1252 (the WHATWG mapping: every byte has a character).
    Windows1252,
}

impl Encoding {
    /// Every encoding, in the order help texts list them.
    pub const ALL: [Self; 5] = [
        Self::Utf8,
        Self::Utf16Le,
        Self::Utf16Be,
        Self::Latin1,
        Self::Windows1252,
    ];

    /// The name used on the command line and in manifests.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Utf16Le => "utf-16le",
            Self::Utf16Be => "utf-16be",
            Self::Latin1 => "latin-1",
            Self::Windows1252 => "windows-1252",
        }
    }

    /// The encoding of a name (case-insensitive; `iso-8859-1`, `latin1`, `cp1252`, `utf8`
    /// are accepted too).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(Self::Utf8),
            "utf-16le" | "utf16le" => Some(Self::Utf16Le),
            "utf-16be" | "utf16be" => Some(Self::Utf16Be),
            "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" => Some(Self::Latin1),
            "windows-1252" | "cp1252" => Some(Self::Windows1252),
            _ => None,
        }
    }

    /// The byte-order mark of this encoding, if it has one demarcate recognises.
    const fn bom(self) -> &'static [u8] {
        match self {
            Self::Utf16Le => UTF16LE_BOM,
            Self::Utf16Be => UTF16BE_BOM,
            Self::Utf8 => BOM,
            Self::Latin1 | Self::Windows1252 => b"",
        }
    }
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The line ending of the lines demarcate writes (`--line-ending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnding {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
    /// `\r` alone (classic Mac OS): only in a file whose lines all end so.
    Cr,
}

impl LineEnding {
    /// The name used on the command line and in manifests.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Lf => "lf",
            Self::Crlf => "crlf",
            Self::Cr => "cr",
        }
    }

    /// The line ending of a name (`lf`, `crlf`, `cr`, case-insensitive).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "lf" => Some(Self::Lf),
            "crlf" => Some(Self::Crlf),
            "cr" => Some(Self::Cr),
            _ => None,
        }
    }

    /// The line break written in the text demarcate edits: CR lines are edited as LF ones
    /// and turned back into CR by `Codec::encode`.
    #[must_use]
    pub const fn in_text(self) -> &'static str {
        match self {
            Self::Lf | Self::Cr => "\n",
            Self::Crlf => "\r\n",
        }
    }
}

const UTF16LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16BE_BOM: &[u8] = b"\xFE\xFF";

/// How a file is read and written: its encoding and, if given, the line ending of the lines
/// demarcate writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Codec {
    /// The file's encoding.
    pub encoding: Encoding,
    /// The line ending of written lines; `None`: the file's own.
    pub line_ending: Option<LineEnding>,
}

/// A file decoded for editing.
#[derive(Clone, Debug)]
pub(crate) struct Decoded<'a> {
    /// The text: UTF-8 (but for the UTF-8 encoding's own stray bytes), LF or CRLF lines.
    pub(crate) text: Cow<'a, [u8]>,
    /// Write a byte-order mark before the text (UTF-16: the file had one, or is new).
    bom: bool,
}

/// Why a file cannot be decoded, or the text cannot be encoded back. Nothing is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// A UTF-16 file read as UTF-8.
    #[error(
        "is UTF-16 (it starts with a UTF-16 byte order mark); refusing to edit it: convert it \
         to UTF-8 first (e.g. `iconv -f UTF-16 -t UTF-8`), or name its encoding (--encoding \
         {0})"
    )]
    Utf16(Encoding),
    /// NUL bytes in a file read as UTF-8, Latin-1 or Windows-1252.
    #[error("looks like a binary file (it holds NUL bytes); refusing to edit it")]
    Binary,
    /// The file's byte-order mark says another encoding than the one given.
    #[error(
        "starts with a {found} byte order mark, but its encoding was given as {given}; give \
         the right encoding (--encoding {found})"
    )]
    BomMismatch {
        /// The encoding the byte-order mark says.
        found: Encoding,
        /// The encoding given.
        given: Encoding,
    },
    /// Bytes the encoding does not allow.
    #[error("line {line}: bytes that are not valid {encoding}; is this the file's encoding?")]
    Malformed {
        /// The encoding.
        encoding: Encoding,
        /// The 1-based line.
        line: usize,
    },
    /// A character the encoding cannot hold, in the text to write.
    #[error(
        "line {line}: the character {ch:?} (U+{:04X}) cannot be written in {encoding}; \
         use only characters the file's encoding has",
        u32::from(*.ch)
    )]
    Unmappable {
        /// The character.
        ch: char,
        /// The encoding.
        encoding: Encoding,
        /// The 1-based line of the file as it would be written.
        line: usize,
    },
    /// Bytes that are not UTF-8 in the text to write in another encoding (a body read from
    /// a file in another encoding).
    #[error("line {line}: the new text is not valid UTF-8, so it cannot be written in {encoding}")]
    NotUtf8 {
        /// The encoding.
        encoding: Encoding,
        /// The 1-based line of the file as it would be written.
        line: usize,
    },
    /// CR line endings asked of a file that has LF line breaks.
    #[error(
        "its lines end in LF (or CRLF), so lines ending in CR alone would not be lines to any \
         reader of it (nor to demarcate on the next run); write LF or CRLF lines \
         (--line-ending lf or crlf)"
    )]
    CrInLfFile,
    /// A CR alone inside a line of text to write with CR line endings.
    #[error("line {line}: a CR inside a line would end it in a file of CR lines")]
    CrInLine {
        /// The 1-based line.
        line: usize,
    },
}

/// The 1-based line of `offset` in `text`, whose lines end in `eol` (`\n`, or `\r` in a file
/// of CR lines).
fn line_at(text: &[u8], offset: usize, eol: u8) -> usize {
    memchr::memchr_iter(eol, &text[..offset.min(text.len())]).count() + 1
}

impl Codec {
    /// The line break of the lines demarcate writes in the decoded text; `None`: the
    /// file's own.
    #[must_use]
    pub const fn eol(&self) -> Option<&'static str> {
        match self.line_ending {
            Some(l) => Some(l.in_text()),
            None => None,
        }
    }

    /// The byte that ends a line in the file: LF (a CRLF's LF), or CR in a file of CR lines.
    fn eol_byte(&self) -> u8 {
        if self.line_ending == Some(LineEnding::Cr) {
            b'\r'
        } else {
            b'\n'
        }
    }

    /// The text of a file's bytes (`raw`, empty for a missing file).
    ///
    /// # Errors
    /// A byte-order mark of another encoding, bytes the encoding does not allow, NUL
    /// bytes, CR line endings asked of a file with LF line breaks.
    pub(crate) fn decode<'a>(&self, raw: &'a [u8]) -> Result<Decoded<'a>, CodecError> {
        let enc = self.encoding;
        let eol = self.eol_byte();
        let found = if raw.starts_with(UTF16LE_BOM) {
            Some(Encoding::Utf16Le)
        } else if raw.starts_with(UTF16BE_BOM) {
            Some(Encoding::Utf16Be)
        } else if raw.starts_with(BOM) {
            Some(Encoding::Utf8)
        } else {
            None
        };
        if let Some(found) = found
            && found != enc
        {
            if enc == Encoding::Utf8 {
                return Err(CodecError::Utf16(found));
            }
            return Err(CodecError::BomMismatch { found, given: enc });
        }
        let bom = found.is_some() || raw.is_empty();
        let skip_bom = &raw[if found.is_some() { enc.bom().len() } else { 0 }..];
        let text: Cow<'a, [u8]> = match enc {
            Encoding::Utf8 => Cow::Borrowed(raw),
            Encoding::Latin1 => match encoding_rs::mem::decode_latin1(raw) {
                Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
                Cow::Owned(s) => Cow::Owned(s.into_bytes()),
            },
            Encoding::Windows1252 => {
                Cow::Owned(decode_with(encoding_rs::WINDOWS_1252, raw, enc, eol)?)
            }
            Encoding::Utf16Le => {
                Cow::Owned(decode_with(encoding_rs::UTF_16LE, skip_bom, enc, eol)?)
            }
            Encoding::Utf16Be => {
                Cow::Owned(decode_with(encoding_rs::UTF_16BE, skip_bom, enc, eol)?)
            }
        };
        if memchr::memchr(0, &text).is_some() {
            return Err(CodecError::Binary);
        }
        let text = if self.line_ending == Some(LineEnding::Cr) && !text.is_empty() {
            if memchr::memchr(b'\n', &text).is_some() {
                return Err(CodecError::CrInLfFile);
            }
            Cow::Owned(
                text.iter()
                    .map(|&b| if b == b'\r' { b'\n' } else { b })
                    .collect(),
            )
        } else {
            text
        };
        Ok(Decoded { text, bom })
    }

    /// The bytes to write for `text`, edited from what [`Codec::decode`] gave.
    ///
    /// # Errors
    /// A character the encoding cannot hold (named, with its line), bytes that are not
    /// UTF-8 for an encoding other than UTF-8, a CR alone inside a line of a CR file.
    pub(crate) fn encode<'t>(
        &self,
        text: &'t [u8],
        read: &Decoded<'_>,
    ) -> Result<Cow<'t, [u8]>, CodecError> {
        let text: Cow<'t, [u8]> = if self.line_ending == Some(LineEnding::Cr) {
            if let Some(i) = memchr::memchr(b'\r', text) {
                return Err(CodecError::CrInLine {
                    line: line_at(text, i, b'\n'),
                });
            }
            Cow::Owned(
                text.iter()
                    .map(|&b| if b == b'\n' { b'\r' } else { b })
                    .collect(),
            )
        } else {
            Cow::Borrowed(text)
        };
        let enc = self.encoding;
        if enc == Encoding::Utf8 {
            return Ok(text);
        }
        let eol = self.eol_byte();
        let line = |at: usize| line_at(&text, at, eol);
        let s = std::str::from_utf8(&text).map_err(|e| CodecError::NotUtf8 {
            encoding: enc,
            line: line(e.valid_up_to()),
        })?;
        let mut out = Vec::with_capacity(s.len() + 2);
        match enc {
            Encoding::Utf8 => out.extend_from_slice(s.as_bytes()),
            Encoding::Utf16Le | Encoding::Utf16Be => {
                // encoding_rs decodes UTF-16 but writes it only as UTF-8 (the WHATWG rule),
                // so the code units are written here.
                if read.bom {
                    out.extend_from_slice(enc.bom());
                }
                out.reserve(s.len() * 2);
                for unit in s.encode_utf16() {
                    out.extend_from_slice(&if enc == Encoding::Utf16Le {
                        unit.to_le_bytes()
                    } else {
                        unit.to_be_bytes()
                    });
                }
            }
            Encoding::Latin1 => {
                if let Some((at, ch)) = s.char_indices().find(|(_, c)| u32::from(*c) > 0xFF) {
                    return Err(unmappable(ch, enc, line(at)));
                }
                out.extend_from_slice(&encoding_rs::mem::encode_latin1_lossy(s));
            }
            Encoding::Windows1252 => {
                let mut encoder = encoding_rs::WINDOWS_1252.new_encoder();
                let mut read_so_far = 0;
                loop {
                    let need = encoder
                        .max_buffer_length_from_utf8_without_replacement(s.len() - read_so_far)
                        .unwrap_or(s.len() - read_so_far + 16);
                    out.reserve(need);
                    let (result, read) = encoder.encode_from_utf8_to_vec_without_replacement(
                        &s[read_so_far..],
                        &mut out,
                        true,
                    );
                    read_so_far += read;
                    match result {
                        encoding_rs::EncoderResult::InputEmpty => break,
                        encoding_rs::EncoderResult::OutputFull => {}
                        encoding_rs::EncoderResult::Unmappable(ch) => {
                            let at = read_so_far - ch.len_utf8();
                            return Err(unmappable(ch, enc, line(at)));
                        }
                    }
                }
            }
        }
        Ok(Cow::Owned(out))
    }
}

fn unmappable(ch: char, encoding: Encoding, line: usize) -> CodecError {
    CodecError::Unmappable { ch, encoding, line }
}

/// `raw` decoded by `e` without replacement.
fn decode_with(
    e: &'static encoding_rs::Encoding,
    raw: &[u8],
    enc: Encoding,
    eol: u8,
) -> Result<Vec<u8>, CodecError> {
    let mut decoder = e.new_decoder_without_bom_handling();
    let mut out = String::new();
    let mut done = 0;
    loop {
        let need = decoder
            .max_utf8_buffer_length_without_replacement(raw.len() - done)
            .unwrap_or(raw.len() - done + 16);
        out.reserve(need);
        let (result, read) =
            decoder.decode_to_string_without_replacement(&raw[done..], &mut out, true);
        done += read;
        match result {
            encoding_rs::DecoderResult::InputEmpty => return Ok(out.into_bytes()),
            encoding_rs::DecoderResult::OutputFull => {}
            encoding_rs::DecoderResult::Malformed(..) => {
                return Err(CodecError::Malformed {
                    encoding: enc,
                    line: line_at(out.as_bytes(), out.len(), eol),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(encoding: Encoding) -> Codec {
        Codec {
            encoding,
            line_ending: None,
        }
    }

    fn round_trip(c: Codec, raw: &[u8]) -> Vec<u8> {
        let d = c.decode(raw).expect("decodes");
        c.encode(&d.text, &d).expect("encodes").into_owned()
    }

    proptest::proptest! {
        /// Latin-1 and Windows-1252 have a character for every byte but NUL: any bytes
        /// decode and encode back to themselves.
        #[test]
        fn single_byte_encodings_give_back_any_bytes(
            bytes in proptest::collection::vec(1u8..=255, 0..300)
        ) {
            for e in [Encoding::Latin1, Encoding::Windows1252] {
                proptest::prop_assert_eq!(round_trip(codec(e), &bytes), bytes.clone());
            }
        }

        /// Any text without NUL, in either byte order, with or without a BOM.
        #[test]
        fn utf16_gives_back_any_text(text in "[^\u{0}]{0,80}", bom in proptest::bool::ANY) {
            // A text that starts with U+FEFF starts with a BOM, by definition.
            proptest::prop_assume!(!text.starts_with('\u{feff}'));
            for (e, le) in [(Encoding::Utf16Le, true), (Encoding::Utf16Be, false)] {
                let mut raw = if bom { e.bom().to_vec() } else { Vec::new() };
                for unit in text.encode_utf16() {
                    raw.extend(if le { unit.to_le_bytes() } else { unit.to_be_bytes() });
                }
                let d = codec(e).decode(&raw).expect("decodes");
                proptest::prop_assert_eq!(&*d.text, text.as_bytes());
                // An empty file without a BOM is new: it gets one.
                if !raw.is_empty() {
                    proptest::prop_assert_eq!(round_trip(codec(e), &raw), raw);
                }
            }
        }
    }

    #[test]
    fn every_encoding_gives_back_its_bytes() {
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("$a = 'é€'\r\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(round_trip(codec(Encoding::Utf16Le), &le), le);
        let be: Vec<u8> = "x = 1\n"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(round_trip(codec(Encoding::Utf16Be), &be), be);
        let all: Vec<u8> = (1..=255u8).collect();
        assert_eq!(round_trip(codec(Encoding::Latin1), &all), all);
        assert_eq!(round_trip(codec(Encoding::Windows1252), &all), all);
        let stray = b"a=\xff\n";
        assert_eq!(round_trip(codec(Encoding::Utf8), stray), stray);
    }

    #[test]
    fn text_is_utf8_with_the_same_lines() {
        let c = codec(Encoding::Windows1252);
        let d = c.decode(b"caf\xe9 \x80\n").expect("decodes");
        assert_eq!(&*d.text, "café €\n".as_bytes());
        let l = codec(Encoding::Latin1).decode(b"\x80").expect("decodes");
        assert_eq!(&*l.text, "\u{80}".as_bytes());
    }

    #[test]
    fn a_character_the_encoding_lacks_is_named_with_its_line() {
        let c = codec(Encoding::Latin1);
        let d = c.decode(b"a\n").expect("decodes");
        let e = c.encode("a\nb €\n".as_bytes(), &d).expect_err("refused");
        assert_eq!(
            e,
            CodecError::Unmappable {
                ch: '€',
                encoding: Encoding::Latin1,
                line: 2
            }
        );
        let w = codec(Encoding::Windows1252);
        // CRLF lines count once; CR lines count in a file of CR lines.
        let e = w
            .encode("x\r\ny\r\n→\r\n".as_bytes(), &d)
            .expect_err("refused");
        assert!(matches!(e, CodecError::Unmappable { line: 3, .. }), "{e:?}");
        let cr = Codec {
            encoding: Encoding::Latin1,
            line_ending: Some(LineEnding::Cr),
        };
        let e = cr.encode("x\ny\n€\n".as_bytes(), &d).expect_err("refused");
        assert!(matches!(e, CodecError::Unmappable { line: 3, .. }), "{e:?}");
        let e = w.encode("x\ny\n→\n".as_bytes(), &d).expect_err("refused");
        assert!(matches!(
            e,
            CodecError::Unmappable {
                ch: '→',
                line: 3,
                ..
            }
        ));
    }

    #[test]
    fn wrong_or_missing_encodings_are_refused() {
        let le = b"\xFF\xFEa\x00";
        assert_eq!(
            codec(Encoding::Utf8).decode(le).expect_err("refused"),
            CodecError::Utf16(Encoding::Utf16Le)
        );
        assert!(matches!(
            codec(Encoding::Utf16Be).decode(le),
            Err(CodecError::BomMismatch { .. })
        ));
        assert!(matches!(
            codec(Encoding::Latin1).decode(b"\xef\xbb\xbfa"),
            Err(CodecError::BomMismatch { .. })
        ));
        // An odd number of bytes, and a lone surrogate on line 2.
        assert!(matches!(
            codec(Encoding::Utf16Le).decode(b"a\x00b"),
            Err(CodecError::Malformed { .. })
        ));
        let lone: Vec<u8> = [0x61, 0, 0x0A, 0, 0x00, 0xD8, 0x61, 0].to_vec();
        assert_eq!(
            codec(Encoding::Utf16Le).decode(&lone).expect_err("refused"),
            CodecError::Malformed {
                encoding: Encoding::Utf16Le,
                line: 2
            }
        );
        assert_eq!(
            codec(Encoding::Latin1).decode(b"a\0").expect_err("refused"),
            CodecError::Binary
        );
    }

    #[test]
    fn new_utf16_files_get_a_byte_order_mark() {
        let c = codec(Encoding::Utf16Le);
        let d = c.decode(b"").expect("decodes");
        assert_eq!(
            &*c.encode(b"a\n", &d).expect("encodes"),
            b"\xFF\xFEa\x00\n\x00"
        );
        let no_bom = c.decode(b"a\x00").expect("decodes");
        assert_eq!(&*c.encode(b"b", &no_bom).expect("encodes"), b"b\x00");
    }

    #[test]
    fn cr_lines_are_edited_as_lf_lines() {
        let c = Codec {
            encoding: Encoding::Utf8,
            line_ending: Some(LineEnding::Cr),
        };
        let d = c.decode(b"a\rb\r").expect("decodes");
        assert_eq!(&*d.text, b"a\nb\n");
        assert_eq!(&*c.encode(b"a\nx\nb\n", &d).expect("encodes"), b"a\rx\rb\r");
        assert_eq!(
            c.decode(b"a\nb\r").expect_err("refused"),
            CodecError::CrInLfFile
        );
        assert_eq!(
            c.encode(b"a\nb\rc\n", &d).expect_err("refused"),
            CodecError::CrInLine { line: 2 }
        );
    }
}
