#!/usr/bin/env python3
"""MSRV check: no package in the dependency graph declares a rust-version newer than ours.

Reads `cargo metadata --format-version 1 --locked` (or a saved copy given with --metadata FILE),
takes the root package's `rust_version`, and fails (exit 1) naming every package whose own
`rust_version` is newer. Packages that declare none are listed as unchecked, not failed.
Together with clippy's `incompatible_msrv` lint (our own code calls no API newer than the
MSRV), this stands in for building with the MSRV toolchain when only one toolchain exists.
"""

import argparse
import json
import subprocess
import sys


def parse_version(text):
    """'1.89' or '1.89.0' -> (1, 89, 0). Raises ValueError on anything else."""
    parts = text.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a Rust version: {text!r}")
    nums = [int(p) for p in parts] + [0] * (3 - len(parts))
    return tuple(nums)


def check(metadata):
    """Return (msrv, newer, unchecked): newer is a list of (name, version, rust_version)."""
    root_id = (metadata.get("resolve") or {}).get("root")
    packages = metadata["packages"]
    root = next((p for p in packages if p["id"] == root_id), None)
    if root is None:
        members = set(metadata.get("workspace_members") or [])
        root = next((p for p in packages if p["id"] in members), None)
    if root is None or not root.get("rust_version"):
        raise SystemExit("msrv: the root package declares no rust-version in Cargo.toml")
    msrv = parse_version(root["rust_version"])
    newer, unchecked = [], []
    for p in packages:
        if p is root:
            continue
        rv = p.get("rust_version")
        if not rv:
            unchecked.append(p["name"])
        elif parse_version(rv) > msrv:
            newer.append((p["name"], p["version"], rv))
    return root["rust_version"], newer, unchecked


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metadata", help="read this saved `cargo metadata` JSON instead of running cargo")
    args = ap.parse_args()
    if args.metadata:
        with open(args.metadata, encoding="utf-8") as f:
            metadata = json.load(f)
    else:
        out = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True,
        ).stdout
        metadata = json.loads(out)
    msrv, newer, unchecked = check(metadata)
    total = len(metadata["packages"]) - 1
    if newer:
        for name, version, rv in sorted(newer):
            print(f"msrv: {name} {version} needs Rust {rv}, newer than our rust-version {msrv}; "
                  f"pin an older {name} in Cargo.lock (cargo update -p {name} --precise VERSION) "
                  f"or raise rust-version", file=sys.stderr)
        return 1
    print(f"msrv: rust-version {msrv}: {total - len(unchecked)} of {total} dependencies declare "
          f"a rust-version, none newer ({len(unchecked)} declare none)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
