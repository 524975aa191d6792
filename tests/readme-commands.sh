#!/usr/bin/env bash
# Runs the commands the READMEs show, so that the docs stay true (`make readme-commands`).
#
# The convention (also in README.md, "Testing"): every ```sh block of every README.md in the
# repository is run, as written, by `bash -euo pipefail` from the repository root, with the
# workspace's `scale-units` (target/debug) first on PATH. A block that cannot run here says why on
# the line just before its fence:
#
#     <!-- readme-commands: skip (it needs a Kubernetes cluster) -->
#
# A block must not leave files in the source tree: write them below target/ or into a temporary
# folder. The run fails when a block fails, leaves a file behind, or a skip gives no reason.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "readme-commands: $root is not a git checkout" >&2; exit 1; }

target=${CARGO_TARGET_DIR:-$root/target}
work="$target/readme-commands"
rm -rf "$work"
mkdir -p "$work"
export PATH="$target/debug:$PATH"

mapfile -t readmes < <(find . -name README.md -not -path './target/*' -not -path '*/node_modules/*' \
  -not -path './fuzz/corpus/*' -not -path '*/.venv/*' | sort)

ran=0 skipped=0 failed=0
for readme in "${readmes[@]}"; do
  # One file per block (its text), with its first line number and, when skipped, the marker.
  count=$(awk -v out="$work/block" '
    {
      line = $0
      if (!inside && line ~ /^[ \t]*```sh[ \t]*$/) {
        inside = 1; n++
        indent = index(line, "`") - 1
        path = out "." n
        printf "" > path
        print NR > (path ".line"); close(path ".line")
        if (previous ~ /<!-- readme-commands: skip/) { print previous > (path ".skip"); close(path ".skip") }
        next
      }
      if (inside && line ~ /^[ \t]*```[ \t]*$/) { inside = 0; close(path); previous = line; next }
      if (inside) { print substr(line, indent + 1) >> path; next }
      if (line !~ /^[ \t]*$/) previous = line
    }
    END { print n + 0 }
  ' "$readme")
  for ((n = 1; n <= count; n++)); do
    block="$work/block.$n"
    line=$(cat "$block.line")
    where="$readme:$line"
    if [[ -e "$block.skip" ]]; then
      reason=$(sed -nE 's/.*<!-- readme-commands: skip \((.+)\) -->.*/\1/p' "$block.skip")
      if [[ -z "$reason" ]]; then
        echo "FAIL $where: a skipped block names its reason: <!-- readme-commands: skip (why) -->"
        failed=$((failed + 1))
      else
        echo "skip $where: $reason"
        skipped=$((skipped + 1))
      fi
      rm -f "$block" "$block.line" "$block.skip"
      continue
    fi
    before=$(git status --porcelain --untracked-files=all)
    echo "run  $where"
    if (cd "$root" && bash -euo pipefail "$block") >"$block.out" 2>&1; then
      ran=$((ran + 1))
    else
      echo "FAIL $where: the block failed; its output:"
      sed 's/^/    /' "$block.out" | tail -40
      failed=$((failed + 1))
    fi
    after=$(git status --porcelain --untracked-files=all)
    if [[ "$before" != "$after" ]]; then
      echo "FAIL $where: the block left files in the source tree (write below target/ or a temporary folder):"
      diff <(echo "$before") <(echo "$after") | sed -n 's/^> /    /p' || true
      failed=$((failed + 1))
    fi
    rm -f "$block" "$block.line"
  done
done
echo "readme-commands: $ran blocks ran, $skipped skipped, $failed failed"
[[ $failed -eq 0 && $ran -gt 0 ]]
