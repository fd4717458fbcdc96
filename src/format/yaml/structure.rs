//! The structure of an edited YAML file as the YAML parser reads it (saphyr-parser's
//! events): for each line where an entry of a block collection starts, the keys of the
//! mappings around that collection and whether it is a sequence. The planner's last check
//! compares it with the template's homes: each inserted region's first entry must sit under
//! the template's parent keys, in the template's kind of collection (docs/reconcile.md).

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

use crate::document::Document;
use crate::format::Home;
use crate::marker::Identity;

use super::place::next_content;

/// Where a collection is: the keys down from the root; `None` inside a sequence's item.
type Path = Option<Vec<String>>;

enum Frame {
    Map {
        path: Path,
        /// The next scalar is a key.
        expect_key: bool,
        last_key: Option<String>,
    },
    Seq {
        path: Path,
    },
}

/// The path of a child collection starting at `line` in the collection on top of `stack`
/// (`None` inside a sequence's item, which is recorded as an entry of the sequence).
fn child_path(stack: &mut [Frame], out: &mut HashMap<usize, (Path, bool)>, line: usize) -> Path {
    match stack.last_mut() {
        None => Some(Vec::new()),
        Some(Frame::Map {
            path,
            expect_key,
            last_key,
        }) => {
            *expect_key = true;
            let mut p = path.clone()?;
            p.push(last_key.clone()?);
            Some(p)
        }
        Some(Frame::Seq { path }) => {
            out.entry(line).or_insert((path.clone(), true));
            None
        }
    }
}

/// Line (1-based) of each entry of a block collection in the first document: the path of
/// its collection and whether that is a sequence. `None` when the parser rejects the text.
fn entries(text: &str) -> Option<HashMap<usize, (Path, bool)>> {
    let mut out: HashMap<usize, (Path, bool)> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        let line = span.start.line();
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    break;
                }
            }
            Event::Scalar(v, ..) => match stack.last_mut() {
                Some(Frame::Map {
                    path,
                    expect_key: expect @ true,
                    last_key,
                }) => {
                    out.entry(line).or_insert((path.clone(), false));
                    *last_key = Some(v.into_owned());
                    *expect = false;
                }
                _ => {
                    child_path(&mut stack, &mut out, line);
                }
            },
            Event::Alias(_) => {
                child_path(&mut stack, &mut out, line);
            }
            Event::MappingStart(..) => {
                let path = child_path(&mut stack, &mut out, line);
                stack.push(Frame::Map {
                    path,
                    expect_key: true,
                    last_key: None,
                });
            }
            Event::SequenceStart(..) => {
                let path = child_path(&mut stack, &mut out, line);
                stack.push(Frame::Seq { path });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    Some(out)
}

/// Checks that each region of `homed` in `doc` has its first entry where its home says, as
/// the YAML parser reads the file.
pub(super) fn check(doc: &Document<'_>, homed: &[(Identity, Home)]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(doc.src) else {
        return Ok(());
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(lines) = entries(text) else {
        // What the parser rejects is reported by the validation.
        return Ok(());
    };
    let bom = doc.src.len() - text.len();
    for (id, home) in homed {
        let Some(r) = doc.region(id) else { continue };
        let Some(first) = next_content(doc, r.body().start).filter(|l| l.start < r.body().end)
        else {
            continue;
        };
        let line = crate::lines::line_of(doc.src, first.start.max(bom));
        let want: Vec<String> = home.path.iter().map(|s| s.key.clone()).collect();
        let seq = home.path.last().is_some_and(|s| s.array);
        let found = lines.get(&line);
        if found != Some(&(Some(want.clone()), seq)) {
            let place = |p: &Vec<String>| format!("/{}", p.join("/"));
            let have = match found {
                Some((Some(p), _)) => place(p),
                Some((None, _)) => "a sequence's item".to_owned(),
                None => "no collection".to_owned(),
            };
            return Err(format!(
                "\"{id}\" would be read in {have} instead of {} where the template has it \
                 (its line {})",
                place(&want),
                home.line
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Step;
    use crate::format::yaml::Yaml;

    fn home(keys: &[(&str, bool)]) -> Home {
        Home {
            path: keys
                .iter()
                .map(|(k, array)| Step {
                    key: (*k).to_owned(),
                    array: *array,
                    ..Step::default()
                })
                .collect(),
            ..Home::default()
        }
    }

    fn checked(src: &str, name: &str, keys: &[(&str, bool)]) -> Result<(), String> {
        let doc = Document::parse(src.as_bytes(), &Yaml);
        check(&doc, &[(Identity::new("Z", name), home(keys))])
    }

    #[test]
    fn a_region_is_read_where_its_home_says_or_refused() {
        let compose = "\
x-flags: &flags
  restart: always
services:
  mine:
    <<: *flags
    ports: [\"80:80\",
      \"443:443\"]
# BEGIN Z MANAGED db
db:
  image: postgres
# END Z MANAGED db
steps:
# BEGIN Z MANAGED s
- a
# END Z MANAGED s
";
        assert_eq!(checked(compose, "db", &[]), Ok(()));
        // Valid YAML at the top level where the template has it under `services`: refused.
        let e = checked(compose, "db", &[("services", false)]).expect_err("refused");
        assert!(e.contains("read in / instead of /services"), "{e}");
        assert_eq!(checked(compose, "s", &[("steps", true)]), Ok(()));
        assert!(checked(compose, "s", &[("steps", false)]).is_err());
        let nested =
            "a:\n  b:\n    # BEGIN Z MANAGED n\n    - c: 1\n      d: 2\n    # END Z MANAGED n\n";
        assert_eq!(checked(nested, "n", &[("a", false), ("b", true)]), Ok(()));
        assert!(checked(nested, "n", &[("a", false)]).is_err());
    }
}
