#!/usr/bin/env bash
# System packages the tests use: bubblewrap (the evaluator's no-network, read-only sandbox)
# and docker.io (the optional `docker` sandbox backend; harness.sandbox.dockerd starts its
# engine on demand, so no service is enabled here), Node.js for cucumber-js and Debian's
# chromium (the explorer's pages are screenshot-checked headless).
# Then criu 4.1.1 (install-criu.sh), which the Cucumber-JVM judge restores its verdict JVMs
# with; without it those start fresh, so its failure is reported, not fatal.
# Idempotent and quiet; needs root (or sudo) only when something is missing.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# the daemon, not the CLI: a docker client alone cannot run the backend
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
# cucumber-js (the second framework) runs on Node.js; machines here have Node 20 already
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
# the results explorer's pages are checked in a real headless browser (slow tests)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  log=$(mktemp)
  # apt's chatter (debconf notes, service hints) only when something fails;
  # no recommends: docker.io's would pull needrestart, apparmor and git
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
fi
bash "$(dirname "$0")/install-criu.sh" || echo "install-system-deps: criu not installed; Cucumber-JVM verdict JVMs will start fresh" >&2
