#!/usr/bin/env bash
# temporal-cli.sh installs the Temporal CLI at a pinned version with
# `go install` (it builds from the Go module proxy; ~3.5-5 min cold on
# 2 cores) into ${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools/ and prints
# the binary's path. It is idempotent: a cached binary that runs is used
# as is. The stock-server tests (tests/stock_test.go) run its dev server
# and use it as a client.
#
#   TEMPORAL_CLI_VERSION   version to install (default v1.5.1)
set -euo pipefail

VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools"
DIR="$CACHE/temporal-cli-$VERSION"
BIN="$DIR/temporal"

log() { printf '[temporal-cli.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
	log "cached: $BIN"
	echo "$BIN"
	exit 0
fi
log "building github.com/temporalio/cli/cmd/temporal@$VERSION (go install; a few minutes cold)"
start=$(date +%s)
mkdir -p "$DIR.tmp"
# Outside any module, so that the CLI builds with its own go.mod.
(cd "$DIR.tmp" && GOBIN="$DIR.tmp" GOFLAGS=-buildvcs=false go install "github.com/temporalio/cli/cmd/temporal@$VERSION")
"$DIR.tmp/temporal" --version >/dev/null
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
