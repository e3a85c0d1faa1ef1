// Package jsontext appends strings to a byte slice as JSON, without
// allocating: the one escaper of the request bodies surge's client builds
// and of the answers its simulator writes, both on their hot paths.
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string. Invalid UTF-8 bytes
// become U+FFFD, as with encoding/json; unlike it, <, > and & are not
// escaped (they need not be).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = AppendEscaped(b, s)
	return append(b, '"')
}

// AppendEscaped appends s escaped for the inside of a JSON string.
func AppendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
