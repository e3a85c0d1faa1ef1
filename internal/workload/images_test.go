package workload

import (
	"bytes"
	"encoding/base64"
	"image"
	"testing"

	"github.com/surge-bench/surge/internal/schedule"
)

// TestImagesRequests: each request carries a draw of the count of images,
// taken from the run's pool of distinct images of the size and format
// asked for, decodable, the same for the same seed.
func TestImagesRequests(t *testing.T) {
	prof := Profile{Name: "vision", Prompt: Fixed(64), Output: Fixed(16), MaxTokens: 16}
	for _, format := range []string{ImagePNG, ImageJPEG} {
		spec := ImageSpec{Count: Uniform(1, 3), Width: 96, Height: 64, Format: format}
		g, err := New(Config{Profile: prof, Seed: 3, Images: spec})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[int]int{}
		distinct := map[string]bool{}
		for seq := range int64(200) {
			r := g.Generate(schedule.Arrival{Seq: seq})
			counts[len(r.Images)]++
			for _, im := range r.Images {
				distinct[im.Base64] = true
			}
			if again := g.Generate(schedule.Arrival{Seq: seq}); len(again.Images) != len(r.Images) {
				t.Fatalf("seq %d: %d images, then %d", seq, len(r.Images), len(again.Images))
			}
		}
		if len(counts) != 3 {
			t.Errorf("%s: counts drawn %v, want each of 1..3", format, counts)
		}
		if len(distinct) != imagePoolSize {
			t.Errorf("%s: %d distinct images sent, want the pool's %d", format, len(distinct), imagePoolSize)
		}
		for b64 := range distinct {
			raw, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			cfg, got, err := image.DecodeConfig(bytes.NewReader(raw))
			if err != nil || got != format || cfg.Width != 96 || cfg.Height != 64 {
				t.Fatalf("an image decodes as %s %dx%d (%v), want %s 96x64", got, cfg.Width, cfg.Height, err, format)
			}
			break
		}
	}
	bad := Config{Profile: prof, Images: ImageSpec{Count: Fixed(1), Width: 0, Height: 10}}
	if _, err := New(bad); err == nil {
		t.Error("New accepted a 0-pixel-wide image")
	}
}
