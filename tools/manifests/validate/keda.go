package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// scalerStructs names, for each trigger type the manifests may use, the metadata struct its KEDA
// scaler parses its trigger with (pkg/scalers/*_scaler.go). A trigger of any other type is refused.
var scalerStructs = map[string]string{
	"temporal": "temporalMetadata",
	"cpu":      "cpuMemoryMetadata",
	"memory":   "cpuMemoryMetadata",
}

// param is one `keda:"…"` tag of a scaler's metadata struct.
type param struct {
	name       string
	orders     []string // triggerMetadata, resolvedEnv, authParams
	deprecated string
}

func (p param) in(order string) bool { return slices.Contains(p.orders, order) }

// scalerSpec is what KEDA's scaler accepts: its parameters, and a struct type carrying the scaler's
// own tags for KEDA's typed-config parser.
type scalerSpec struct {
	structName string
	params     map[string]param
	typ        reflect.Type
}

var goTypes = map[string]reflect.Type{
	"string":  reflect.TypeFor[string](),
	"bool":    reflect.TypeFor[bool](),
	"int":     reflect.TypeFor[int](),
	"int32":   reflect.TypeFor[int32](),
	"int64":   reflect.TypeFor[int64](),
	"float64": reflect.TypeFor[float64](),
}

// loadScalerSpecs reads the metadata structs of scalerStructs from KEDA's scaler sources.
func loadScalerSpecs(dir string) (map[string]*scalerSpec, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("-keda-scalers %s: no Go sources", dir)
	}
	wanted := map[string]bool{}
	for _, name := range scalerStructs {
		wanted[name] = true
	}
	structs := map[string]*scalerSpec{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		source, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		parsed, err := parser.ParseFile(fset, file, source, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range parsed.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, s := range gen.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !wanted[ts.Name.Name] {
					continue
				}
				spec, err := specFromStruct(ts.Name.Name, st)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", filepath.Base(file), err)
				}
				structs[ts.Name.Name] = spec
			}
		}
	}
	specs := map[string]*scalerSpec{}
	for trigger, name := range scalerStructs {
		spec, ok := structs[name]
		if !ok {
			return nil, fmt.Errorf("KEDA's sources in %s have no struct %s (the %s scaler's metadata)", dir, name, trigger)
		}
		specs[trigger] = spec
	}
	return specs, nil
}

func specFromStruct(name string, st *ast.StructType) (*scalerSpec, error) {
	spec := &scalerSpec{structName: name, params: map[string]param{}}
	// KEDA's parser requires a triggerIndex field; StructOf takes exported fields only.
	fields := []reflect.StructField{{Name: "TriggerIndex", Type: reflect.TypeFor[int]()}}
	for _, field := range st.Fields.List {
		if field.Tag == nil {
			continue
		}
		raw, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			return nil, err
		}
		tag := reflect.StructTag(raw)
		keda, ok := tag.Lookup("keda")
		if !ok {
			continue
		}
		typ, err := fieldType(field.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", name, field.Names[0].Name, err)
		}
		p := parseTag(keda)
		spec.params[p.name] = p
		fields = append(fields, reflect.StructField{Name: field.Names[0].Name, Type: typ, Tag: reflect.StructTag(`keda:"` + keda + `"`)})
	}
	spec.typ = reflect.StructOf(fields)
	return spec, nil
}

func fieldType(expr ast.Expr) (reflect.Type, error) {
	switch e := expr.(type) {
	case *ast.Ident:
		if t, ok := goTypes[e.Name]; ok {
			return t, nil
		}
	case *ast.ArrayType:
		if e.Len == nil {
			elem, err := fieldType(e.Elt)
			if err != nil {
				return nil, err
			}
			return reflect.SliceOf(elem), nil
		}
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" && e.Sel.Name == "Duration" {
			return reflect.TypeFor[time.Duration](), nil
		}
	}
	return nil, fmt.Errorf("field type %T is not one the validator can rebuild: extend fieldType", expr)
}

