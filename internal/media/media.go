// Package media estimates what binary content (images, audio, other data
// given as base64) brings into a model's context, in tokens: an image by
// its size, read from its header, the rest by its bytes. The gateway
// charges an upstream's content with it, the hook what Claude Code's
// tools return.
package media

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF, JPEG and PNG headers
	_ "image/jpeg"
	_ "image/png"
	"strings"
)

// The default estimates (the gateway's and the hook's, where [charge]
// sets none): an image of w×h pixels costs w·h/750 tokens (Anthropic's
// published estimate for Claude), at most 1,600 (a client scales a larger
// image down to about that); a KiB of audio 32 tokens (about a second of
// speech), a KiB of other binary data 256 (as base64 text would count).
const (
	ImagePixelsPerToken = 750
	MaxImageTokens      = 1600
	AudioTokensPerKB    = 32
	BlobTokensPerKB     = 256
)

// DecodedLen is the number of bytes base64 text s decodes to.
func DecodedLen(s string) int64 {
	n := int64(len(strings.TrimRight(s, "=")))
	return n * 3 / 4
}

// PerKB is the tokens of bytes at tokens a KiB, rounded up.
func PerKB(bytes, tokens int64) int64 { return (bytes*tokens + 1023) / 1024 }

// ImageTokens estimates the tokens of a base64 image: w·h/pixelsPerToken,
// at least 1 and at most most; an image whose size cannot be read costs
// most.
func ImageTokens(data string, pixelsPerToken, most int64) int64 {
	w, h, ok := ImageSize(data)
	if !ok {
		return most
	}
	return min(max((w*h+pixelsPerToken-1)/pixelsPerToken, 1), most)
}

// ImageSize reads the width and height of a base64 PNG, JPEG, GIF or WebP
// image from its header.
func ImageSize(data string) (w, h int64, ok bool) {
	head := data
	if len(head) > 1<<20 { // a JPEG's frame header may follow long metadata
		head = head[:1<<20]
	}
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return 0, 0, false
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(raw)); err == nil {
		return int64(cfg.Width), int64(cfg.Height), true
	}
	return webpSize(raw)
}

// webpSize reads a WebP image's size from its RIFF header (lossy VP8,
// lossless VP8L, extended VP8X).
func webpSize(b []byte) (w, h int64, ok bool) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		return int64(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int64(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), true
	case "VP8L":
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int64(bits&0x3fff) + 1, int64(bits>>14&0x3fff) + 1, true
	case "VP8X":
		u24 := func(p []byte) int64 { return int64(p[0]) | int64(p[1])<<8 | int64(p[2])<<16 }
		return u24(b[24:27]) + 1, u24(b[27:30]) + 1, true
	}
	return 0, 0, false
}
