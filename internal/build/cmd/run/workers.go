package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/controlplane"
	"github.com/armadaproject/armada-crossplane/internal/harness/simulate"
)

// A worker is a worker cluster started for one of the example's
// provider-kubernetes ClusterProviderConfigs.
type worker struct {
	name string
	cp   *controlplane.ControlPlane
}

// startWorkers starts a Kubernetes-only control plane (etcd,
// kube-apiserver, kube-controller-manager) for each ClusterProviderConfig
// in docs that reads a kubeconfig Secret, and creates that Secret in the
// control cluster c, as a platform team would for a real worker cluster.
// provider-kubernetes runs as a local process, so the workers' loopback
// URLs reach them. Stop the returned workers when done.
func startWorkers(ctx context.Context, c client.Client, docs []map[string]any) ([]worker, error) {
	var ws []worker
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d}
		if u.GetKind() != "ClusterProviderConfig" {
			continue
		}
		ref, found, _ := unstructured.NestedStringMap(u.Object, "spec", "credentials", "secretRef")
		if !found {
			continue
		}
		fmt.Printf("Bringing up worker cluster %s (etcd, kube-apiserver, kube-controller-manager)...\n", u.GetName())
		w, err := controlplane.Start(ctx, controlplane.Options{KubernetesOnly: true, ServiceAccounts: true})
		if err != nil {
			stopWorkers(ws)
			return nil, errors.Wrapf(err, "cannot start worker cluster %s", u.GetName())
		}
		ws = append(ws, worker{name: u.GetName(), cp: w})
		kc, err := w.KubeconfigBytes()
		if err != nil {
			stopWorkers(ws)
			return nil, err
		}
		s := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ref["namespace"], Name: ref["name"]},
			Data:       map[string][]byte{ref["key"]: kc},
		}
		if err := c.Create(ctx, s); err != nil && !kerrors.IsAlreadyExists(err) {
			stopWorkers(ws)
			return nil, errors.Wrapf(err, "cannot create kubeconfig Secret of worker cluster %s", u.GetName())
		}
		fmt.Printf("  worker cluster %s: export KUBECONFIG=%s\n", u.GetName(), w.Kubeconfig())
	}
	return ws, nil
}

func stopWorkers(ws []worker) {
	for _, w := range ws {
		_ = w.cp.Stop()
	}
}

// printWorkerTrees prints, per worker cluster, what the XR's
// provider-kubernetes Objects compose there, and whether it exists there.
func printWorkerTrees(ctx context.Context, c client.Client, xr *unstructured.Unstructured, ws []worker) error {
	byCluster := map[string][]string{}
	for _, r := range simulate.RefsOf(xr) {
		if r.Kind != "Object" {
			continue
		}
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(r.APIVersion)
		o.SetKind("Object")
		if err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, o); err != nil {
			return errors.Wrapf(err, "cannot get Object %s", r.Name)
		}
		cluster, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "name")
		man, _, _ := unstructured.NestedMap(o.Object, "spec", "forProvider", "manifest")
		mu := &unstructured.Unstructured{Object: man}
		state := "not there yet"
		for _, w := range ws {
			if w.name != cluster {
				continue
			}
			got := &unstructured.Unstructured{}
			got.SetAPIVersion(mu.GetAPIVersion())
			got.SetKind(mu.GetKind())
			if err := w.cp.Client().Get(ctx, client.ObjectKeyFromObject(mu), got); err == nil {
				state = "exists"
			}
		}
		name := mu.GetName()
		if mu.GetNamespace() != "" {
			name = mu.GetNamespace() + "/" + name
		}
		byCluster[cluster] = append(byCluster[cluster], fmt.Sprintf("%-20s %s (%s)", mu.GetKind(), name, state))
	}
	clusters := make([]string, 0, len(byCluster))
	for k := range byCluster {
		clusters = append(clusters, k)
	}
	sort.Strings(clusters)
	for _, k := range clusters {
		fmt.Printf("\nWorker cluster %s (ClusterProviderConfig %s)\n", k, k)
		items := byCluster[k]
		sort.Strings(items)
		for i, it := range items {
			branch := "├─"
			if i == len(items)-1 {
				branch = "└─"
			}
			fmt.Printf("%s %s\n", branch, it)
		}
	}
	return nil
}

// markWorker reports every Deployment in a worker cluster available, as
// its Deployment controller would with a kubelet: see simulate.
func markWorker(ctx context.Context, w worker) error {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("apps/v1")
	l.SetKind("DeploymentList")
	if err := w.cp.Client().List(ctx, l); err != nil {
		return errors.Wrapf(err, "cannot list Deployments in worker cluster %s", w.name)
	}
	for i := range l.Items {
		u := &l.Items[i]
		st, _ := simulate.HealthyStatus(u, time.Now())
		u.Object["status"] = st
		if err := w.cp.Client().Status().Update(ctx, u); err != nil && !kerrors.IsConflict(err) {
			return errors.Wrapf(err, "cannot mark Deployment %s in worker cluster %s available", u.GetName(), w.name)
		}
	}
	return nil
}
