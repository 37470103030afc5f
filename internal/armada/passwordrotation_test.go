package armada

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/armadaproject/armada-crossplane/apis/v1alpha1"
)

// podTemplates are the pod templates of a render's workloads, by key.
func podTemplates(out *Output) map[string]corev1.PodTemplateSpec {
	tpls := map[string]corev1.PodTemplateSpec{}
	for _, o := range out.Objects {
		switch w := o.Object.(type) {
		case *appsv1.Deployment:
			tpls[o.Key] = w.Spec.Template
		case *appsv1.StatefulSet:
			tpls[o.Key] = w.Spec.Template
		}
	}
	return tpls
}

// composedSecret is a composed Secret.
func composedSecret(t *testing.T, out *Output, key string) *corev1.Secret {
	t.Helper()
	o := find(out, key)
	if o == nil {
		t.Fatalf("no %s composed", key)
	}
	s, ok := o.Object.(*corev1.Secret)
	if !ok {
		t.Fatalf("%s is a %T", key, o.Object)
	}
	return s
}

// uses reports whether a pod template reads a key of the credentials
// Secret, or mounts the TLS Secret (or key of it).
func uses(tpl corev1.PodTemplateSpec, secret, key string) bool {
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == secret && (key == "" || r.SecretKeyRef.Key == key) {
				return true
			}
		}
	}
	for _, v := range tpl.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret && (key == "" || slices.ContainsFunc(v.Secret.Items, func(it corev1.KeyToPath) bool { return it.Key == key })) {
			return true
		}
	}
	return false
}

// TestRotation: raising a generation in spec.rotation replaces exactly the
// secret it names and rolls exactly the pods that read it; the next
// reconcile reuses the new value; a lower generation is refused.
func TestRotation(t *testing.T) {
	base := spec(func(s *v1alpha1.ArmadaSpec) { s.Redis = v1alpha1.Redis{Mode: modeInCluster} })
	settle := func(s v1alpha1.ArmadaSpec, o Observed) *Output {
		o.Jobs, o.Ready = migrated(t, s), map[string]bool{keyRedisStatefulSet: true}
		return render(t, s, o)
	}
	before := settle(base, Observed{})
	before = settle(base, observeAll(t, before))
	in, _ := New(claimed(base))
	creds, tlsSecret := in.credentialsSecret(), in.tlsSecret()

	cases := map[string]struct {
		rotation *v1alpha1.Rotation
		secret   string // the composed Secret that changes
		key      string // its changed key, "" for every TLS key
		readers  string // the Secret pods read it from
	}{
		"BasicUser":    {rotation: &v1alpha1.Rotation{Passwords: map[string]int32{"admin": 1}}, secret: keyCredentials, key: "admin", readers: creds},
		"InternalUser": {rotation: &v1alpha1.Rotation{Passwords: map[string]int32{userServer: 2}}, secret: keyCredentials, key: userServer, readers: creds},
		"Redis":        {rotation: &v1alpha1.Rotation{Passwords: map[string]int32{redisPassword: 1}}, secret: keyCredentials, key: redisPassword, readers: creds},
		// A new CA first joins the trust bundle beside the old one (the
		// rest of its rollover: TestCARollover).
		"CA": {rotation: &v1alpha1.Rotation{CA: 1}, secret: keyTLS, key: tlsCAFile, readers: tlsSecret},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := *base.DeepCopy()
			s.Rotation = tc.rotation
			after := settle(s, observeAll(t, before))

			was, now := composedSecret(t, before, tc.secret), composedSecret(t, after, tc.secret)
			for _, k := range slices.Sorted(maps.Keys(was.Data)) {
				changed := !bytes.Equal(was.Data[k], now.Data[k])
				if want := tc.key == "" || k == tc.key; changed != want {
					t.Errorf("%s key %s: changed = %t, want %t", tc.secret, k, changed, want)
				}
			}
			oldT, newT := podTemplates(before), podTemplates(after)
			if len(oldT) < 8 {
				t.Fatalf("the render before composes %d workloads, want every component's", len(oldT))
			}
			for _, k := range slices.Sorted(maps.Keys(oldT)) {
				rolled := !cmp.Equal(oldT[k], newT[k])
				if want := uses(oldT[k], tc.readers, tc.key); rolled != want {
					t.Errorf("%s: pod template changed = %t, want %t (it reads the rotated secret: %t)", k, rolled, want, want)
				}
			}

			// The next reconcile observes the rotated Secret and keeps it.
			again := settle(s, observeAll(t, after))
			if diff := cmp.Diff(now.Data, composedSecret(t, again, tc.secret).Data); diff != "" {
				t.Errorf("the reconcile after the rotation changed %s again: -want, +got:\n%s", tc.secret, diff)
			}

			// Going back a generation is refused naming the field.
			in, errs := New(claimed(base))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			_, err := Render(in, Options{Observed: observeAll(t, again), Rand: KeyedRand([]byte("test"), "xr")})
			if err == nil || !strings.HasPrefix(err.Error(), "spec.rotation.") {
				t.Errorf("a lower generation: want a refusal naming spec.rotation, got %v", err)
			}
		})
	}
}

func TestRotationUnknownKey(t *testing.T) {
	_, errs := New(claimed(spec(func(s *v1alpha1.ArmadaSpec) {
		s.Rotation = &v1alpha1.Rotation{Passwords: map[string]int32{"nobody": 1}}
	})))
	if len(errs) != 1 || errs[0].Field != "spec.rotation.passwords[nobody]" {
		t.Errorf("a generation for a key the Armada does not generate: want one error on spec.rotation.passwords[nobody], got %v", errs)
	}
}
