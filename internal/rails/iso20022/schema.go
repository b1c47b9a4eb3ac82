package iso20022

import (
	"embed"
	"encoding/xml"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
)

// The message schemas, embedded: every inbound document is read against
// the structure its version's XSD gives (strict.go). payd does not run a
// full validator; it keeps what decides whether two parsers read one
// document the same way: which elements a type has, how many times each
// may appear, and that they are of the document's namespace. (Hand-
// written because the validators Go has bind libxml2 through cgo, which the
// static binary does not carry; the tests check what payd writes, and the
// real statements it reads, with xmllint itself.)

//go:embed xsd/*.xsd
var xsdFiles embed.FS

// schema is the structure of one message version: its complex types, by
// name, and the type of its root element.
type schema struct {
	ns    string
	root  string // the type of Document
	types map[string]*ctype
}

// ctype is a complex type: the child elements it may hold, with the type
// and the most times each may appear (unbounded: -1), and whether it holds
// an xs:any (whose content, of any namespace, is not read).
type ctype struct {
	children map[string]child
	any      bool
	text     bool // xs:simpleContent: text (an amount with its Ccy), no children
}

type child struct {
	typ string
	max int
}

var (
	schemasOnce sync.Once
	schemas     map[string]*schema // by target namespace
	schemasErr  error
)

// schemaOf is the schema of a message namespace; nil when payd has none.
func schemaOf(ns string) (*schema, error) {
	schemasOnce.Do(func() {
		schemas = map[string]*schema{}
		schemasErr = fs.WalkDir(xsdFiles, "xsd", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := xsdFiles.ReadFile(path)
			if err != nil {
				return err
			}
			s, err := parseXSD(b)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			schemas[s.ns] = s
			return nil
		})
	})
	if schemasErr != nil {
		return nil, schemasErr
	}
	return schemas[ns], nil
}

// xsdNode is an XSD element as the parser walks it.
type xsdNode struct {
	XMLName  xml.Name
	Name     string    `xml:"name,attr"`
	Type     string    `xml:"type,attr"`
	Max      string    `xml:"maxOccurs,attr"`
	Target   string    `xml:"targetNamespace,attr"`
	Children []xsdNode `xml:",any"`
}

// parseXSD reads the structure of one of ISO 20022's generated schemas:
// xs:element at the top, xs:complexType of xs:sequence and xs:choice
// (nested, each with maxOccurs), xs:simpleContent, xs:any.
func parseXSD(b []byte) (*schema, error) {
	var root xsdNode
	if err := xml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	s := &schema{ns: root.Target, types: map[string]*ctype{}}
	for _, n := range root.Children {
		switch n.XMLName.Local {
		case "element":
			if n.Name == "Document" {
				s.root = n.Type
			}
		case "complexType":
			t := &ctype{children: map[string]child{}}
			for _, c := range n.Children {
				t.add(c, 1)
			}
			s.types[n.Name] = t
		}
	}
	if s.ns == "" || s.root == "" || s.types[s.root] == nil {
		return nil, fmt.Errorf("not a message schema (namespace %q, Document of type %q)", s.ns, s.root)
	}
	return s, nil
}

// add takes a particle into t, its occurrences multiplied by those of the
// groups around it (times; -1 unbounded).
func (t *ctype) add(n xsdNode, times int) {
	m := mulMax(times, maxOf(n.Max))
	switch n.XMLName.Local {
	case "sequence", "choice":
		for _, c := range n.Children {
			t.add(c, m)
		}
	case "element":
		c := t.children[n.Name]
		c.typ = n.Type
		c.max = addMax(c.max, m) // one name twice in a type adds up
		t.children[n.Name] = c
	case "any":
		t.any = true
	case "simpleContent":
		t.text = true
	}
}

func maxOf(s string) int {
	switch s {
	case "":
		return 1
	case "unbounded":
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func mulMax(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a * b
}

func addMax(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

// path names an element for an error: its parents' names, outermost first.
func path(names []string) string { return strings.Join(names, "/") }
