#!/usr/bin/env bash
# `make check`: fails when a path ARCHITECTURE.md's entry points or code map name in
# backticks (`engine/src/journal/`, `commit.rs`, `disk/sim/crash.rs`, `scripts/`, ...) does
# not exist. Why: a map that names moved or deleted files misleads the next reader, and a
# split (issue 36) renames many at once.
#
# A name is a path if it is made of path characters and holds a `/` or ends in a file
# extension. The map names most files relative to where they sit: under `### engine/` a name
# is looked up in engine/src/; inside a bullet that opens with a directory (`journal/`, or
# `reads.rs` and its `reads/`) first in that directory, then in the enclosing bullet's, then
# in the crate's src/, the crate, and the repository root.
# Usage: scripts/architecture_map_check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
map=ARCHITECTURE.md

# One line per path named: line number, the name, and the places it may be, in order.
names() {
  awk '
    function is_path(t) {
      return t ~ /^[A-Za-z0-9_.-][A-Za-z0-9_.\/-]*$/ &&
        (t ~ /\// || t ~ /\.(rs|sh|py|toml|md|proto|service|json|yml|yaml|java|xml)$/)
    }
    # The directory a bullet opens, from its first backticked name: `x/` or `x.rs`.
    function bullet_dir(line, base,    t) {
      if (!match(line, /`[^`]+`/)) return ""
      t = substr(line, RSTART + 1, RLENGTH - 2)
      if (!is_path(t)) return ""
      if (t ~ /\/$/) return base t
      if (t ~ /\.rs$/) { sub(/\.rs$/, "/", t); return base t }
      return ""
    }
    /^## / { section = $0; crate = ""; dir0 = ""; dir1 = ""; next }
    section != "## Entry points" && section != "## Code map" { next }
    /^### / {
      crate = ($0 ~ /^### [a-z0-9_-]+\/$/) ? substr($0, 5, length($0) - 5) : ""
      src = (crate == "") ? "" : crate "/src/"
      dir0 = ""; dir1 = ""
      next
    }
    /^- / { dir0 = bullet_dir($0, src); dir1 = "" }
    /^  - / { dir1 = bullet_dir($0, (dir0 == "") ? src : dir0) }
    /^[^ -]/ { dir0 = ""; dir1 = "" }
    /^  [^ -]/ { dir1 = "" }
    {
      line = $0
      while (match(line, /`[^`]+`/)) {
        t = substr(line, RSTART + 1, RLENGTH - 2)
        line = substr(line, RSTART + RLENGTH)
        if (!is_path(t)) continue
        places = ""
        if (dir1 != "") places = places " " dir1 t
        if (dir0 != "") places = places " " dir0 t
        if (crate != "") places = places " " src t " " crate "/" t
        places = places " " t
        printf "%d\t%s\t%s\n", NR, t, substr(places, 2)
      }
    }
  ' "$map"
}

checked=0
missing=0
while IFS=$'\t' read -r line name places; do
  checked=$((checked + 1))
  found=false
  for place in $places; do
    if [[ -e $place ]]; then
      found=true
      break
    fi
  done
  if ! $found; then
    echo "architecture_map_check: $map:$line: \`$name\` does not exist (looked for: $places)" >&2
    missing=$((missing + 1))
  fi
done < <(names)

if ((checked == 0)); then
  echo "architecture_map_check: no paths found in $map's entry points and code map" >&2
  exit 1
fi
if ((missing > 0)); then
  echo "architecture_map_check: $missing of $checked paths named in $map do not exist" >&2
  exit 1
fi
echo "architecture_map_check: $checked paths named in $map, all exist"
