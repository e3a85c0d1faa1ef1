package simhttp

import (
	"encoding/base64"
	"encoding/json"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads JPEG headers
	_ "image/png"  // and PNG headers
	"strings"

	"github.com/surge-bench/surge/internal/sim"
)

// headerBase64 is how much of an image's base64 the simulator decodes to
// read its size: PNG and baseline JPEG headers are in the first bytes.
const headerBase64 = 8 << 10

// imageTokensOf reads the size of an inline image (a data: URL, or bare
// base64 with its media type beside it) from its header and returns its
// prompt tokens; ok is false for an image it cannot read (a URL to fetch,
// not base64, not PNG or JPEG).
func imageTokensOf(data string) (int, bool) {
	if rest, ok := strings.CutPrefix(data, "data:"); ok {
		_, b64, found := strings.Cut(rest, ";base64,")
		if !found {
			return 0, false
		}
		data = b64
	}
	if len(data) > headerBase64 {
		data = data[:headerBase64]
	}
	raw, err := base64.StdEncoding.DecodeString(data[:len(data)/4*4])
	if err != nil {
		return 0, false
	}
	cfg, _, err := image.DecodeConfig(strings.NewReader(string(raw)))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 {
		return 0, false
	}
	return sim.ImageTokens(cfg.Width, cfg.Height), true
}

// imagePart reads the image of a content part in any API's shape: chat's
// {"type":"image_url","image_url":{"url":…}}, Responses'
// {"type":"input_image","image_url":"…"}, Messages'
// {"type":"image","source":{"type":"base64","data":…}}. It reports
// whether the part is an image, and its tokens when readable.
func imagePart(typ string, imageURL json.RawMessage, source *wireImageSource) (tokens int, isImage, ok bool) {
	switch typ {
	case "image_url", "input_image":
		var url string
		if len(imageURL) > 0 && imageURL[0] == '{' {
			var o struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(imageURL, &o) != nil {
				return 0, true, false
			}
			url = o.URL
		} else if json.Unmarshal(imageURL, &url) != nil {
			return 0, true, false
		}
		tokens, ok = imageTokensOf(url)
		return tokens, true, ok
	case "image":
		if source == nil || source.Type != "base64" {
			return 0, true, false
		}
		tokens, ok = imageTokensOf(source.Data)
		return tokens, true, ok
	}
	return 0, false, false
}

// wireImageSource is a Messages image block's source.
type wireImageSource struct {
	Type string `json:"type"`
	Data string `json:"data"`
}
