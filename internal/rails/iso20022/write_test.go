package iso20022

import (
	"encoding/xml"
	"math/rand/v2"
	"reflect"
	"testing"
)

// texts are the values the filler draws strings from: empty, plain, every
// character XML escapes, Cyrillic and Romanian letters, a control
// character and invalid UTF-8.
var texts = []string{"", "MDL", "PAYDMD22", "Order 42", `a<b>&"c'd`, "tab\there\nnew\rline", "Жанна Ștefănescu", "\x01x", "bad\xffutf8", "  spaced  "}

// filler sets every field of a message at random and remembers which
// fields it has seen set and unset.
type filler struct {
	r     *rand.Rand
	set   map[string]bool
	unset map[string]bool
}

func (f *filler) fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		s := texts[f.r.IntN(len(texts))]
		v.SetString(s)
		f.mark(path, s != "")
	case reflect.Pointer:
		if f.r.IntN(2) == 0 {
			v.SetZero()
			f.mark(path, false)
			return
		}
		f.mark(path, true)
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), path)
	case reflect.Slice:
		n := f.r.IntN(3)
		f.mark(path, n > 0)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			f.fill(v.Index(i), path)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[xml.Name]() {
			return
		}
		for i := range v.NumField() {
			f.fill(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		panic("filler: no rule for " + path + " of kind " + v.Kind().String())
	}
}

func (f *filler) mark(path string, set bool) {
	if set {
		f.set[path] = true
	} else {
		f.unset[path] = true
	}
}

// TestWriterMatchesEncodingXML: each message payd writes without
// reflection is written byte for byte as encoding/xml writes its struct,
// for random values of every field, each field seen both set and unset.
func TestWriterMatchesEncodingXML(t *testing.T) {
	for _, m := range []message{&Pain013{}, &Camt055{}, &Pacs002{}, &Pacs004{}} {
		typ := reflect.TypeOf(m).Elem()
		f := &filler{r: rand.New(rand.NewPCG(1, 2)), set: map[string]bool{}, unset: map[string]bool{}}
		for i := range 3000 {
			v := reflect.New(typ)
			f.fill(v.Elem(), typ.Name())
			got, err := Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshalReflect(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("%s #%d: the writer differs from encoding/xml:\n--- writer\n%s\n--- encoding/xml\n%s", typ.Name(), i, got, want)
			}
		}
		for p := range f.set {
			if !f.unset[p] {
				t.Errorf("%s was never left unset", p)
			}
		}
		for p := range f.unset {
			if !f.set[p] {
				t.Errorf("%s was never set", p)
			}
		}
		if len(f.set) < 10 {
			t.Errorf("%s: only %d fields filled", typ.Name(), len(f.set))
		}
	}
}
