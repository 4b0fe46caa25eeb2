#!/usr/bin/env bash
# Installs the real servers the test suite starts: prometheus and promtool,
# redis-server, tmux for the terminal end-to-end test, and node and npm for
# the Node flagd clients. Does nothing when they are already on PATH.
set -euo pipefail
missing=()
for bin in prometheus promtool redis-server tmux node npm; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-test-deps: missing ${missing[*]}; installing Debian packages" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-deps: run as root, or: sudo apt-get install -y prometheus redis-server tmux nodejs npm" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus redis-server tmux nodejs npm >/dev/null
# The packages start system services; the tests start their own servers on
# free ports, so the packaged ones are not needed.
