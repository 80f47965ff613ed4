#!/usr/bin/env bash
# jaeger.sh installs Jaeger's all-in-one (OTLP receiver, in-memory store,
# query API and UI) at a pinned version (it builds from the Go module
# proxy) into
# ${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools/ and prints the binary's
# path. It is idempotent: a cached binary that runs is used as is. The
# tracing tests (tests/trace_test.go) run it as the trace backend.
#
# The version is v1.51.0, the last before Jaeger's storage took the
# Elasticsearch v8/v9 typed client: its all-in-one links 618 non-standard
# packages, v1.52's 1,265 and v1.75's (the v2 binary, cmd/jaeger) 1,504,
# 847 of them that client's generated API. The OTLP receiver and the query
# API the tracing test uses are the same.
#
#   JAEGER_VERSION   version to install (default v1.51.0)
set -euo pipefail

VERSION="${JAEGER_VERSION:-v1.51.0}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools"
DIR="$CACHE/jaeger-$VERSION"
BIN="$DIR/jaeger"

log() { printf '[jaeger.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

if [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; then
	log "cached: $BIN"
	echo "$BIN"
	exit 0
fi
log "building github.com/jaegertracing/jaeger/cmd/all-in-one@$VERSION"
start=$(date +%s)
mkdir -p "$DIR.tmp"
# `go install pkg@version` refuses Jaeger: its go.mod has replace
# directives. So it builds as a tool of a throwaway module, which
# resolves Jaeger's requirements as they are, replaces aside.
(cd "$DIR.tmp" && cat >go.mod <<'MOD'
module wardentools/jaeger

go 1.26
MOD
	export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" &&
	go get -tool "github.com/jaegertracing/jaeger/cmd/all-in-one@$VERSION" &&
	go build -o jaeger github.com/jaegertracing/jaeger/cmd/all-in-one)
"$DIR.tmp/jaeger" version >/dev/null
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
