#!/usr/bin/env bash
# Checks that workflow code does not link what it must never run: the
# tool backends, the shell parser (permission/shell, mvdan.cc/sh) and
# os/exec. net/http comes with the Temporal SDK and is fine. Prints what
# it found, and for each forbidden package the import chain that brings
# it in; exits 1 when there is any, 2 when go list fails. The package
# checked is ./workflows unless given as the first argument.
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=${1:-./workflows}
forbidden='^(github\.com/wardenhq/warden/backend(/.*)?|github\.com/wardenhq/warden/permission/shell|mvdan\.cc/sh(/.*)?|os/exec)$'
deps=$(go list -deps "$pkg") || exit 2
found=$(grep -E "$forbidden" <<<"$deps" || true)
if [ -z "$found" ]; then
  echo "go list -deps $pkg: no backend, shell parser or os/exec"
  exit 0
fi
echo "go list -deps $pkg links packages workflow code must not:"
# For each one: the shortest import chain from the workflow package, and
# every package in the build that imports it directly.
graph=$(go list -deps -f '{{.ImportPath}} {{join .Imports " "}}' "$pkg") || exit 2
awk -v root="$(go list "$pkg")" -v want="$found" '
  { for (i = 2; i <= NF; i++) imp[$1] = imp[$1] " " $i }
  END {
    n = split(want, w, "\n")
    q[1] = root; from[root] = ""; head = 1; tail = 1
    while (head <= tail) {
      p = q[head++]; m = split(imp[p], next_, " ")
      for (j = 1; j <= m; j++) if (!(next_[j] in from)) { from[next_[j]] = p; q[++tail] = next_[j] }
    }
    for (k = 1; k <= n; k++) {
      chain = w[k]
      for (p = from[w[k]]; p != ""; p = from[p]) chain = p " -> " chain
      by = ""
      for (p in imp) if (index(imp[p] " ", " " w[k] " ")) by = by " " p
      print "  " w[k] "\n    chain: " chain "\n    imported by:" by
    }
  }' <<<"$graph"
exit 1
