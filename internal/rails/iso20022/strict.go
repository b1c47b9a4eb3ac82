package iso20022

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// Reading strictly. encoding/xml takes the last copy of an element that
// appears twice where its schema allows one (two amounts: the second
// would be recorded; two EndToEndIds: the second target paid), reads an
// element of another namespace as the ISO one of that name, and ignores
// what it does not know; a sender's parser may do otherwise, and the two
// would disagree about money. The reader checks every element against its
// version's schema (schema.go) as it reads: of the document's namespace,
// a child its parent's type has, at most as many times as the schema
// allows (a list such as two AddtlRmtInf is taken whole). The content of
// an xs:any (SplmtryData's envelope) is passed over unread.

// strictReader is a decoder of body that checks it against the schema of
// its namespace as it is read.
func strictReader(body []byte) (*xml.Decoder, error) {
	ns, err := Namespace(body)
	if err != nil {
		return nil, err
	}
	sc, err := schemaOf(ns)
	if err != nil {
		return nil, err
	}
	if sc == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMessage, ns)
	}
	raw := xml.NewDecoder(bytes.NewReader(body))
	return xml.NewTokenDecoder(&strictTokens{raw: raw, s: sc}), nil
}

// decodeStrict unmarshals body into v, checked against its schema
// (strictReader). What follows the root element is read to the end: an
// element there is refused.
func decodeStrict(body []byte, v any) error {
	d, err := strictReader(body)
	if err != nil {
		return err
	}
	if err := d.Decode(v); err != nil {
		return err
	}
	return readToEnd(d)
}

// readToEnd reads what follows the root: nothing but space and comments.
func readToEnd(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		if _, ok := tok.(xml.StartElement); ok {
			return fmt.Errorf("an element after the document's root")
		}
	}
}

// strictTokens passes the tokens of a document on, checking each element
// against the schema. The counts of the open elements' children are kept
// in one slice, each element's after the index from holds for it.
type strictTokens struct {
	raw    *xml.Decoder
	s      *schema
	names  []string // the open elements, outermost first
	types  []*ctype // their types (nil: text only)
	from   []int    // where each open element's children start in counts
	counts []count
	skip   int // depth inside an xs:any: not checked
	done   bool
}

type count struct {
	name string
	n    int
}

func (s *strictTokens) Token() (xml.Token, error) {
	tok, err := s.raw.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case xml.StartElement:
		if s.skip > 0 {
			s.skip++
			return tok, nil
		}
		name := t.Name.Local
		if t.Name.Space != s.s.ns {
			return nil, fmt.Errorf("element %s is of namespace %q, not the document's %s", name, t.Name.Space, s.s.ns)
		}
		if len(s.names) == 0 {
			if s.done || name != "Document" {
				return nil, fmt.Errorf("the document's root is %s, not Document", name)
			}
			s.push(name, s.s.types[s.s.root])
			return tok, nil
		}
		top := len(s.names) - 1
		parent := s.types[top]
		var c child
		ok := false
		if parent != nil {
			c, ok = parent.children[name]
		}
		switch {
		case !ok && parent != nil && parent.any:
			s.skip = 1
			return tok, nil
		case !ok:
			return nil, fmt.Errorf("element %s is not one %s holds in its schema", name, path(s.names))
		}
		i := s.from[top]
		for ; i < len(s.counts) && s.counts[i].name != name; i++ {
		}
		if i == len(s.counts) {
			s.counts = append(s.counts, count{name: name})
		}
		s.counts[i].n++
		if c.max >= 0 && s.counts[i].n > c.max {
			if c.max == 1 {
				return nil, fmt.Errorf("element %s appears twice in %s, where the schema allows it once", name, path(s.names))
			}
			return nil, fmt.Errorf("element %s appears more than %d times in %s", name, c.max, path(s.names))
		}
		s.push(name, s.s.types[c.typ])
	case xml.EndElement:
		if s.skip > 0 {
			s.skip--
			return tok, nil
		}
		if top := len(s.names) - 1; top >= 0 {
			s.counts = s.counts[:s.from[top]]
			s.names, s.types, s.from = s.names[:top], s.types[:top], s.from[:top]
			s.done = s.done || top == 0
		}
	case xml.CharData:
		if ct := s.top(); s.skip == 0 && ct != nil && !ct.text && len(bytes.TrimSpace(t)) > 0 {
			return nil, fmt.Errorf("text inside %s, which holds elements only", path(s.names))
		}
	}
	return tok, nil
}

// top is the type of the innermost open element (nil: text only, or none).
func (s *strictTokens) top() *ctype {
	if len(s.types) == 0 {
		return nil
	}
	return s.types[len(s.types)-1]
}

func (s *strictTokens) push(name string, t *ctype) {
	s.names = append(s.names, name)
	s.types = append(s.types, t)
	s.from = append(s.from, len(s.counts))
}
