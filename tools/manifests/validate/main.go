// Command validate checks rendered Kubernetes manifests (kustomize build output, many YAML documents
// on stdin) as strictly as a machine without a cluster allows:
//
//   - every object is decoded into the Go type of its apiVersion and kind (k8s.io/api, KEDA's
//     apis/keda/v1alpha1), case-sensitively, refusing unknown and duplicate fields, as the API server's
//     strict field validation does; a kind it has no type for is an error;
//   - names, labels, annotations, environment variable and port names follow the API server's rules;
//   - what one object names in another exists: the Secret and ConfigMap keys of env, envFrom and
//     volumes, volume mounts, named probe and Service ports, the pods of every selector, the targets
//     of HPAs and ScaledObjects, KEDA's TriggerAuthentications;
//   - each KEDA trigger's metadata and auth parameters are among those its scaler declares, checked
//     against the scaler sources of the pinned KEDA module (-keda-scalers) and parsed by KEDA's own
//     typed-config parser (scalersconfig.TypedConfig).
//
// It prints every problem it finds and exits 1 if there is any, 0 otherwise.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// object is one decoded document: its kind, name and namespace, and the typed value.
type object struct {
	gvk       schema.GroupVersionKind
	name      string
	namespace string
	value     any
}

func (o *object) String() string {
	if o.namespace == "" {
		return fmt.Sprintf("%s %s", o.gvk.Kind, o.name)
	}
	return fmt.Sprintf("%s %s/%s", o.gvk.Kind, o.namespace, o.name)
}

func main() {
	scalers := flag.String("keda-scalers", "", "folder holding the pinned KEDA module's pkg/scalers sources")
	flag.Parse()
	// KEDA's typed-config parser logs through controller-runtime; nothing of it is wanted here.
	ctrllog.SetLogger(logr.Discard())

	objects, problems := decodeAll(os.Stdin)
	if len(objects) == 0 && len(problems) == 0 {
		problems = append(problems, errors.New("no objects on stdin"))
	}
	index := newIndex(objects)
	problems = append(problems, checkObjects(index)...)
	if *scalers == "" {
		problems = append(problems, errors.New("-keda-scalers is required (KEDA's pkg/scalers sources)"))
	} else {
		specs, err := loadScalerSpecs(*scalers)
		if err != nil {
			problems = append(problems, err)
		} else {
			problems = append(problems, checkKeda(index, specs)...)
		}
	}

	if len(problems) > 0 {
		for _, problem := range problems {
			fmt.Fprintf(os.Stderr, "validate: %v\n", problem)
		}
		fmt.Fprintf(os.Stderr, "validate: %d problem(s) in %d object(s)\n", len(problems), len(objects))
		os.Exit(1)
	}
	fmt.Printf("validate: %d objects decoded strictly and cross-checked: %s\n", len(objects), summary(objects))
}

func summary(objects []*object) string {
	counts := map[string]int{}
	for _, o := range objects {
		counts[o.gvk.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for kind, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, kind))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// decodeAll reads every YAML document of r and decodes each strictly into its typed struct.
func decodeAll(r io.Reader) ([]*object, []error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objects []*object
	var problems []error
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("document %d: %w", n, err))
			break
		}
		if strings.TrimSpace(strings.ReplaceAll(string(doc), "---", "")) == "" {
			continue
		}
		o, errs := decode(doc)
		for _, err := range errs {
			where := fmt.Sprintf("document %d", n)
			if o != nil {
				where = fmt.Sprintf("document %d (%s)", n, o)
			}
			problems = append(problems, fmt.Errorf("%s: %w", where, err))
		}
		if o != nil && len(errs) == 0 {
			objects = append(objects, o)
		}
	}
	return objects, problems
}

// decode turns one YAML document into the typed object of its apiVersion and kind. Duplicate keys,
// unknown fields and fields spelled in another case are errors, as is any kind not in kinds.
func decode(doc []byte) (*object, []error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, []error{err}
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return nil, []error{err}
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return nil, []error{err}
	}
	gvk := gv.WithKind(head.Kind)
	o := &object{gvk: gvk, name: head.Metadata.Name, namespace: head.Metadata.Namespace}
	construct, known := kinds[gvk]
	if !known {
		return o, []error{fmt.Errorf("no API type known for apiVersion %q kind %q (known: %s)",
			head.APIVersion, head.Kind, knownKinds())}
	}
	o.value = construct()
	strict, err := sigsjson.UnmarshalStrict(data, o.value, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return o, []error{err}
	}
	return o, strict
}
