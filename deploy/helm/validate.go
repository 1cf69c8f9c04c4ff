package chart

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Object is one decoded manifest.
type Object struct {
	Kind, Name string
	// Value is a pointer to the API type: *appsv1.Deployment,
	// *corev1.Service, *monitoringv1.ServiceMonitor, ...
	Value any
}

// Manifests are the objects of one rendering, by kind.
type Manifests struct {
	Objects []Object
}

// Of returns the objects of kind.
func (m Manifests) Of(kind string) []Object {
	var out []Object
	for _, o := range m.Objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// kinds are the types the chart renders, by apiVersion and kind. A kind
// not here is an error: the chart renders nothing it is not checked for.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return new(appsv1.Deployment) },
	"v1/Service":                              func() any { return new(corev1.Service) },
	"v1/ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                            func() any { return new(corev1.ConfigMap) },
	"policy/v1/PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1/Ingress":            func() any { return new(networkingv1.Ingress) },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return new(monitoringv1.ServiceMonitor) },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return new(monitoringv1.PrometheusRule) },
}

// docSep separates the documents of a YAML stream.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Validate decodes every document of stream strictly and checks each
// object and their references to each other. The error joins every
// problem found, each naming the document's kind and name.
func Validate(stream []byte) (Manifests, error) {
	var m Manifests
	var errs []error
	for i, doc := range docSep.Split(string(stream), -1) {
		if isEmpty(doc) {
			continue
		}
		o, err := Decode([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		m.Objects = append(m.Objects, o)
	}
	for _, o := range m.Objects {
		for _, e := range check(o, m) {
			errs = append(errs, fmt.Errorf("%s %s: %s", o.Kind, o.Name, e))
		}
	}
	if len(m.Objects) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no manifest rendered"))
	}
	return m, errors.Join(errs...)
}

// isEmpty reports whether doc holds only comments and blank lines.
func isEmpty(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// Decode decodes one manifest strictly into its API type.
func Decode(doc []byte) (Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return Object{}, err
	}
	newValue, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return Object{}, fmt.Errorf("apiVersion %q kind %q is not a kind the chart may render", tm.APIVersion, tm.Kind)
	}
	v := newValue()
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(doc), v); err != nil {
		return Object{}, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	meta := v.(metav1.Object)
	return Object{Kind: tm.Kind, Name: meta.GetName(), Value: v}, nil
}

// check returns what is wrong with o, alone and against the others.
func check(o Object, m Manifests) field.ErrorList {
	nameFn := apivalidation.NameIsDNSSubdomain
	if o.Kind == "Service" {
		nameFn = apivalidation.NameIsDNS1035Label
	}
	errs := apivalidation.ValidateObjectMetaAccessor(o.Value.(metav1.Object), false, nameFn, field.NewPath("metadata"))
	switch v := o.Value.(type) {
	case *appsv1.Deployment:
		errs = append(errs, checkDeployment(v)...)
	case *corev1.Service:
		errs = append(errs, checkService(v, m)...)
	case *corev1.ConfigMap:
		for k := range v.Data {
			errs = append(errs, strs(field.NewPath("data").Key(k), k, validation.IsConfigMapKey(k))...)
		}
	case *policyv1.PodDisruptionBudget:
		p := field.NewPath("spec")
		if (v.Spec.MinAvailable == nil) == (v.Spec.MaxUnavailable == nil) {
			errs = append(errs, field.Invalid(p, "", "exactly one of minAvailable and maxUnavailable"))
		}
		errs = append(errs, selectsPods(p.Child("selector"), v.Spec.Selector, m)...)
	case *autoscalingv2.HorizontalPodAutoscaler:
		errs = append(errs, checkHPA(v, m)...)
	case *networkingv1.Ingress:
		errs = append(errs, checkIngress(v, m)...)
	case *monitoringv1.ServiceMonitor:
		errs = append(errs, checkServiceMonitor(v, m)...)
	case *monitoringv1.PrometheusRule:
		errs = append(errs, checkPrometheusRule(v)...)
	}
	return errs
}

