package v1alpha1

// Actions are everyday operator actions, declared on the claim: each runs
// once per token, so applying the same spec again does nothing, and a new
// token runs it again. status.actions reports each when done.
type Actions struct {
	// Restart rolls the pods of components, as kubectl rollout restart
	// does, by stamping a token on their pod templates. Keys are "all" or
	// a component's name as status.components lists it; changing a key's
	// token rolls the pods it names once. The function refuses a key that
	// names no component.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Restart map[string]RestartToken `json:"restart,omitempty"`
	// Backup takes an on-demand backup of the in-cluster PostgreSQL
	// (spec.postgres.backup must be set): a CloudNativePG Backup named
	// <name>-postgres-now-<token>, taken once. Set a new token to take
	// another; only the newest token's Backup object stays composed.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Backup string `json:"backup,omitempty"`
}

// RestartToken is a restart's token: 1 to 63 letters, digits, '-', '_'
// or '.', starting and ending with a letter or digit, e.g. a timestamp.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
type RestartToken string

// ActionsStatus reports the operator actions of spec.actions.
type ActionsStatus struct {
	// Restarts reports each spec.actions.restart key: done once every
	// pod it names runs the template carrying its token and is ready.
	// +optional
	Restarts map[string]RestartStatus `json:"restarts,omitempty"`
	// Backup reports the on-demand Backup of spec.actions.backup.
	// +optional
	Backup *BackupRun `json:"backup,omitempty"`
}

// RestartStatus reports one restart.
type RestartStatus struct {
	// Token of the restart.
	Token string `json:"token"`
	// Done is true once every pod it names was rolled and is ready.
	Done bool `json:"done"`
	// Pending lists the components still rolling, when not done.
	// +optional
	Pending []string `json:"pending,omitempty"`
}
