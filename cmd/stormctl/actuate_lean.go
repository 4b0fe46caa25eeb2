//go:build !actuator

package main

import (
	"context"
	"errors"
)

// runActuateKubernetes in the responder's build: the Kubernetes client
// (client-go, controller-runtime) would double stormctl's size and start-up
// cost, so it lives in stormctl-actuator.
// withKubernetes is false: see runActuateKubernetes.
const withKubernetes = false

func runActuateKubernetes(context.Context, *Factory, *actuateKubeOptions) error {
	return errors.New("actuate kubernetes: this stormctl is built without the Kubernetes client; " +
		"run stormctl-actuator (release archives and the stormctl-actuator image), or build with -tags actuator (docs/install.md)")
}
