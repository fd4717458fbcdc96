//! The peers' last options (Ansible blockinfile, Salt blockreplace): update-only edits
//! (`--no-insert`, `--require`), the line ending of written lines (`--line-ending`), other
//! encodings (`--encoding`), patterns over several lines for `--at after:/before:`, and the
//! declared file-size limit.

use std::path::Path;

use crate::util;

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).expect("file read")
}

fn utf16le(text: &str) -> Vec<u8> {
    let mut out = b"\xFF\xFE".to_vec();
    out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    out
}

fn utf16be(text: &str) -> Vec<u8> {
    let mut out = b"\xFE\xFF".to_vec();
    out.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    out
}

fn from_utf16le(bytes: &[u8]) -> String {
    assert!(bytes.starts_with(b"\xFF\xFE"), "the byte order mark stays");
    let units: Vec<u16> = bytes[2..]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).expect("UTF-16")
}

#[test]
fn no_insert_leaves_a_missing_region_out_with_a_warning() {
    let (dir, f) = util::with_file(".bashrc", b"export A=1\n");
    util::backdate(&f);
    let before = util::mtime(&f);
    let args = [
        "set",
        ".bashrc",
        "--owner",
        "ZYLOS",
        "--name",
        "path",
        "--content",
        "export B=2",
        "--no-insert",
    ];
    let out = util::run(dir.path(), &args);
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("not inserted"),
        "{}",
        util::stderr(&out)
    );
    assert_eq!(read(&f), b"export A=1\n");
    assert_eq!(util::mtime(&f), before, "nothing written");
    let json = util::json(&util::run(
        dir.path(),
        &[&args[..], &["--json"][..]].concat(),
    ));
    let region = &json["files"][0]["regions"][0];
    assert_eq!(region["action"], "not-inserted");
    assert_eq!(region["state"], "absent");
    assert_eq!(region["name"], "path");
    assert_eq!(json["files"][0]["changed"], false);
    // A missing file is not created for a region that would not be inserted.
    let out = util::run(
        dir.path(),
        &[
            "set",
            "new.env",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "A=1",
            "--no-insert",
        ],
    );
    assert_eq!(util::code(&out), 0);
    assert!(!dir.path().join("new.env").exists());
}

