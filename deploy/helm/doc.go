// Package chart checks the manifests the stompgate Helm chart
// (./stompgate) renders, offline: each document is decoded strictly into
// its Kubernetes API type (an unknown or misspelt field, a value of the
// wrong type or a duplicate key is an error, as the API server's strict
// field validation makes it), then held to the API server's rules for
// names, labels, ports and selectors, and the objects to each other
// (a Service selects the Deployment's pods and names its ports, a
// ServiceMonitor selects a Service, an Ingress names a Service port).
//
// It is its own module so that the server's module does not depend on
// k8s.io/api. scripts/test.sh runs its tests with a pinned helm.
package chart