// parseTag reads the parts of a keda tag the checks need, as KEDA's paramsFromTag splits it.
func parseTag(tag string) param {
	var p param
	for _, part := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.TrimSpace(k) {
		case "name":
			p.name = strings.TrimSpace(v)
		case "order":
			for _, order := range strings.Split(v, ";") {
				p.orders = append(p.orders, strings.TrimSpace(order))
			}
		case "deprecated":
			p.deprecated = strings.TrimSpace(v)
		}
	}
	return p
}

func (s *scalerSpec) names(order string) string {
	var out []string
	for name, p := range s.params {
		if p.in(order) && p.deprecated == "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// checkKeda checks each ScaledObject: its target, KEDA's own trigger and bound checks, and every
// trigger's metadata and auth parameters against its scaler.
func checkKeda(ix *index, specs map[string]*scalerSpec) []error {
	var p problems
	for _, o := range ix.objects {
		so, ok := o.value.(*kedav1alpha1.ScaledObject)
		if !ok {
			continue
		}
		ref := so.Spec.ScaleTargetRef
		if ref == nil {
			p.add(o, "spec.scaleTargetRef is missing")
			continue
		}
		for _, err := range []error{kedav1alpha1.ValidateTriggers(so.Spec.Triggers),
			kedav1alpha1.CheckReplicaCountBoundsAreValid(so), kedav1alpha1.CheckFallbackValid(so)} {
			if err != nil {
				p.add(o, "%v", err)
			}
		}
		target := deploymentTarget(&p, ix, o, ref.APIVersion, ref.Kind, ref.Name)
		if target == nil {
			continue
		}
		if target.Spec.Replicas != nil {
			p.add(o, "Deployment %s sets spec.replicas, which every apply would reset under KEDA", ref.Name)
		}
		for _, other := range ix.objects {
			if hpa, ok := other.value.(*autoscalingv2.HorizontalPodAutoscaler); ok &&
				other.namespace == o.namespace && hpa.Spec.ScaleTargetRef.Name == ref.Name {
				p.add(o, "%s also scales Deployment %s: KEDA's own HPA would fight it", other, ref.Name)
			}
		}
		env := targetEnv(&p, ix, o, &target.Spec.Template.Spec, ref.EnvSourceContainerName)
		for i := range so.Spec.Triggers {
			checkTrigger(&p, ix, o, i, &so.Spec.Triggers[i], specs, env, &target.Spec.Template.Spec)
		}
	}
	return p
}

// targetEnv is the environment KEDA resolves `…FromEnv` from: the scale target's container named
// envSourceContainerName, else its first container, with env values, ConfigMap and Secret keys.
func targetEnv(p *problems, ix *index, o *object, pod *corev1.PodSpec, containerName string) map[string]string {
	env := map[string]string{}
	var container *corev1.Container
	for i := range pod.Containers {
		if containerName == "" || pod.Containers[i].Name == containerName {
			container = &pod.Containers[i]
			break
		}
	}
	if container == nil {
		p.add(o, "envSourceContainerName %q is no container of the target", containerName)
		return env
	}
	for _, from := range container.EnvFrom {
		kind, name := "ConfigMap", ""
		if from.ConfigMapRef != nil {
			name = from.ConfigMapRef.Name
		} else if from.SecretRef != nil {
			kind, name = "Secret", from.SecretRef.Name
		}
		values, _ := ix.keysOf(kind, o.namespace, name)
		for k, v := range values {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			values, _ := ix.keysOf("ConfigMap", o.namespace, e.ValueFrom.ConfigMapKeyRef.Name)
			env[e.Name] = values[e.ValueFrom.ConfigMapKeyRef.Key]
		case e.ValueFrom.SecretKeyRef != nil:
			values, _ := ix.keysOf("Secret", o.namespace, e.ValueFrom.SecretKeyRef.Name)
			env[e.Name] = values[e.ValueFrom.SecretKeyRef.Key]
		}
	}
	return env
}

func checkTrigger(p *problems, ix *index, o *object, i int, t *kedav1alpha1.ScaleTriggers,
	specs map[string]*scalerSpec, env map[string]string, pod *corev1.PodSpec) {
	where := fmt.Sprintf("trigger %d (%s %s)", i, t.Type, t.Name)
	spec, ok := specs[t.Type]
	if !ok {
		p.add(o, "%s: no scaler metadata known for type %q (known: temporal, cpu, memory)", where, t.Type)
		return
	}
	if t.Type == "cpu" || t.Type == "memory" {
		if t.MetricType != autoscalingv2.UtilizationMetricType && t.MetricType != autoscalingv2.AverageValueMetricType {
			p.add(o, "%s: metricType must be Utilization or AverageValue", where)
		}
		if t.MetricType == autoscalingv2.UtilizationMetricType {
			requireRequests(p, o, pod, corev1.ResourceName(t.Type), t.Metadata["containerName"])
		}
	}
	for k := range t.Metadata {
		name, fromEnv := strings.CutSuffix(k, "FromEnv")
		param, known := spec.params[name]
		switch {
		case !known || param.in("authParams") && !param.in("triggerMetadata"):
			p.add(o, "%s: metadata key %q is not a parameter of KEDA's %s scaler (%s: %s)", where, k, t.Type, spec.structName, spec.names("triggerMetadata"))
		case fromEnv && !param.in("resolvedEnv"):
			p.add(o, "%s: metadata key %q: %s cannot be read from the environment", where, k, name)
		case !fromEnv && !param.in("triggerMetadata"):
			p.add(o, "%s: metadata key %q: %s is only read from the environment (%sFromEnv)", where, k, name, name)
		case param.deprecated != "":
			p.add(o, "%s: metadata key %q is deprecated: %s", where, k, param.deprecated)
		}
		if fromEnv {
			if _, set := env[t.Metadata[k]]; !set {
				p.add(o, "%s: %s names variable %q, which the target's container does not set", where, k, t.Metadata[k])
			}
		}
	}
	auth := authParams(p, ix, o, where, t.AuthenticationRef)
	for k := range auth {
		if param, known := spec.params[k]; !known || !param.in("authParams") {
			p.add(o, "%s: auth parameter %q is not one of KEDA's %s scaler (%s)", where, k, t.Type, spec.names("authParams"))
		}
	}
	// KEDA's own parser: required parameters present, every value of its type (numbers, booleans).
	config := scalersconfig.ScalerConfig{
		TriggerType:     t.Type,
		TriggerName:     t.Name,
		TriggerIndex:    i,
		TriggerMetadata: t.Metadata,
		ResolvedEnv:     env,
		AuthParams:      auth,
		MetricType:      t.MetricType,
	}
	if err := config.TypedConfig(reflect.New(spec.typ).Interface()); err != nil {
		p.add(o, "%s: KEDA's parser refuses it: %v", where, err)
	}
}

// authParams resolves a trigger's TriggerAuthentication into KEDA's auth parameters.
func authParams(p *problems, ix *index, o *object, where string, ref *kedav1alpha1.AuthenticationRef) map[string]string {
	params := map[string]string{}
	if ref == nil {
		return params
	}
	kind := ref.Kind
	if kind == "" {
		kind = "TriggerAuthentication"
	}
	namespace := o.namespace
	if kind == "ClusterTriggerAuthentication" {
		namespace = ""
	}
	auth := ix.get(kind, namespace, ref.Name)
	if auth == nil {
		p.add(o, "%s: authenticationRef names %s %q, which is not among the manifests", where, kind, ref.Name)
		return params
	}
	var spec *kedav1alpha1.TriggerAuthenticationSpec
	switch v := auth.value.(type) {
	case *kedav1alpha1.TriggerAuthentication:
		spec = &v.Spec
	case *kedav1alpha1.ClusterTriggerAuthentication:
		spec = &v.Spec
	}
	for _, s := range spec.SecretTargetRef {
		values, _ := ix.keysOf("Secret", o.namespace, s.Name)
		params[s.Parameter] = values[s.Key]
	}
	for _, c := range spec.ConfigMapTargetRef {
		values, _ := ix.keysOf("ConfigMap", o.namespace, c.Name)
		params[c.Parameter] = values[c.Key]
	}
	for _, e := range spec.Env {
		params[e.Parameter] = ""
	}
	return params
}