#[test]
fn no_insert_updates_a_region_that_is_there() {
    let (dir, f) = util::with_file(
        ".bashrc",
        b"export A=1\n# BEGIN ZYLOS MANAGED path\nexport B=1\n# END ZYLOS MANAGED path\n",
    );
    let out = util::run(
        dir.path(),
        &[
            "set",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "export B=2",
            "--no-insert",
        ],
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = String::from_utf8(read(&f)).expect("UTF-8");
    assert!(text.contains("export B=2\n"), "{text}");
    assert!(!text.contains("export B=1"), "{text}");
}

#[test]
fn require_refuses_a_missing_region_naming_file_owner_and_name() {
    let (dir, f) = util::with_file(".bashrc", b"export A=1\n");
    let out = util::run(
        dir.path(),
        &[
            "set",
            ".bashrc",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "export B=2",
            "--require",
        ],
    );
    assert_eq!(util::code(&out), 2);
    let err = util::stderr(&out);
    for part in [".bashrc", "\"ZYLOS\"", "\"path\"", "nothing was written"] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    assert_eq!(read(&f), b"export A=1\n");
}

#[test]
fn sync_with_no_insert_updates_only_the_regions_that_are_there() {
    let (dir, f) = util::with_file(
        "app.env",
        b"USER=me\n# BEGIN ZYLOS MANAGED a\nA=1\n# END ZYLOS MANAGED a\n",
    );
    std::fs::write(
        dir.path().join("t.env"),
        "# BEGIN ZYLOS MANAGED a\nA=2\n# END ZYLOS MANAGED a\n\
         # BEGIN ZYLOS MANAGED b\nB=2\n# END ZYLOS MANAGED b\n",
    )
    .expect("template");
    let out = util::run(
        dir.path(),
        &[
            "sync",
            "app.env",
            "--template",
            "t.env",
            "--owner",
            "ZYLOS",
            "--no-insert",
            "--json",
        ],
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let json = util::json(&out);
    let actions: Vec<(String, String)> = json["files"][0]["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["action"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        actions.contains(&("a".to_owned(), "updated".to_owned())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("b".to_owned(), "not-inserted".to_owned())),
        "{actions:?}"
    );
    let text = String::from_utf8(read(&f)).expect("UTF-8");
    assert!(text.contains("A=2\n") && !text.contains("B=2"), "{text}");
}

#[test]
fn manifest_no_insert_and_require_keys() {
    let (dir, f) = util::with_file(".bashrc", b"export A=1\n");
    let manifest = |key: &str| {
        format!(
            "owner = \"ZYLOS\"\n[[block]]\npath = \".bashrc\"\nname = \"path\"\n\
             content = \"export B=2\"\n{key} = true\n"
        )
    };
    std::fs::write(dir.path().join("m.toml"), manifest("no_insert")).expect("manifest");
    let out = util::run(dir.path(), &["apply", "m.toml"]);
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    assert!(util::stderr(&out).contains("not inserted"));
    assert_eq!(read(&f), b"export A=1\n");
    std::fs::write(dir.path().join("m.toml"), manifest("require")).expect("manifest");
    let out = util::run(dir.path(), &["apply", "m.toml"]);
    assert_eq!(util::code(&out), 2);
    assert!(
        util::stderr(&out).contains("\"path\""),
        "{}",
        util::stderr(&out)
    );
    assert_eq!(read(&f), b"export A=1\n");
}

/// Set, set again, remove, with each line ending, in a new file and in an existing one.
#[test]
fn line_endings_round_trip_and_stay_put() {
    let cases: [(&str, &str, &[u8]); 4] = [
        ("lf", "\n", b"a=1\r\nb=2\r\n"),
        ("crlf", "\r\n", b"a=1\nb=2\n"),
        ("cr", "\r", b"a=1\rb=2\r"),
        ("crlf", "\r\n", b"a=1\r\nb=2\r\n"),
    ];
    for (value, eol, original) in cases {
        let (dir, f) = util::with_file("app.conf", original);
        let set = [
            "set",
            "app.conf",
            "--format",
            "text",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "x=1\ny=2",
            "--line-ending",
            value,
        ];
        let out = util::run(dir.path(), &set);
        assert_eq!(util::code(&out), 0, "{value}: {}", util::stderr(&out));
        let after = read(&f);
        let region = &after[original.len()..];
        let text = String::from_utf8(region.to_vec()).expect("UTF-8");
        let lines: Vec<&str> = text.split_inclusive(eol).collect();
        assert_eq!(lines.len(), 4, "{value}: {text:?}");
        assert!(lines.iter().all(|l| l.ends_with(eol)), "{value}: {text:?}");
        assert_eq!(lines[1], format!("x=1{eol}"));
        if eol != "\r\n" {
            assert!(!text.contains("\r\n"), "{value}: {text:?}");
        }
        util::backdate(&f);
        let stamp = util::mtime(&f);
        let again = util::run(dir.path(), &set);
        assert_eq!(util::code(&again), 0);
        assert!(util::stderr(&again).contains("unchanged"), "{value}");
        assert_eq!(
            util::mtime(&f),
            stamp,
            "{value}: a second run writes nothing"
        );
        let remove = [
            "remove",
            "app.conf",
            "--format",
            "text",
            "--owner",
            "Z",
            "--name",
            "n",
            "--line-ending",
            value,
        ];
        assert_eq!(util::code(&util::run(dir.path(), &remove)), 0);
        assert_eq!(
            read(&f),
            original,
            "{value}: set then remove gives the original"
        );
        // A new file.
        let out = util::run(
            dir.path(),
            &[&set[..1], &["new.conf"][..], &set[2..]].concat(),
        );
        assert_eq!(util::code(&out), 0);
        let new = read(&dir.path().join("new.conf"));
        assert!(
            new.ends_with(format!("# END Z MANAGED n{eol}").as_bytes()),
            "{value}"
        );
        assert_eq!(
            new.iter().filter(|&&b| b == b'\n' || b == b'\r').count(),
            4 * eol.len(),
            "{value}: {new:?}"
        );
    }
}

#[test]
fn cr_lines_are_refused_in_a_file_of_lf_lines() {
    let (dir, f) = util::with_file("app.conf", b"a=1\n");
    let out = util::run(
        dir.path(),
        &[
            "set",
            "app.conf",
            "--format",
            "text",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "x",
            "--line-ending",
            "cr",
        ],
    );
    assert_eq!(util::code(&out), 2);
    assert!(
        util::stderr(&out).contains("app.conf"),
        "{}",
        util::stderr(&out)
    );
    assert!(util::stderr(&out).contains("CR"), "{}", util::stderr(&out));
    assert_eq!(read(&f), b"a=1\n");
}

/// Set, set again, remove, in each encoding, with characters outside ASCII in and out of
/// the region.
#[test]
fn encodings_round_trip_and_stay_put() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "utf-16le",
            utf16le("Set-Alias ll Get-ChildItem\r\n# café – ok\r\n"),
            "Write-Host 'Grüße €'",
        ),
        ("utf-16be", utf16be("x = 'naïve'\n"), "y = 'ñ €'"),
        ("latin-1", b"caf\xe9\nend\n".to_vec(), "na\u{ef}ve \u{bd}"),
        ("iso-8859-1", b"\xc0 la carte\n".to_vec(), "\u{e9}t\u{e9}"),
        (
            "windows-1252",
            b"5 \x80\r\n".to_vec(),
            "\u{201c}quoted\u{201d} \u{20ac}",
        ),
    ];
    for (encoding, original, content) in cases {
        let (dir, f) = util::with_file("prof.ps1", &original);
        let set = [
            "set",
            "prof.ps1",
            "--owner",
            "ZYLOS",
            "--name",
            "n",
            "--content",
            content,
            "--encoding",
            encoding,
        ];
        let out = util::run(dir.path(), &set);
        assert_eq!(util::code(&out), 0, "{encoding}: {}", util::stderr(&out));
        let after = read(&f);
        assert!(after.starts_with(&original), "{encoding}: user bytes kept");
        let list = util::run(
            dir.path(),
            &["list", "prof.ps1", "--encoding", encoding, "--json"],
        );
        assert_eq!(util::code(&list), 0, "{encoding}: {}", util::stderr(&list));
        assert_eq!(
            util::json(&list)["files"][0]["regions"][0]["state"],
            "pristine"
        );
        util::backdate(&f);
        let stamp = util::mtime(&f);
        let again = util::run(dir.path(), &set);
        assert!(util::stderr(&again).contains("unchanged"), "{encoding}");
        assert_eq!(
            util::mtime(&f),
            stamp,
            "{encoding}: a second run writes nothing"
        );
        let remove = [
            "remove",
            "prof.ps1",
            "--owner",
            "ZYLOS",
            "--name",
            "n",
            "--encoding",
            encoding,
        ];
        let out = util::run(dir.path(), &remove);
        assert_eq!(util::code(&out), 0, "{encoding}: {}", util::stderr(&out));
        assert_eq!(
            read(&f),
            original,
            "{encoding}: set then remove gives the original"
        );
    }
}

