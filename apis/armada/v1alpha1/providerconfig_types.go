package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A SecretKeySelector selects one key of a Secret.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the Secret. A ProviderConfig may only read Secrets in its
	// own namespace, which is the default; a ClusterProviderConfig must set
	// it.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Key within the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// TLS says how to secure the connection to Armada.
// +kubebuilder:validation:XValidation:rule="!(self.insecure && has(self.caSecretRef))",message="set either insecure: true or caSecretRef, not both"
// +kubebuilder:validation:XValidation:rule="!(self.insecure && has(self.serverName))",message="serverName needs TLS; remove it or set insecure: false"
type TLS struct {
	// Insecure connects in plaintext, without TLS. Credentials then cross
	// the network unencrypted, so it is for loopback, a service mesh that
	// encrypts for you, or tests. It must be set explicitly: there is no
	// default.
	Insecure bool `json:"insecure"`

	// CASecretRef selects a PEM bundle of the certificate authorities to
	// trust for Armada's server certificate. Without it the system's
	// trusted roots are used.
	// +optional
	CASecretRef *SecretKeySelector `json:"caSecretRef,omitempty"`

	// ServerName overrides the name checked against the server
	// certificate; by default the endpoint's host.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServerName string `json:"serverName,omitempty"`
}

// A CredentialsSource says which kind of credentials the provider presents.
// +kubebuilder:validation:Enum=None;Basic;BearerToken;OIDCClientCredentials
type CredentialsSource string

// The credential sources.
const (
	// CredentialsNone presents no credentials (Armada's anonymousAuth).
	CredentialsNone CredentialsSource = "None"
	// CredentialsBasic presents a username and password (Armada's basicAuth).
	CredentialsBasic CredentialsSource = "Basic"
	// CredentialsBearerToken presents a static bearer token (for example a
	// JWT Armada's openIdAuth accepts).
	CredentialsBearerToken CredentialsSource = "BearerToken"
	// CredentialsOIDCClientCredentials fetches and refreshes a bearer token
	// with the OAuth2 client-credentials grant.
	CredentialsOIDCClientCredentials CredentialsSource = "OIDCClientCredentials"
)

// BasicAuth selects a username and password.
type BasicAuth struct {
	// UsernameSecretRef selects the username.
	UsernameSecretRef SecretKeySelector `json:"usernameSecretRef"`
	// PasswordSecretRef selects the password.
	PasswordSecretRef SecretKeySelector `json:"passwordSecretRef"`
}

// BearerToken selects a static bearer token.
type BearerToken struct {
	// TokenSecretRef selects the token.
	TokenSecretRef SecretKeySelector `json:"tokenSecretRef"`
}

// OIDCClientCredentials configure the OAuth2 client-credentials grant.
type OIDCClientCredentials struct {
	// TokenURL is the identity provider's token endpoint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	TokenURL string `json:"tokenURL"`

	// ClientID is the client's identifier.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClientID string `json:"clientID"`

	// ClientSecretSecretRef selects the client's secret.
	ClientSecretSecretRef SecretKeySelector `json:"clientSecretSecretRef"`

	// Scopes to request.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
}

// Credentials say how the provider authenticates to Armada. Exactly the
// block Source names must be set.
// +kubebuilder:validation:XValidation:rule="(self.source == 'Basic') == has(self.basic)",message="set basic exactly when source is Basic"
// +kubebuilder:validation:XValidation:rule="(self.source == 'BearerToken') == has(self.bearerToken)",message="set bearerToken exactly when source is BearerToken"
// +kubebuilder:validation:XValidation:rule="(self.source == 'OIDCClientCredentials') == has(self.oidcClientCredentials)",message="set oidcClientCredentials exactly when source is OIDCClientCredentials"
type Credentials struct {
	// Source is the kind of credentials: None, Basic, BearerToken or
	// OIDCClientCredentials.
	Source CredentialsSource `json:"source"`

	// Basic selects a username and password, for source Basic.
	// +optional
	Basic *BasicAuth `json:"basic,omitempty"`

	// BearerToken selects a static token, for source BearerToken.
	// +optional
	BearerToken *BearerToken `json:"bearerToken,omitempty"`

	// OIDCClientCredentials configure the client-credentials grant, for
	// source OIDCClientCredentials.
	// +optional
	OIDCClientCredentials *OIDCClientCredentials `json:"oidcClientCredentials,omitempty"`
}

// ProviderConfigSpec says how to reach and authenticate to an Armada server.
type ProviderConfigSpec struct {
	// Endpoint is the Armada server's gRPC address, host:port, for example
	// armada-server.armada.svc:50051.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s/]+:[0-9]{1,5}$`
	Endpoint string `json:"endpoint"`

	// TLS says how to secure the connection. Required, so that plaintext is
	// always an explicit choice (insecure: true).
	TLS TLS `json:"tls"`

	// Credentials say how to authenticate.
	Credentials Credentials `json:"credentials"`

	// TimeoutSeconds bounds each call to Armada, connecting included, and
	// each OIDC token fetch. Defaults to 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// A ProviderConfigStatus is the status of a ProviderConfig.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// A ProviderConfig says how the Queues in its namespace that reference it
// reach Armada. It may only read Secrets in its own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ENDPOINT",type="string",JSONPath=".spec.endpoint"
// +kubebuilder:printcolumn:name="CREDENTIALS",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,armada}
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to reach Armada.
	Spec ProviderConfigSpec `json:"spec"`
	// Status counts the resources using this config.
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList is a list of ProviderConfigs.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ProviderConfigs.
	Items []ProviderConfig `json:"items"`
}

// A ClusterProviderConfig says how Queues in any namespace that reference
// it reach Armada. Its Secret references must name a namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ENDPOINT",type="string",JSONPath=".spec.endpoint"
// +kubebuilder:printcolumn:name="CREDENTIALS",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,armada}
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to reach Armada.
	Spec ProviderConfigSpec `json:"spec"`
	// Status counts the resources using this config.
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList is a list of ClusterProviderConfigs.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterProviderConfigs.
	Items []ClusterProviderConfig `json:"items"`
}

// A ProviderConfigUsage records that a managed resource uses a
// ProviderConfig, so the config is not deleted while in use.
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,armada}
type ProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// +kubebuilder:object:root=true

// ProviderConfigUsageList is a list of ProviderConfigUsages.
type ProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ProviderConfigUsages.
	Items []ProviderConfigUsage `json:"items"`
}

// A ClusterProviderConfigUsage records that a managed resource uses a
// ClusterProviderConfig. It lives in the managed resource's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,armada}
type ClusterProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigUsageList is a list of ClusterProviderConfigUsages.
type ClusterProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterProviderConfigUsages.
	Items []ClusterProviderConfigUsage `json:"items"`
}
