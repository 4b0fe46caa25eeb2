// Command kustomize renders a kustomization directory to YAML on stdout with
// kustomize's own engine (sigs.k8s.io/kustomize/api/krusty), the same
// rendering `kubectl apply -k` and `kustomize build` do.
//
//	go run ./hack/kustomize DIR > rendered.yaml
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize DIR")
		os.Exit(2)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize:", err)
		os.Exit(1)
	}
	out, err := res.AsYaml()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
