#!/usr/bin/env bash
# Runs warden's whole test suite on a fresh machine: it prepares what the
# tests need (a Docker daemon and a workspace image built without any
# registry), checks formatting and vet, then runs unit and integration
# tests. The integration tests start their own Temporal server in-process.
set -euo pipefail
cd "$(dirname "$0")/.."

started_dockerd=""
cleanup() {
  if [ -n "$started_dockerd" ] && [ -f "$started_dockerd" ]; then
    kill "$(cat "$started_dockerd")" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if [ "${WARDEN_SKIP_DOCKER:-}" != "1" ] && [ -x .ci/docker.sh ]; then
  echo "== docker: daemon and workspace image"
  out=$(.ci/docker.sh) || { echo "$out"; echo "docker setup failed"; exit 1; }
  echo "$out"
  pidfile=$(printf '%s\n' "$out" | sed -n 's/^dockerd-pidfile: //p' | tail -n1)
  [ -n "$pidfile" ] && started_dockerd="$pidfile"
  export WARDEN_REQUIRE_DOCKER=1
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt wants to reformat:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...

# Packages that do not link the Temporal server run with the race detector;
# tests/ (which embeds the server) runs without it to keep the cold build short.
unit=$(go list ./... | grep -v '/tests$')
echo "== unit tests (-race)"
go test -race -count=1 $unit

echo "== integration tests (real Temporal server, processes, files)"
go test -count=1 -timeout 20m ./tests/...
echo "== all tests passed"
