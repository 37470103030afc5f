// Package config reconciles provider-armada's ProviderConfigs and
// ClusterProviderConfigs: it counts the resources using each, and keeps a
// config that is in use from being deleted.
package config

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	armadav1 "github.com/armadaproject/armada-crossplane/apis/armada/v1alpha1"
)

// A kind is one provider config kind and its usage kinds.
type kind struct {
	name   string
	of     resource.ProviderConfigKinds
	forObj client.Object
	usage  client.Object
}

// Setup adds the ProviderConfig and ClusterProviderConfig controllers.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	kinds := []kind{
		{
			name: armadav1.ProviderConfigKind,
			of: resource.ProviderConfigKinds{
				Config:    armadav1.ProviderConfigGroupVersionKind,
				Usage:     armadav1.ProviderConfigUsageGroupVersionKind,
				UsageList: armadav1.ProviderConfigUsageListGroupVersionKind,
			},
			forObj: &armadav1.ProviderConfig{}, usage: &armadav1.ProviderConfigUsage{},
		},
		{
			name: armadav1.ClusterProviderConfigKind,
			of: resource.ProviderConfigKinds{
				Config:    armadav1.ClusterProviderConfigGroupVersionKind,
				Usage:     armadav1.ClusterProviderConfigUsageGroupVersionKind,
				UsageList: armadav1.ClusterProviderConfigUsageListGroupVersionKind,
			},
			forObj: &armadav1.ClusterProviderConfig{}, usage: &armadav1.ClusterProviderConfigUsage{},
		},
	}
	for _, k := range kinds {
		name := providerconfig.ControllerName(k.name)
		// crossplane-runtime v2.4.0's recorder takes the old events API; see crossplane/crossplane#7152.
		recorder := mgr.GetEventRecorderFor(name) //nolint:staticcheck // See above.
		r := providerconfig.NewReconciler(mgr, k.of,
			providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
			providerconfig.WithRecorder(event.NewAPIRecorder(recorder)))
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(k.forObj).
			Watches(k.usage, &resource.EnqueueRequestForProviderConfig{Kind: k.name}).
			Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
		if err != nil {
			return errors.Wrapf(err, "cannot set up %s controller", k.name)
		}
	}
	return nil
}
