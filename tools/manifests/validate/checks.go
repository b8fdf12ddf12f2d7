package main

import (
	"fmt"
	"sort"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// index finds the rendered objects by kind, namespace and name.
type index struct {
	objects []*object
	byKey   map[string]*object
}

func key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func newIndex(objects []*object) *index {
	ix := &index{objects: objects, byKey: map[string]*object{}}
	for _, o := range objects {
		ix.byKey[key(o.gvk.Kind, o.namespace, o.name)] = o
	}
	return ix
}

func (ix *index) get(kind, namespace, name string) *object {
	return ix.byKey[key(kind, namespace, name)]
}

// keysOf lists the keys of a ConfigMap or Secret; ok is false when there is no such object.
func (ix *index) keysOf(kind, namespace, name string) (map[string]string, bool) {
	o := ix.get(kind, namespace, name)
	if o == nil {
		return nil, false
	}
	values := map[string]string{}
	switch v := o.value.(type) {
	case *corev1.ConfigMap:
		for k, value := range v.Data {
			values[k] = value
		}
		for k, value := range v.BinaryData {
			values[k] = string(value)
		}
	case *corev1.Secret:
		for k, value := range v.Data {
			values[k] = string(value)
		}
		for k, value := range v.StringData {
			values[k] = value
		}
	}
	return values, true
}

// podTemplates are the pod templates of the workloads, with the object that holds each.
func (ix *index) podTemplates() map[*object]*corev1.PodTemplateSpec {
	out := map[*object]*corev1.PodTemplateSpec{}
	for _, o := range ix.objects {
		switch v := o.value.(type) {
		case *appsv1.Deployment:
			out[o] = &v.Spec.Template
		case *batchv1.Job:
			out[o] = &v.Spec.Template
		}
	}
	return out
}

type problems []error

func (p *problems) add(o *object, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
}

// checkObjects runs the API server's name rules and every cross-object reference check.
func checkObjects(ix *index) []error {
	var p problems
	for _, o := range ix.objects {
		checkMeta(&p, o)
		switch v := o.value.(type) {
		case *appsv1.Deployment:
			checkSelector(&p, o, v.Spec.Selector, v.Spec.Template.Labels, "spec.selector")
			checkPod(&p, ix, o, &v.Spec.Template)
		case *batchv1.Job:
			if rp := v.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
				p.add(o, "spec.template.spec.restartPolicy must be Never or OnFailure, not %q", rp)
			}
			checkPod(&p, ix, o, &v.Spec.Template)
		case *corev1.Service:
			checkService(&p, ix, o, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			checkHPA(&p, ix, o, v)
		case *policyv1.PodDisruptionBudget:
			if v.Spec.MinAvailable != nil && v.Spec.MaxUnavailable != nil {
				p.add(o, "minAvailable and maxUnavailable are exclusive")
			}
			if len(matchingPods(&p, ix, o, v.Spec.Selector)) == 0 {
				p.add(o, "spec.selector selects no pod template of the manifests")
			}
		case *kedav1alpha1.TriggerAuthentication:
			checkTriggerAuthentication(&p, ix, o, &v.Spec)
		}
	}
	return p
}

func checkMeta(p *problems, o *object) {
	accessor, err := meta.Accessor(o.value)
	if err != nil {
		p.add(o, "%v", err)
		return
	}
	if o.name == "" {
		p.add(o, "metadata.name is empty")
	}
	rule := validation.IsDNS1123Subdomain
	if o.gvk.Kind == "Service" {
		rule = validation.IsDNS1035Label
	}
	for _, msg := range rule(o.name) {
		p.add(o, "metadata.name %q: %s", o.name, msg)
	}
	if o.namespace != "" {
		for _, msg := range validation.IsDNS1123Label(o.namespace) {
			p.add(o, "metadata.namespace %q: %s", o.namespace, msg)
		}
	}
	checkLabels(p, o, "metadata.labels", accessor.GetLabels())
	checkAnnotations(p, o, "metadata.annotations", accessor.GetAnnotations())
}

func checkLabels(p *problems, o *object, where string, set map[string]string) {
	for k, v := range set {
		for _, msg := range validation.IsQualifiedName(k) {
			p.add(o, "%s key %q: %s", where, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			p.add(o, "%s %q value %q: %s", where, k, v, msg)
		}
	}
}

func checkAnnotations(p *problems, o *object, where string, set map[string]string) {
	for k := range set {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			p.add(o, "%s key %q: %s", where, k, msg)
		}
	}
}

func checkSelector(p *problems, o *object, selector *metav1.LabelSelector, podLabels map[string]string, where string) {
	if selector == nil {
		p.add(o, "%s is missing", where)
		return
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		p.add(o, "%s: %v", where, err)
		return
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		p.add(o, "%s does not select the labels of its own pod template", where)
	}
}

// matchingPods are the pod templates in o's namespace that the selector selects.
func matchingPods(p *problems, ix *index, o *object, selector *metav1.LabelSelector) []*corev1.PodTemplateSpec {
	if selector == nil {
		p.add(o, "spec.selector is missing")
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		p.add(o, "spec.selector: %v", err)
		return nil
	}
	var out []*corev1.PodTemplateSpec
	for owner, tpl := range ix.podTemplates() {
		if owner.namespace == o.namespace && !s.Empty() && s.Matches(labels.Set(tpl.Labels)) {
			out = append(out, tpl)
		}
	}
	return out
}

func checkPod(p *problems, ix *index, o *object, tpl *corev1.PodTemplateSpec) {
	checkLabels(p, o, "spec.template.metadata.labels", tpl.Labels)
	checkAnnotations(p, o, "spec.template.metadata.annotations", tpl.Annotations)
	pod := &tpl.Spec
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if volumes[v.Name] {
			p.add(o, "volume %q is defined twice", v.Name)
		}
		volumes[v.Name] = true
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			p.add(o, "volume name %q: %s", v.Name, msg)
		}
		if s := v.Secret; s != nil {
			checkItems(p, ix, o, "Secret", s.SecretName, s.Optional, s.Items, "volume "+v.Name)
		}
		if c := v.ConfigMap; c != nil {
			checkItems(p, ix, o, "ConfigMap", c.Name, c.Optional, c.Items, "volume "+v.Name)
		}
	}
	names := map[string]bool{}
	all := append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
	if len(pod.Containers) == 0 {
		p.add(o, "the pod has no containers")
	}
	for i := range all {
		c := &all[i]
		if names[c.Name] {
			p.add(o, "container name %q is used twice", c.Name)
		}
		names[c.Name] = true
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			p.add(o, "container name %q: %s", c.Name, msg)
		}
		if c.Image == "" {
			p.add(o, "container %s has no image", c.Name)
		}
		checkContainer(p, ix, o, c, volumes)
	}
}

