package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAppendString: what AppendString writes, encoding/json reads back as
// the string, invalid UTF-8 replaced by U+FFFD, and nothing is allocated
// beyond the buffer.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\xff\xfe", "é\n\t\r\x00\x1f", "😀</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		got := AppendString(nil, s)
		if err := json.Unmarshal(got, &back); err != nil || !validReplaced(s, back) {
			t.Fatalf("%q → %s reads back %q (%v)", s, got, back, err)
		}
	})
}

// validReplaced reports whether back is s with each invalid byte replaced
// by U+FFFD.
func validReplaced(s, back string) bool {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String() == back
}

func TestAppendStringAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 256)
	s := "a \"quoted\" line\nwith é and \xff"
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], s) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
