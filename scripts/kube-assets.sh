#!/usr/bin/env bash
# Builds the real kube-apiserver the Kubernetes actuator's envtest suites
# start, from the separate tools module hack/kube (k8s.io/kubernetes never
# enters stormctl's own go.mod), and finds an etcd. The binaries live in the
# Go build cache: a cold build takes minutes, a warm one about a second.
#
# Prints the paths as shell assignments
#   TEST_ASSET_KUBE_APISERVER=... TEST_ASSET_ETCD=...
# and records them in hack/kube/assets.env, which the tests read when the
# environment does not name the binaries.
#
# etcd: $TEST_ASSET_ETCD if set, else etcd on PATH (Debian's etcd-server is
# accepted), else built from the tools module (go.etcd.io/etcd/server/v3).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
go="${GO:-go}"
# CGO_ENABLED=0 for the tools and the tests alike, or shared packages build twice.
export CGO_ENABLED=0

# Recorded paths are reused while the binaries exist and the tools module
# has not changed since; otherwise ask the go command (about a second warm,
# minutes cold).
recorded="$root/hack/kube/assets.env"
if [ -z "${TEST_ASSET_ETCD:-}" ] && [ "$recorded" -nt "$root/hack/kube/go.mod" ] && [ "$recorded" -nt "$root/hack/kube/go.sum" ]; then
  # shellcheck disable=SC1090
  . "$recorded"
  if [ -x "${TEST_ASSET_KUBE_APISERVER:-}" ] && [ -x "${TEST_ASSET_ETCD:-}" ]; then
    cat "$recorded"
    exit 0
  fi
  unset TEST_ASSET_KUBE_APISERVER TEST_ASSET_ETCD
fi

apiserver="$("$go" -C "$root/hack/kube" tool -n kube-apiserver)"
etcd="${TEST_ASSET_ETCD:-}"
if [ -z "$etcd" ]; then
  etcd="$(command -v etcd || true)"
fi
if [ -z "$etcd" ]; then
  etcd="$("$go" -C "$root/hack/kube" tool -n go.etcd.io/etcd/server/v3)"
fi
for bin in "$apiserver" "$etcd"; do
  [ -x "$bin" ] || { echo "kube-assets: $bin is not an executable" >&2; exit 1; }
done
out="TEST_ASSET_KUBE_APISERVER=$apiserver
TEST_ASSET_ETCD=$etcd"
printf '%s\n' "$out" > "$recorded"
printf '%s\n' "$out"
