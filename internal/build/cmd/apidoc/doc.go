package main

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armadaproject/armada-crossplane/internal/harness/manifest"
)

// A Kind is one documented kind: an XRD's composite (and claim) or a CRD.
type Kind struct {
	Kind, Claim     string
	Group, Version  string
	Scope           string
	Definition      string // the kind of the defining object: CompositeResourceDefinition or CustomResourceDefinition
	DefinitionGroup string // its apiVersion
	Source          string
	Schema          *extv1.JSONSchemaProps
}

// Title is the kind's heading: the claim's kind when it has one, as users
// write claims.
func (k Kind) Title() string {
	if k.Claim != "" {
		return k.Claim
	}
	return k.Kind
}

// sameAs documents a kind by its differences from another kind whose
// schema it shares (the namespaced XRs embed the claims' specs).
var sameAs = map[string]string{
	"Armada":                     "ArmadaClaim",
	"ArmadaQueue":                "ArmadaQueueClaim",
	"ClusterProviderConfig":      "ProviderConfig",
	"ClusterProviderConfigUsage": "ProviderConfigUsage",
}

type definition struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Group      string                 `json:"group"`
		Scope      string                 `json:"scope"`
		Names      struct{ Kind string }  `json:"names"`
		ClaimNames *struct{ Kind string } `json:"claimNames,omitempty"`
		Versions   []struct {
			Name   string `json:"name"`
			Schema struct {
				OpenAPIV3Schema *extv1.JSONSchemaProps `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// ParseKinds reads every XRD and CRD in a (multi-document) YAML file.
func ParseKinds(b []byte, source string) ([]Kind, error) {
	docs, err := manifest.Documents(b)
	if err != nil {
		return nil, err
	}
	var kinds []Kind
	for _, doc := range docs {
		var d definition
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return nil, errors.Wrap(err, "cannot decode definition")
		}
		if d.Kind != "CompositeResourceDefinition" && d.Kind != "CustomResourceDefinition" {
			continue
		}
		for _, v := range d.Spec.Versions {
			k := Kind{
				Kind: d.Spec.Names.Kind, Group: d.Spec.Group, Version: v.Name, Scope: d.Spec.Scope,
				Definition: d.Kind, DefinitionGroup: d.APIVersion, Source: source, Schema: v.Schema.OpenAPIV3Schema,
			}
			if d.Spec.ClaimNames != nil {
				k.Claim = d.Spec.ClaimNames.Kind
			}
			if k.Schema == nil {
				return nil, errors.Errorf("%s %s has no schema", k.Kind, v.Name)
			}
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// A Row documents one field.
type Row struct {
	Path, Type, Default, Validation, Description string
}

// Rows flattens a schema into one row per field, depth first, properties
// in name order; apiVersion, kind and metadata are left out.
func Rows(s *extv1.JSONSchemaProps) []Row {
	var rows []Row
	walkProperties(&rows, "", s)
	return rows
}

func walkProperties(rows *[]Row, prefix string, s *extv1.JSONSchemaProps) {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		if prefix == "" && (n == "apiVersion" || n == "kind" || n == "metadata") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		path := n
		if prefix != "" {
			path = prefix + "." + n
		}
		walk(rows, path, &p, required[n])
	}
}

func walk(rows *[]Row, path string, s *extv1.JSONSchemaProps, required bool) {
	v := validation(s)
	if required {
		v = append([]string{"required"}, v...)
	}
	*rows = append(*rows, Row{
		Path: path, Type: typeOf(s), Default: defaultOf(s),
		Validation: strings.Join(v, "; "), Description: oneLine(s.Description),
	})
	switch {
	case len(s.Properties) > 0:
		walkProperties(rows, path, s)
	case s.Items != nil && s.Items.Schema != nil:
		it := s.Items.Schema
		if len(it.Properties) > 0 {
			walkProperties(rows, path+"[]", it)
		} else if iv := validation(it); len(iv) > 0 {
			*rows = append(*rows, Row{Path: path + "[]", Type: typeOf(it), Validation: strings.Join(iv, "; "), Description: oneLine(it.Description)})
		}
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		ap := s.AdditionalProperties.Schema
		if len(ap.Properties) > 0 {
			walkProperties(rows, path+"[key]", ap)
		} else if av := validation(ap); len(av) > 0 {
			*rows = append(*rows, Row{Path: path + "[key]", Type: typeOf(ap), Validation: strings.Join(av, "; "), Description: oneLine(ap.Description)})
		}
	}
}

func typeOf(s *extv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array":
		if s.Items != nil && s.Items.Schema != nil {
			return "[]" + typeOf(s.Items.Schema)
		}
		return "[]any"
	case s.Type == "object" && len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(s.AdditionalProperties.Schema)
	case s.Type == "object" && len(s.Properties) == 0 && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "object (any fields)"
	case s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "any"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func defaultOf(s *extv1.JSONSchemaProps) string {
	if s.Default == nil {
		return ""
	}
	return code(string(s.Default.Raw))
}

func validation(s *extv1.JSONSchemaProps) []string {
	var v []string
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			vals = append(vals, code(string(e.Raw)))
		}
		v = append(v, "one of "+strings.Join(vals, ", "))
	}
	if s.Pattern != "" {
		v = append(v, "pattern "+code(s.Pattern))
	}
	if s.Minimum != nil {
		v = append(v, bound(">", s.ExclusiveMinimum, *s.Minimum))
	}
	if s.Maximum != nil {
		v = append(v, bound("<", s.ExclusiveMaximum, *s.Maximum))
	}
	v = appendCount(v, "length", s.MinLength, s.MaxLength)
	v = appendCount(v, "items", s.MinItems, s.MaxItems)
	v = appendCount(v, "properties", s.MinProperties, s.MaxProperties)
	if s.Nullable {
		v = append(v, "nullable")
	}
	if s.XListType != nil && *s.XListType != "atomic" {
		l := "list type " + *s.XListType
		if len(s.XListMapKeys) > 0 {
			l += " keyed by " + code(strings.Join(s.XListMapKeys, ", "))
		}
		v = append(v, l)
	}
	if s.XMapType != nil {
		v = append(v, "map type "+*s.XMapType)
	}
	for _, r := range s.XValidations {
		msg := r.Message
		if msg == "" && r.MessageExpression != "" {
			msg = "message from " + code(r.MessageExpression)
		}
		if msg == "" {
			msg = "rule fails"
		}
		v = append(v, fmt.Sprintf("CEL %s: %s", code(oneLine(r.Rule)), escape(oneLine(msg))))
	}
	return v
}

func bound(op string, exclusive bool, n float64) string {
	if !exclusive {
		op += "="
	}
	return op + " " + strconv.FormatFloat(n, 'f', -1, 64)
}

func appendCount(v []string, what string, lo, hi *int64) []string {
	switch {
	case lo != nil && hi != nil:
		return append(v, fmt.Sprintf("%s %d to %d", what, *lo, *hi))
	case lo != nil:
		return append(v, fmt.Sprintf("%s at least %d", what, *lo))
	case hi != nil:
		return append(v, fmt.Sprintf("%s at most %d", what, *hi))
	}
	return v
}

var spaces = regexp.MustCompile(`\s+`)

func oneLine(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// code is s as a Markdown code span inside a table cell.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// escape makes prose safe in a table cell: pipes escaped, and angle
// brackets outside code spans written as entities, so that "<name>" is not
// taken for an HTML tag.
func escape(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 0 {
			parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "`"), "|", `\|`)
}

// Render writes the page: an index, then one section per kind with a
// table of its fields. A kind listed in sameAs shows only the rows that
// differ from its twin's.
func Render(w *bytes.Buffer, kinds []Kind) {
	w.WriteString(`<!-- Code generated by internal/build/cmd/apidoc from package/xarmada and package/provider/crds; DO NOT EDIT. Run make generate. -->
# API reference

Every field of the APIs this project serves, generated from the XRDs in ` + "`package/xarmada`" + ` and
provider-armada's CRDs in ` + "`package/provider/crds`" + ` (themselves generated from the Go types in
` + "`apis/`" + `). **Validation** is what the API server enforces when an object is applied: required
fields, enums, patterns, bounds and CEL rules with the message it answers with. The function
checks more (see [troubleshooting](../guides/troubleshooting.md#refusals)). Crossplane adds its own
fields to claims and XRs (` + "`spec.compositionRef`" + `, ` + "`spec.crossplane`" + `, conditions), which are not listed.

`)
	w.WriteString("| Kind | API version | Scope | Defined by |\n|---|---|---|---|\n")
	for _, k := range kinds {
		name := "[" + k.Title() + "](#" + anchor(k.Title()) + ")"
		if k.Claim != "" {
			name += " (composite: " + code(k.Kind) + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, code(k.Group+"/"+k.Version), k.Scope, code(k.Source))
	}
	rows := map[string][]Row{}
	for _, k := range kinds {
		rows[k.Title()] = Rows(k.Schema)
	}
	for _, k := range kinds {
		fmt.Fprintf(w, "\n## %s\n\n", k.Title())
		fmt.Fprintf(w, "`apiVersion: %s/%s`, `kind: %s`, scope %s", k.Group, k.Version, k.Title(), k.Scope)
		if k.Claim != "" {
			fmt.Fprintf(w, "; the claim of the composite resource `%s`, which has the same spec", k.Kind)
		}
		fmt.Fprintf(w, ". Defined by the %s in `%s`.\n", k.Definition, k.Source)
		if k.Schema.Description != "" {
			fmt.Fprintf(w, "\n%s\n", escape(oneLine(k.Schema.Description)))
		}
		rs := rows[k.Title()]
		if twin, ok := sameAs[k.Title()]; ok && rows[twin] != nil {
			var removed []string
			rs, removed = diffRows(rows[twin], rs)
			fmt.Fprintf(w, "\nEvery field is as in [%s](#%s), except:\n", twin, anchor(twin))
			if len(removed) > 0 {
				fmt.Fprintf(w, "\n- not present: %s\n", strings.Join(codes(removed), ", "))
			}
			if len(rs) == 0 {
				continue
			}
		}
		w.WriteString("\n| Field | Type | Default | Validation | Description |\n|---|---|---|---|---|\n")
		for _, r := range rs {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", code(r.Path), escape(r.Type), r.Default, r.Validation, escape(r.Description))
		}
	}
}

// diffRows returns the rows of b that are not in a, and the paths of a
// that are not in b.
func diffRows(a, b []Row) ([]Row, []string) {
	inA, inB := map[Row]bool{}, map[string]bool{}
	for _, r := range a {
		inA[r] = true
	}
	var changed []Row
	for _, r := range b {
		inB[r.Path] = true
		if !inA[r] {
			changed = append(changed, r)
		}
	}
	var removed []string
	for _, r := range a {
		if !inB[r.Path] && !under(removed, r.Path) {
			removed = append(removed, r.Path)
		}
	}
	return changed, removed
}

func under(parents []string, path string) bool {
	for _, p := range parents {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

func codes(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return out
}

// anchor is the anchor GitHub gives a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces as '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
