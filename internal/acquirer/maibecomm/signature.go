package maibecomm

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sign is the e-Commerce signature of a callback's result object: the
// values of its fields in the order of their names (compared as bytes;
// nested objects and arrays likewise, flattened in place), the signature
// key appended, joined with ':', hashed with SHA-256 and Base64-encoded.
// Values are written as the acquirer's reference code (PHP) writes them:
// numbers in their shortest form (10.00 is "10"), true "1", false and
// null "".
func Sign(result map[string]any, key string) string {
	var leaves []string
	flatten(result, &leaves)
	leaves = append(leaves, key)
	sum := sha256.Sum256([]byte(strings.Join(leaves, ":")))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Verify reports whether signature is result's, compared in constant time.
func Verify(result map[string]any, signature, key string) bool {
	want := Sign(result, key)
	return subtle.ConstantTimeCompare([]byte(want), []byte(signature)) == 1
}

func flatten(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			*out = append(*out, "")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flatten(x[k], out)
		}
	case []any:
		if len(x) == 0 {
			*out = append(*out, "")
			return
		}
		// A list's keys are its indexes, sorted as text too ("10" < "2").
		idx := make([]string, len(x))
		for i := range x {
			idx[i] = strconv.Itoa(i)
		}
		sort.Strings(idx)
		for _, k := range idx {
			i, _ := strconv.Atoi(k)
			flatten(x[i], out)
		}
	default:
		*out = append(*out, scalar(v))
	}
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return ""
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return number(f)
	case float64:
		return number(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// number writes a float as PHP's string conversion does for the values a
// callback carries: integral values without a fraction, others in their
// shortest decimal form.
func number(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
