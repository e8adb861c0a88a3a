package budget

import (
	"fmt"
	"reflect"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Tokenizer counts o200k_base tokens, the encoding of current frontier
// models, exactly as OpenAI's tiktoken does, with the vocabulary compiled
// into the binary: nothing is downloaded. The vocabulary is loaded on first
// use (tens of milliseconds), so a process that never counts never pays
// for it.
//
// The vocabulary comes from github.com/tiktoken-go/tokenizer, but not its
// splitting of text, which differs from tiktoken's on some white space and
// control characters ("\n \n" is one token, not two; DEL is a token, not
// nothing): the text is split by pieces and each piece byte-pair encoded
// here, several times faster.
type Tokenizer struct {
	once  sync.Once
	ranks ranks
	err   error
}

// NewTokenizer returns a tokenizer; it is safe for concurrent use.
func NewTokenizer() *Tokenizer { return &Tokenizer{} }

// Count returns the number of o200k_base tokens of s. Bytes that are not
// UTF-8 count as U+FFFD, one each.
func (t *Tokenizer) Count(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t.once.Do(t.load)
	if t.err != nil {
		return 0, t.err
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	var n int64
	pieces(s, func(p string) { n += int64(t.ranks.bpeCount(p)) })
	return n, nil
}

// load takes the ranks of the library's vocabulary, in which a token's id
// is its rank.
func (t *Tokenizer) load() {
	c := codec.NewO200kBase()
	if t.ranks = libraryRanks(c); t.ranks != nil {
		return
	}
	t.ranks = make(ranks, o200kTokens)
	for id := range uint(o200kTokens) {
		tok, err := c.Decode([]uint{id})
		if err != nil {
			t.err = fmt.Errorf("o200k_base vocabulary: token %d: %w", id, err)
			return
		}
		t.ranks[tok] = id
	}
}

// libraryRanks returns the library's own map of tokens to ids, which it
// builds anyway but does not export: read with reflect, it costs nothing,
// where decoding every id into a map of our own takes 50 ms more at the
// first count of every process (which a hook answered without the daemon
// would pay). Nil if the library no longer has such a map; load then
// decodes.
func libraryRanks(c *codec.Codec) ranks {
	v := reflect.ValueOf(c).Elem().FieldByName("vocabulary")
	want := reflect.TypeFor[ranks]()
	if !v.IsValid() || !v.Type().ConvertibleTo(want) || v.Len() != o200kTokens {
		return nil
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Convert(want).Interface().(ranks)
}

// o200kTokens is the number of o200k_base's ordinary tokens, ids 0 to
// 199997 (the special ones are never counted: text is text).
const o200kTokens = 199998
