package simhttp

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"testing"
)

// testImage is a w×h image in format ("png" or "jpeg"), base64.
func testImage(t testing.TB, w, h int, format string) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	var err error
	if format == "jpeg" {
		err = jpeg.Encode(&buf, img, nil)
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestImageTokens: an inline image costs ⌈W/28⌉·⌈H/28⌉ prompt tokens,
// read from its header in every API's shape; an image the simulator
// cannot read is refused by name.
func TestImageTokens(t *testing.T) {
	png56 := testImage(t, 56, 29, "png")   // 2 × 2 = 4 tokens
	jpg := testImage(t, 1024, 768, "jpeg") // 37 × 28 = 1036 tokens
	if n, ok := imageTokensOf("data:image/png;base64," + png56); !ok || n != 4 {
		t.Errorf("56×29 PNG: %d tokens (%v), want 4", n, ok)
	}
	if n, ok := imageTokensOf("data:image/jpeg;base64," + jpg); !ok || n != 1036 {
		t.Errorf("1024×768 JPEG: %d tokens (%v), want 1036", n, ok)
	}
	for _, bad := range []string{"https://example.com/cat.png", "data:image/png;base64,!!!!", "data:text/plain;base64,aGVsbG8=", ""} {
		if n, ok := imageTokensOf(bad); ok {
			t.Errorf("imageTokensOf(%q) = %d, ok", bad, n)
		}
	}
	text := EstimatePromptTokens(true, "abcd")
	for _, tc := range []struct {
		name, body string
		decode     func([]byte) (int, error)
	}{
		{"chat", `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png56 + `"}}]}]}`,
			func(b []byte) (int, error) {
				p, err := decodeAPI(apiChat, b, defaultTokens, nil, 0)
				return p.promptTokens, errOrNil(err)
			}},
		{"responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"abcd"},{"type":"input_image","image_url":"data:image/png;base64,` + png56 + `"}]}]}`,
			func(b []byte) (int, error) {
				p, err := decodeAPI(apiResponses, b, defaultTokens, nil, 0)
				return p.promptTokens, errOrNil(err)
			}},
		{"messages", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png56 + `"}}]}]}`,
			func(b []byte) (int, error) {
				p, err := decodeAPI(apiMessages, b, defaultTokens, nil, 0)
				return p.promptTokens, errOrNil(err)
			}},
	} {
		n, err := tc.decode([]byte(tc.body))
		if err != nil || n != text+4 {
			t.Errorf("%s: %d prompt tokens (%v), want the text's %d + the image's 4", tc.name, n, err, text)
		}
	}
}

func errOrNil(e *apiError) error {
	if e == nil {
		return nil
	}
	return e
}
