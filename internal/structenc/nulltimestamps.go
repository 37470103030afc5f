package structenc

// DropNullTimestamps removes the "creationTimestamp": null that a typed
// ObjectMeta encodes, at any depth: a composed object or a manifest must
// not carry it (the desired conversion drops it the same way).
func DropNullTimestamps(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			if k == "creationTimestamp" {
				delete(m, k)
			}
		case map[string]any:
			DropNullTimestamps(t)
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					DropNullTimestamps(em)
				}
			}
		}
	}
}
