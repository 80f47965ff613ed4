#!/usr/bin/env bash
# Runs warden's whole test suite on a fresh machine: it prepares what the
# tests need (a Docker daemon and a workspace image built without any
# registry), checks formatting and vet, then runs unit and integration
# tests. The integration tests start their own Temporal server in-process.
set -euo pipefail
cd "$(dirname "$0")/.."

# phase prints a phase's heading with the time since the run began, so a
# run's log gives each phase's time.
began=$(date +%s)
phase() { echo "== $* [$(($(date +%s) - began)) s]"; }

# skipped lists the parts a WARDEN_SKIP_* variable left out: said at the
# start and again at the end of the run, never silently.
skipped=()
skip() { skipped+=("$1 ($2=1)"); echo "== SKIPPED: $1 ($2=1)"; }

# TestUpgradeWhileTurnsWait builds the worker of a pinned earlier commit
# from a git worktree: the clone needs that commit (a shallow clone does
# not have it). Fail now rather than at the end of the integration tests.
upgrade_from=$(sed -n 's/^const upgradeFrom = "\([0-9a-f]*\)"$/\1/p' tests/upgrade_test.go)
if ! git cat-file -e "${upgrade_from:-none}^{commit}" 2>/dev/null; then
  echo "the upgrade test's commit ${upgrade_from:-(not found in tests/upgrade_test.go)} is not in this clone" \
    "(shallow: $(git rev-parse --is-shallow-repository 2>/dev/null || echo 'not a git clone')):" \
    "clone with full history, or git fetch --unshallow" >&2
  exit 1
fi

# Jaeger (the tracing test's trace backend) builds from the Go module
# proxy: about as much code again as the tests' own build, so cold it
# builds in the background, at low priority, beside everything below,
# and the tracing test runs last, once it is there.
jaeger_pid=""
jaeger_out=$(mktemp -d)
if [ "${WARDEN_SKIP_JAEGER:-}" != "1" ]; then
  phase "jaeger (tracing test; built once in the background, then cached)"
  nice -n 19 .ci/jaeger.sh >"$jaeger_out/path" 2>"$jaeger_out/log" &
  jaeger_pid=$!
else
  skip "the tracing test (Jaeger)" WARDEN_SKIP_JAEGER
fi

