#!/usr/bin/env bash
# Node packages the tests use: the cucumber-js example's own (cucumber-js 12.9.0 and Stryker
# 9.6.1, pinned in examples/cartjs/package-lock.json), installed from its lockfile.
# Idempotent: nothing happens when they are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
example=examples/cartjs
if [ ! -f "$example/node_modules/@cucumber/cucumber/package.json" ] || \
   [ "$example/package-lock.json" -nt "$example/node_modules/.package-lock.json" ]; then
  (cd "$example" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
