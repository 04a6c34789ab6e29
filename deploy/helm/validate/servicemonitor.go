package main

// The Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1), reduced to the fields the chart
// may write, with the JSON names and types of prometheus-operator v0.95.2's pkg/apis/monitoring/v1.
// Decoded strictly like the rest, a field outside this subset is refused: a false alarm at worst,
// never a typo let through. Importing that module instead would pin k8s.io/api and its dependencies
// to other versions than Helm's, and the validator would no longer build from the packages that
// `go install helm` already compiled (7.6 s instead of 168 s on a fresh machine, 2 shared cores).

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var monitoringGV = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}

// The CRD's pattern for monitoringv1.Duration.
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

type ServiceMonitorSpec struct {
	JobLabel          string               `json:"jobLabel,omitempty"`
	TargetLabels      []string             `json:"targetLabels,omitempty"`
	PodTargetLabels   []string             `json:"podTargetLabels,omitempty"`
	Endpoints         []Endpoint           `json:"endpoints"`
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector NamespaceSelector    `json:"namespaceSelector,omitempty"`
}

type Endpoint struct {
	Port          string              `json:"port,omitempty"`
	TargetPort    *intstr.IntOrString `json:"targetPort,omitempty"`
	Path          string              `json:"path,omitempty"`
	Scheme        string              `json:"scheme,omitempty"`
	Interval      string              `json:"interval,omitempty"`
	ScrapeTimeout string              `json:"scrapeTimeout,omitempty"`
}

type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

func (s *ServiceMonitor) DeepCopyObject() runtime.Object {
	out := *s
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.TargetLabels = append([]string(nil), s.Spec.TargetLabels...)
	out.Spec.PodTargetLabels = append([]string(nil), s.Spec.PodTargetLabels...)
	out.Spec.Endpoints = append([]Endpoint(nil), s.Spec.Endpoints...)
	s.Spec.Selector.DeepCopyInto(&out.Spec.Selector)
	out.Spec.NamespaceSelector.MatchNames = append([]string(nil), s.Spec.NamespaceSelector.MatchNames...)
	return &out
}

func addMonitoring(s *runtime.Scheme) error {
	s.AddKnownTypes(monitoringGV, &ServiceMonitor{})
	metav1.AddToGroupVersion(s, monitoringGV)
	return nil
}
