package armada

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rotation (spec.rotation). A generated secret is derived from the
// function's key, the XR's identity and a label; a generation above 0 is
// folded into the label, so raising it derives a new value. The Secret
// records each generation above 0 in an annotation, and a stored value is
// reused only while its recorded generation is the desired one. Generation
// 0 is the label as it always was, so existing values and pods stay as
// they are. This file rotates the passwords; the executors' identities
// (identityrotation.go) and the CA (carotation.go) rotate on the same
// generations.

// annotationRotation prefixes the annotations recording generations: the
// credentials Secret's per password key, the TLS Secret's for the CA.
const annotationRotation = "rotation.armadaproject.io/"

// annotationRotationHash is on a pod template whose container reads a
// rotated password: a changed generation changes it and rolls the pods.
const annotationRotationHash = "armadaproject.io/rotation-hash"

// rotationCA is the CA's annotation key suffix.
const rotationCA = "ca"

// passwordGeneration is the desired generation of a password key.
func (in *Install) passwordGeneration(key string) int32 {
	if in.Spec.Rotation == nil {
		return 0
	}
	return in.Spec.Rotation.Passwords[key]
}

// caGeneration is the desired generation of the generated CA.
func (in *Install) caGeneration() int32 {
	if in.Spec.Rotation == nil {
		return 0
	}
	return in.Spec.Rotation.CA
}

// rotated is the random stream of label at a generation.
func rotated(rand RandFunc, label string, generation int32) io.Reader {
	if generation == 0 {
		return rand(label)
	}
	return rand(label + "\x00rotation\x00" + strconv.Itoa(int(generation)))
}

// generationAnnotations records the generations above 0, by key.
func generationAnnotations(gens map[string]int32) map[string]string {
	var out map[string]string
	for _, k := range slices.Sorted(maps.Keys(gens)) {
		if gens[k] > 0 {
			if out == nil {
				out = map[string]string{}
			}
			out[annotationRotation+k] = strconv.Itoa(int(gens[k]))
		}
	}
	return out
}

// observedGenerations reads the generations an observed Secret records.
func observedGenerations(annotations map[string]string) map[string]int32 {
	out := map[string]int32{}
	for k, v := range annotations {
		name, ok := strings.CutPrefix(k, annotationRotation)
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			out[name] = int32(n)
		}
	}
	return out
}

// passwordRotationHash is the hash of the rotated password generations a
// container reads from the credentials Secret, or "" if it reads none
// above generation 0. It is a pod template annotation, so raising a
// generation rolls exactly the pods that read that password.
func (in *Install) passwordRotationHash(env []corev1.EnvVar) string {
	h := sha256.New()
	found := false
	for _, e := range env {
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != in.credentialsSecret() {
			continue
		}
		if g := in.passwordGeneration(ref.SecretKeyRef.Key); g > 0 {
			found = true
			h.Write([]byte(ref.SecretKeyRef.Key + "\x00" + strconv.Itoa(int(g)) + "\x00"))
		}
	}
	if !found {
		return ""
	}
	return "r" + hex.EncodeToString(h.Sum(nil)[:4])
}

// rotationAnnotations is a pod template's annotations for a rotation
// hash: none for "".
func rotationAnnotations(hash string) map[string]string {
	if hash == "" {
		return nil
	}
	return map[string]string{annotationRotationHash: hash}
}

// validateRotation refuses generations for keys the Armada does not
// generate, and a CA generation when cert-manager issues the certificates.
func (in *Install) validateRotation() field.ErrorList {
	r := in.Spec.Rotation
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "rotation")
	// The in-cluster Pulsar's signing key is not rotated: its brokers
	// read it only when they start.
	keys := slices.DeleteFunc(in.passwordKeys(), func(k string) bool { return k == pulsarTokenKey })
	for i := range in.Spec.Executors {
		// A remote executor's identity (identityrotation.go).
		if e := &in.Spec.Executors[i]; remoteCluster(e) != nil {
			keys = append(keys, userExecutor+"-"+e.ClusterID)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Passwords)) {
		if !slices.Contains(keys, k) {
			errs = append(errs, field.NotSupported(p.Child("passwords").Key(k), k, keys))
		}
		if g := r.Passwords[k]; g < 0 {
			errs = append(errs, field.Invalid(p.Child("passwords").Key(k), g, "must be 0 or more"))
		}
	}
	if r.CA < 0 {
		errs = append(errs, field.Invalid(p.Child("ca"), r.CA, "must be 0 or more"))
	}
	if r.CA > 0 && in.certManager() {
		errs = append(errs, field.Forbidden(p.Child("ca"), "cert-manager issues the certificates (spec.tls.issuerRef): rotate through the issuer"))
	}
	return errs
}