// strs turns the messages of a validation function into errors at p.
func strs(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

// checkDeployment holds the pod template to the API server's main rules.
func checkDeployment(d *appsv1.Deployment) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if d.Spec.Selector == nil {
		return append(errs, field.Required(p.Child("selector"), ""))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(d.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), d.Spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, metav1validation.ValidateLabels(d.Spec.Template.Labels, p.Child("template", "metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(d.Spec.Template.Annotations, p.Child("template", "metadata", "annotations"))...)
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(p.Child("replicas"), *d.Spec.Replicas, "must not be negative"))
	}
	return append(errs, checkPodSpec(&d.Spec.Template.Spec, p.Child("template", "spec"))...)
}

// checkPodSpec checks containers, their ports, env, probes and mounts.
func checkPodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	if s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *s.TerminationGracePeriodSeconds, "must not be negative"))
	}
	volumes := map[string]bool{}
	for i, v := range s.Volumes {
		vp := p.Child("volumes").Index(i)
		errs = append(errs, strs(vp.Child("name"), v.Name, validation.IsDNS1123Label(v.Name))...)
		if volumes[v.Name] {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		volumes[v.Name] = true
	}
	for i, c := range s.Containers {
		cp := p.Child("containers").Index(i)
		errs = append(errs, strs(cp.Child("name"), c.Name, validation.IsDNS1123Label(c.Name))...)
		if strings.TrimSpace(c.Image) == "" || strings.ContainsAny(c.Image, " \t") {
			errs = append(errs, field.Invalid(cp.Child("image"), c.Image, "want an image reference"))
		}
		ports := map[string]bool{}
		for j, port := range c.Ports {
			pp := cp.Child("ports").Index(j)
			errs = append(errs, strs(pp.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
			if port.Name != "" {
				errs = append(errs, strs(pp.Child("name"), port.Name, validation.IsValidPortName(port.Name))...)
				if ports[port.Name] {
					errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
				}
				ports[port.Name] = true
			}
		}
		env := map[string]bool{}
		for j, e := range c.Env {
			ep := cp.Child("env").Index(j)
			errs = append(errs, strs(ep.Child("name"), e.Name, validation.IsEnvVarName(e.Name))...)
			if env[e.Name] {
				errs = append(errs, field.Duplicate(ep.Child("name"), e.Name))
			}
			env[e.Name] = true
			if e.ValueFrom != nil {
				if e.Value != "" {
					errs = append(errs, field.Invalid(ep.Child("valueFrom"), "", "may not be given with a value"))
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					errs = append(errs, strs(ep.Child("valueFrom", "secretKeyRef", "name"), r.Name, validation.IsDNS1123Subdomain(r.Name))...)
					errs = append(errs, strs(ep.Child("valueFrom", "secretKeyRef", "key"), r.Key, validation.IsConfigMapKey(r.Key))...)
				}
			}
		}
		for name, probe := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
			if probe != nil {
				errs = append(errs, checkHandler(probe.ProbeHandler.HTTPGet, probe.Exec != nil || probe.TCPSocket != nil || probe.GRPC != nil, ports, cp.Child(name))...)
			}
		}
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			h := c.Lifecycle.PreStop
			n := 0
			for _, set := range []bool{h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.Sleep != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				errs = append(errs, field.Invalid(cp.Child("lifecycle", "preStop"), n, "want exactly one handler"))
			}
			if h.Sleep != nil && h.Sleep.Seconds < 0 {
				errs = append(errs, field.Invalid(cp.Child("lifecycle", "preStop", "sleep", "seconds"), h.Sleep.Seconds, "must not be negative"))
			}
		}
		for j, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), vm.Name))
			}
		}
		for name, req := range c.Resources.Requests {
			if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(cp.Child("resources", "requests").Key(string(name)), req.String(), "must be less than or equal to the limit "+lim.String()))
			}
		}
	}
	return errs
}

// checkHandler checks a probe: one handler, an HTTP path and a port the
// container names or a valid number.
func checkHandler(h *corev1.HTTPGetAction, other bool, ports map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (h != nil) == other {
		return append(errs, field.Invalid(p, "", "want exactly one handler"))
	}
	if h == nil {
		return nil
	}
	if !strings.HasPrefix(h.Path, "/") {
		errs = append(errs, field.Invalid(p.Child("httpGet", "path"), h.Path, "must start with /"))
	}
	return append(errs, checkPortRef(h.Port, ports, p.Child("httpGet", "port"))...)
}

