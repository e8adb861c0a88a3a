package media

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// webpLossless is the header of a lossless WebP image of w × h pixels.
func webpLossless(w, h uint32) string {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f")
	b = binary.LittleEndian.AppendUint32(b, (w-1)|(h-1)<<14)
	return base64.StdEncoding.EncodeToString(append(b, make([]byte, 8)...))
}

func TestImageTokens(t *testing.T) {
	t.Parallel()
	pngEnc := func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }
	gifEnc := func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) }
	jpegEnc := func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }
	for _, tt := range []struct {
		name string
		data string
		want int64
	}{
		{"a PNG", encoded(t, pngEnc, 300, 50), 20},
		{"a GIF", encoded(t, gifEnc, 75, 10), 1},
		{"a JPEG", encoded(t, jpegEnc, 750, 2), 2},
		{"a lossless WebP", webpLossless(1000, 75), 100},
		{"a large image, at most", encoded(t, pngEnc, 2000, 2000), 1600},
		{"a tiny one, at least 1", encoded(t, pngEnc, 1, 1), 1},
		{"not an image: the most", base64.StdEncoding.EncodeToString([]byte("not an image")), 1600},
		{"not base64: the most", "!!!", 1600},
		{"nothing: the most", "", 1600},
	} {
		if got := ImageTokens(tt.data, 750, 1600); got != tt.want {
			t.Errorf("%s: %d tokens, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPerKB(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		data string
		want int64
	}{
		{"", 0},
		{base64.StdEncoding.EncodeToString([]byte("a")), 1},
		{base64.StdEncoding.EncodeToString(make([]byte, 1024)), 32},
		{base64.StdEncoding.EncodeToString(make([]byte, 1025)), 33},
	} {
		if got := PerKB(DecodedLen(tt.data), 32); got != tt.want {
			t.Errorf("%d bytes of base64: %d tokens, want %d", len(tt.data), got, tt.want)
		}
	}
}

// FuzzImageSize: any header is read without a panic, and a size read is
// positive.
func FuzzImageSize(f *testing.F) {
	f.Add(webpLossless(10, 10))
	f.Add(strings.Repeat("A", 40))
	f.Add("UklGRgAAAABXRUJQVlA4WAAAAAAAAAAAAAAAAAAAAAA=")
	f.Fuzz(func(t *testing.T, data string) {
		if w, h, ok := ImageSize(data); ok && (w <= 0 || h <= 0) {
			t.Errorf("size %d × %d", w, h)
		}
	})
}
