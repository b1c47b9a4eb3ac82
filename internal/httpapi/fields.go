package httpapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"payd/api"
)

// A request field that payd does not take is refused (400 naming it), so
// that a misspelling or an option payd does not offer never silently
// changes what a request does. The members each request body may have
// are read from the contract, api/openapi.yaml: its request schemas are
// the one list, and they say additionalProperties: false.

// fieldSet is the members an object of a request body may have.
type fieldSet struct {
	// members maps each member to the set of its own object (or of the
	// objects of its array), nil when its value is not an object.
	members map[string]*fieldSet
}

// requestFields maps each route pattern ("POST /v2/rtp") to the members of
// its body. A route the contract gives no body takes no members.
type requestFields map[string]*fieldSet

var noFields = &fieldSet{}

// loadRequestFields reads the request schemas of the contract.
func loadRequestFields() requestFields {
	doc, err := api.Doc()
	if err != nil {
		panic("payd: the embedded contract does not load: " + err.Error())
	}
	rf := requestFields{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil {
				continue
			}
			rf[strings.ToUpper(method)+" "+path] = schemaFields(mt.Schema.Value)
		}
	}
	return rf
}

// schemaFields is the field set of an object schema (or of the objects of
// an array schema); nil for any other schema.
func schemaFields(s *openapi3.Schema) *fieldSet {
	if s == nil {
		return nil
	}
	if s.Type.Is("array") && s.Items != nil {
		return schemaFields(s.Items.Value)
	}
	if !s.Type.Is("object") {
		return nil
	}
	fs := &fieldSet{members: map[string]*fieldSet{}}
	for name, p := range s.Properties {
		fs.members[name] = schemaFields(p.Value)
	}
	return fs
}

// of is the field set of the route a request matched.
func (rf requestFields) of(pattern string) *fieldSet {
	if fs := rf[pattern]; fs != nil {
		return fs
	}
	return noFields
}

// unknown calls report with the path of every member of fields (an
// object at prefix) that the set does not have, looking into the nested
// objects and arrays of objects the set describes.
func (fs *fieldSet) unknown(fields map[string]json.RawMessage, prefix string, report func(path string)) {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[name]
		sub, ok := fs.members[name]
		if !ok {
			report(prefix + name)
			continue
		}
		if sub == nil || len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '{':
			sub.object(raw, prefix+name, report)
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				continue
			}
			for i, it := range items {
				if len(it) > 0 && it[0] == '{' {
					sub.object(it, prefix+name+"["+strconv.Itoa(i)+"]", report)
				}
			}
		}
	}
}

func (fs *fieldSet) object(raw json.RawMessage, path string, report func(string)) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		fs.unknown(fields, path+".", report)
	}
}
