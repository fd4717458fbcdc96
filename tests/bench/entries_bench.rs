//! Throughput of `entries::sync` on a 10 MB settings file (release build):
//! `cargo run --release --example entries_bench` (or `just bench-entries`).
//!
//! Two files: one whose bulk is the user's own data outside any keyed array (skipped by the
//! scanner), one whose bulk is a keyed array (`/permissions/allow=.`, every element keyed).
//! Each is upgraded from release 18 to 19 of the zylos-settings history, then synced again
//! with nothing to do. Times are the best and the median of several runs of the whole pure pipeline:
//! strict validation, scan, reconcile, splices and the strict check of the result.

use std::time::Instant;

use demarcate::entries::{self, EntryOptions, KeyRules, Registry, Template};

const HOME: &str = "/home/u";

fn release(n: &str) -> Template {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/zylos-settings/"
    );
    let name = std::fs::read_dir(dir)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|f| f.starts_with(n))
        .unwrap_or_default();
    let text = std::fs::read_to_string(format!("{dir}{name}")).unwrap_or_default();
    let mut v: serde_json::Value =
        serde_json::from_str(&text.replace("@ZYLOS_DIR@", "/home/u/zylos")).unwrap_or_default();
    // The release also ships two permission strings, so the keyed array is walked.
    v["permissions"] =
        serde_json::json!({"allow": ["Bash(zylos status)", format!("Read(~/zylos/{n}/**)")]});
    Template::from_value(&v).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

/// A settings file of about `size` bytes: `bulk` decides where the bytes are.
fn file(size: usize, keyed_bulk: bool) -> Vec<u8> {
    let mut out = String::with_capacity(size + 4096);
    out.push_str("{\n  \"theme\": \"dark\",\n");
    if keyed_bulk {
        out.push_str("  \"permissions\": {\n    \"allow\": [\n");
        let mut i = 0;
        while out.len() < size {
            out.push_str(&format!(
                "      \"Bash(npm run task-{i} --workspace packages/app-{i})\",\n"
            ));
            i += 1;
        }
        out.push_str("      \"Read(~/notes/**)\"\n    ]\n  },\n");
    } else {
        out.push_str("  \"projects\": {\n");
        let mut i = 0;
        while out.len() < size {
            out.push_str(&format!(
                "    \"/home/u/src/project-{i}\": {{\n      \"allowedTools\": [\"Read\", \"Edit\"],\n      \"history\": [{{\"display\": \"fix the \\\"{i}\\\" bug\", \"pasted\": {{}}}}],\n      \"lastCost\": {i}.25\n    }},\n"
            ));
            i += 1;
        }
        out.push_str("    \"last\": {}\n  },\n");
        out.push_str(
            "  \"permissions\": {\n    \"allow\": [\n      \"Read(~/notes/**)\"\n    ]\n  },\n",
        );
    }
    out.push_str("  \"model\": \"opus\"\n}\n");
    out.into_bytes()
}

/// The fastest and the median of the runs (the fastest is the least disturbed by other load).
fn best_and_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() {
    let rules = KeyRules::parse(&[
        "/hooks/*=matcher",
        "/hooks/*/*/hooks=command:path",
        "/permissions/allow=.",
    ])
    .unwrap_or_default();
    let opts = EntryOptions {
        home: Some(HOME.into()),
        ..EntryOptions::default()
    };
    let (r18, r19) = (release("18"), release("19"));
    for keyed in [false, true] {
        let base = file(10 << 20, keyed);
        let installed = entries::sync(&base, &r18, &rules, "zylos", None, &[], &opts)
            .unwrap_or_else(|e| panic!("{e}"));
        let (src, reg): (Vec<u8>, Registry) = (installed.new, installed.registry);
        let mb = src.len() as f64 / (1 << 20) as f64;
        for (what, tpl) in [("upgrade 18 -> 19", &r19), ("nothing to do", &r18)] {
            let mut times = Vec::new();
            let mut changed = false;
            for _ in 0..11 {
                let t0 = Instant::now();
                let plan = entries::sync(&src, tpl, &rules, "zylos", Some(&reg), &[], &opts)
                    .unwrap_or_else(|e| panic!("{e}"));
                times.push(t0.elapsed().as_secs_f64());
                changed = plan.new != src;
            }
            let (best, med) = best_and_median(times);
            let file = if keyed {
                "bulk in a keyed array"
            } else {
                "bulk in user data"
            };
            println!(
                "{file:<22} {what:<16} {mb:4.1} MB  best {:5.1} ms = {:4.0} MB/s  \
                 median {:5.1} ms = {:4.0} MB/s  (changed: {changed})",
                best * 1000.0,
                mb / best,
                med * 1000.0,
                mb / med
            );
        }
    }
}