started_dockerd=""
cleanup() {
  [ -n "$jaeger_pid" ] && kill "$jaeger_pid" 2>/dev/null || true
  [ -n "${cli_pid:-}" ] && kill "$cli_pid" 2>/dev/null || true
  # The background checks run in subshells: stop what they started too.
  for p in ${static_pid:-} ${race_pid:-}; do
    pkill -P "$p" 2>/dev/null || true
    kill "$p" 2>/dev/null || true
  done
  rm -rf "${bg_dir:-}" "${bins:-}"
  if [ -n "$started_dockerd" ] && [ -f "$started_dockerd" ]; then
    kill "$(cat "$started_dockerd")" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if [ "${WARDEN_SKIP_DOCKER:-}" != "1" ]; then
  phase "docker: daemon and workspace image"
  state="${WARDEN_DOCKER_STATE:-/var/tmp/warden-docker}"
  had_daemon=""
  docker info >/dev/null 2>&1 && had_daemon=1
  .ci/docker.sh
  # Stop the daemon at the end only if this run started it.
  [ -z "$had_daemon" ] && started_dockerd="$state/dockerd.pid"
  export WARDEN_REQUIRE_DOCKER=1
else
  skip "the Docker backend's tests" WARDEN_SKIP_DOCKER
fi

# Debian packages the tests need, installed in one apt-get run: chromium
# for the inbox browser tests, ripgrep for TestGrepEnginesAgree (the Go
# grep engine compared with rg, which fails rather than skips once
# WARDEN_REQUIRE_RG is set).
packages=()
if [ "${WARDEN_SKIP_BROWSER:-}" != "1" ]; then
  command -v chromium >/dev/null 2>&1 || packages+=(chromium)
else
  skip "the inbox's browser tests" WARDEN_SKIP_BROWSER
fi
if [ "${WARDEN_SKIP_RIPGREP:-}" != "1" ]; then
  command -v rg >/dev/null 2>&1 || packages+=(ripgrep)
  export WARDEN_REQUIRE_RG=1
else
  skip "the grep engines' comparison with rg" WARDEN_SKIP_RIPGREP
fi
# The programs TestRealTools runs in the sandbox and npm for
# TestNpmInstallThroughProxy: installed when missing, then required.
for tool in make:make git:git python3:python3 node:nodejs npm:npm cargo:cargo; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || packages+=("${tool#*:}")
done
export WARDEN_REQUIRE_TOOLS=1
if [ ${#packages[@]} -gt 0 ]; then
  phase "apt-get install ${packages[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

if [ "${WARDEN_SKIP_POSTGRES:-}" != "1" ]; then
  # The cluster profile test runs PostgreSQL and a Temporal server as
  # processes of their own (scripts/cluster.sh); once PostgreSQL is
  # installed here, that test fails rather than skips.
  phase "postgresql (cluster profile test)"
  scripts/cluster.sh install
  export WARDEN_REQUIRE_POSTGRES=1
else
  skip "the cluster profile test (PostgreSQL)" WARDEN_SKIP_POSTGRES
fi

cli_pid=""
cli_out=$(mktemp -d)
stock=""
if [ "${WARDEN_SKIP_STOCK:-}" != "1" ]; then
  # The stock-server tests run the Temporal CLI's dev server and use the
  # CLI as a client; once it is installed here, they fail rather than
  # skip. It is built after go vet (below), beside warden's own build
  # cache.
  stock=1
  export WARDEN_REQUIRE_STOCK=1
else
  skip "the stock-server tests (Temporal CLI)" WARDEN_SKIP_STOCK
fi

phase "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt wants to reformat:"; echo "$unformatted"; exit 1; fi

phase "go mod tidy (go.mod and go.sum as committed)"
go mod tidy -diff

phase "go vet"
go vet ./...

# What the tests link is compiled now. The CPU work below that does not
# run a test goes to the background at the lowest priority, where it
# takes the cores the integration tests leave idle while they wait on
# servers, processes and timers (about half of them): staticcheck, the
# race build of the unit tests' packages, and the Temporal CLI.
bg_dir=$(mktemp -d)
static_pid=""
# Linters run at pinned versions with go run pkg@version: they build from
# the Go module proxy into the build cache and stay out of go.mod.
phase "staticcheck (in the background; its result is checked before the unit tests)"
(nice -n 19 go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... >"$bg_dir/staticcheck" 2>&1; echo $? >"$bg_dir/staticcheck.rc") &
static_pid=$!
if [ -n "$stock" ]; then
  phase "temporal CLI (stock-server tests; built once in the background, then cached)"
  nice -n 19 .ci/temporal-cli.sh >"$cli_out/path" 2>"$cli_out/log" &
  cli_pid=$!
fi

phase "workflowcheck (Temporal's determinism check of workflow code)"
go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 -config scripts/workflowcheck.yaml ./workflows/...

phase "workflow dependencies (go list -deps ./workflows)"
# Workflow code links only leaf value packages (calls, permission, model);
# the role check that needs the engine is injected at registration.
scripts/workflow-deps.sh

# Packages whose tests do not link the Temporal server run with the race
# detector. The ones that embed it (tests/, and node, internal/devserver
# and cmd/worker, which start one in their tests) run without: a race
# build of the server and its storage drivers is a second build of most
# of the code the tests link, on a cold machine the longest step there is.
embed=$(go list -test -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
  awk '/ go\.temporal\.io\/server\// {sub(/\.test$/, "", $1); print $1}' | sort -u)
unit=$(go list ./... | grep -vxF -f <(echo "$embed"))
phase "race build of the unit tests' packages (in the background)"
# Its errors are the unit phase's to report: it builds the same packages.
(nice -n 19 go build -race $unit >/dev/null 2>&1) &
race_pid=$!

# The worker and starter the tests run, linked once for every go test
# process below (each would link its own).
phase "worker and starter binaries for the tests"
bins=$(mktemp -d)
go build -o "$bins/worker" ./cmd/worker
go build -o "$bins/starter" ./cmd/starter
export WARDEN_TEST_BINS="$bins"

phase "integration tests (real Temporal server, processes, files)"
go test -count=1 -timeout 30m -skip '^(TestClusterProfile$|TestStock|TestTrace)' ./tests/...

phase "staticcheck: waiting for its result"
wait "$static_pid" || true
static_pid=""
cat "$bg_dir/staticcheck"
if [ "$(cat "$bg_dir/staticcheck.rc" 2>/dev/null)" != "0" ]; then echo "staticcheck failed" >&2; exit 1; fi
wait "$race_pid" || true
race_pid=""

phase "unit tests (-race)"
go test -race -count=1 $unit
phase "unit tests of the packages that embed the server (node, devserver, worker)"
go test -count=1 $(echo "$embed" | grep -v '/tests$')

phase "cluster profile (PostgreSQL, Temporal server process, two worker processes, starter)"
go test -count=1 -timeout 15m -v -run '^TestClusterProfile$' ./tests/

if [ -n "$cli_pid" ]; then
  phase "stock servers: waiting for the Temporal CLI build"
  if ! wait "$cli_pid"; then cli_pid=""; cat "$cli_out/log" >&2; echo "the Temporal CLI did not build" >&2; exit 1; fi
  cli_pid=""
  cat "$cli_out/log" >&2
  WARDEN_TEMPORAL_CLI=$(cat "$cli_out/path")
  export WARDEN_TEMPORAL_CLI
fi
phase "stock servers (the Temporal CLI's dev server; the official server binary on PostgreSQL with mTLS, then JWT; the CLI against the embedded server)"
go test -count=1 -timeout 20m -v -run '^TestStock' ./tests/
if [ -n "$jaeger_pid" ]; then
  # Once Jaeger is installed, the tracing test fails rather than skips.
  phase "tracing (a real worker's spans in a real Jaeger): waiting for the Jaeger build"
  if ! wait "$jaeger_pid"; then jaeger_pid=""; cat "$jaeger_out/log" >&2; echo "jaeger did not build" >&2; exit 1; fi
  jaeger_pid=""
  cat "$jaeger_out/log" >&2
  phase "tracing: Jaeger is there"
  WARDEN_JAEGER=$(cat "$jaeger_out/path")
  export WARDEN_JAEGER WARDEN_REQUIRE_JAEGER=1
  go test -count=1 -timeout 10m -v -run '^TestTrace' ./tests/
fi
if [ ${#skipped[@]} -gt 0 ]; then
  phase "all tests passed, but these parts were SKIPPED:"
  printf '   - %s\n' "${skipped[@]}"
else
  phase "all tests passed (nothing skipped)"
fi
