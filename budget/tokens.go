package budget

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Tokenizer counts o200k_base tokens, the encoding of current frontier
// models, with the vocabulary compiled into the binary: nothing is
// downloaded. The vocabulary is built on first use (tens of milliseconds),
// so a process that never counts never pays for it.
type Tokenizer struct {
	once  sync.Once
	codec *codec.Codec
}

// NewTokenizer returns a tokenizer; it is safe for concurrent use.
func NewTokenizer() *Tokenizer { return &Tokenizer{} }

// Count returns the number of o200k_base tokens of s.
func (t *Tokenizer) Count(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t.once.Do(func() { t.codec = codec.NewO200kBase() })
	n, err := t.codec.Count(s)
	if err != nil {
		return 0, fmt.Errorf("counting tokens: %w", err)
	}
	return int64(n), nil
}
