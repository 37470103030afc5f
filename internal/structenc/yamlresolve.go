package structenc

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What a plain scalar resolves to, ported from go.yaml.in/yaml/v2's
// resolve.go (v2.4.4), which decides both how the JSON round trip reads a
// number and whether a string must be quoted to read back as a string.

// Resolved tags.
const (
	tagStr   = "str"
	tagOther = "other" // null, bool, float special, timestamp or merge
	tagInt   = "int"
	tagFloat = "float"
)

// resolveHint classifies a scalar by its first byte, as yaml/v2's
// resolveTable does: 'M' may be in resolveMap, '.' a float, 'D' and 'S'
// (digit, sign) a number or timestamp; 0 is always a string.
func resolveHint(c byte) byte {
	switch {
	case c == '+' || c == '-':
		return 'S'
	case c >= '0' && c <= '9':
		return 'D'
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return 'M'
	case c == '.':
		return '.'
	}
	return 0
}

// resolveMap holds the plain scalars yaml/v2 reads as booleans, nulls,
// special floats or the merge key.
var resolveMap = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []string{
		"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"", "~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
		"<<",
	} {
		m[s] = true
	}
	return m
}()

var (
	yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.\d+|\d+(\.\d*)?)([eE][-+]?\d+)?$`)
	base60float    = regexp.MustCompile(`^[-+]?\d[0-9_]*(?::[0-5]?\d)+(?:\.[0-9_]*)?$`)
)

// allowedTimestampFormats are the layouts yaml/v2 reads as timestamps.
var allowedTimestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// resolve returns the tag yaml/v2 gives the untagged plain scalar in, and
// for numbers its value: int64, uint64 or float64.
func resolve(in string) (string, any) {
	hint := byte('N')
	if in != "" {
		hint = resolveHint(in[0])
	}
	if hint == 0 {
		return tagStr, nil
	}
	if resolveMap[in] {
		return tagOther, nil
	}
	switch hint {
	case '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return tagFloat, f
		}
	case 'D', 'S':
		if isTimestamp(in) {
			return tagOther, nil
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return tagInt, i
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return tagInt, u
		}
		if yamlStyleFloat.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return tagFloat, f
			}
		}
		switch {
		case strings.HasPrefix(plain, "0b"):
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return tagInt, i
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return tagInt, u
			}
		case strings.HasPrefix(plain, "-0b"):
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return tagInt, i
			}
		}
	}
	return tagStr, nil
}

// resolvesToString reports whether s, written plain, reads back as the
// string s.
func resolvesToString(s string) bool {
	t, _ := resolve(s)
	return t == tagStr
}

// resolveNumber is the value yaml/v2 reads from a JSON number's text.
func resolveNumber(text string) any {
	_, v := resolve(text)
	return v
}

// isTimestamp is yaml/v2's parseTimestamp.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range allowedTimestampFormats {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}

// isBase60Float is yaml/v2's isBase60Float: such strings are quoted.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if (c != '+' && c != '-' && (c < '0' || c > '9')) || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

// compareASCIIKeys orders mapping keys of ASCII only as yaml/v2's
// keyList.Less orders string keys (runs of digits compare as numbers,
// letters after other characters), for a stable sort, which only asks
// whether one key sorts before another.
func compareASCIIKeys(a, b string) int {
	if naturalLess([]byte(a), []byte(b)) {
		return -1
	}
	return 1
}

func keyLess(a, b string) bool {
	if ascii(a) && ascii(b) {
		return naturalLess([]byte(a), []byte(b))
	}
	return naturalLess([]rune(a), []rune(b))
}

func ascii(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// naturalLess is yaml/v2's keyList.Less for two strings.
//
//nolint:gocognit // A port of yaml/v2's keyList.Less kept close to the original so the two can be compared.
func naturalLess[E byte | rune](ar, br []E) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(rune(ar[i]))
		bl := unicode.IsLetter(rune(br[i]))
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(rune(ar[j])); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(rune(ar[ai])); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(rune(br[bi])); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
