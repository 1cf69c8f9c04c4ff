package chart

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// chartDir and fullValues are the chart and its every-option values file.
const (
	chartDir   = "stompgate"
	fullValues = "stompgate/ci/full-values.yaml"
)

// helmBin is the helm to run: $HELM (scripts/test.sh sets it to the
// pinned one it installs), else helm on the PATH. The tests fail without
// it rather than skip.
func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("no helm: set HELM or put helm on the PATH (scripts/test.sh installs a pinned one)")
	}
	return h
}

// helm runs helm with args and returns its standard output.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// render is helm template of the chart with extra arguments (-f, --set).
func render(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helm(t, append([]string{"template", "rel", chartDir}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderings are the values the chart is tested with.
var renderings = []struct {
	name string
	args []string
}{
	{"default", nil},
	{"full", []string{"-f", fullValues}},
}

// TestChartLint: helm lint passes on the default values and the full ones.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, r := range renderings {
		if _, err := helm(t, append([]string{"lint", "--strict", chartDir}, r.args...)...); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
}

// TestChartManifests: every manifest of both renderings decodes strictly
// into its API type and passes the checks of Validate; and what makes the
// rollout drain-aware holds: probes on the admin port, a grace period
// longer than the drain, -memory-limit at the given share of the
// container's limit, a non-root read-only container, the admin port kept
// off the public Service.
func TestChartManifests(t *testing.T) {
	t.Parallel()
	wantKinds := map[string][]string{
		"default": {"Deployment", "PodDisruptionBudget", "Service", "Service", "ServiceAccount"},
		"full": {"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Ingress", "Ingress",
			"PodDisruptionBudget", "PrometheusRule", "Service", "Service", "ServiceAccount", "ServiceMonitor"},
	}
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			m, err := Validate(render(t, r.args...))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range m.Objects {
				kinds = append(kinds, o.Kind)
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, wantKinds[r.name]) {
				t.Errorf("kinds %v, want %v", kinds, wantKinds[r.name])
			}
			checkStompgatePod(t, m, r.name == "full")
		})
	}
}

// checkStompgatePod checks the Deployment's drain, memory, probes and
// security, and the Services' ports.
func checkStompgatePod(t *testing.T, m Manifests, full bool) {
	t.Helper()
	deps := m.Of("Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments", len(deps))
	}
	pod := deps[0].Value.(*appsv1.Deployment).Spec.Template.Spec
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}

	// The drain: preStop, then SIGTERM starts -drain-grace, -drain-period
	// and -shutdown-timeout; the kubelet must wait for all of it.
	var total time.Duration
	if h := c.Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Sleep != nil {
		total += time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	} else {
		t.Error("no preStop sleep: SIGTERM would start the drain before the endpoints are gone")
	}
	for _, name := range []string{"WSSERVER_DRAIN_GRACE", "WSSERVER_DRAIN_PERIOD", "WSSERVER_SHUTDOWN_TIMEOUT"} {
		d, err := time.ParseDuration(env[name])
		if err != nil {
			t.Fatalf("%s=%q: %v", name, env[name], err)
		}
		total += d
	}
	if env["WSSERVER_DRAIN_PERIOD"] == "0s" {
		t.Error("WSSERVER_DRAIN_PERIOD is 0s: every session would be closed at once")
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= total {
		t.Errorf("terminationGracePeriodSeconds %v is not longer than the drain (%v)", g, total)
	}

	// -memory-limit: memoryLimitPercent of the container's limit.
	limit := c.Resources.Limits.Memory()
	pct := 90.0
	if full {
		pct = 85
	}
	got, err := strconv.ParseInt(env["WSSERVER_MEMORY_LIMIT"], 10, 64)
	if err != nil {
		t.Fatalf("WSSERVER_MEMORY_LIMIT=%q: %v", env["WSSERVER_MEMORY_LIMIT"], err)
	}
	if want := int64(math.Floor(float64(limit.Value()) * pct / 100)); got != want || got >= limit.Value() {
		t.Errorf("WSSERVER_MEMORY_LIMIT %d, want %v%% of the container's %s: %d", got, pct, limit, want)
	}

	if full {
		// Values as written: YAML numbers reach the template as floats.
		for name, want := range map[string]string{
			"WSSERVER_APP_STREAM_MAXLEN":      "1000000",
			"WSSERVER_MEMORY_ADMIT_THRESHOLD": "0.85",
			"WSSERVER_AUTH_REQUIRED":          "true",
		} {
			if env[name] != want {
				t.Errorf("%s=%q, want %q", name, env[name], want)
			}
		}
	}

	// Readiness on /readyz and liveness on /healthz, on the admin port,
	// which no bound of the public listener refuses in a storm.
	for name, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.StrVal != "admin" {
			t.Errorf("probe %s: %+v, want an HTTP GET of %s on port admin", name, probe, name)
		}
	}
	if env["WSSERVER_ADMIN_ADDR"] != ":8082" || env["WSSERVER_ADDR"] != ":8080" {
		t.Errorf("listeners %q and %q, want :8080 and :8082", env["WSSERVER_ADDR"], env["WSSERVER_ADMIN_ADDR"])
	}

	// Non-root, read-only, no privilege to gain.
	sc := c.SecurityContext
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security contexts %+v / %+v: want non-root, a read-only root, no escalation, no capability", pod.SecurityContext, sc)
	}

	// The admin port is on the ClusterIP admin Service only.
	for _, o := range m.Of("Service") {
		s := o.Value.(*corev1.Service)
		admin := strings.HasSuffix(o.Name, "-admin")
		for _, p := range s.Spec.Ports {
			if (p.TargetPort.StrVal == "admin") != admin {
				t.Errorf("Service %s serves target port %s", o.Name, p.TargetPort.StrVal)
			}
		}
		if admin && s.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("admin Service %s is of type %s, want ClusterIP", o.Name, s.Spec.Type)
		}
	}
}

