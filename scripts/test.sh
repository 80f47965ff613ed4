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

# Every build here (the tools', and the tests' own go build runs) leaves
# out debug information (DWARF), which no test reads: a smaller build
# cache and quicker compiles and links. One set of flags for all of them,
# so they share the build cache.
#
# -tags=release: the build constraint with which the server's worker
# autoscaler (go.temporal.io/auto-scaled-workers) leaves out its
# Kubernetes compute provider (k8s.go is //go:build !release; no other
# file of any module here names the tag). That provider alone brings
# client-go and the Kubernetes API types: 312
# of the 2,026 packages the tests compile, about 270 CPU-seconds of a cold
# go vet (BENCHMARKS.md). Nothing in warden or its tests reaches it; the
# embedded server, the CLI's dev server and the "official" server the
# stock tests build run without it.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=release -gcflags=all=-dwarf=false -ldflags=-w"

# Jaeger (the tracing test's trace backend) builds from the Go module
# proxy: about as much code again as the tests' own build, so cold it
# builds in the background, at low priority, beside everything below,
# and the tracing test runs last, once it is there.
jaeger_pid=""
jaeger_out=$(mktemp -d)
if [ "${WARDEN_SKIP_JAEGER:-}" != "1" ]; then
  phase "jaeger (tracing test; built once in the background, then cached)"
  (rc=0; nice -n 19 .ci/jaeger.sh >"$jaeger_out/path" 2>"$jaeger_out/log" || rc=$?; echo $rc >"$jaeger_out/rc") &
  jaeger_pid=$!
else
  skip "the tracing test (Jaeger)" WARDEN_SKIP_JAEGER
fi

phase "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt wants to reformat:"; echo "$unformatted"; exit 1; fi

# go mod tidy and go vet need only the module proxy: they start now, in
# the background, beside the machine's set-up below (a Docker daemon,
# Debian packages, PostgreSQL), which mostly waits on the network and
# the disk. vet compiles everything the tests link; tidy checks go.mod
# and go.sum as committed. Their output and status are read after the
# set-up.
go_out=$(mktemp -d)
phase "go mod tidy and go vet (in the background, beside the set-up below)"
(go mod tidy -diff >"$go_out/tidy" 2>&1; echo $? >"$go_out/tidy.rc") &
tidy_pid=$!
(go vet ./... >"$go_out/vet" 2>&1; echo $? >"$go_out/vet.rc") &
vet_pid=$!

