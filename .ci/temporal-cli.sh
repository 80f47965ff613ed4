#!/usr/bin/env bash
# temporal-cli.sh installs the Temporal CLI at a pinned version (it builds
# from the Go module proxy) into ${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools/
# and prints the binary's path. It is idempotent: a cached binary that runs
# is used as is. The stock-server tests (tests/stock_test.go) run its dev
# server and use it as a client.
#
# The CLI builds against warden's own Temporal server, API and SDK and
# every other module at warden's version, so the whole build but the
# CLI's own code comes from the build cache the tests filled: about 26
# CPU-seconds after `go vet`, where the CLI's release pins (server
# v1.29.1) cost a second compile of a Temporal server. Its dev server is
# then warden's server version, as the CLI releases since v1.9 (server
# v1.32) run it; those releases cannot be built from the module proxy
# (they need a `replace` to a nested module, cliext, the proxy does not
# serve). v1.5.1's code needs four edits for the newer server and API,
# applied below and checked (the build stops if one no longer applies):
# the two its later releases made themselves (dynamicconfig.MakeKey for
# a --dynamic-config-value key; no callbacks.AllowedAddresses entry,
# which the server's default now covers), the API's rename of a worker's
# ProcessKey to WorkerGroupingKey (`temporal worker describe`), and
# `--tls=false` passed on as the SDK's TLSDisabled (this SDK turns TLS on
# for an API key unless told, and v1.5.1's client config does not tell).
#
#   TEMPORAL_CLI_VERSION   version to install (default v1.5.1)
set -euo pipefail

VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden/tools"
DIR="$CACHE/temporal-cli-$VERSION-server-ours"
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
# The caller's GOFLAGS stay (scripts/test.sh's build flags: the build
# cache is shared only under the same flags).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false -mod=mod"
# A throwaway module with warden's requirements, and the CLI as its tool.
sed '1s#.*#module wardentools/temporalcli#' "$ROOT/go.mod" >go.mod
cp "$ROOT/go.sum" go.sum
(cd "$ROOT" && GOFLAGS="${GOFLAGS/-mod=mod/-mod=readonly}" go list -m -f '{{.Path}} {{.Version}}' all) | sort >ours.txt
go get -tool "github.com/temporalio/cli/cmd/temporal@$VERSION" 2>&1 | grep -v '^go: downloading' >&2 || true
# Everything the CLI raised goes back to warden's version.
go list -m -f '{{.Path}} {{.Version}}' all | sort >theirs.txt
join ours.txt theirs.txt | awk '$2 != $3 {print $1, $2}' |
	while read -r path version; do go mod edit -replace "$path=$path@$version"; done
# The CLI's source, edited for warden's server (see above).
src="$(go list -m -f '{{.Dir}}' github.com/temporalio/cli)"
cp -r "$src" cli && chmod -R u+w cli
edit() { # file, perl substitution: fails if it changed nothing
	perl -0pi -e "\$n = ($2); END { exit(\$n ? 0 : 3) }" "cli/$1" ||
		{ log "the edit $2 of $1 no longer applies to CLI $VERSION"; exit 1; }
}
edit temporalcli/devserver/server.go 's/dynamicconfig\.Key\(k\)/dynamicconfig.MakeKey(k)/g'
edit temporalcli/devserver/server.go 's/\tdynConf\[callbacks\.AllowedAddresses\.Key\(\)\] = .*?\n\t\}\n//s'
edit temporalcli/devserver/server.go 's/\t"go\.temporal\.io\/server\/components\/callbacks"\n//'
edit temporalcli/commands.worker.go 's/info\.GetProcessKey\(\)/info.GetWorkerGroupingKey()/g'
edit temporalcli/client.go 's/(\n\tclientOptions, err := clientProfile\.ToClientOptions\(envconfig\.ToClientOptionsRequest\{\}\)\n\tif err != nil \{\n.*?\n\t\}\n)/$1\tif clientProfile.TLS != nil \&\& clientProfile.TLS.Disabled {\n\t\tclientOptions.ConnectionOptions.TLSDisabled = true\n\t}\n/s'
go mod edit -replace github.com/temporalio/cli=./cli
go build -o temporal github.com/temporalio/cli/cmd/temporal
./temporal --version >/dev/null
cd "$CACHE"
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
