// Package api holds payd's contract, api/openapi.yaml: embedded in the
// binary, served at /openapi.json and checked against every response the
// API tests receive.
package api

import (
	_ "embed"
	"encoding/json"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var YAML []byte

var load = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(YAML)
	if err != nil {
		return nil, err
	}
	return doc, nil
})

// Doc is the parsed contract.
func Doc() (*openapi3.T, error) { return load() }

var jsonDoc = sync.OnceValues(func() ([]byte, error) {
	doc, err := load()
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
})

// JSON is the contract as JSON.
func JSON() ([]byte, error) { return jsonDoc() }
