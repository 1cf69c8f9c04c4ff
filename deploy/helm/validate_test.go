package chart

import (
	"strings"
	"testing"
)

// goodStream is a small valid rendering: a Deployment and a Service in
// front of it. Each case of TestValidateRejects breaks it one way.
const goodStream = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: s
  labels: {app: s}
spec:
  replicas: 2
  selector:
    matchLabels: {app: s}
  template:
    metadata:
      labels: {app: s}
    spec:
      containers:
        - name: wsserver
          image: registry.example.com/stompgate:v0.1.0
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: WSSERVER_DEMO
              value: "false"
          readinessProbe:
            httpGet: {path: /readyz, port: http}
          resources:
            requests: {memory: 512Mi}
            limits: {memory: 1Gi}
---
apiVersion: v1
kind: Service
metadata:
  name: s
spec:
  selector: {app: s}
  ports:
    - name: http
      port: 80
      targetPort: http
`

// TestValidateRejects: the validator passes goodStream and fails each
// broken variant, with an error naming what is wrong.
func TestValidateRejects(t *testing.T) {
	t.Parallel()
	if _, err := Validate([]byte(goodStream)); err != nil {
		t.Fatalf("the valid stream: %v", err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown field", "httpGet: {path: /readyz, port: http}", "httpGet: {path: /readyz, prot: http}", `unknown field "prot"`},
		{"misspelt field", "replicas: 2", "replica: 2", `unknown field "replica"`},
		{"wrong type", "replicas: 2", "replicas: two", "cannot unmarshal"},
		{"duplicate key", "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n", "already set"},
		{"bad quantity", "limits: {memory: 1Gi}", "limits: {memory: 1GiB}", "quantities must match"},
		{"bad name", "name: s\n  labels", "name: S_1\n  labels", "metadata.name"},
		{"selector misses the pods", "matchLabels: {app: s}", "matchLabels: {app: t}", "does not match template"},
		{"probe on an unknown port", "port: http}", "port: htp}", "readinessProbe.httpGet.port: Not found"},
		{"service target port unknown", "targetPort: http", "targetPort: web", "targetPort: Not found"},
		{"service selects no pod", "selector: {app: s}\n  ports", "selector: {app: x}\n  ports", "selects no pod"},
		{"bad env name", "name: WSSERVER_DEMO", "name: WSSERVER DEMO", "env[0].name"},
		{"request above limit", "requests: {memory: 512Mi}", "requests: {memory: 2Gi}", "less than or equal to the limit"},
		{"unknown kind", "kind: Service", "kind: Servise", `kind "Servise" is not a kind`},
		{"port out of range", "containerPort: 8080", "containerPort: 80800", "containerPort"},
	}
	for _, c := range cases {
		if !strings.Contains(goodStream, c.old) {
			t.Fatalf("%s: %q is not in the valid stream", c.name, c.old)
		}
		broken := strings.Replace(goodStream, c.old, c.new, 1)
		_, err := Validate([]byte(broken))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := Validate([]byte("# nothing\n---\n")); err == nil {
		t.Error("an empty rendering was accepted")
	}
}
