//! An ordered JSON value: what an entry holds. Parsed from spans of the file or the template,
//! hashed in canonical form (keys sorted, no whitespace, numbers as `JSON.parse` sees them),
//! and rendered in the file's own layout.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::scan::{self, Layout, ScanError};

/// A JSON value that keeps object members in their order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// A number as written (valid JSON number text).
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// Parses the value that starts at `i` (in text already validated as strict JSON).
    pub(crate) fn parse_at(src: &[u8], i: usize) -> Result<(Json, usize), ScanError> {
        let v = match src.get(i) {
            Some(b'"') => {
                let end = scan::string_end(src, i)?;
                return Ok((Json::Str(scan::decode_string(src, i..end)?), end));
            }
            Some(b'{') => {
                let c = scan::container(src, i)?;
                let mut members = Vec::with_capacity(c.items.len());
                for item in c.items {
                    let (v, _) = Json::parse_at(src, item.value.start)?;
                    members.push((item.key.unwrap_or_default(), v));
                }
                return Ok((Json::Obj(members), c.close + 1));
            }
            Some(b'[') => {
                let c = scan::container(src, i)?;
                let mut elems = Vec::with_capacity(c.items.len());
                for item in c.items {
                    elems.push(Json::parse_at(src, item.value.start)?.0);
                }
                return Ok((Json::Arr(elems), c.close + 1));
            }
            Some(_) => {
                let end = scan::value_end(src, i)?;
                let raw = &src[i..end];
                match raw {
                    b"null" => Json::Null,
                    b"true" => Json::Bool(true),
                    b"false" => Json::Bool(false),
                    _ => Json::Num(String::from_utf8_lossy(raw).into_owned()),
                }
            }
            None => return Err(ScanError { at: i }),
        };
        let end = scan::value_end(src, i)?;
        Ok((v, end))
    }

    /// Converts from serde_json (object order as serde_json keeps it).
    pub(crate) fn from_serde(v: &serde_json::Value) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Num(n.to_string()),
            serde_json::Value::String(s) => Json::Str(s.clone()),
            serde_json::Value::Array(a) => Json::Arr(a.iter().map(Json::from_serde).collect()),
            serde_json::Value::Object(o) => Json::Obj(
                o.iter()
                    .map(|(k, v)| (k.clone(), Json::from_serde(v)))
                    .collect(),
            ),
        }
    }

    /// Converts to serde_json (for the registry's base values).
    pub(crate) fn to_serde(&self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(*b),
            Json::Num(n) => serde_json::from_str(n).unwrap_or(serde_json::Value::Null),
            Json::Str(s) => serde_json::Value::String(s.clone()),
            Json::Arr(a) => serde_json::Value::Array(a.iter().map(Json::to_serde).collect()),
            Json::Obj(o) => serde_json::Value::Object(
                o.iter().map(|(k, v)| (k.clone(), v.to_serde())).collect(),
            ),
        }
    }

    /// The member `key` of an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Canonical text: object keys sorted, no whitespace, numbers as a JavaScript reader
    /// would print them, strings with serde_json's escaping. Reformatting is not a change.
    pub(crate) fn canonical(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }

    fn write_canonical(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(&canonical_number(n)),
            Json::Str(s) => write_str(out, s),
            Json::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_canonical(out);
                }
                out.push(']');
            }
            Json::Obj(m) => {
                let mut sorted: Vec<&(String, Json)> = m.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write_canonical(out);
                }
                out.push('}');
            }
        }
    }

    /// SHA-256 of the canonical text, in hex.
    pub(crate) fn hash(&self) -> String {
        hash_text(&self.canonical())
    }

    /// Equal as a JSON reader sees them.
    pub(crate) fn same(&self, other: &Json) -> bool {
        self.canonical() == other.canonical()
    }

    /// Renders the value for a place whose line is indented by `indent`: across lines, one
    /// member or element a line, like `JSON.stringify(v, null, unit)`.
    pub(crate) fn render_pretty(&self, layout: &Layout, indent: &str, out: &mut String) {
        match self {
            Json::Arr(a) if !a.is_empty() => {
                let inner = format!("{indent}{}", layout.unit);
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(layout.nl);
                    out.push_str(&inner);
                    v.render_pretty(layout, &inner, out);
                }
                out.push_str(layout.nl);
                out.push_str(indent);
                out.push(']');
            }
            Json::Obj(m) if !m.is_empty() => {
                let inner = format!("{indent}{}", layout.unit);
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(layout.nl);
                    out.push_str(&inner);
                    write_str(out, k);
                    out.push_str(&layout.colon);
                    v.render_pretty(layout, &inner, out);
                }
                out.push_str(layout.nl);
                out.push_str(indent);
                out.push('}');
            }
            _ => self.render_compact(&layout.colon, ", ", out),
        }
    }

    /// Renders the value on one line with the given separators.
    pub(crate) fn render_compact(&self, colon: &str, sep: &str, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(n),
            Json::Str(s) => write_str(out, s),
            Json::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    v.render_compact(colon, sep, out);
                }
                out.push(']');
            }
            Json::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    write_str(out, k);
                    out.push_str(colon);
                    v.render_compact(colon, sep, out);
                }
                out.push('}');
            }
        }
    }
}

