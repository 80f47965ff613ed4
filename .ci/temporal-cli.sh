#!/usr/bin/env bash
# temporal-cli.sh installs the Temporal CLI at a pinned version (it builds
# from the Go module proxy) into ${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools/
# and prints the binary's path. It is idempotent: a cached binary that runs
# is used as is. The stock-server tests (tests/stock_test.go) run its dev
# server and use it as a client.
#
# The CLI and its own Temporal server, API and SDK build at the versions
# the CLI's release pins (v1.5.1: server v1.29.1), unchanged. The
# third-party modules it shares with warden (gRPC, protobuf, OpenTelemetry,
# the cloud SDKs, ...) build at warden's versions from warden's go.mod, so
# the build cache the tests filled already holds them: after `go vet` the
# CLI costs about 180 CPU-seconds instead of 560 (a build with its own
# go.mod shares nothing). The CLI releases that use warden's server
# version cannot be built from the module proxy: v1.6 and later need a
# `replace` to a nested module (cliext) the proxy does not serve.
#
#   TEMPORAL_CLI_VERSION   version to install (default v1.5.1)
set -euo pipefail

VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools"
DIR="$CACHE/temporal-cli-$VERSION"
BIN="$DIR/temporal"

log() { printf '[temporal-cli.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
	log "cached: $BIN"
	echo "$BIN"
	exit 0
fi
log "building github.com/temporalio/cli/cmd/temporal@$VERSION beside warden's dependencies"
start=$(date +%s)
rm -rf "$DIR.tmp"
mkdir -p "$DIR.tmp"
cd "$DIR.tmp"
# -mod=mod: the throwaway module's go.sum grows as replaces are added.
export GOFLAGS="-buildvcs=false -mod=mod"
# A throwaway module with warden's requirements, and the CLI as its tool.
sed '1s#.*#module wardentools/temporalcli#' "$ROOT/go.mod" >go.mod
cp "$ROOT/go.sum" go.sum
(cd "$ROOT" && GOFLAGS=-mod=readonly go list -m -f '{{.Path}} {{.Version}}' all) | sort >ours.txt
go get -tool "github.com/temporalio/cli/cmd/temporal@$VERSION" 2>&1 | grep -v '^go: downloading' >&2 || true
# The Temporal family at the CLI's own versions, as it was released.
climod="$(go env GOMODCACHE)/cache/download/github.com/temporalio/cli/@v/$VERSION.mod"
awk '$1 ~ /^(go\.temporal\.io\/(server|api|sdk)$|github\.com\/nexus-rpc\/|github\.com\/temporalio\/)/ && $2 ~ /^v/ {print $1, $2}' "$climod" |
	while read -r path version; do go mod edit -replace "$path=$path@$version"; done
# Everything else the CLI raised goes back to warden's version.
go list -m -f '{{.Path}} {{.Version}}' all | sort >theirs.txt
join ours.txt theirs.txt | awk '$2 != $3 {print $1, $2}' |
	while read -r path version; do
		grep -q "=> $path " go.mod 2>/dev/null || go mod edit -replace "$path=$path@$version"
	done
go build -o temporal github.com/temporalio/cli/cmd/temporal
./temporal --version >/dev/null
cd "$CACHE"
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