func checkItems(p *problems, ix *index, o *object, kind, name string, optional *bool, items []corev1.KeyToPath, where string) {
	keys, found := ix.keysOf(kind, o.namespace, name)
	if !found {
		if optional == nil || !*optional {
			p.add(o, "%s: %s %q is not among the manifests", where, kind, name)
		}
		return
	}
	for _, item := range items {
		if _, ok := keys[item.Key]; !ok {
			p.add(o, "%s: %s %q has no key %q", where, kind, name, item.Key)
		}
	}
}

func checkContainer(p *problems, ix *index, o *object, c *corev1.Container, volumes map[string]bool) {
	ports := map[string]bool{}
	for _, port := range c.Ports {
		if port.Name == "" {
			continue
		}
		if ports[port.Name] {
			p.add(o, "container %s: port name %q is used twice", c.Name, port.Name)
		}
		ports[port.Name] = true
		for _, msg := range validation.IsValidPortName(port.Name) {
			p.add(o, "container %s: port name %q: %s", c.Name, port.Name, msg)
		}
	}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			p.add(o, "container %s: env %q: %s", c.Name, e.Name, msg)
		}
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			checkKeyRef(p, ix, o, c, e.Name, "Secret", ref.Name, ref.Key, ref.Optional)
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			checkKeyRef(p, ix, o, c, e.Name, "ConfigMap", ref.Name, ref.Key, ref.Optional)
		}
	}
	for _, from := range c.EnvFrom {
		if ref := from.ConfigMapRef; ref != nil {
			checkRef(p, ix, o, c, "envFrom", "ConfigMap", ref.Name, ref.Optional)
		}
		if ref := from.SecretRef; ref != nil {
			checkRef(p, ix, o, c, "envFrom", "Secret", ref.Name, ref.Optional)
		}
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			p.add(o, "container %s: volumeMount %q names no volume of the pod", c.Name, m.Name)
		}
	}
	for name, probe := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		if probe == nil {
			continue
		}
		if h := probe.HTTPGet; h != nil {
			checkPortRef(p, o, c, name, h.Port, ports)
			if !strings.HasPrefix(h.Path, "/") {
				p.add(o, "container %s: %s path %q must start with /", c.Name, name, h.Path)
			}
		}
		if t := probe.TCPSocket; t != nil {
			checkPortRef(p, o, c, name, t.Port, ports)
		}
	}
}

func checkPortRef(p *problems, o *object, c *corev1.Container, where string, port intstr.IntOrString, named map[string]bool) {
	if port.Type == intstr.String && !named[port.StrVal] {
		p.add(o, "container %s: %s names port %q, which the container does not declare", c.Name, where, port.StrVal)
	}
	if port.Type == intstr.Int && (port.IntVal < 1 || port.IntVal > 65535) {
		p.add(o, "container %s: %s port %d is out of range", c.Name, where, port.IntVal)
	}
}

