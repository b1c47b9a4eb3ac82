// Command verify is docs/callbacks.md's Go snippet (standard library only):
// it verifies the callbacks of the vectors file given as its argument.
// A Go merchant can also use payd's callback package, which does the same.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// headerOK checks X-Signature: "sha256=" + Base64(HMAC-SHA256(key, body + "." + timestamp)).
func headerOK(key string, body []byte, timestamp, xSignature string) bool {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	m.Write([]byte("." + timestamp))
	want := "sha256=" + base64.StdEncoding.EncodeToString(m.Sum(nil))
	return subtle.ConstantTimeCompare([]byte(want), []byte(xSignature)) == 1
}

// bodySignature is the "signature" of QR, RTP and refund callbacks.
func bodySignature(key string, result map[string]json.RawMessage) (string, error) {
	values := map[string]string{}
	for name, raw := range result {
		var v any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "", err
		}
		var s string
		switch x := v.(type) {
		case nil:
			continue
		case json.Number: // amounts with exactly two decimals, from the decimal text
			f, err := strconv.ParseFloat(x.String(), 64)
			if err != nil {
				return "", err
			}
			s = strconv.FormatFloat(f, 'f', 2, 64)
		case string:
			s = x
		default:
			s = string(raw)
		}
		if strings.TrimSpace(s) != "" {
			values[name] = s
		}
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = values[n]
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, ":") + ":" + key))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// verify checks a callback; it returns an error unless it is genuine.
func verify(key string, body []byte, timestamp, xSignature string) error {
	if !headerOK(key, body, timestamp, xSignature) {
		return errors.New("X-Signature does not match")
	}
	var env struct {
		Result    map[string]json.RawMessage `json:"result"`
		Signature string                     `json:"signature"`
	}
	if json.Unmarshal(body, &env) == nil && env.Result != nil { // QR, RTP and refund callbacks
		sig, err := bodySignature(key, env.Result)
		if err != nil || subtle.ConstantTimeCompare([]byte(sig), []byte(env.Signature)) != 1 {
			return errors.New("body signature does not match")
		}
	}
	return nil
}

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var vectors []struct {
		Name, Key, Body, XSignature string
		Timestamp                   int64
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, v := range vectors {
		ts := strconv.FormatInt(v.Timestamp, 10)
		if err := verify(v.Key, []byte(v.Body), ts, v.XSignature); err != nil {
			fmt.Fprintln(os.Stderr, v.Name+":", err)
			os.Exit(1)
		}
		if verify("another-key", []byte(v.Body), ts, v.XSignature) == nil {
			fmt.Fprintln(os.Stderr, v.Name+": verified under another key")
			os.Exit(1)
		}
	}
	fmt.Printf("go: %d vectors verified\n", len(vectors))
}
