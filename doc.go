// Package payd is the domain of the payd payments service: money, time,
// error codes, merchants, Request to Pay, QR codes, checkouts, payments,
// refunds and callbacks. It holds the rules and the state machines and does
// no I/O; it imports only the standard library. Storage, HTTP, pages and
// background work live in internal/ packages that import this one, and
// cmd/payd wires them together.
package payd
