package v1alpha1

// Rotation rotates the secrets the function generates. Every generated
// password and the generated CA are derived from the function's key and
// the XR's identity, so deleting a Secret brings back the same values;
// raising a generation here derives a new value instead, replaces it in
// its Secret and rolls exactly the pods that use it. Generations only go
// up: an older one would derive the old value again.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.ca) || (has(self.ca) && self.ca >= oldSelf.ca)",message="spec.rotation.ca only goes up: an older generation derives the old CA again"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.passwords) || (has(self.passwords) && oldSelf.passwords.all(k, k in self.passwords && self.passwords[k] >= oldSelf.passwords[k]))",message="spec.rotation.passwords only go up and are never removed: an older generation derives the old password again"
type Rotation struct {
	// Passwords are generations of the generated passwords, by their key
	// in the credentials Secret (status.credentialsSecret): a basic user's
	// name, an internal user (internal-server, internal-queues, ...) or
	// redis for the in-cluster Redis; or a remote executor's identity,
	// internal-executor-<clusterId>, whose new generation is a new
	// service-account token in its worker cluster (the old one is deleted
	// once the executor runs on the new one). Unlisted keys are at
	// generation 0.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0 && self[k] <= 1000000)",message="spec.rotation.passwords: each generation is between 0 and 1000000"
	// +optional
	Passwords map[string]int32 `json:"passwords,omitempty"`
	// CA is the generation of the generated TLS CA (spec.tls without
	// issuerRef). Raising it issues a new CA and new certificates for every
	// TLS server, and rolls every pod that mounts them. Pods trust both
	// CAs until every server has moved to the new one: the rollover takes
	// three rollouts, with no window of failed calls.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	CA int32 `json:"ca,omitempty"`
}
