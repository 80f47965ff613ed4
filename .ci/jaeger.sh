#!/usr/bin/env bash
# jaeger.sh installs Jaeger (all-in-one: OTLP receiver, in-memory store,
# query API and UI) at a pinned version with `go install` (it builds from
# the Go module proxy; several minutes cold on 2 cores) into
# ${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools/ and prints the binary's
# path. It is idempotent: a cached binary that runs is used as is. The
# tracing tests (tests/trace_test.go) run it as the trace backend.
#
#   JAEGER_VERSION   version to install (default v1.75.0)
set -euo pipefail

VERSION="${JAEGER_VERSION:-v1.75.0}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools"
DIR="$CACHE/jaeger-$VERSION"
BIN="$DIR/jaeger"

log() { printf '[jaeger.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

if [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; then
	log "cached: $BIN"
	echo "$BIN"
	exit 0
fi
log "building github.com/jaegertracing/jaeger/cmd/jaeger@$VERSION (go install; several minutes cold)"
start=$(date +%s)
mkdir -p "$DIR.tmp"
# `go install pkg@version` refuses Jaeger: its go.mod has a replace
# directive (for a Kafka client the all-in-one binary does not need to
# differ on). So it builds as a tool of a throwaway module, which
# resolves Jaeger's requirements as they are, replace aside.
(cd "$DIR.tmp" && cat >go.mod <<'MOD'
module wardentools/jaeger

go 1.26
MOD
	GOFLAGS=-buildvcs=false go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$VERSION" &&
	GOFLAGS=-buildvcs=false go build -o jaeger github.com/jaegertracing/jaeger/cmd/jaeger)
"$DIR.tmp/jaeger" version >/dev/null
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
