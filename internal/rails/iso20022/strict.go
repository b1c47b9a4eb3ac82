package iso20022

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// Reading strictly. encoding/xml takes the last copy of an element that
// appears twice where its schema allows one (two amounts: the second
// would be recorded; two EndToEndIds: the second target paid), and a
// sender's parser may take the first: the two would disagree about money.
// decodeStrict refuses any element repeated under one parent, except
// those the schemas let repeat and payd reads as lists.
var repeatable = map[string]bool{
	"Ustrd": true, "Strd": true, "AddtlInf": true, "StsRsnInf": true, "AdrLine": true, "Othr": true,
	"SplmtryData": true, "ChrgsInf": true, "RltdRmtInf": true, "InstrForCdtrAgt": true, "InstrForNxtAgt": true,
	"RgltryRptg": true, "NbOfTxsPerSts": true, "SvcLvl": true, "Authstn": true,
	// Lists payd reads and then requires to hold one entry (checked after decoding).
	"CdtTrfTxInf": true, "TxInfAndSts": true, "OrgnlPmtInfAndSts": true, "Ntry": true, "Stmt": true, "Ntfctn": true,
	"NtryDtls": true, "TxDtls": true, "Bal": true,
}

// decodeStrict unmarshals body into v, refusing any element that appears
// twice under one parent unless it may (repeatable). The document is read
// once: the check sits between the tokenizer and the decoding (a first
// pass of its own took as long as the decoding), and what follows the
// root element is read to the end: an element there is refused.
func decodeStrict(body []byte, v any) error {
	d := xml.NewTokenDecoder(&strictTokens{raw: xml.NewDecoder(bytes.NewReader(body)), names: []string{"the document"}, from: []int{0}})
	if err := d.Decode(v); err != nil {
		return err
	}
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

// strictTokens passes the raw tokens of a document on (the decoder reading
// them matches its end tags and resolves its namespaces) and fails at the
// second copy of an element that may appear once. The open elements'
// children seen so far are kept in one slice, each element's after the
// index from holds for it: an element has a dozen children at most, and a
// map for each took 51 of the check's 68 allocations a pacs.008.
type strictTokens struct {
	raw   *xml.Decoder
	names []string // the open elements, outermost first
	from  []int    // where each open element's children start in seen
	seen  []string
}

func (s *strictTokens) Token() (xml.Token, error) {
	tok, err := s.raw.RawToken()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case xml.StartElement:
		top := len(s.from) - 1
		name := t.Name.Local
		if !repeatable[name] {
			for _, sibling := range s.seen[s.from[top]:] {
				if sibling == name {
					return nil, fmt.Errorf("element %s appears twice in %s, where the schema allows it once", name, s.names[top])
				}
			}
		}
		s.seen = append(s.seen, name)
		s.names = append(s.names, name)
		s.from = append(s.from, len(s.seen))
	case xml.EndElement:
		if top := len(s.from) - 1; top > 0 { // an end with no start is the decoder's to refuse
			s.seen = s.seen[:s.from[top]]
			s.names, s.from = s.names[:top], s.from[:top]
		}
	}
	return tok, nil
}
