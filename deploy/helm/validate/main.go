// Command validate checks rendered Kubernetes manifests (`helm template` output on stdin) offline,
// against the API types the cluster would decode them into, instead of a schema copied from
// somewhere: every document is decoded strictly into its k8s.io/api type (ServiceMonitor: servicemonitor.go),
// so an unknown or misspelt field, a wrong type, a duplicate field or an apiVersion/kind the API
// does not serve is an error. It then checks what the API server or the controllers would reject or
// silently ignore across objects: names and labels, a Deployment whose selector misses its own pods,
// port names, probes and Service target ports that name no container port, selectors of Services,
// PodDisruptionBudgets, NetworkPolicies and ServiceMonitors that select nothing, HPAs and Ingresses
// that point at nothing, duplicate env names.
//
// Output: one JSON line {"objects":[{"apiVersion","kind","name","object"}...]}, each object as it was
// decoded, and exit 0; or the errors, one a line, and exit 1. `validate -yaml2json` only converts
// one YAML document on stdin to JSON (Chart.yaml and values files, for the test).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

type objectRef struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Name       string         `json:"name"`
	Object     runtime.Object `json:"object"`
}

type checker struct {
	errs []string
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, autoscalingv2.AddToScheme, corev1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, addMonitoring,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-yaml2json" {
		in, err := io.ReadAll(os.Stdin)
		if err == nil {
			var out []byte
			if out, err = sigsyaml.YAMLToJSON(in); err == nil {
				fmt.Println(string(out))
				return
			}
		}
		fmt.Println(err)
		os.Exit(1)
	}
	objs, refs, err := decodeAll(os.Stdin)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	c := &checker{}
	c.check(objs)
	if len(c.errs) > 0 {
		for _, e := range c.errs {
			fmt.Println(e)
		}
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]any{"objects": refs})
	fmt.Println(string(out))
}

// decodeAll splits the YAML stream into documents and decodes each strictly; every failing document
// is reported, not only the first.
func decodeAll(r io.Reader) ([]runtime.Object, []objectRef, error) {
	scheme := newScheme()
	strict := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []runtime.Object
	var refs []objectRef
	var errs []string
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", i, err)
		}
		if isEmpty(doc) {
			continue
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Sprintf("document %d (%s): %v", i, firstLines(doc), err))
			continue
		}
		acc, err := metaAccessor(obj)
		if err != nil {
			errs = append(errs, fmt.Sprintf("document %d: %v", i, err))
			continue
		}
		objs = append(objs, obj)
		refs = append(refs, objectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: acc.GetName(), Object: obj})
	}
	if len(errs) > 0 {
		return nil, nil, errors.New(strings.Join(errs, "\n"))
	}
	if len(objs) == 0 {
		return nil, nil, errors.New("no Kubernetes object in the input")
	}
	return objs, refs, nil
}

func isEmpty(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			return false
		}
	}
	return true
}