func checkKeyRef(p *problems, ix *index, o *object, c *corev1.Container, env, kind, name, k string, optional *bool) {
	keys, found := ix.keysOf(kind, o.namespace, name)
	isOptional := optional != nil && *optional
	switch {
	case !found && !isOptional:
		p.add(o, "container %s: env %s: %s %q is not among the manifests", c.Name, env, kind, name)
	case found:
		if _, ok := keys[k]; !ok && !isOptional {
			p.add(o, "container %s: env %s: %s %q has no key %q (it has: %s)", c.Name, env, kind, name, k, sortedKeys(keys))
		}
	}
}

func checkRef(p *problems, ix *index, o *object, c *corev1.Container, where, kind, name string, optional *bool) {
	if _, found := ix.keysOf(kind, o.namespace, name); !found && (optional == nil || !*optional) {
		p.add(o, "container %s: %s: %s %q is not among the manifests", c.Name, where, kind, name)
	}
}

func sortedKeys(m map[string]string) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func checkService(p *problems, ix *index, o *object, svc *corev1.Service) {
	if len(svc.Spec.Selector) == 0 {
		p.add(o, "spec.selector is empty")
		return
	}
	pods := matchingPods(p, ix, o, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if len(pods) == 0 {
		p.add(o, "spec.selector selects no pod template of the manifests")
	}
	for _, port := range svc.Spec.Ports {
		if port.TargetPort.Type != intstr.String {
			continue
		}
		for _, tpl := range pods {
			if !declaresPort(tpl, port.TargetPort.StrVal) {
				p.add(o, "port %s: targetPort %q is not a named port of the selected pods", port.Name, port.TargetPort.StrVal)
			}
		}
	}
}

func declaresPort(tpl *corev1.PodTemplateSpec, name string) bool {
	for _, c := range tpl.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == name {
				return true
			}
		}
	}
	return false
}

// deploymentTarget finds the Deployment a scaleTargetRef names (kind Deployment, apps/v1 only).
func deploymentTarget(p *problems, ix *index, o *object, apiVersion, kind, name string) *appsv1.Deployment {
	if kind == "" {
		kind = "Deployment"
	}
	if apiVersion == "" {
		apiVersion = "apps/v1"
	}
	if kind != "Deployment" || apiVersion != "apps/v1" {
		p.add(o, "scaleTargetRef %s %s %s: only apps/v1 Deployments are checked", apiVersion, kind, name)
		return nil
	}
	target := ix.get("Deployment", o.namespace, name)
	if target == nil {
		p.add(o, "scaleTargetRef names Deployment %q, which is not among the manifests", name)
		return nil
	}
	return target.value.(*appsv1.Deployment)
}

func checkHPA(p *problems, ix *index, o *object, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	ref := hpa.Spec.ScaleTargetRef
	target := deploymentTarget(p, ix, o, ref.APIVersion, ref.Kind, ref.Name)
	if hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
		p.add(o, "minReplicas %d is above maxReplicas %d", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if target == nil {
		return
	}
	for _, metric := range hpa.Spec.Metrics {
		if metric.Type == autoscalingv2.ResourceMetricSourceType && metric.Resource != nil &&
			metric.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			requireRequests(p, o, &target.Spec.Template.Spec, metric.Resource.Name, "")
		}
	}
	if target.Spec.Replicas != nil {
		p.add(o, "Deployment %s sets spec.replicas, which every apply would reset under the autoscaler", ref.Name)
	}
}

// requireRequests: a Utilization target needs the resource requested by the containers it averages.
func requireRequests(p *problems, o *object, pod *corev1.PodSpec, resource corev1.ResourceName, container string) {
	for _, c := range pod.Containers {
		if container != "" && c.Name != container {
			continue
		}
		if _, ok := c.Resources.Requests[resource]; !ok {
			p.add(o, "a %s utilisation target needs a %s request on container %s", resource, resource, c.Name)
		}
	}
}

func checkTriggerAuthentication(p *problems, ix *index, o *object, spec *kedav1alpha1.TriggerAuthenticationSpec) {
	for _, ref := range spec.SecretTargetRef {
		keys, found := ix.keysOf("Secret", o.namespace, ref.Name)
		if !found {
			p.add(o, "secretTargetRef %s: Secret %q is not among the manifests", ref.Parameter, ref.Name)
		} else if _, ok := keys[ref.Key]; !ok {
			p.add(o, "secretTargetRef %s: Secret %q has no key %q", ref.Parameter, ref.Name, ref.Key)
		}
	}
	for _, ref := range spec.ConfigMapTargetRef {
		keys, found := ix.keysOf("ConfigMap", o.namespace, ref.Name)
		if !found {
			p.add(o, "configMapTargetRef %s: ConfigMap %q is not among the manifests", ref.Parameter, ref.Name)
		} else if _, ok := keys[ref.Key]; !ok {
			p.add(o, "configMapTargetRef %s: ConfigMap %q has no key %q", ref.Parameter, ref.Name, ref.Key)
		}
	}
}