// TestChartSettingsAreReal: every WSSERVER_ variable either rendering
// sets is a setting that wsserver -h lists, and wsserver itself, which
// refuses to start on an unknown WSSERVER_ variable, accepts them all
// (and, to show the check is live, refuses one more that is no setting).
func TestChartSettingsAreReal(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "./cmd/wsserver")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/wsserver: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "-h").Output()
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-[a-z0-9-]+ \((WSSERVER_[A-Z0-9_]+)\)`).FindAllSubmatch(help, -1) {
		known[string(m[1])] = true
	}
	if len(known) < 50 {
		t.Fatalf("wsserver -h lists %d settings; its format changed?", len(known))
	}

	for _, r := range renderings {
		m, err := Validate(render(t, r.args...))
		if err != nil {
			t.Fatal(err)
		}
		var environ []string
		for _, e := range m.Of("Deployment")[0].Value.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env {
			if !strings.HasPrefix(e.Name, "WSSERVER_") {
				continue
			}
			if !known[e.Name] {
				t.Errorf("%s: the chart renders %s, which is no setting of wsserver", r.name, e.Name)
			}
			environ = append(environ, e.Name+"=x")
		}
		if len(environ) < 8 {
			t.Errorf("%s: only %d WSSERVER_ variables rendered", r.name, len(environ))
		}
		if out, err := runWith(bin, environ); err != nil {
			t.Errorf("%s: wsserver -version with the chart's variables: %v\n%s", r.name, err, out)
		}
		if _, err := runWith(bin, append(environ, "WSSERVER_NOT_A_SETTING=1")); err == nil {
			t.Errorf("%s: wsserver accepted WSSERVER_NOT_A_SETTING: the check above proves nothing", r.name)
		}
	}
}

// runWith runs bin -version with only environ in its environment.
func runWith(bin string, environ []string) ([]byte, error) {
	cmd := exec.Command(bin, "-version")
	cmd.Env = environ
	return cmd.CombinedOutput()
}

// policyZone is the part of a policy zone the ingress mirrors.
type policyZone struct {
	Name           string `json:"name"`
	Rate           string `json:"rate"`
	Burst          int    `json:"burst"`
	MaxConnections int    `json:"max_connections"`
	Routes         []struct {
		Upstream string `json:"upstream"`
	} `json:"routes"`
}

// rateRE is a policy rate: requests per second or per minute.
var rateRE = regexp.MustCompile(`^([0-9]+)r/([sm])$`)

// wsZoneAnnotations are the ingress-nginx annotations that mirror the
// zone of policy routing to upstream ws, computed here independently of
// the chart's template.
func wsZoneAnnotations(t *testing.T, policy []byte) map[string]string {
	t.Helper()
	var p struct {
		Zones []policyZone `json:"zones"`
	}
	if err := yaml.Unmarshal(policy, &p); err != nil {
		t.Fatal(err)
	}
	for _, z := range p.Zones {
		for _, r := range z.Routes {
			if r.Upstream != "ws" {
				continue
			}
			m := rateRE.FindStringSubmatch(z.Rate)
			if m == nil {
				t.Fatalf("zone %s: rate %q", z.Name, z.Rate)
			}
			rate, _ := strconv.Atoi(m[1])
			want := map[string]string{
				"nginx.ingress.kubernetes.io/limit-burst-multiplier": strconv.Itoa(max(1, int(math.Ceil(float64(z.Burst)/float64(rate))))),
			}
			if m[2] == "s" {
				want["nginx.ingress.kubernetes.io/limit-rps"] = m[1]
			} else {
				want["nginx.ingress.kubernetes.io/limit-rpm"] = m[1]
			}
			if z.MaxConnections > 0 {
				want["nginx.ingress.kubernetes.io/limit-connections"] = strconv.Itoa(z.MaxConnections)
			}
			return want
		}
	}
	t.Fatal("the policy has no zone routing to upstream ws")
	return nil
}

// TestIngressMirrorsPolicy: the WebSocket Ingress carries the handshake
// zone's rate, burst and connection cap, from the server's compiled-in
// policy by default and from the chart's policy when one is given; the
// burst that ingress-nginx enforces (rate × multiplier) is never below
// the server's, so the server's own limit refuses first.
func TestIngressMirrorsPolicy(t *testing.T) {
	t.Parallel()
	defaultPolicy, err := os.ReadFile("../../policy/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var full struct {
		Policy string `json:"policy"`
	}
	b, err := os.ReadFile(fullValues)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &full); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		policy []byte
		want   map[string]string // spelt out for the default policy
	}{
		{"default", []string{"--set", "ingress.enabled=true"}, defaultPolicy, map[string]string{
			"nginx.ingress.kubernetes.io/limit-rps":              "3",
			"nginx.ingress.kubernetes.io/limit-burst-multiplier": "2",
			"nginx.ingress.kubernetes.io/limit-connections":      "100",
		}},
		{"full", []string{"-f", fullValues}, []byte(full.Policy), nil},
	}
	for _, c := range cases {
		m, err := Validate(render(t, c.args...))
		if err != nil {
			t.Fatal(err)
		}
		want := wsZoneAnnotations(t, c.policy)
		if c.want != nil && fmt.Sprint(want) != fmt.Sprint(c.want) {
			t.Fatalf("%s: the policy gives %v, want %v", c.name, want, c.want)
		}
		var ws *networkingv1.Ingress
		for _, o := range m.Of("Ingress") {
			if strings.HasSuffix(o.Name, "-ws") {
				ws = o.Value.(*networkingv1.Ingress)
			}
		}
		if ws == nil {
			t.Fatalf("%s: no WebSocket Ingress", c.name)
		}
		for k, v := range want {
			if got := ws.Annotations[k]; got != v {
				t.Errorf("%s: %s = %q, want %q", c.name, k, got, v)
			}
		}
		if p := ws.Spec.Rules[0].HTTP.Paths[0].Path; p != "/ws" {
			t.Errorf("%s: the limited path is %q, want /ws", c.name, p)
		}
	}
}

// TestChartCopies: the chart's copies of the alert rules and of the
// default policy are the shipped files (helm reads files inside the
// chart only).
func TestChartCopies(t *testing.T) {
	t.Parallel()
	for copyPath, orig := range map[string]string{
		"stompgate/files/alerts.yml":          "../../metrics/alerts.yml",
		"stompgate/files/policy-default.yaml": "../../policy/default.yaml",
	} {
		a, err := os.ReadFile(copyPath)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: cp %s %s", copyPath, orig, orig, copyPath)
		}
	}
}

// TestChartRefuses: values that would break the server or the drain
// fail the render with a message naming the value.
func TestChartRefuses(t *testing.T) {
	t.Parallel()
	badPolicy := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(badPolicy, []byte("policy: |\n  zones:\n    - {name: ws, rate: 3r/h, routes: [{upstream: ws}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"grace shorter than the drain", []string{"--set", "terminationGracePeriodSeconds=30"}, "terminationGracePeriodSeconds 30 must exceed the drain"},
		{"a setting the chart renders", []string{"--set", "settings.addr=:1"}, "settings.addr: set it through its own value"},
		{"the collector as a setting", []string{"--set", "settings.otel-endpoint=http://c:4318"}, "settings.otel-endpoint: set it through its own value"},
		{"not a flag name", []string{"--set", "settings.Max_Sessions=1"}, "settings.Max_Sessions: want a flag name"},
		{"memory with a fraction", []string{"--set", "resources.limits.memory=1.5Gi"}, `resources.limits.memory "1.5Gi"`},
		{"memory share too high", []string{"--set", "memoryLimitPercent=100"}, "memoryLimitPercent 100: want 50 to 99"},
		{"replicas without Redis", []string{"--set", "replicaCount=3"}, "needs redis.url or redis.existingSecret"},
		{"policy rate unknown", []string{"--set", "ingress.enabled=true", "-f", badPolicy}, `rate "3r/h" is not`},
	}
	for _, c := range cases {
		out, err := helm(t, append([]string{"template", "rel", chartDir}, c.args...)...)
		if err == nil {
			t.Errorf("%s: rendered:\n%.300s", c.name, out)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestChartOtel: otel.endpoint renders -otel-endpoint, and the default
// values render no tracing at all.
func TestChartOtel(t *testing.T) {
	t.Parallel()
	for _, r := range renderings {
		m, err := Validate(render(t, r.args...))
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, e := range m.Of("Deployment")[0].Value.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		want := ""
		if r.name == "full" {
			want = "http://otel-collector.observability:4318"
		}
		if got := env["WSSERVER_OTEL_ENDPOINT"]; got != want {
			t.Errorf("%s: WSSERVER_OTEL_ENDPOINT = %q, want %q", r.name, got, want)
		}
	}
}
