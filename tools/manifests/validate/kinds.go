package main

import (
	"sort"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kinds maps each apiVersion and kind the manifests may hold to its Go API type. Anything else is
// refused: a kind with no type here could not be checked.
var kinds = map[schema.GroupVersionKind]func() any{
	{Version: "v1", Kind: "ConfigMap"}:                                            func() any { return &corev1.ConfigMap{} },
	{Version: "v1", Kind: "Secret"}:                                               func() any { return &corev1.Secret{} },
	{Version: "v1", Kind: "Service"}:                                              func() any { return &corev1.Service{} },
	{Version: "v1", Kind: "ServiceAccount"}:                                       func() any { return &corev1.ServiceAccount{} },
	{Group: "apps", Version: "v1", Kind: "Deployment"}:                            func() any { return &appsv1.Deployment{} },
	{Group: "batch", Version: "v1", Kind: "Job"}:                                  func() any { return &batchv1.Job{} },
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}:        func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}:                 func() any { return &policyv1.PodDisruptionBudget{} },
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}:            func() any { return &networkingv1.NetworkPolicy{} },
	{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}:                 func() any { return &kedav1alpha1.ScaledObject{} },
	{Group: "keda.sh", Version: "v1alpha1", Kind: "TriggerAuthentication"}:        func() any { return &kedav1alpha1.TriggerAuthentication{} },
	{Group: "keda.sh", Version: "v1alpha1", Kind: "ClusterTriggerAuthentication"}: func() any { return &kedav1alpha1.ClusterTriggerAuthentication{} },
}

func knownKinds() string {
	names := make([]string, 0, len(kinds))
	for gvk := range kinds {
		names = append(names, strings.TrimPrefix(gvk.GroupVersion().String()+" "+gvk.Kind, "/"))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