// checkPortRef checks a port given by number or by a name in ports.
func checkPortRef(port intstr.IntOrString, ports map[string]bool, p *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return strs(p, port.IntVal, validation.IsValidPortNum(int(port.IntVal)))
	}
	if !ports[port.StrVal] {
		return field.ErrorList{field.NotFound(p, port.StrVal)}
	}
	return nil
}

// podPorts are the named container ports of the Deployments' pods.
func podPorts(m Manifests) map[string]bool {
	ports := map[string]bool{}
	for _, o := range m.Of("Deployment") {
		for _, c := range o.Value.(*appsv1.Deployment).Spec.Template.Spec.Containers {
			for _, port := range c.Ports {
				ports[port.Name] = true
			}
		}
	}
	return ports
}

// selectsPods checks that sel selects the pods of a rendered Deployment.
func selectsPods(p *field.Path, sel *metav1.LabelSelector, m Manifests) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(p, sel, err.Error()))
	}
	for _, o := range m.Of("Deployment") {
		if !s.Empty() && s.Matches(labels.Set(o.Value.(*appsv1.Deployment).Spec.Template.Labels)) {
			return errs
		}
	}
	return append(errs, field.Invalid(p, sel.MatchLabels, "selects no pod the chart renders"))
}

// checkService checks ports and that the selector and target ports
// reach the Deployment's pods.
func checkService(s *corev1.Service, m Manifests) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	switch s.Spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Spec.Type, []string{"ClusterIP", "NodePort", "LoadBalancer"}))
	}
	if len(s.Spec.Ports) == 0 {
		errs = append(errs, field.Required(p.Child("ports"), ""))
	}
	ports := podPorts(m)
	for i, port := range s.Spec.Ports {
		pp := p.Child("ports").Index(i)
		errs = append(errs, strs(pp.Child("name"), port.Name, validation.IsDNS1123Label(port.Name))...)
		errs = append(errs, strs(pp.Child("port"), port.Port, validation.IsValidPortNum(int(port.Port)))...)
		errs = append(errs, checkPortRef(port.TargetPort, ports, pp.Child("targetPort"))...)
	}
	return append(errs, selectsPods(p.Child("selector"), &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, m)...)
}

// service returns the rendered Service named name, or nil.
func service(m Manifests, name string) *corev1.Service {
	for _, o := range m.Of("Service") {
		if o.Name == name {
			return o.Value.(*corev1.Service)
		}
	}
	return nil
}

// hasPort reports whether s has a port named name.
func hasPort(s *corev1.Service, name string) bool {
	for _, port := range s.Spec.Ports {
		if port.Name == name {
			return true
		}
	}
	return false
}

// checkIngress checks paths and that each backend is a rendered Service port.
func checkIngress(in *networkingv1.Ingress, m Manifests) field.ErrorList {
	p := field.NewPath("spec", "rules")
	var errs field.ErrorList
	for i, r := range in.Spec.Rules {
		rp := p.Index(i)
		errs = append(errs, strs(rp.Child("host"), r.Host, validation.IsDNS1123Subdomain(r.Host))...)
		if r.HTTP == nil || len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(rp.Child("http", "paths"), ""))
			continue
		}
		for j, path := range r.HTTP.Paths {
			pp := rp.Child("http", "paths").Index(j)
			if !strings.HasPrefix(path.Path, "/") {
				errs = append(errs, field.Invalid(pp.Child("path"), path.Path, "must start with /"))
			}
			if path.PathType == nil {
				errs = append(errs, field.Required(pp.Child("pathType"), ""))
			} else if t := *path.PathType; t != networkingv1.PathTypeExact && t != networkingv1.PathTypePrefix && t != networkingv1.PathTypeImplementationSpecific {
				errs = append(errs, field.NotSupported(pp.Child("pathType"), t, []string{"Exact", "Prefix", "ImplementationSpecific"}))
			}
			b := path.Backend.Service
			if b == nil {
				errs = append(errs, field.Required(pp.Child("backend", "service"), ""))
				continue
			}
			s := service(m, b.Name)
			switch {
			case s == nil:
				errs = append(errs, field.NotFound(pp.Child("backend", "service", "name"), b.Name))
			case b.Port.Name != "" && !hasPort(s, b.Port.Name):
				errs = append(errs, field.NotFound(pp.Child("backend", "service", "port", "name"), b.Port.Name))
			case b.Port.Name == "" && b.Port.Number == 0:
				errs = append(errs, field.Required(pp.Child("backend", "service", "port"), ""))
			}
		}
	}
	for i, t := range in.Spec.TLS {
		if t.SecretName != "" {
			errs = append(errs, strs(field.NewPath("spec", "tls").Index(i).Child("secretName"), t.SecretName, validation.IsDNS1123Subdomain(t.SecretName))...)
		}
	}
	return errs
}

