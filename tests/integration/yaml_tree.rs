//! YAML read into a JSON value with saphyr-parser (the parser demarcate validates YAML
//! with): scalars as the text they hold, aliases replaced by what their anchors hold, the
//! first document only. The YAML tests compare structures with it.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};
use serde_json::{Map, Value};

enum Open {
    Seq(usize, Vec<Value>),
    Map(usize, Map<String, Value>, Option<String>),
}

/// The first document of `text`; an error for what the parser rejects, an alias to an
/// anchor not defined before it, or a key twice in one mapping.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|e| e.to_string())?;
        let done = match event {
            Event::DocumentStart(_) if root.is_some() => break,
            Event::Scalar(v, _, anchor, _) => Some((anchor, Value::String(v.into_owned()))),
            Event::Alias(id) => {
                let v = anchors
                    .get(&id)
                    .cloned()
                    .ok_or("an alias before its anchor")?;
                Some((0, v))
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Open::Seq(anchor, Vec::new()));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Open::Map(anchor, Map::new(), None));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(anchor, items)) => Some((anchor, Value::Array(items))),
                Some(Open::Map(anchor, m, _)) => Some((anchor, Value::Object(m))),
                None => None,
            },
            _ => None,
        };
        let Some((anchor, v)) = done else { continue };
        if anchor != 0 {
            anchors.insert(anchor, v.clone());
        }
        match stack.last_mut() {
            Some(Open::Seq(_, items)) => items.push(v),
            Some(Open::Map(_, m, key)) => match key.take() {
                None => {
                    *key = Some(match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    });
                }
                Some(k) => {
                    if m.insert(k.clone(), v).is_some() {
                        return Err(format!("`{k}` twice in one mapping"));
                    }
                }
            },
            None => root = Some(v),
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

/// `b` merged into `a`, mapping by mapping (what a file holds after a template's entries
/// were added to the user's).
pub(crate) fn merged(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, v) in b {
                let old = a.remove(&k).unwrap_or(Value::Null);
                a.insert(k, merged(old, v));
            }
            Value::Object(a)
        }
        (a, Value::Null) => a,
        (_, b) => b,
    }
}

#[test]
fn the_reader_sees_anchors_keys_and_documents() {
    let v = parse("a: &x {k: 1}\nb: *x\nc: [1, two]\n---\nd: 1\n").expect("parses");
    assert_eq!(
        v,
        serde_json::json!({"a": {"k": "1"}, "b": {"k": "1"}, "c": ["1", "two"]})
    );
    assert!(parse("b: *x\na: &x 1\n").is_err());
    assert!(parse("a: 1\na: 2\n").is_err());
    assert!(parse("a: [\n").is_err());
}
