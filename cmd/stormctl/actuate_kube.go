//go:build actuator

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/exit"
)

// withKubernetes says this build links the Kubernetes client.
const withKubernetes = true

func runActuateKubernetes(ctx context.Context, f *Factory, o *actuateKubeOptions) error {
	if err := textOnly(f, "actuate kubernetes", "it runs until stopped and logs to stderr; its actuations are in the journal, its problems in stormctl status -o json"); err != nil {
		return err
	}
	var m kube.Mapping
	if o.mapping != "" {
		var err error
		if m, err = kube.LoadMapping(o.mapping); err != nil {
			return exit.NewUsage(err)
		}
	}
	if o.printRBAC {
		ns := o.namespace
		if ns == "" {
			ns = m.Namespace
		}
		if ns == "" {
			return exit.NewUsage(fmt.Errorf("--print-rbac needs --namespace or --mapping"))
		}
		_, err := fmt.Fprint(f.IO.Out, kube.RBAC(ns, o.account))
		return err
	}
	if o.mapping == "" {
		return exit.NewUsage(fmt.Errorf("--mapping is required"))
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubernetes actuator: no cluster configuration (in-cluster, --kubeconfig or $KUBECONFIG): %w", err)
	}
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	instance := firstSet(o.instance, f.getenv("POD_NAME"))
	if instance == "" {
		instance, _ = os.Hostname()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fmt.Fprintf(f.IO.ErrOut, "stormctl: kubernetes actuator %s on %s, namespace %s, control plane %s\n", instance, cfg.Host, m.Namespace, store)
	id := "actuator-kubernetes/" + instance
	// The journal names the actuator itself unless --actor says otherwise.
	return kube.Run(ctx, kube.RunOptions{Config: cfg, Mapping: m, Store: store, Instance: id,
		Actor: firstSet(f.flags.Actor, id), Resync: o.resync, Listen: o.listen, Log: log, MarkPath: store.MarkPath(f.getenv)})
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