// checkHPA checks the target and bounds.
func checkHPA(h *autoscalingv2.HorizontalPodAutoscaler, m Manifests) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	ref := h.Spec.ScaleTargetRef
	found := false
	for _, o := range m.Of("Deployment") {
		found = found || (ref.Kind == "Deployment" && ref.APIVersion == "apps/v1" && ref.Name == o.Name)
	}
	if !found {
		errs = append(errs, field.NotFound(p.Child("scaleTargetRef"), ref.Kind+"/"+ref.Name))
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), h.Spec.MinReplicas, "want 1 to maxReplicas"))
	}
	if len(h.Spec.Metrics) == 0 {
		errs = append(errs, field.Required(p.Child("metrics"), ""))
	}
	for i, mt := range h.Spec.Metrics {
		if mt.Type != autoscalingv2.PodsMetricSourceType || mt.Pods == nil || mt.Pods.Metric.Name == "" ||
			mt.Pods.Target.Type != autoscalingv2.AverageValueMetricType || mt.Pods.Target.AverageValue == nil || mt.Pods.Target.AverageValue.Sign() <= 0 {
			errs = append(errs, field.Invalid(p.Child("metrics").Index(i), mt.Type, "want a Pods metric with a positive AverageValue target"))
		}
	}
	return errs
}

// checkServiceMonitor checks that it selects a rendered Service by a port it has.
func checkServiceMonitor(sm *monitoringv1.ServiceMonitor, m Manifests) field.ErrorList {
	p := field.NewPath("spec")
	errs := metav1validation.ValidateLabelSelector(&sm.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		return append(errs, field.Invalid(p.Child("selector"), sm.Spec.Selector, err.Error()))
	}
	var selected []*corev1.Service
	for _, o := range m.Of("Service") {
		s := o.Value.(*corev1.Service)
		if !sel.Empty() && sel.Matches(labels.Set(s.Labels)) {
			selected = append(selected, s)
		}
	}
	if len(selected) == 0 {
		errs = append(errs, field.Invalid(p.Child("selector"), sm.Spec.Selector.MatchLabels, "selects no Service the chart renders"))
	}
	if len(sm.Spec.Endpoints) == 0 {
		errs = append(errs, field.Required(p.Child("endpoints"), ""))
	}
	for i, e := range sm.Spec.Endpoints {
		for _, s := range selected {
			if e.Port == "" || !hasPort(s, e.Port) {
				errs = append(errs, field.NotFound(p.Child("endpoints").Index(i).Child("port"), e.Port))
			}
		}
		if e.Interval != "" && !promDuration.MatchString(string(e.Interval)) {
			errs = append(errs, field.Invalid(p.Child("endpoints").Index(i).Child("interval"), e.Interval, "not a Prometheus duration"))
		}
	}
	return errs
}

// promDuration is a Prometheus duration, as the CRDs' pattern has it.
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

// checkPrometheusRule checks that every rule alerts or records, with an
// expression and a valid for.
func checkPrometheusRule(r *monitoringv1.PrometheusRule) field.ErrorList {
	p := field.NewPath("spec", "groups")
	var errs field.ErrorList
	if len(r.Spec.Groups) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	for i, g := range r.Spec.Groups {
		gp := p.Index(i)
		if g.Name == "" || len(g.Rules) == 0 {
			errs = append(errs, field.Required(gp, "a name and rules"))
		}
		for j, rule := range g.Rules {
			rp := gp.Child("rules").Index(j)
			if (rule.Alert == "") == (rule.Record == "") {
				errs = append(errs, field.Invalid(rp, rule.Alert+rule.Record, "want exactly one of alert and record"))
			}
			if strings.TrimSpace(rule.Expr.String()) == "" {
				errs = append(errs, field.Required(rp.Child("expr"), ""))
			}
			if rule.For != nil && !promDuration.MatchString(string(*rule.For)) {
				errs = append(errs, field.Invalid(rp.Child("for"), *rule.For, "not a Prometheus duration"))
			}
		}
	}
	return errs
}
