#!/usr/bin/env bash
# The README's command-line example, one line at a time in a temporary HOME, against the built
# binary ($DEMARCATE_BINARY, else target/release or target/debug), checking the file's bytes.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${DEMARCATE_BINARY:-}"
if [ -z "$bin" ]; then
  for p in release debug; do [ -x "$repo/target/$p/demarcate" ] && bin="$repo/target/$p/demarcate" && break; done
fi
[ -x "$bin" ] || { echo "no built binary: run cargo build --release" >&2; exit 2; }
bindir="$(mktemp -d)"; ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$bindir/demarcate"
home="$(mktemp -d)"; trap 'rm -rf "$home" "$bindir"' EXIT
printf "alias ll='ls -l'\n" > "$home/.bashrc"
export HOME="$home" XDG_STATE_HOME="$home/.state" PATH="$bindir:$PATH" NO_COLOR=1

passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1" >&2; fi; }

example="$here/examples/quickstart.sh"
check "README quotes the example" \
  'python3 -c "import sys; r=open(sys.argv[1]).read(); e=open(sys.argv[2]).read(); sys.exit(0 if \"\`\`\`sh\n\" + e + \"\`\`\`\n\" in r else 1)" "$repo/README.md" "$example"'
mapfile -t lines < "$example"
check "the example has three lines" '[ "${#lines[@]}" -eq 3 ]'

out="$(bash -c "${lines[0]}" 2>&1)"; rc=$?
check "set exits 0" '[ $rc -eq 0 ]'
expected_re=$'^alias ll=\'ls -l\'\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nexport PATH="\\$HOME/\\.zylos/bin:\\$PATH"\n# END ZYLOS MANAGED hooks$'
check "set wrote the region after the user's line" '[[ "$(cat "$home/.bashrc")" =~ $expected_re ]]'
after_set="$(cat "$home/.bashrc")"
bash -c "${lines[0]}" >/dev/null 2>&1
check "a second set changes nothing" '[ "$(cat "$home/.bashrc")" = "$after_set" ]'

out="$(bash -c "${lines[1]}" 2>&1)"; rc=$?
check "list exits 0" '[ $rc -eq 0 ]'
check "list names the region and its state" '[[ "$out" == *"ZYLOS MANAGED hooks"* && "$out" == *pristine* ]]'

out="$(bash -c "${lines[2]}" 2>&1)"; rc=$?
check "remove exits 0" '[ $rc -eq 0 ]'
check "remove restores the original bytes" '[ "$(cat "$home/.bashrc")" = "alias ll='"'"'ls -l'"'"'" ]'

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