func firstLines(doc []byte) string {
	var keep []string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "kind:") || strings.HasPrefix(line, "  name:") || strings.HasPrefix(line, "# Source:") {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	return strings.Join(keep, ", ")
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// pods of the render: each Deployment's template, with the container ports by name.
type podTemplate struct {
	owner  string
	labels labels.Set
	ports  map[string]int32
}

func (c *checker) check(objs []runtime.Object) {
	var pods []podTemplate
	deployments := map[string]bool{}
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		m, _ := metaAccessor(o)
		kind := fmt.Sprintf("%T", o)
		c.checkMeta(kind, m)
		switch d := o.(type) {
		case *appsv1.Deployment:
			deployments[d.Name] = true
			pods = append(pods, c.checkDeployment(d))
		case *corev1.Service:
			services[d.Name] = d
		}
	}
	for _, o := range objs {
		switch d := o.(type) {
		case *corev1.Service:
			c.checkService(d, pods)
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := d.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !deployments[ref.Name] {
				c.errorf("HorizontalPodAutoscaler %s: scaleTargetRef %s/%s %s is not a Deployment of this render", d.Name, ref.APIVersion, ref.Kind, ref.Name)
			}
			if d.Spec.MinReplicas != nil && *d.Spec.MinReplicas > d.Spec.MaxReplicas {
				c.errorf("HorizontalPodAutoscaler %s: minReplicas %d > maxReplicas %d", d.Name, *d.Spec.MinReplicas, d.Spec.MaxReplicas)
			}
			if len(d.Spec.Metrics) == 0 {
				c.errorf("HorizontalPodAutoscaler %s: no metrics", d.Name)
			}
		case *policyv1.PodDisruptionBudget:
			c.selects("PodDisruptionBudget "+d.Name, d.Spec.Selector, pods)
			if (d.Spec.MinAvailable == nil) == (d.Spec.MaxUnavailable == nil) {
				c.errorf("PodDisruptionBudget %s: exactly one of minAvailable and maxUnavailable", d.Name)
			}
		case *networkingv1.NetworkPolicy:
			c.selects("NetworkPolicy "+d.Name, &d.Spec.PodSelector, pods)
			for _, rule := range d.Spec.Ingress {
				for _, peer := range rule.From {
					if peer.PodSelector != nil && peer.NamespaceSelector == nil {
						c.selects("NetworkPolicy "+d.Name+" ingress peer", peer.PodSelector, pods)
					}
				}
			}
			for _, rule := range d.Spec.Egress {
				for _, peer := range rule.To {
					if peer.PodSelector != nil && peer.NamespaceSelector == nil {
						c.selects("NetworkPolicy "+d.Name+" egress peer", peer.PodSelector, pods)
					}
				}
			}
		case *networkingv1.Ingress:
			for _, rule := range d.Spec.Rules {
				if rule.HTTP == nil {
					continue
				}
				for _, p := range rule.HTTP.Paths {
					svc := p.Backend.Service
					if svc == nil {
						c.errorf("Ingress %s: path %s has no Service backend", d.Name, p.Path)
						continue
					}
					s, ok := services[svc.Name]
					if !ok {
						c.errorf("Ingress %s: path %s goes to Service %s, not in this render", d.Name, p.Path, svc.Name)
						continue
					}
					if !servicePort(s, svc.Port) {
						c.errorf("Ingress %s: path %s names port %+v, which Service %s does not have", d.Name, p.Path, svc.Port, svc.Name)
					}
				}
			}
		case *ServiceMonitor:
			sel, err := metav1.LabelSelectorAsSelector(&d.Spec.Selector)
			if err != nil {
				c.errorf("ServiceMonitor %s: %v", d.Name, err)
				continue
			}
			matched := false
			for _, s := range services {
				if sel.Matches(labels.Set(s.Labels)) {
					matched = true
					for _, ep := range d.Spec.Endpoints {
						if ep.Port != "" && !servicePort(s, networkingv1.ServiceBackendPort{Name: ep.Port}) {
							c.errorf("ServiceMonitor %s: endpoint port %q is not a port of Service %s", d.Name, ep.Port, s.Name)
						}
					}
				}
			}
			if !matched {
				c.errorf("ServiceMonitor %s: its selector matches no Service of this render", d.Name)
			}
			for _, ep := range d.Spec.Endpoints {
				for _, dur := range []string{ep.Interval, ep.ScrapeTimeout} {
					if !promDuration.MatchString(dur) {
						c.errorf("ServiceMonitor %s: %q is not a Prometheus duration", d.Name, dur)
					}
				}
			}
		}
	}
}

func servicePort(s *corev1.Service, p networkingv1.ServiceBackendPort) bool {
	for _, sp := range s.Spec.Ports {
		if (p.Name != "" && sp.Name == p.Name) || (p.Name == "" && sp.Port == p.Number) {
			return true
		}
	}
	return false
}

func (c *checker) checkMeta(kind string, m metav1.Object) {
	for _, e := range validation.IsDNS1123Subdomain(m.GetName()) {
		c.errorf("%s %q: name: %s", kind, m.GetName(), e)
	}
	if kind == "*v1.Service" {
		for _, e := range validation.IsDNS1035Label(m.GetName()) {
			c.errorf("Service %q: name: %s", m.GetName(), e)
		}
	}
	c.checkLabels(kind+" "+m.GetName(), m.GetLabels())
}

