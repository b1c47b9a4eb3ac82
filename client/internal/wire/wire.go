// Package wire holds the JSON types of payd's contract, generated from
// api/openapi.yaml by oapi-codegen: the client's records and requests are
// these types (client/types.go), so the client cannot drift from the
// contract. Amounts are payd.Money and times time.Time (the spec's x-go-type).
package wire

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../../api/openapi.yaml