#[test]
fn a_utf16le_powershell_profile_keeps_its_bom_and_crlf() {
    let profile = "Set-Alias ll Get-ChildItem\r\nfunction prompt { \"PS> \" }\r\n";
    let (dir, f) = util::with_file("Microsoft.PowerShell_profile.ps1", &utf16le(profile));
    let out = util::run(
        dir.path(),
        &[
            "set",
            "Microsoft.PowerShell_profile.ps1",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "$env:Path += \";C:\\zylos\\bin\"",
            "--encoding",
            "utf-16le",
        ],
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = from_utf16le(&read(&f));
    assert!(text.starts_with(profile));
    assert!(text.ends_with("\r\n$env:Path += \";C:\\zylos\\bin\"\r\n# END ZYLOS MANAGED path\r\n"));
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "CRLF throughout: {text:?}"
    );
    // A new UTF-16 file gets a byte order mark: Windows PowerShell reads one without it as
    // the ANSI code page.
    let out = util::run(
        dir.path(),
        &[
            "set",
            "profile.ps1",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "$x = 'é'",
            "--encoding",
            "utf-16le",
        ],
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = from_utf16le(&read(&dir.path().join("profile.ps1")));
    assert!(text.contains("\n$x = 'é'\n"), "{text:?}");
}

#[test]
fn a_character_the_encoding_cannot_hold_is_refused_by_name_and_line() {
    let original = b"caf\xe9\n".to_vec();
    for encoding in ["latin-1", "windows-1252"] {
        let (dir, f) = util::with_file("notes.conf", &original);
        let out = util::run(
            dir.path(),
            &[
                "set",
                "notes.conf",
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                "ok\nan → arrow",
                "--encoding",
                encoding,
            ],
        );
        assert_eq!(util::code(&out), 2, "{encoding}");
        let err = util::stderr(&out);
        for part in ["notes.conf", "line 4", "'→'", "U+2192", encoding] {
            assert!(err.contains(part), "{encoding}: {part} missing from: {err}");
        }
        assert_eq!(read(&f), original, "{encoding}: nothing written");
        // Not even a dry run pretends it could.
        let dry = util::run(
            dir.path(),
            &[
                "set",
                "notes.conf",
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                "→",
                "--encoding",
                encoding,
                "--dry-run",
            ],
        );
        assert_eq!(util::code(&dry), 2, "{encoding}");
    }
}

#[test]
fn utf16_is_refused_without_its_encoding_and_with_another() {
    let original = utf16le("a = 1\r\n");
    let (dir, f) = util::with_file("prof.ps1", &original);
    let set = [
        "set",
        "prof.ps1",
        "--owner",
        "Z",
        "--name",
        "n",
        "--content",
        "b",
    ];
    let out = util::run(dir.path(), &set);
    assert_eq!(util::code(&out), 2);
    let err = util::stderr(&out);
    assert!(
        err.contains("UTF-16") && err.contains("--encoding utf-16le"),
        "{err}"
    );
    let out = util::run(
        dir.path(),
        &[&set[..], &["--encoding", "utf-16be"][..]].concat(),
    );
    assert_eq!(util::code(&out), 2);
    assert!(
        util::stderr(&out).contains("byte order mark"),
        "{}",
        util::stderr(&out)
    );
    let out = util::run(
        dir.path(),
        &[&set[..], &["--encoding", "latin-1"][..]].concat(),
    );
    assert_eq!(util::code(&out), 2);
    assert_eq!(read(&f), original);
    // UTF-16 bytes that do not decode (an odd count) are an error, never replaced.
    let mut odd = original.clone();
    odd.push(b'x');
    std::fs::write(&f, &odd).expect("write");
    let out = util::run(
        dir.path(),
        &[&set[..], &["--encoding", "utf-16le"][..]].concat(),
    );
    assert_eq!(util::code(&out), 2);
    assert!(
        util::stderr(&out).contains("not valid utf-16le"),
        "{}",
        util::stderr(&out)
    );
    assert_eq!(read(&f), odd);
}

#[test]
fn a_filter_decodes_and_encodes_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = utf16le("a = 1\r\n");
    let out = util::run_with_stdin(
        dir.path(),
        &[
            "set",
            "-",
            "--format",
            "powershell",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "b = 2",
            "--encoding",
            "utf-16le",
        ],
        Some(&input),
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = from_utf16le(&out.stdout);
    assert!(
        text.starts_with("a = 1\r\n# BEGIN Z MANAGED n hash="),
        "{text:?}"
    );
    assert!(
        text.ends_with("\r\nb = 2\r\n# END Z MANAGED n\r\n"),
        "{text:?}"
    );
    // Without the encoding the input is refused as a file's would be: nothing on stdout
    // (SPEC, "Filter mode checks what file mode checks").
    let out = util::run_with_stdin(
        dir.path(),
        &[
            "set",
            "-",
            "--format",
            "powershell",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "b",
        ],
        Some(&input),
    );
    assert_eq!(util::code(&out), 2);
    assert!(out.stdout.is_empty());
}

#[test]
fn a_pattern_over_several_lines_matches_the_whole_text_outside_regions() {
    let original = "start\nkey\n# BEGIN O MANAGED r\nfirst\nsecond\n# END O MANAGED r\n\
                    first\nsecond\nthird\n";
    for (at, expected_before) in [
        // The first match is inside a region: the next one outside it counts.
        ("after:first\\nsec", "first\nsecond\n"),
        ("after:(?m)^first\\nsecond$", "first\nsecond\n"),
        ("after:first\nsecond\n", "first\nsecond\n"),
        // Before the line the match starts on.
        ("before:(?m)^second\\nthird", "first\n"),
        // No match: the end.
        ("after:(?m)^nothing\\nhere", "first\nsecond\nthird\n"),
    ] {
        let (dir, f) = util::with_file("notes.conf", original.as_bytes());
        let out = util::run(
            dir.path(),
            &[
                "set",
                "notes.conf",
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                "new",
                "--at",
                at,
            ],
        );
        assert_eq!(util::code(&out), 0, "{at}: {}", util::stderr(&out));
        let text = String::from_utf8(read(&f)).expect("UTF-8");
        let head = "start\nkey\n# BEGIN O MANAGED r\nfirst\nsecond\n# END O MANAGED r\n";
        let after_region = text
            .strip_prefix(head)
            .expect("the region and above unchanged");
        assert!(
            after_region.starts_with(&format!("{expected_before}# BEGIN Z MANAGED n")),
            "{at}: {text}"
        );
    }
    // One line at a time as before when the pattern does not span lines.
    let (dir, f) = util::with_file("notes.conf", original.as_bytes());
    let out = util::run(
        dir.path(),
        &[
            "set",
            "notes.conf",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "new",
            "--at",
            "after:^key$",
        ],
    );
    assert_eq!(util::code(&out), 0);
    let text = String::from_utf8(read(&f)).expect("UTF-8");
    assert!(
        text.starts_with("start\nkey\n# BEGIN Z MANAGED n"),
        "{text}"
    );
}

/// A file is refused from its size before it is read: the test files are sparse, so they
/// cost nothing to make and would cost 256 MiB to read.
#[test]
fn files_over_256_mib_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.env");
    let f = std::fs::File::create(&big).expect("create");
    f.set_len((256 << 20) + 1).expect("sparse");
    std::fs::write(dir.path().join("small.env"), "A=1\n").expect("small");
    std::fs::File::create(dir.path().join("big.toml"))
        .and_then(|m| m.set_len((256 << 20) + 1))
        .expect("sparse manifest");
    let set = [
        "set",
        "big.env",
        "--owner",
        "Z",
        "--name",
        "n",
        "--content",
        "A=1",
    ];
    let content = [
        "set",
        "small.env",
        "--owner",
        "Z",
        "--name",
        "n",
        "--content-file",
        "big.env",
    ];
    let runs: [&[&str]; 6] = [
        &set,
        &["list", "big.env"],
        &["check", "big.env"],
        &["sync", "small.env", "--template", "big.env", "--owner", "Z"],
        &content,
        &["apply", "big.toml"],
    ];
    for args in runs {
        let out = util::run(dir.path(), args);
        assert_eq!(util::code(&out), 2, "{args:?}");
        let err = util::stderr(&out);
        assert!(
            err.contains("big.") && err.contains("256 MiB"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::metadata(&big).expect("meta").len(),
        (256 << 20) + 1
    );
    assert_eq!(read(&dir.path().join("small.env")), b"A=1\n");
}

/// Strict JSON entries have no regions to leave out or line endings of their own to write:
/// the options are refused rather than ignored.
#[test]
fn entries_refuse_the_options_that_act_on_regions() {
    let (dir, f) = util::with_file("settings.json", b"{\"a\": 1}\n");
    std::fs::write(dir.path().join("t.json"), "{\"b\": 2}\n").expect("template");
    for extra in [
        &["--no-insert"][..],
        &["--require"],
        &["--line-ending", "crlf"],
    ] {
        let args = [
            &[
                "sync",
                "settings.json",
                "--template",
                "t.json",
                "--owner",
                "Z",
            ][..],
            extra,
        ]
        .concat();
        let out = util::run(dir.path(), &args);
        assert_eq!(util::code(&out), 2, "{extra:?}");
        assert!(
            util::stderr(&out).contains("regions"),
            "{}",
            util::stderr(&out)
        );
        assert_eq!(read(&f), b"{\"a\": 1}\n");
    }
}

/// The text a pattern over several lines sees starts after a BOM; in a CRLF file the CRLF
/// flag makes `$` end a line.
#[test]
fn a_pattern_over_several_lines_after_a_bom_and_in_crlf() {
    let original = b"\xef\xbb\xbf[core]\r\n\tx = 1\r\n[user]\r\n\tname = me\r\n";
    let (dir, f) = util::with_file("app.conf", original);
    let out = util::run(
        dir.path(),
        &[
            "set",
            "app.conf",
            "--owner",
            "Z",
            "--name",
            "n",
            "--content",
            "# note",
            "--at",
            "after:(?mR)\\A\\[core\\]\\r?\\n\\tx = 1$",
        ],
    );
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = read(&f);
    let head = b"\xef\xbb\xbf[core]\r\n\tx = 1\r\n# BEGIN Z MANAGED n";
    assert!(text.starts_with(head), "{}", String::from_utf8_lossy(&text));
    assert!(text.ends_with(b"# END Z MANAGED n\r\n[user]\r\n\tname = me\r\n"));
}

/// `uninstall` names no encoding: the state store remembers how each file was decoded.
#[test]
fn uninstall_decodes_each_file_as_it_was_edited() {
    let profile = utf16le("Set-Alias ll Get-ChildItem\r\n");
    let (dir, f) = util::with_file("profile.ps1", &profile);
    let cr = dir.path().join("old.conf");
    std::fs::write(&cr, b"a\rb\r").expect("cr file");
    let runs: [&[&str]; 2] = [
        &[
            "set",
            "profile.ps1",
            "--owner",
            "ZYLOS",
            "--name",
            "n",
            "--content",
            "x",
            "--encoding",
            "utf-16le",
        ],
        &[
            "set",
            "old.conf",
            "--owner",
            "ZYLOS",
            "--name",
            "n",
            "--content",
            "x",
            "--line-ending",
            "cr",
        ],
    ];
    for args in runs {
        let out = util::run(dir.path(), args);
        assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    }
    assert_ne!(read(&f), profile);
    let out = util::run(dir.path(), &["uninstall", "--owner", "ZYLOS"]);
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    assert_eq!(read(&f), profile);
    assert_eq!(read(&cr), b"a\rb\r");
}

/// Every format: a region set with each line ending into LF and CRLF files, set again, and
/// removed — the file's own lines untouched, the second run a no-op, the original back.
#[test]
fn every_format_round_trips_with_each_line_ending() {
    let files: [(&str, &str, &str); 10] = [
        ("s.jsonc", "{\n  \"a\": 1\n}\n", "\"k\": 2,"),
        ("c.toml", "a = 1\n\n[t]\nb = 2\n", "k = 2"),
        ("d.yaml", "x: 1\nservices:\n  web:\n    image: a\n", "k: 2"),
        ("g.ini", "[core]\n\tx = 1\n", "k = 2"),
        ("app.env", "A=1\n", "K=2"),
        ("p.sh", "export A=1\n", "export K=2"),
        ("hosts", "127.0.0.1 localhost\n", "10.0.0.1 db"),
        ("README.md", "# Title\n\ntext\n", "more"),
        ("config.fish", "set -x A 1\n", "set -x K 2"),
        ("p.ps1", "$a = 1\n", "$k = 2"),
    ];
    for (name, lf, content) in files {
        for crlf_file in [false, true] {
            let original = if crlf_file {
                lf.replace('\n', "\r\n")
            } else {
                lf.to_owned()
            };
            for ending in ["lf", "crlf"] {
                let (dir, f) = util::with_file(name, original.as_bytes());
                let set = [
                    "set",
                    name,
                    "--owner",
                    "Z",
                    "--name",
                    "n",
                    "--content",
                    content,
                    "--line-ending",
                    ending,
                ];
                let what = format!("{name} (CRLF file: {crlf_file}) --line-ending {ending}");
                let out = util::run(dir.path(), &set);
                assert_eq!(util::code(&out), 0, "{what}: {}", util::stderr(&out));
                let text = String::from_utf8(read(&f)).expect("UTF-8");
                let end_line = text
                    .lines()
                    .find(|l| l.contains("END Z MANAGED n"))
                    .map(|l| l.trim_end_matches('\r'))
                    .expect("END line");
                let eol = if ending == "crlf" { "\r\n" } else { "\n" };
                assert!(
                    text.contains(&format!("{end_line}{eol}"))
                        && (ending == "crlf" || !text.contains(&format!("{end_line}\r\n"))),
                    "{what}: {text:?}"
                );
                util::backdate(&f);
                let stamp = util::mtime(&f);
                let again = util::run(dir.path(), &set);
                assert_eq!(util::code(&again), 0, "{what}");
                assert_eq!(
                    util::mtime(&f),
                    stamp,
                    "{what}: a second run writes nothing"
                );
                let remove = [
                    "remove",
                    name,
                    "--owner",
                    "Z",
                    "--name",
                    "n",
                    "--line-ending",
                    ending,
                ];
                let out = util::run(dir.path(), &remove);
                assert_eq!(util::code(&out), 0, "{what}: {}", util::stderr(&out));
                assert_eq!(
                    String::from_utf8(read(&f)).expect("UTF-8"),
                    original,
                    "{what}: set then remove gives the original"
                );
            }
        }
    }
}

/// Every format in UTF-16LE (with a BOM, CRLF) and Windows-1252: set, set again, remove.
#[test]
fn every_format_round_trips_in_other_encodings() {
    let files: [(&str, &str, &str); 10] = [
        ("s.jsonc", "{\n  \"a\": \"é\"\n}\n", "\"k\": \"ü\","),
        ("c.toml", "a = \"é\"\n\n[t]\nb = 2\n", "k = \"ü\""),
        ("d.yaml", "x: é\nservices:\n  web:\n    image: a\n", "k: ü"),
        ("g.ini", "[core]\n\tx = é\n", "k = ü"),
        ("app.env", "A=é\n", "K=ü"),
        ("p.sh", "export A=é\n", "export K=ü"),
        ("hosts", "127.0.0.1 localhost # é\n", "10.0.0.1 db # ü"),
        ("README.md", "# Café\n\ntext\n", "more ü"),
        ("config.fish", "set -x A é\n", "set -x K ü"),
        ("p.ps1", "$a = 'é'\n", "$k = 'ü'"),
    ];
    for (name, text, content) in files {
        let crlf = text.replace('\n', "\r\n");
        let cp1252: Vec<u8> = text
            .chars()
            .map(|c| u8::try_from(u32::from(c)).expect("Latin-1 text"))
            .collect();
        for (encoding, original) in [("utf-16le", utf16le(&crlf)), ("windows-1252", cp1252)] {
            let (dir, f) = util::with_file(name, &original);
            let what = format!("{name} in {encoding}");
            let set = [
                "set",
                name,
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                content,
                "--encoding",
                encoding,
            ];
            let out = util::run(dir.path(), &set);
            assert_eq!(util::code(&out), 0, "{what}: {}", util::stderr(&out));
            assert_ne!(read(&f), original, "{what}: the region is written");
            util::backdate(&f);
            let stamp = util::mtime(&f);
            let again = util::run(dir.path(), &set);
            assert_eq!(util::code(&again), 0, "{what}");
            assert_eq!(
                util::mtime(&f),
                stamp,
                "{what}: a second run writes nothing"
            );
            let remove = [
                "remove",
                name,
                "--owner",
                "Z",
                "--name",
                "n",
                "--encoding",
                encoding,
            ];
            let out = util::run(dir.path(), &remove);
            assert_eq!(util::code(&out), 0, "{what}: {}", util::stderr(&out));
            assert_eq!(
                read(&f),
                original,
                "{what}: set then remove gives the original"
            );
        }
    }
}

#[test]
fn manifest_encoding_and_line_ending_keys() {
    let profile = utf16le("$a = 1\r\n");
    let (dir, f) = util::with_file("profile.ps1", &profile);
    std::fs::write(dir.path().join("hosts"), "127.0.0.1 localhost\n").expect("hosts");
    std::fs::write(
        dir.path().join("m.toml"),
        "owner = \"ZYLOS\"\n\
         [[block]]\npath = \"profile.ps1\"\nname = \"p\"\ncontent = \"$b = 2\"\nencoding = \"utf-16le\"\n\
         [[block]]\npath = \"hosts\"\nname = \"h\"\ncontent = \"10.0.0.1 db\"\nline_ending = \"crlf\"\n",
    )
    .expect("manifest");
    let out = util::run(dir.path(), &["apply", "m.toml"]);
    assert_eq!(util::code(&out), 0, "{}", util::stderr(&out));
    let text = from_utf16le(&read(&f));
    assert!(
        text.ends_with("\r\n$b = 2\r\n# END ZYLOS MANAGED p\r\n"),
        "{text:?}"
    );
    let hosts = read(&dir.path().join("hosts"));
    assert!(hosts.ends_with(b"\r\n10.0.0.1 db\r\n# END ZYLOS MANAGED h\r\n"));
    assert!(hosts.starts_with(b"127.0.0.1 localhost\n#"));
    std::fs::write(
        dir.path().join("m.toml"),
        "[[block]]\npath = \"hosts\"\nname = \"h\"\ncontent = \"x\"\nencoding = \"ebcdic\"\n",
    )
    .expect("manifest");
    let out = util::run(dir.path(), &["apply", "m.toml"]);
    assert_eq!(util::code(&out), 2);
    assert!(
        util::stderr(&out).contains("encoding"),
        "{}",
        util::stderr(&out)
    );
}