func (c *checker) checkLabels(where string, l map[string]string) {
	for k, v := range l {
		for _, e := range validation.IsQualifiedName(k) {
			c.errorf("%s: label key %q: %s", where, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			c.errorf("%s: label %s value %q: %s", where, k, v, e)
		}
	}
}

func (c *checker) checkDeployment(d *appsv1.Deployment) podTemplate {
	where := "Deployment " + d.Name
	pt := podTemplate{owner: d.Name, labels: labels.Set(d.Spec.Template.Labels), ports: map[string]int32{}}
	c.checkLabels(where+" pod template", d.Spec.Template.Labels)
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
		c.errorf("%s: empty selector", where)
	} else if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil {
		c.errorf("%s: selector: %v", where, err)
	} else if !sel.Matches(pt.labels) {
		c.errorf("%s: selector %s does not match its pod template's labels", where, sel)
	}
	spec := d.Spec.Template.Spec
	if len(spec.Containers) == 0 {
		c.errorf("%s: no containers", where)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, ctr := range spec.Containers {
		cw := where + " container " + ctr.Name
		for _, e := range validation.IsDNS1123Label(ctr.Name) {
			c.errorf("%s: name: %s", cw, e)
		}
		if ctr.Image == "" {
			c.errorf("%s: no image", cw)
		}
		for _, p := range ctr.Ports {
			if p.Name != "" {
				for _, e := range validation.IsValidPortName(p.Name) {
					c.errorf("%s: port name %q: %s", cw, p.Name, e)
				}
				pt.ports[p.Name] = p.ContainerPort
			}
		}
		for _, probe := range []struct {
			name string
			p    *corev1.Probe
		}{{"startupProbe", ctr.StartupProbe}, {"livenessProbe", ctr.LivenessProbe}, {"readinessProbe", ctr.ReadinessProbe}} {
			if probe.p == nil || probe.p.HTTPGet == nil {
				continue
			}
			if port := probe.p.HTTPGet.Port; port.StrVal != "" {
				if _, ok := pt.ports[port.StrVal]; !ok {
					c.errorf("%s: %s port %q is not a port of the container", cw, probe.name, port.StrVal)
				}
			}
		}
		seen := map[string]bool{}
		for _, e := range ctr.Env {
			if seen[e.Name] {
				c.errorf("%s: env %s is set twice", cw, e.Name)
			}
			seen[e.Name] = true
		}
		for _, vm := range ctr.VolumeMounts {
			if !volumes[vm.Name] {
				c.errorf("%s: volumeMount %s names no volume of the pod", cw, vm.Name)
			}
		}
	}
	return pt
}

func (c *checker) checkService(s *corev1.Service, pods []podTemplate) {
	where := "Service " + s.Name
	if len(s.Spec.Selector) == 0 {
		c.errorf("%s: no selector", where)
		return
	}
	sel := labels.SelectorFromSet(s.Spec.Selector)
	var matched []podTemplate
	for _, p := range pods {
		if sel.Matches(p.labels) {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		c.errorf("%s: its selector matches no pod template of this render", where)
		return
	}
	for _, sp := range s.Spec.Ports {
		if sp.Name != "" {
			for _, e := range validation.IsValidPortName(sp.Name) {
				c.errorf("%s: port name %q: %s", where, sp.Name, e)
			}
		}
		if name := sp.TargetPort.StrVal; name != "" {
			for _, p := range matched {
				if _, ok := p.ports[name]; !ok {
					c.errorf("%s: targetPort %q is not a container port of Deployment %s", where, name, p.owner)
				}
			}
		}
	}
}

func (c *checker) selects(where string, ls *metav1.LabelSelector, pods []podTemplate) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		c.errorf("%s: %v", where, err)
		return
	}
	if sel.Empty() {
		c.errorf("%s: empty selector (it would select every pod of the namespace)", where)
		return
	}
	for _, p := range pods {
		if sel.Matches(p.labels) {
			return
		}
	}
	c.errorf("%s: selector %s matches no pod template of this render", where, sel)
}
