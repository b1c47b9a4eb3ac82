package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSnippets runs every verification snippet of docs/callbacks.md
// against the golden vectors (testdata/callbacks.json, which payd's own
// tests render), and checks that the page shows each snippet as it is.
// Under CI the Go, Node and Python snippets must run; PHP runs where the
// machine has it.
func TestSnippets(t *testing.T) {
	doc, err := os.ReadFile("../../callbacks.md")
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		lang, file string
		cmd        []string
		required   bool
	}{
		{"go", "main.go", []string{"go", "run", ".", "../../../testdata/callbacks.json"}, true},
		{"node", "../verify.js", []string{"node", "../verify.js", "../../../testdata/callbacks.json"}, true},
		{"python", "../verify.py", []string{"python3", "../verify.py", "../../../testdata/callbacks.json"}, true},
		{"php", "../verify.php", []string{"php", "../verify.php", "../../../testdata/callbacks.json"}, false},
	}
	for _, r := range runs {
		src, err := os.ReadFile(r.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), strings.TrimSpace(snippetBody(string(src)))) {
			t.Errorf("docs/callbacks.md does not show %s as it is", r.file)
		}
		if _, err := exec.LookPath(r.cmd[0]); err != nil {
			if r.required && os.Getenv("CI") == "true" {
				t.Errorf("%s is not installed", r.cmd[0])
			} else {
				t.Logf("%s: not installed here, not run", r.lang)
			}
			continue
		}
		out, err := exec.Command(r.cmd[0], r.cmd[1:]...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), r.lang+": 5 vectors verified") {
			t.Errorf("%s snippet: %v\n%s", r.lang, err, out)
		}
	}
}

// snippetBody is the part of a snippet file the page shows: everything
// before its vector-running main part.
func snippetBody(src string) string {
	for _, cut := range []string{"\nif __name__ == \"__main__\":", "\nif (require.main === module)", "\nif (isset($argv[1]))", "\nfunc main()"} {
		if i := strings.Index(src, cut); i >= 0 {
			return src[:i]
		}
	}
	return src
}
