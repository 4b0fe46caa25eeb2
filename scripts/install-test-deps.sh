#!/usr/bin/env bash
# Installs the real servers and clients the test suite starts: prometheus and
# promtool, prometheus-alertmanager, redis-server, tmux for the terminal end-to-end tests, chromium for
# the HTML report's headless-browser test, ssh-keygen, ssh-agent and jq for
# the signed-journal interop tests, and node and npm for the Node flagd
# clients. Does nothing when they are already on PATH.
set -euo pipefail
declare -A pkg=(
  [prometheus]=prometheus [promtool]=prometheus [redis-server]=redis-server
  [tmux]=tmux [chromium]=chromium [ssh-keygen]=openssh-client
  [ssh-agent]=openssh-client [jq]=jq [node]=nodejs [npm]=npm
  [prometheus-alertmanager]=prometheus-alertmanager
)
missing=()
for bin in "${!pkg[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("${pkg[$bin]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "install-test-deps: installing Debian packages ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages start system services; the tests start their own servers on
# free ports, so the packaged ones are not needed.
