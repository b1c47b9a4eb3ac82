// Package xsdtest validates ISO 20022 messages against the base XSD of
// their version (../xsd) with xmllint, for the tests of every
// package that writes or captures rails messages. Where xmllint is not
// installed the tests skip, except when PAYD_REQUIRE_XMLLINT is set (CI
// sets it and installs xmllint), where they fail.
package xsdtest

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Dir is the directory of the vendored XSDs.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "xsd")
}

// Available skips t (or fails it under CI) when xmllint is missing.
func Available(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("PAYD_REQUIRE_XMLLINT") != "" {
			t.Fatal("xmllint is required (PAYD_REQUIRE_XMLLINT is set): apt-get install libxml2-utils")
		}
		t.Skip("xmllint is not installed (Debian: libxml2-utils); the messages are not validated")
	}
}

// Schema is the XSD file of a document's namespace, "" when payd has none.
func Schema(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			ns := se.Name.Space
			i := strings.LastIndex(ns, ":")
			if i < 0 {
				return ""
			}
			path := filepath.Join(Dir(), ns[i+1:]+".xsd")
			if _, err := os.Stat(path); err != nil {
				return ""
			}
			return path
		}
	}
}

// Validate fails t when body does not validate against the XSD of its
// namespace (or names none payd knows). name says which message it is.
func Validate(t testing.TB, name string, body []byte) {
	t.Helper()
	Available(t)
	xsd := Schema(body)
	if xsd == "" {
		t.Errorf("%s: not an ISO 20022 document of a version payd speaks:\n%s", name, body)
		return
	}
	f := filepath.Join(t.TempDir(), "message.xml")
	if err := os.WriteFile(f, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("xmllint", "--noout", "--schema", xsd, f).CombinedOutput()
	if err != nil {
		t.Errorf("%s does not validate against %s:\n%s\n%s", name, filepath.Base(xsd), out, body)
	}
}

// Accepts reports whether body validates against the XSD of its namespace
// (false when payd has none), for tests that take what a schema accepts.
func Accepts(t testing.TB, body []byte) bool {
	t.Helper()
	Available(t)
	xsd := Schema(body)
	if xsd == "" {
		return false
	}
	f := filepath.Join(t.TempDir(), "document.xml")
	if err := os.WriteFile(f, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return exec.Command("xmllint", "--noout", "--schema", xsd, f).Run() == nil
}
