package kubernetes

import "k8s.io/apimachinery/pkg/runtime/schema"

// Resource is a kind's resource name, for the tests outside the package.
func Resource(gvk schema.GroupVersionKind) string { return resources[gvk] }
