//! Random corruption of valid files (issue: damaged markers): delete, duplicate, swap or mangle
//! marker lines, then check that the damage is detected, that editing refuses and writes
//! nothing, that `repair` either restores a valid file or changes nothing, and that no user
//! line is ever lost.

use demarcate::{
    Desired, Document, Format, Identity, Op, PlanError, PlanOptions as Options, plan,
    repair_markers as repair,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Damage {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Mangle(usize),
}

fn valid_file(fmt: Format, user: &[String], regions: usize) -> Vec<u8> {
    let mut src: Vec<u8> = user.concat().into_bytes();
    let opts = Options {
        hash: true,
        ..Options::default()
    };
    for i in 0..regions {
        let body = format!("export Z{i}=1\n").into_bytes();
        let d = Desired {
            id: Identity::new("ZYLOS", &format!("r{i}")),
            body,
        };
        let doc = Document::parse(&src, fmt.syntax());
        let p = plan(&doc, fmt.syntax(), &[Op::Set(d)], &opts).expect("a valid insert");
        src = p.new;
        // Some user lines after each region.
        src.extend_from_slice(user.get(i).map_or("", String::as_str).as_bytes());
    }
    src
}

fn lines(src: &[u8]) -> Vec<Vec<u8>> {
    src.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn is_marker(line: &[u8]) -> bool {
    String::from_utf8_lossy(line)
        .to_ascii_uppercase()
        .contains("MANAGED")
        || String::from_utf8_lossy(line)
            .to_ascii_uppercase()
            .contains("MANGED")
}

fn user_lines(src: &[u8]) -> Vec<Vec<u8>> {
    lines(src).into_iter().filter(|l| !is_marker(l)).collect()
}

fn corrupt(src: &[u8], damage: &Damage) -> Option<Vec<u8>> {
    let mut ls = lines(src);
    let markers: Vec<usize> = (0..ls.len()).filter(|i| is_marker(&ls[*i])).collect();
    if markers.is_empty() {
        return None;
    }
    let pick = |i: usize| markers[i % markers.len()];
    match *damage {
        Damage::Delete(i) => {
            ls.remove(pick(i));
        }
        Damage::Duplicate(i) => {
            let at = pick(i);
            let l = ls[at].clone();
            ls.insert(at, l);
        }
        Damage::Swap(i, j) => {
            let (a, b) = (pick(i), pick(j));
            if ls[a] == ls[b] {
                return None;
            }
            ls.swap(a, b);
        }
        Damage::Mangle(i) => {
            let at = pick(i);
            let text = String::from_utf8_lossy(&ls[at]).into_owned();
            let mangled = text
                .replacen("BEGIN", "BEGN", 1)
                .replacen("END ", "ENDD ", 1);
            ls[at] = mangled.into_bytes();
        }
    }
    Some(ls.concat())
}

fn user_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("export PATH=\"$HOME/bin:$PATH\"\n".to_owned()),
        Just("alias ll='ls -l'\n".to_owned()),
        Just("# a comment\n".to_owned()),
        Just("\n".to_owned()),
        "[a-z]{1,8}=[a-z0-9]{0,8}\n",
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0..16usize).prop_map(Damage::Delete),
        (0..16usize).prop_map(Damage::Duplicate),
        (0..16usize, 0..16usize).prop_map(|(a, b)| Damage::Swap(a, b)),
        (0..16usize).prop_map(Damage::Mangle),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn damage_is_detected_blocks_edits_and_repair_loses_nothing(
        env in any::<bool>(),
        user in proptest::collection::vec(user_line(), 0..8),
        regions in 1..4usize,
        dmg in damage(),
    ) {
        let fmt = if env { Format::Env } else { Format::Shell };
        let valid = valid_file(fmt, &user, regions);
        let Some(bad) = corrupt(&valid, &dmg) else { return Ok(()); };
        let doc = Document::parse(&bad, fmt.syntax());
        // Detected: a line-level corruption of markers always leaves a problem.
        prop_assert!(!doc.problems.is_empty(), "undetected {:?}:\n{}", dmg, String::from_utf8_lossy(&bad));
        // Editing refuses when the damage is structural.
        let set = Op::Set(Desired { id: Identity::new("OTHER", "x"), body: b"export O=1\n".to_vec() });
        let opts = Options { hash: true, ..Options::default() };
        if doc.blocked() {
            let refused = matches!(plan(&doc, fmt.syntax(), &[set], &opts), Err(PlanError::Blocked(_)));
            prop_assert!(refused);
        }
        // Repair restores a valid file or changes nothing; user lines are never lost.
        let r = repair(&bad, fmt.syntax(), &[], None);
        if r.unfixed.is_empty() {
            let fixed = Document::parse(&r.new, fmt.syntax());
            prop_assert!(!fixed.blocked(), "repair left damage:\n{}", String::from_utf8_lossy(&r.new));
        } else {
            prop_assert_eq!(&r.new, &bad);
        }
        prop_assert_eq!(user_lines(&r.new), user_lines(&bad));
    }
}
