// Command errorsdoc writes docs/errors.md (go generate, from the module root).
package main

import (
	"fmt"
	"os"

	"payd/internal/httpapi"
)

func main() {
	out := "docs/errors.md"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if err := os.WriteFile(out, httpapi.ErrorsMarkdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "errorsdoc:", err)
		os.Exit(1)
	}
}