/// SHA-256 of a text, in hex.
pub(crate) fn hash_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Writes `s` as a JSON string literal.
pub(crate) fn write_str(out: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(lit) => out.push_str(&lit),
        Err(_) => out.push_str("\"\""),
    }
}

/// A number as `JSON.parse` then `JSON.stringify` would print it: `1.0`, `1e0` and `1` agree.
fn canonical_number(raw: &str) -> String {
    if raw.bytes().all(|b| b.is_ascii_digit() || b == b'-') && raw.len() < 16 {
        return if raw == "-0" {
            "0".to_owned()
        } else {
            raw.to_owned()
        };
    }
    match raw.parse::<f64>() {
        Ok(x) if x.is_finite() => {
            if x == x.trunc() && x.abs() < 1e21 {
                format!("{x:.0}")
            } else {
                format!("{x}")
            }
        }
        _ => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Json {
        Json::parse_at(s.as_bytes(), 0).expect("parse").0
    }

    #[test]
    fn canonical_form_ignores_layout_and_key_order() {
        let a = parse("{\n  \"b\": [1, 2],\n  \"a\": {\"y\": true, \"x\": null}\n}");
        let b = parse("{\"a\":{\"x\":null,\"y\":true},\"b\":[1,2]}");
        assert_eq!(a.canonical(), "{\"a\":{\"x\":null,\"y\":true},\"b\":[1,2]}");
        assert!(a.same(&b));
        assert_eq!(a.hash(), b.hash());
        assert!(!parse("[1,2]").same(&parse("[2,1]")));
    }

    #[test]
    fn numbers_compare_as_a_javascript_reader_sees_them() {
        assert!(parse("1.0").same(&parse("1")));
        assert!(parse("1e4").same(&parse("10000")));
        assert!(parse("-0").same(&parse("0")));
        assert!(parse("0.10").same(&parse("0.1")));
        assert!(!parse("1").same(&parse("2")));
        assert!(!parse("\"1\"").same(&parse("1")));
    }

    #[test]
    fn strings_compare_decoded() {
        assert!(parse(r#""\u0041\/""#).same(&parse(r#""A/""#)));
    }

    #[test]
    fn pretty_rendering_follows_the_layout() {
        let layout = Layout {
            unit: "\t".into(),
            nl: "\r\n",
            colon: ": ".into(),
        };
        let mut out = String::new();
        parse(r#"{"a": [1, {}], "b": []}"#).render_pretty(&layout, "  ", &mut out);
        assert_eq!(
            out,
            "{\r\n  \t\"a\": [\r\n  \t\t1,\r\n  \t\t{}\r\n  \t],\r\n  \t\"b\": []\r\n  }"
        );
    }

    #[test]
    fn serde_round_trip_keeps_values() {
        let v = parse(r#"{"a": [1, 2.5, "x", null, true]}"#);
        assert!(Json::from_serde(&v.to_serde()).same(&v));
    }
}
