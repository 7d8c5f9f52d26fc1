#!/usr/bin/env bash
# criu 4.1.1, which the Cucumber-JVM judge restores its verdict JVMs with
# (src/bench/frameworks/cucumber_jvm/restored.py). Debian 12's criu (3.17) cannot run on 6.x
# kernels ("vdso: Unexpected rt vDSO area bounds"), so this builds Debian's own upstream tarball
# of 4.1.1 (the one trixie ships) into the req2test cache: $REQ2TEST_CRIU_CACHE, else
# ~/.cache/req2test/criu. ~40 s of compiling on 2 cores; nothing happens when it is there and
# `criu check` passes. Without it the judge starts a fresh JVM per verdict run, as before.
# Needs root (apt for the build dependencies; criu itself only runs as root).
set -euo pipefail
VERSION=4.1.1
SHA256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
URL="http://deb.debian.org/debian/pool/main/c/criu/criu_${VERSION}.orig.tar.xz"
cache="${REQ2TEST_CRIU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/req2test/criu}"
if [ -x "$cache/criu" ] && "$cache/criu" --version 2>/dev/null | grep -q "Version: ${VERSION}" \
    && "$cache/criu" check >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-criu: needs root (criu restores processes as root); verdict JVMs will start fresh" >&2
  exit 1
fi
deps=(build-essential pkg-config curl xz-utils libprotobuf-dev libprotobuf-c-dev protobuf-c-compiler
      protobuf-compiler python3-protobuf libnl-3-dev libcap-dev libnet1-dev libbsd-dev libgnutls28-dev
      libnftables-dev libaio-dev uuid-dev)
missing=()
for dep in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$dep" 2>/dev/null | grep -q "ok installed" || missing+=("$dep")
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ${#missing[@]} -gt 0 ]; then
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work" "$log"' EXIT
curl -fsSL --retry 3 -o "$work/criu.tar.xz" "$URL"
echo "$SHA256  $work/criu.tar.xz" | sha256sum -c --quiet -
tar -C "$work" -xf "$work/criu.tar.xz"
if ! make -C "$work/criu-${VERSION}" -j"$(nproc)" criu >"$log" 2>&1; then
  tail -30 "$log" >&2
  exit 1
fi
mkdir -p "$cache"
install -m 0755 "$work/criu-${VERSION}/criu/criu" "$cache/criu.new"
mv "$cache/criu.new" "$cache/criu"
if ! "$cache/criu" check >"$log" 2>&1; then
  echo "install-criu: criu ${VERSION} built, but this machine refuses it (verdict JVMs will start fresh):" >&2
  tail -5 "$log" >&2
fi
