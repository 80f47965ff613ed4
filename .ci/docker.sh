#!/usr/bin/env bash
# docker.sh prepares a Docker daemon and the warden workspace image on a
# machine without registry access. It is idempotent: each step is skipped
# when its result is already present.
#
#   1. installs Debian's docker.io when dockerd is missing;
#   2. starts dockerd in the background when the socket does not answer
#      (log and PID file outside the repository, see WARDEN_DOCKER_STATE);
#   3. builds warden-workspace:latest from Debian packages (busybox-static,
#      bash-static, ripgrep) with `docker import`, caching a `docker save`
#      tarball under ${XDG_CACHE_HOME:-$HOME/.cache}/warden/ and loading it
#      when present.
#
# Stop the daemon with: kill "$(cat "${WARDEN_DOCKER_STATE:-/var/tmp/warden-docker}/dockerd.pid")"
set -euo pipefail

IMAGE="${WARDEN_DOCKER_IMAGE:-warden-workspace:latest}"
STATE="${WARDEN_DOCKER_STATE:-/var/tmp/warden-docker}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/warden"
TARBALL="$CACHE/warden-workspace.tar.gz"
SOCK="${DOCKER_SOCK:-/var/run/docker.sock}"
export DOCKER_HOST="${DOCKER_HOST:-unix://$SOCK}"

log() { printf '[docker.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

answers() { docker info >/dev/null 2>&1; }

install_docker() {
	if command -v dockerd >/dev/null 2>&1; then
		return
	fi
	log "dockerd missing: installing docker.io"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends docker.io >/dev/null
}

# wait_daemon PID waits up to 30 s for `docker info`; it fails early when
# the daemon process exits.
wait_daemon() {
	local pid=$1 i
	for i in $(seq 1 150); do
		if answers; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
		sleep 0.2
	done
	return 1
}

start_daemon() {
	if answers; then
		log "daemon already answers on $DOCKER_HOST"
		return
	fi
	mkdir -p "$STATE"
	if [ -f "$STATE/dockerd.pid" ] && kill -0 "$(cat "$STATE/dockerd.pid")" 2>/dev/null; then
		log "dockerd $(cat "$STATE/dockerd.pid") is running but not answering; waiting"
		if wait_daemon "$(cat "$STATE/dockerd.pid")"; then return; fi
		log "giving up on dockerd $(cat "$STATE/dockerd.pid"); stopping it"
		kill "$(cat "$STATE/dockerd.pid")" 2>/dev/null || true
		sleep 2
	fi
	local attempt
	# Attempts: default (overlay2 + bridge), vfs, then vfs without networking.
	for attempt in "" "--storage-driver vfs" "--storage-driver vfs --iptables=false --bridge=none"; do
		log "starting dockerd ${attempt:-(defaults)}; log $STATE/dockerd.log"
		# shellcheck disable=SC2086
		$SUDO setsid dockerd --host "unix://$SOCK" --pidfile "$STATE/dockerd.daemon.pid" $attempt \
			>>"$STATE/dockerd.log" 2>&1 </dev/null &
		local pid=$!
		echo "$pid" >"$STATE/dockerd.pid"
		if wait_daemon "$pid"; then
			log "dockerd (pid $pid) answers; pid file $STATE/dockerd.pid"
			return
		fi
		log "dockerd ${attempt:-(defaults)} failed; see $STATE/dockerd.log"
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		rm -f "$STATE/dockerd.pid"
	done
	log "could not start dockerd"
	exit 1
}

build_image() {
	if docker image inspect "$IMAGE" >/dev/null 2>&1; then
		log "image $IMAGE present"
		return
	fi
	if [ -s "$TARBALL" ]; then
		log "loading $IMAGE from $TARBALL"
		if gzip -dc "$TARBALL" | docker load >/dev/null && docker image inspect "$IMAGE" >/dev/null 2>&1; then
			return
		fi
		log "cached tarball unusable; rebuilding"
		rm -f "$TARBALL"
	fi
	log "building $IMAGE from Debian packages"
	local work
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' RETURN
	(cd "$work" && apt-get download busybox-static bash-static ripgrep >/dev/null 2>&1) || {
		$SUDO apt-get update -qq
		(cd "$work" && apt-get download busybox-static bash-static ripgrep >/dev/null)
	}
	local root="$work/rootfs" deb
	mkdir -p "$work/x" "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,tmp,root,workspace,etc,proc,sys,dev}
	chmod 1777 "$root/tmp"
	for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/x"; done

	cp "$work/x/bin/busybox" "$root/bin/busybox"
	# Every applet as a symlink to busybox at its canonical place.
	local applet
	"$root/bin/busybox" --list-full | while read -r applet; do
		mkdir -p "$root/$(dirname "$applet")"
		# Absolute links dangle on the host: test with -L, not -e.
		[ -L "$root/$applet" ] || [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
	done
	cp "$work/x/bin/bash-static" "$root/bin/bash"
	cp "$work/x/usr/bin/rg" "$root/usr/bin/rg"
	# Shared libraries rg needs (bash-static and busybox are static).
	local lib
	for lib in $(ldd "$work/x/usr/bin/rg" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	cat >"$root/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$root/etc/group" <<-'EOF'
		root:x:0:
		nogroup:x:65534:
	EOF
	for applet in sh find stat sleep printf mkdir tar setsid kill cat; do
		[ -L "$root/bin/$applet" ] || [ -L "$root/usr/bin/$applet" ] || [ -L "$root/sbin/$applet" ] ||
			{ log "busybox lacks $applet"; exit 1; }
	done
	tar -C "$root" -c . | docker import \
		-c 'WORKDIR /workspace' \
		-c 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
		- "$IMAGE" >/dev/null
	mkdir -p "$CACHE"
	docker save "$IMAGE" | gzip -1 >"$TARBALL.tmp"
	mv "$TARBALL.tmp" "$TARBALL"
	log "built $IMAGE; cached in $TARBALL"
}

install_docker
start_daemon
build_image
docker run --rm --network none "$IMAGE" sh -c 'rg --version >/dev/null && find / -maxdepth 0 >/dev/null && stat / >/dev/null' ||
	{ log "image $IMAGE failed its smoke test"; exit 1; }
log "ready: $IMAGE on $DOCKER_HOST"
