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

// decodeStrict unmarshals body into v after checking that no element
// appears twice under one parent unless it may (repeatable).
func decodeStrict(body []byte, v any) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	type level struct {
		name string
		seen map[string]bool
	}
	stack := []level{{name: "", seen: map[string]bool{}}}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			parent := stack[len(stack)-1]
			if parent.seen[t.Name.Local] && !repeatable[t.Name.Local] {
				return fmt.Errorf("element %s appears twice in %s, where the schema allows it once", t.Name.Local, parent.name)
			}
			parent.seen[t.Name.Local] = true
			stack = append(stack, level{name: t.Name.Local, seen: map[string]bool{}})
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return xml.Unmarshal(body, v)
}
