package structenc

import "encoding/json"

// MarshalIndentJSON is json.MarshalIndent(v, "", "  "): json.Marshal, then
// the indentation in one pass over the compact text rather than through
// encoding/json's scanner, which steps a state machine for every byte and
// costs more than the encoding itself. The dashboards are its only large
// users.
func MarshalIndentJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return appendIndentJSON(make([]byte, 0, 2*len(b)), b), nil
}

// appendIndentJSON appends valid JSON src to dst as json.Indent(dst, src,
// "", "  ") writes it: a newline and two spaces per level after an opening
// bracket, a comma and before a closing bracket, a space after a colon,
// empty objects and arrays as {} and [], whitespace outside strings
// dropped and strings copied as they are.
func appendIndentJSON(dst, src []byte) []byte {
	depth := 0
	open := false // an opening bracket waits for its first element
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			dst = appendIndentNewline(dst, depth)
		}
		switch c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			dst = append(dst, src[i:j]...)
			i = j - 1
		case '{', '[':
			open = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			dst = appendIndentNewline(dst, depth)
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				dst = appendIndentNewline(dst, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func appendIndentNewline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}