started_dockerd=""
# killtree stops a background job and every process it started.
killtree() {
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do killtree "$c"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  # The background jobs run in subshells: stop what they started too.
  for p in ${tidy_pid:-} ${vet_pid:-} ${jaeger_pid:-} ${cli_pid:-} ${static_pid:-} ${race_pid:-} ${servers_pid:-} ${unit_pid:-}; do
    killtree "$p"
  done
  rm -rf "${go_out:-}" "${bg_dir:-}" "${bins:-}" "${race_bins:-}"
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

# collect waits for a background job, prints its output, and ends the run
# with why unless its status file holds 0.
collect() { # pid, output file, status file, why
  wait "$1" || true
  cat "$2"
  if [ "$(cat "$3" 2>/dev/null)" != "0" ]; then echo "$4" >&2; exit 1; fi
}

phase "go mod tidy: waiting for its result"
collect "$tidy_pid" "$go_out/tidy" "$go_out/tidy.rc" "go mod tidy -diff failed (above: go.mod or go.sum is not as tidy leaves them, or a module did not download)"
tidy_pid=""
phase "go vet: waiting for its result"
collect "$vet_pid" "$go_out/vet" "$go_out/vet.rc" "go vet failed (above)"
vet_pid=""
phase "go vet: done"
# go vet above ran every analyzer of vet's default set over every package
# and its test files. go test would run a subset of them again, and since
# that subset's results are cached apart from vet's, it would analyse each
# dependency again for facts (330 CPU-seconds cold for tests/ alone,
# mostly the Temporal server; 76 for the race build): every go test below
# runs with -vet=off.

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
  (rc=0; nice -n 19 .ci/temporal-cli.sh >"$cli_out/path" 2>"$cli_out/log" || rc=$?; echo $rc >"$cli_out/rc") &
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
# So do the model providers' adapters (model/openai, model/anthropic),
# which start no goroutine of their own: under -race they would rebuild
# their SDKs, a third of the race build, for races only the SDKs' own
# code could have. Checked here: one that starts a goroutine goes back
# under -race.
deps=$(go list -test -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./...)
embed=$(echo "$deps" | awk '/ go\.temporal\.io\/server\// {sub(/\.test$/, "", $1); print $1}' | sort -u)
sdk=$(echo "$deps" | awk '/ github\.com\/(openai\/openai-go|anthropics\/anthropic-sdk-go)/ {sub(/\.test$/, "", $1); print $1}' |
  sort -u | grep -vxF -f <(echo "$embed") || true)
for p in $sdk; do
  if grep -lE '^[[:space:]]*go[[:space:]]+[A-Za-z_(]' $(go list -f '{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}' "$p") >/dev/null 2>&1; then
    echo "$p starts goroutines: its tests must run under -race (scripts/test.sh: the SDK packages)" >&2
    exit 1
  fi
done
norace=$(printf '%s\n' $embed $sdk | sort -u)
unit=$(go list ./... | grep -vxF -f <(echo "$norace"))
phase "race build of the unit tests (in the background)"
# Their test binaries, compiled and linked once (go test would link each
# again when it runs it), each named by its package's import path. One
# go test -c builds those whose last path element no other package has
# (its binaries are named by it); the others are built one by one.
race_bins=$(mktemp -d)
(
  renice -n 19 -p "$BASHPID" >/dev/null
  rc=0
  dups=$(for p in $unit; do echo "${p##*/}"; done | sort | uniq -d)
  together=() alone=()
  for p in $unit; do
    if grep -qxF "${p##*/}" <<<"$dups"; then alone+=("$p"); else together+=("$p"); fi
  done
  go test -race -vet=off -c -o "$race_bins/together/" "${together[@]}" >>"$race_bins/build.log" 2>&1 || rc=1
  for p in "${together[@]}"; do
    if [ -f "$race_bins/together/${p##*/}.test" ]; then mv "$race_bins/together/${p##*/}.test" "$race_bins/${p//\//_}.test"; fi
  done
  for p in "${alone[@]}"; do
    go test -race -vet=off -c -o "$race_bins/${p//\//_}.test" "$p" >>"$race_bins/build.log" 2>&1 || rc=1
  done
  echo $rc >"$race_bins/rc"
) &
race_pid=$!

# The worker and starter the tests run, linked once for every go test
# process below (each would link its own).
phase "worker and starter binaries for the tests"
bins=$(mktemp -d)
go build -o "$bins/worker" ./cmd/worker
go build -o "$bins/starter" ./cmd/starter
export WARDEN_TEST_BINS="$bins"

# The tests with servers of their own (the cluster profile, the stock
# servers, the tracing backend) run in the background beside the
# integration tests, at nice 10: both mostly wait on servers, processes
# and timers, so together they fill the cores one of them leaves idle.
# Their output is kept and printed when they are done, before the unit
# tests. They wait for the tools built in the background (a build's rc
# file holds its exit status).
await_tool() { # name, directory of the build's path/log/rc, its job's pid
  while [ ! -f "$2/rc" ]; do
    if ! kill -0 "$3" 2>/dev/null && [ ! -f "$2/rc" ]; then
      cat "$2/log" >&2; echo "$1: its build ended without a status" >&2; return 1
    fi
    sleep 2
  done
  cat "$2/log" >&2
  if [ "$(cat "$2/rc")" != "0" ]; then echo "$1 did not build" >&2; return 1; fi
}
servers_tests() {
  phase "cluster profile (PostgreSQL, Temporal server process, two worker processes, starter)"
  tests -test.timeout=15m -test.v -test.run '^TestClusterProfile$' || return 1
  if [ -n "$stock" ]; then
    phase "stock servers: waiting for the Temporal CLI build"
    await_tool "the Temporal CLI" "$cli_out" "$cli_pid" || return 1
    WARDEN_TEMPORAL_CLI=$(cat "$cli_out/path")
    export WARDEN_TEMPORAL_CLI
  fi
  phase "stock servers (the Temporal CLI's dev server; the official server binary on PostgreSQL with mTLS, then JWT; the CLI against the embedded server)"
  tests -test.timeout=20m -test.v -test.run '^TestStock' || return 1
  if [ -n "$jaeger_pid" ]; then
    # Once Jaeger is installed, the tracing test fails rather than skips.
    phase "tracing (a real worker's spans in a real Jaeger): waiting for the Jaeger build"
    await_tool "Jaeger" "$jaeger_out" "$jaeger_pid" || return 1
    phase "tracing: Jaeger is there"
    WARDEN_JAEGER=$(cat "$jaeger_out/path")
    export WARDEN_JAEGER WARDEN_REQUIRE_JAEGER=1
    tests -test.timeout=10m -test.v -test.run '^TestTrace' || return 1
  fi
}
# The test binary of tests/ is linked once and run by the phases below
# as go test would run it, in its package directory (go test links it
# again at each run).
go test -vet=off -c -o "$bins/tests.test" ./tests/
tests() { (cd tests && "$bins/tests.test" "$@"); }
phase "cluster profile, stock servers and tracing: in the background (their output follows the integration tests)"
(renice -n 10 -p "$BASHPID" >/dev/null; rc=0; servers_tests >"$bg_dir/servers.log" 2>&1 || rc=$?; echo $rc >"$bg_dir/servers.rc") &
servers_pid=$!

# The unit tests run in the background too, beside the integration tests'
# last stretch: they start once the cluster, stock-server and tracing
# tests are done and the race build is there (both by the middle of the
# integration tests on a warm or a cold run), so they take the cores the
# integration tests leave idle while they wait on their servers,
# processes and timers. Their output follows the integration tests'.
#
# race_one runs one package's test binary in its directory, as go test
# would; each package's output is printed in order after.
race_one() { # import path, directory
  local bin="$race_bins/${1//\//_}.test" out="$race_bins/${1//\//_}.out" start=$SECONDS
  if [ ! -x "$bin" ]; then printf '?   \t%s\t[no test files]\n' "$1" >"$out"; return 0; fi
  if (cd "$2" && "$bin" -test.count=1 -test.timeout=10m -test.paniconexit0) >"$out.log" 2>&1; then
    printf 'ok  \t%s\t%ds\n' "$1" $((SECONDS - start)) >"$out"
  else
    { cat "$out.log"; printf 'FAIL\t%s\t%ds\n' "$1" $((SECONDS - start)); } >"$out"
    return 1
  fi
}
export -f race_one
export race_bins
heavy='^github.com/wardenhq/warden/backend/(local|docker) '
pkgdirs=$(go list -f '{{.ImportPath}} {{.Dir}}' $unit)
# unit_tests runs three lanes that take the packages from one queue,
# longest first: backend/local and backend/docker (they mostly wait on
# sandboxed processes and on the Docker daemon), the packages without
# -race (one go test run), then the others. backend/local's write-limit
# tests read a call's growth in the free space of a disk of their own,
# so files freed beside them (the Docker tests', the integration tests')
# cannot hide it.
unit_tests() {
  while [ ! -f "$bg_dir/servers.rc" ] || [ ! -f "$race_bins/rc" ]; do sleep 2; done
  phase "unit tests (-race): started"
  if [ "$(cat "$race_bins/rc")" != "0" ]; then cat "$race_bins/build.log"; echo "the unit tests did not build" >&2; return 1; fi
  local rc=0
  {
    grep -E "$heavy" <<<"$pkgdirs" | sort
    echo "norace -"
    grep -vE "$heavy" <<<"$pkgdirs"
  } | while read -r p d; do printf '%s\0%s\0' "$p" "$d"; done |
    NORACE="$(echo "$norace" | grep -v '/tests$' | tr '\n' ' ')" xargs -0 -n 2 -P 3 bash -c '
      if [ "$0" != norace ]; then race_one "$0" "$1"; exit; fi
      go test -vet=off -count=1 $NORACE >"$race_bins/norace.out" 2>&1' ||
    rc=1
  phase "unit tests: done"
  for p in $unit; do cat "$race_bins/${p//\//_}.out"; done
  phase "unit tests without -race (in a lane beside the others): the packages that embed the server (node, devserver, worker) and the model providers' adapters"
  cat "$race_bins/norace.out"
  return $rc
}
(rc=0; unit_tests >"$bg_dir/unit.log" 2>&1 || rc=$?; echo $rc >"$bg_dir/unit.rc") &
unit_pid=$!

phase "integration tests (real Temporal server, processes, files)"
tests -test.timeout=30m -test.skip '^(TestClusterProfile$|TestStock|TestTrace)'

phase "cluster profile, stock servers and tracing: waiting for them"
collect "$servers_pid" "$bg_dir/servers.log" "$bg_dir/servers.rc" "the cluster, stock-server or tracing tests failed (above)"
servers_pid=""

phase "staticcheck: waiting for its result"
collect "$static_pid" "$bg_dir/staticcheck" "$bg_dir/staticcheck.rc" "staticcheck failed"
static_pid=""

phase "unit tests: waiting for them (their own phase lines give their times)"
wait "$race_pid" || true
race_pid=""
collect "$unit_pid" "$bg_dir/unit.log" "$bg_dir/unit.rc" "unit tests failed (above)"
unit_pid=""

if [ ${#skipped[@]} -gt 0 ]; then
  phase "all tests passed, but these parts were SKIPPED:"
  printf '   - %s\n' "${skipped[@]}"
else
  phase "all tests passed (nothing skipped)"
fi
