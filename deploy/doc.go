// Package deploy holds no code: its tests check what stormctl ships beside
// the binary — the GoReleaser configuration (.goreleaser.yaml), the
// container image built by hack/image, and the Kubernetes manifests in
// deploy/chart — with the real tools and the real kube-apiserver.
package deploy
