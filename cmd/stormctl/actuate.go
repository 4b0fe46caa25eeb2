package main

import (
	"time"

	"github.com/spf13/cobra"
)

// actuateKubeOptions are the flags of `stormctl actuate kubernetes`.
type actuateKubeOptions struct {
	mapping     string
	kubeconfig  string
	kubeContext string
	listen      string
	resync      time.Duration
	instance    string
	printRBAC   bool
	namespace   string
	account     string
}

func newActuateCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "actuate",
		Short: "Run an actuator: apply levers to real systems, save and restore what they change",
	}
	cmd.AddCommand(newActuateKubernetesCmd(f))
	return cmd
}

// mappingHelp lists every field of the mapping file (docs/kubernetes.md
// says what each means); a test holds it to the mapping's own fields.
const mappingHelp = "mapping file: kubernetes: {namespace, clusterDomain, services: {NAME: {hpa, scaledObject, " +
	"virtualService, istio, httpRoute, gatewayAPI, gatewayAPIService, linkerd, linkerdRoute, linkerdService, " +
	"envoyGateway, backendTrafficPolicy}}}"

func newActuateKubernetesCmd(f *Factory) *cobra.Command {
	o := &actuateKubeOptions{}
	cmd := &cobra.Command{
		Use:   "kubernetes --mapping FILE",
		Short: "Freeze HPAs, pause KEDA ScaledObjects and cap Istio retries while their levers hold",
		Long: `Run the Kubernetes actuator until interrupted. It follows the lever change feed
(with a periodic resync) and, for each service in the mapping file:

  autoscaling SERVICE frozen     every autoscaling/v2 HPA gets scaleUp and scaleDown
                                 selectPolicy Disabled; KEDA ScaledObjects get
                                 autoscaling.keda.sh/paused: "true"
  retries SERVICE->DEP off|cap:N the service's Istio VirtualService routes to DEP get
                                 retries.attempts 0 (or N-1); its Gateway API
                                 HTTPRoute rules to DEP retry.attempts 0 (or N-1);
                                 its Linkerd routes' retry.linkerd.io annotations
                                 are removed (or limit N-1), a ServiceProfile's
                                 routes isRetryable false; its Envoy Gateway
                                 BackendTrafficPolicies retry.numRetries 0 (or N-1)

A consumer route (its parent Service in another namespace) carries only the
callers in its own namespace and is changed; a producer route, a Service's
annotations or a ServiceProfile reach every caller of DEP and are changed only
when the mapping names DEP under gatewayAPIService or linkerdService. A lever
with no faithful mapping in a system (a rule splitting DEP with other backends,
a policy on a Gateway, a cap on a ServiceProfile) is refused and journaled as
actuation.failed, never widened. docs/kubernetes.md has the full table.

What it changes is saved in the annotation stormctl.io/saved (with the action
id) and restored field by field on release or expiry, even one that happened
while it was stopped: fields another writer changed meanwhile are kept and
journaled. Replica counts are never changed. Every change is journaled
(actuation.applied, actuation.restored, actuation.failed, actuation.conflict)
and the actuator counts in "seen by". Run several replicas: they elect one
leader on the Lease stormctl-actuator-kubernetes. It outlives its API server: a
lost lease means campaigning again, and discovery and watches resume when the
server answers.

The Kubernetes client is linked only into stormctl-actuator (this command built
with -tags actuator; docs/install.md says why): the stormctl responders install
answers this command with where to find it.

It serves /healthz, /readyz (named checks: apiserver, discovery, informers,
leader; each failure says why) and /metrics on --listen. --print-rbac prints the
ServiceAccount, Role and RoleBinding it needs and exits.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runActuateKubernetes(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.mapping, "mapping", "", mappingHelp)
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&o.kubeContext, "kube-context", "", "kubeconfig context to use")
	fl.StringVar(&o.listen, "listen", ":8080", "address of /healthz, /readyz and /metrics")
	fl.DurationVar(&o.resync, "resync", 30*time.Second, "period of full passes besides the change feed (jittered)")
	fl.StringVar(&o.instance, "instance", "", "replica id in acknowledgements (default $POD_NAME, then the host name)")
	fl.BoolVar(&o.printRBAC, "print-rbac", false, "print the RBAC objects the actuator needs and exit")
	fl.StringVar(&o.namespace, "namespace", "", "with --print-rbac and no --mapping: the namespace")
	fl.StringVar(&o.account, "service-account", "stormctl-actuator", "with --print-rbac: the ServiceAccount name")
	return cmd
}
