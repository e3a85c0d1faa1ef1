package workload

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"sync"
)

// Image is one image a request carries, encoded once and shared by every
// request that sends it: never downloaded, generated from the seed.
type Image struct {
	MediaType     string // image/png or image/jpeg
	Base64        string // the encoded file, standard base64
	Width, Height int
}

// The image formats --image-format takes.
const (
	ImagePNG  = "png"
	ImageJPEG = "jpeg"
)

// imagePoolSize is how many distinct images a run draws from: enough that
// a server's cache of processed images does not serve most of them, few
// enough to encode once (a 1024×1024 PNG takes tens of milliseconds).
const imagePoolSize = 16

// MaxImageSide bounds an image's width and height, pixels.
const MaxImageSide = 8192

// ImageSpec says what images the requests carry: how many per request (a
// distribution; Kind "" = none), their size and format.
type ImageSpec struct {
	Count         Dist
	Width, Height int
	Format        string // ImagePNG ("" too) or ImageJPEG
}

// Validate checks the spec; errors name the setting.
func (s *ImageSpec) Validate() error {
	if s.Count.Kind == "" {
		return nil
	}
	if err := s.Count.Validate(); err != nil {
		return fmt.Errorf("workload: images: %w", err)
	}
	if s.Width < 1 || s.Height < 1 || s.Width > MaxImageSide || s.Height > MaxImageSide {
		return fmt.Errorf("workload: image size: each side must be 1..%d pixels, got %dx%d", MaxImageSide, s.Width, s.Height)
	}
	if s.Format != "" && s.Format != ImagePNG && s.Format != ImageJPEG {
		return fmt.Errorf("workload: image format: png or jpeg, got %q", s.Format)
	}
	return nil
}

// poolKey names a run's images: generators of the same run (one per
// goroutine) share them.
type poolKey struct {
	w, h   int
	format string
	seed   int64
}

var (
	poolsMu sync.Mutex
	pools   = map[poolKey][]Image{}
)

// sharedImages returns the run's images for spec and seed, made on first
// use and kept for the process (a few runs' worth at most).
func sharedImages(spec *ImageSpec, seed int64) []Image {
	k := poolKey{spec.Width, spec.Height, spec.Format, seed}
	poolsMu.Lock()
	defer poolsMu.Unlock()
	if p, ok := pools[k]; ok {
		return p
	}
	p := make([]Image, imagePoolSize)
	for i := range p {
		p[i] = makeImage(spec, uint64(seed), uint64(i))
	}
	pools[k] = p
	return p
}

// makeImage draws image i of a run: smooth colour gradients under blocks
// of noise, so that it compresses about as a photograph does (neither a
// flat colour nor pure noise), encoded in the spec's format.
func makeImage(spec *ImageSpec, seed, i uint64) Image {
	rng := rand.New(rand.NewPCG(seed, 0x696d616765^i)) // "image"
	w, h := spec.Width, spec.Height
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r0, g0, b0 := rng.IntN(256), rng.IntN(256), rng.IntN(256)
	for y := range h {
		for x := range w {
			n := rng.IntN(24)
			img.SetRGBA(x, y, color.RGBA{
				R: uint8((r0 + 255*x/max(w, 1) + n) % 256),
				G: uint8((g0 + 255*y/max(h, 1) + n) % 256),
				B: uint8((b0 + 128*(x+y)/max(w+h, 1)) % 256),
				A: 255,
			})
		}
	}
	var buf bytes.Buffer
	mt := "image/png"
	if spec.Format == ImageJPEG {
		mt = "image/jpeg"
		_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}) // writes to memory: cannot fail
	} else {
		_ = png.Encode(&buf, img)
	}
	return Image{MediaType: mt, Base64: base64.StdEncoding.EncodeToString(buf.Bytes()), Width: w, Height: h}
}
