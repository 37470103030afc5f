package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Condition is one of an object's status.conditions.
type Condition struct {
	Type, Status, Reason, Message string
}

// String renders the condition as Type=Status (Reason): Message.
func (c Condition) String() string {
	return fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
}

// Conditions returns an object's status.conditions, in order. Fields that
// are not strings read as empty.
func Conditions(u *unstructured.Unstructured) []Condition {
	if u == nil {
		return nil
	}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := make([]Condition, 0, len(raw))
	for _, ci := range raw {
		m, ok := ci.(map[string]any)
		if !ok {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		out = append(out, Condition{Type: s("type"), Status: s("status"), Reason: s("reason"), Message: s("message")})
	}
	return out
}

// ConditionOf returns an object's condition of type typ; ok is false if it
// has none.
func ConditionOf(u *unstructured.Unstructured, typ string) (c Condition, ok bool) {
	for _, c := range Conditions(u) {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

// ConditionSummary renders an object's conditions one after another, for
// failures and progress reports; "(none)" if it has none.
func ConditionSummary(u *unstructured.Unstructured) string {
	conds := Conditions(u)
	if len(conds) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}
