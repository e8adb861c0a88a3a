package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/media"
)

// What reaches the agent, and what it costs: text by its o200k_base
// tokens (tool results' text, structured content as its JSON, embedded
// and linked resources, error messages, prompts' messages, log messages);
// images by their size; audio by its bytes; other binary data as its
// base64 text.

// ChargeOptions estimate the tokens of what is not text.
type ChargeOptions struct {
	// ImagePixelsPerToken: an image of w×h pixels costs w·h/this tokens
	// (750: Anthropic's published estimate for Claude), at most
	// MaxImageTokens (1,600: a client scales a larger image down to about
	// that). An image whose size cannot be read costs MaxImageTokens.
	ImagePixelsPerToken, MaxImageTokens int64
	// AudioTokensPerKB is the tokens of a KiB of audio (32: about a
	// second of speech in a model's audio tokens); BlobTokensPerKB the
	// least a KiB of other binary data costs (256), which is charged as
	// the o200k tokens of its base64 text (see resourcePart).
	AudioTokensPerKB, BlobTokensPerKB int64
}

// DefaultCharging are the default estimates.
var DefaultCharging = ChargeOptions{ImagePixelsPerToken: media.ImagePixelsPerToken, MaxImageTokens: media.MaxImageTokens,
	AudioTokensPerKB: media.AudioTokensPerKB, BlobTokensPerKB: media.BlobTokensPerKB}

func (o ChargeOptions) withDefaults() ChargeOptions {
	d := DefaultCharging
	if o.ImagePixelsPerToken > 0 {
		d.ImagePixelsPerToken = o.ImagePixelsPerToken
	}
	if o.MaxImageTokens > 0 {
		d.MaxImageTokens = o.MaxImageTokens
	}
	if o.AudioTokensPerKB > 0 {
		d.AudioTokensPerKB = o.AudioTokensPerKB
	}
	if o.BlobTokensPerKB > 0 {
		d.BlobTokensPerKB = o.BlobTokensPerKB
	}
	return d
}

// block is what the gateway reads of a content block.
type block struct {
	Type        string         `json:"type"`
	Text        string         `json:"text"`
	Data        string         `json:"data"`
	MimeType    string         `json:"mimeType"`
	URI         string         `json:"uri"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Resource    *resourceBlock `json:"resource"`
	// Unread is what of the block reaches the agent that its kind does
	// not charge (see unread).
	Unread []byte `json:"-"`
}

// resourceBlock is a resource's contents.
type resourceBlock struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
	// HasText: the contents have a text (a string), which a client reads
	// even beside a blob.
	HasText bool `json:"-"`
	// Unread is what of the contents reaches the agent that they do not
	// charge (see unread).
	Unread []byte `json:"-"`
}

// unread appends to buf a member of what an upstream sends the agent (a
// result, a notification's params) that the gateway does not read as a
// known text or field, for it to be charged as text: its key
// and its value's JSON (every string it holds, and more). key is "" for
// an element of a list (nothing is appended for an element that is not
// there).
func unread(buf []byte, key string, raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if key == "" && len(raw) == 0 {
		return buf
	}
	if key != "" {
		buf = append(buf, key...)
		buf = append(buf, ": "...)
	}
	buf = append(buf, raw...)
	return append(buf, '\n')
}

// unreadMembers appends to buf the members of m that keep does not keep
// (see unread), in the order of their keys, so that they are charged
// alike every time; it returns the keys it appended, in that order.
func unreadMembers(buf []byte, m map[string]json.RawMessage, keep func(key string, v json.RawMessage) bool) ([]byte, []string) {
	var keys []string
	for key, v := range m {
		if !keep(key, v) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		buf = unread(buf, key, m[key])
	}
	return buf, keys
}

// isString reports whether raw is a JSON string.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// blockMember reports whether a block of type typ holds key as a field
// the gateway reads and charges (or, for its type and a resource's
// mimeType and URI, as a known field of its kind): any other member of a
// block, and every member of a block of a type the gateway does not
// know, is unread.
func blockMember(typ, key string) bool {
	switch typ {
	case "text":
		return key == "type" || key == "text"
	case "image", "audio":
		return key == "type" || key == "data" || key == "mimeType"
	case "resource":
		return key == "type" || key == "resource"
	case "resource_link":
		return key == "type" || key == "uri" || key == "name" || key == "description" || key == "mimeType"
	}
	return false
}

// readBlock reads a content block by its keys as they are spelled:
// encoding/json matches a struct's fields to keys in any case, the last
// of "text" and "Text" winning, where the agent's client reads "text"
// alone, so that an upstream could have the gateway charge one text while
// the agent reads another. What it does not read as its kind's fields
// (the whole element, when it is not an object or its type is not one
// the gateway knows) is its Unread.
func readBlock(raw json.RawMessage) block {
	var b block
	m, n, err := objectMembersN(raw)
	if err != nil {
		b.Unread = unread(nil, "", raw)
		return b
	}
	b.Type = stringValue(m["type"])
	b.Unread, _ = unreadMembers(nil, m, func(key string, v json.RawMessage) bool {
		return blockMember(b.Type, key) && (key == "resource" || isString(v) && !(key == "mimeType" && uncharged(key, v)))
	})
	if n != len(m) {
		// A key given twice: the gateway reads the last value, a client
		// may read the first. The block is charged whole.
		b.Unread = unread(nil, "", raw)
	}
	for key, v := range m {
		if !blockMember(b.Type, key) || key != "resource" && !isString(v) {
			continue
		}
		switch key {
		case "text":
			b.Text = stringValue(v)
		case "data":
			b.Data = stringValue(v)
		case "mimeType":
			b.MimeType = stringValue(v)
		case "uri":
			b.URI = stringValue(v)
		case "name":
			b.Name = stringValue(v)
		case "description":
			b.Description = stringValue(v)
		case "resource":
			if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				continue
			}
			r := readResource(v)
			b.Resource = &r
			b.Unread = append(b.Unread, r.Unread...)
		}
	}
	return b
}

// readResource reads a resource's contents by their keys as they are
// spelled (see readBlock). What it does not read (the whole item when it
// is not an object; members other than uri, mimeType, text and blob, and
// those that are not strings) is its Unread.
func readResource(raw json.RawMessage) resourceBlock {
	var r resourceBlock
	m, n, err := objectMembersN(raw)
	if err != nil || n != len(m) { // not an object, or a key given twice (see readBlock)
		r.Unread = unread(nil, "", raw)
	}
	if err != nil {
		return r
	}
	for key, v := range m {
		var dst *string
		switch key {
		case "uri":
			dst = &r.URI
		case "mimeType":
			dst = &r.MimeType
		case "text":
			dst = &r.Text
		case "blob":
			dst = &r.Blob
		}
		if dst != nil && isString(v) {
			*dst = stringValue(v)
		}
	}
	if n == len(m) {
		r.Unread, _ = unreadMembers(nil, m, func(key string, v json.RawMessage) bool {
			return (key == "uri" || key == "mimeType" || key == "text" || key == "blob") && isString(v) && !uncharged(key, v)
		})
	}
	r.HasText = isString(m["text"])
	return r
}

// Bounds on the fields the gateway reads but does not charge, a
// resource's URI and a MIME type: a real one is short. A longer one is
// charged as unread (see unread), as what an upstream could carry into
// the agent's context for nothing.
const (
	maxUnchargedURI      = 2048
	maxUnchargedMimeType = 255
)

// uncharged reports whether v, a string the gateway reads as the field
// key, is past the bound on what goes uncharged in that field.
func uncharged(key string, v json.RawMessage) bool {
	switch key {
	case "uri":
		return len(v) > maxUnchargedURI+2
	case "mimeType":
		return len(v) > maxUnchargedMimeType+2
	}
	return false
}

// decodedLen is the number of bytes base64 text s decodes to.
func decodedLen(s string) int64 { return media.DecodedLen(s) }

func perKB(bytes, tokens int64) int64 { return media.PerKB(bytes, tokens) }

// pixelTokens are the tokens of an image of w×h pixels (as
// media.ImageTokens counts them).
func (o ChargeOptions) pixelTokens(w, h int64) int64 {
	return min(max((w*h+o.ImagePixelsPerToken-1)/o.ImagePixelsPerToken, 1), o.MaxImageTokens)
}

// part is what one content block brings into the agent's context.
func (o ChargeOptions) part(b block) govern.Part {
	switch b.Type {
	case "text":
		return govern.Part{Text: b.Text}
	case "image":
		if w, h, ok := media.ImageSize(b.Data); ok {
			return govern.Part{Binary: true, Tokens: o.pixelTokens(w, h)}
		}
		// Data whose size no decoder reads is no image to any model, and
		// text to a client that shows it: its base64 text, at least the
		// most an image costs.
		return govern.Part{Text: b.Data, Whole: true, Tokens: o.MaxImageTokens}
	case "audio":
		return govern.Part{Binary: true, Tokens: perKB(decodedLen(b.Data), o.AudioTokensPerKB)}
	case "resource":
		if b.Resource == nil {
			return govern.Part{}
		}
		return o.resourcePart(*b.Resource)
	case "resource_link":
		return govern.Part{Text: strings.Join([]string{b.Name, b.URI, b.Description}, "\n")}
	}
	return govern.Part{Binary: true} // a kind the gateway does not know: counted as its Unread
}

// resourcePart is what a resource's contents bring: its text, or its
// binary data (an image by its size, audio by its bytes, any other blob as
// its base64 text), or both when it has both (a client reads the text,
// and may read the blob).
func (o ChargeOptions) resourcePart(r resourceBlock) govern.Part {
	if r.Blob == "" {
		return govern.Part{Text: r.Text}
	}
	var blob int64
	w, h, image := int64(0), int64(0), false
	if strings.HasPrefix(r.MimeType, "image/") {
		w, h, image = media.ImageSize(r.Blob)
	}
	switch {
	case image:
		blob = o.pixelTokens(w, h)
	case strings.HasPrefix(r.MimeType, "audio/"):
		blob = perKB(decodedLen(r.Blob), o.AudioTokensPerKB)
	default:
		// A client has nothing to make of other binary data (an image
		// whose size no decoder reads among it) but to show it, as its
		// base64 text (or save it): its o200k tokens, at least the
		// estimate by its bytes (base64 of random bytes is about 940
		// tokens a KiB; 256 a KiB let 3.6 times its charge through), and
		// under an image's type the most an image costs. Whole or not at
		// all, with the text beside it.
		text := r.Blob
		if r.HasText {
			text = r.Text + "\n" + r.Blob
		}
		least := perKB(decodedLen(r.Blob), o.BlobTokensPerKB)
		if strings.HasPrefix(r.MimeType, "image/") {
			least = max(least, o.MaxImageTokens)
		}
		return govern.Part{Text: text, Whole: true, Tokens: least}
	}
	if r.HasText {
		return govern.Part{Text: r.Text, Beside: max(blob, 1)}
	}
	return govern.Part{Binary: true, Tokens: blob}
}

// toolResult is a tool result read for charging: its content blocks (raw
// and read), its structured content, and every other field as it came.
type toolResult struct {
	fields     map[string]json.RawMessage
	raw        []json.RawMessage
	blocks     []block
	structured json.RawMessage
	isError    bool
	// unread is what of the result the gateway does not read as its
	// blocks' fields, its structured content or isError (see unread):
	// charged as text after the rest; when the budget cannot take all of
	// it, the blocks that hold some are withheld, and the members of the
	// result that are unread (extra) are gone.
	unread []byte
	extra  []string
}

func readToolResult(result json.RawMessage) (*toolResult, error) {
	r := &toolResult{}
	var err error
	var n int
	if r.fields, n, err = objectMembersN(result); err != nil || r.fields == nil {
		return nil, errors.New("a tool result that is not an object")
	}
	if n != len(r.fields) {
		// A key given twice (see readBlock): the result is charged whole.
		r.unread = unread(r.unread, "", result)
	}
	if c, ok := r.fields["content"]; ok {
		if r.raw, err = arrayElements(c); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	}
	r.blocks = make([]block, len(r.raw))
	free := 0
	for i, b := range r.raw {
		r.blocks[i] = readBlock(b)
		r.unread = append(r.unread, r.blocks[i].Unread...)
		free += len(r.blocks[i].uncounted())
	}
	if free > maxUncounted {
		for i := range r.blocks {
			if u := r.blocks[i].uncounted(); u != "" {
				r.blocks[i].Unread = append(r.blocks[i].Unread, u...)
				r.unread = append(r.unread, u...)
			}
		}
	}
	r.unread, r.extra = unreadMembers(r.unread, r.fields, func(key string, v json.RawMessage) bool {
		v = bytes.TrimSpace(v)
		return key == "content" || key == "structuredContent" || key == "isError" && (string(v) == "true" || string(v) == "false")
	})
	if s, ok := r.fields["structuredContent"]; ok && !bytes.Equal(bytes.TrimSpace(s), []byte("null")) {
		r.structured = s
	}
	if e, ok := r.fields["isError"]; ok {
		json.Unmarshal(e, &r.isError)
	}
	return r, nil
}

// parts are what the result brings into the agent's context: its content
// blocks, its structured content as its JSON, then what the gateway does
// not read in it, as text (when there is any: what the gateway reads has
// the budget first).
func (r *toolResult) parts(o ChargeOptions) []govern.Part {
	out := make([]govern.Part, 0, len(r.blocks)+2)
	for _, b := range r.blocks {
		out = append(out, o.part(b))
	}
	if r.structured != nil {
		out = append(out, govern.Part{Text: string(r.structured)})
	}
	if len(r.unread) > 0 {
		out = append(out, govern.Part{Text: string(r.unread)})
	}
	return out
}

// setText replaces the text of text block i.
func (r *toolResult) setText(i int, text string) {
	r.blocks[i].Text = text
	var b map[string]json.RawMessage
	json.Unmarshal(r.raw[i], &b)
	b["text"] = mustJSON(text)
	r.raw[i] = mustJSON(b)
}

// note adds a text block.
func (r *toolResult) note(text string) {
	r.blocks = append(r.blocks, block{Type: "text", Text: text})
	r.raw = append(r.raw, mustJSON(map[string]string{"type": "text", "text": text}))
}

// apply makes the result what its settlement lets reach the agent: a text
// cut says what was withheld, anything else withheld is a note in its
// place, and structured content that is withheld is gone (the result is
// then an error: what the tool's output schema promised is not there).
func (r *toolResult) apply(s govern.Settlement, why string) {
	withheld := func(what string) json.RawMessage {
		return mustJSON(map[string]string{"type": "text", "text": fmt.Sprintf("[harness] %s withheld: %s", what, why)})
	}
	unreadOut := withheldUnread(r.unread, &s)
	content := make([]json.RawMessage, 0, len(r.raw)+1)
	if unreadOut && len(r.extra) > 0 {
		for _, key := range r.extra {
			delete(r.fields, key)
		}
		addNote(r.fields, "what this result holds beside its content ("+strings.Join(r.extra, ", ")+") withheld: "+why)
	}
	for i, raw := range r.raw {
		k := s.Parts[i]
		switch {
		case unreadOut && len(r.blocks[i].Unread) > 0:
			content = append(content, withheld("this "+r.blocks[i].kind()+", which holds what the harness does not read,"))
		case k.Dropped || k.Cut && r.blocks[i].Type == "resource_link":
			content = append(content, withheld("this "+r.blocks[i].kind()))
		case k.Cut:
			content = append(content, r.blocks[i].withText(raw, k.Text+"\n[harness] the rest of this text withheld: "+why))
		default:
			content = append(content, raw)
		}
	}
	r.raw = content
	if r.structured != nil {
		if k := s.Parts[len(s.Parts)-1]; k.Cut || k.Dropped {
			r.structured = nil
			delete(r.fields, "structuredContent")
			r.raw = append(r.raw, withheld("the structured content"))
			r.isError = true
			r.fields["isError"] = json.RawMessage("true")
		}
	}
}

// withheldUnread reports whether what of a result the gateway does not
// read (unread, charged as the last of s's parts when there is any) is
// withheld: the budget could not take all of it, and none of it reaches
// the agent. s's parts are left as the rest's.
func withheldUnread(unread []byte, s *govern.Settlement) bool {
	if len(unread) == 0 {
		return false
	}
	k := s.Parts[len(s.Parts)-1]
	s.Parts = s.Parts[:len(s.Parts)-1]
	return k.Cut || k.Dropped
}

// withText is raw, the block b, with its text replaced: where the agent's
// client reads it (an embedded resource's is in its resource).
func (b block) withText(raw json.RawMessage, text string) json.RawMessage {
	var fields map[string]json.RawMessage
	json.Unmarshal(raw, &fields)
	if b.Type == "resource" && b.Resource != nil {
		var res map[string]json.RawMessage
		json.Unmarshal(fields["resource"], &res)
		res["text"] = mustJSON(text)
		fields["resource"] = mustJSON(res)
	} else {
		fields["text"] = mustJSON(text)
	}
	return mustJSON(fields)
}

// maxUncounted bounds what of one result goes uncharged in the fields the
// gateway reads but does not charge (a resource's URI and MIME type, an
// image's or audio's MIME type): a few resources' are short; many past
// this, each under its own bound, are charged as unread (see unread).
const maxUncounted = 2048

// uncounted is what of b reaches the agent in fields its charge leaves
// out, one per line ("" for none).
func (b block) uncounted() string {
	switch b.Type {
	case "resource":
		if b.Resource != nil {
			return b.Resource.uncounted()
		}
	case "image", "audio", "resource_link":
		if b.MimeType != "" {
			return b.MimeType + "\n"
		}
	}
	return ""
}

// uncounted is what of r reaches the agent in fields its charge leaves
// out (its URI and MIME type), one per line ("" for none).
func (r resourceBlock) uncounted() string {
	if r.URI == "" && r.MimeType == "" {
		return ""
	}
	return r.URI + "\n" + r.MimeType + "\n"
}

func (b block) kind() string {
	switch b.Type {
	case "text":
		return "text"
	case "image", "audio":
		return b.Type
	case "resource", "resource_link":
		return "resource"
	}
	return "content"
}

// encode is the result with its content as it now is.
func (r *toolResult) encode() json.RawMessage {
	r.fields["content"] = mustJSON(r.raw)
	return mustJSON(r.fields)
}

// noteMeta is the key of a result's _meta under which the harness puts
// what it says of a result that has no content of its own to say it in
// (a resource's contents, a prompt's messages): the decision's warnings.
const noteMeta = "agentharness/notes"

// addNote appends a note under fields' _meta.
func addNote(fields map[string]json.RawMessage, text string) {
	meta := map[string]json.RawMessage{}
	if m, ok := fields["_meta"]; ok {
		if json.Unmarshal(m, &meta) != nil || meta == nil { // not an object, or null
			meta = map[string]json.RawMessage{}
		}
	}
	var notes []string
	json.Unmarshal(meta[noteMeta], &notes)
	meta[noteMeta] = mustJSON(append(notes, text))
	fields["_meta"] = mustJSON(meta)
}

// contents is a resource read's result read for charging.
type contents struct {
	fields map[string]json.RawMessage
	raw    []json.RawMessage
	items  []resourceBlock
	// unread and extra are what of the result the gateway does not read
	// as its items' fields (see toolResult's).
	unread []byte
	extra  []string
}

func readContents(result json.RawMessage) (*contents, error) {
	r := &contents{}
	var err error
	var n int
	if r.fields, n, err = objectMembersN(result); err != nil {
		return nil, fmt.Errorf("a resource's contents that are not an object: %w", err)
	}
	if n != len(r.fields) {
		r.unread = unread(r.unread, "", result) // a key given twice (see readBlock)
	}
	if r.raw, err = arrayElements(r.fields["contents"]); err != nil {
		return nil, fmt.Errorf("contents: %w", err)
	}
	r.items = make([]resourceBlock, len(r.raw))
	free := 0
	for i, b := range r.raw {
		r.items[i] = readResource(b)
		r.unread = append(r.unread, r.items[i].Unread...)
		free += len(r.items[i].uncounted())
	}
	if free > maxUncounted { // see maxUncounted
		for i := range r.items {
			if u := r.items[i].uncounted(); u != "" {
				r.items[i].Unread = append(r.items[i].Unread, u...)
				r.unread = append(r.unread, u...)
			}
		}
	}
	r.unread, r.extra = unreadMembers(r.unread, r.fields, func(key string, _ json.RawMessage) bool { return key == "contents" })
	return r, nil
}

// parts are each item, then what the gateway does not read in the
// contents, as text (when there is any).
func (r *contents) parts(o ChargeOptions) []govern.Part {
	out := make([]govern.Part, 0, len(r.items)+1)
	for _, it := range r.items {
		out = append(out, o.resourcePart(it))
	}
	if len(r.unread) > 0 {
		out = append(out, govern.Part{Text: string(r.unread)})
	}
	return out
}

// apply cuts a text that is cut and puts a note in place of what is
// dropped, each keeping its URI. When the budget could not take what the
// gateway does not read, the items that hold some are such notes too, and
// the result's other members are gone.
func (r *contents) apply(s govern.Settlement, why string) {
	unreadOut := withheldUnread(r.unread, &s)
	if unreadOut {
		for _, key := range r.extra {
			delete(r.fields, key)
		}
		if len(r.extra) > 0 {
			addNote(r.fields, "what this result holds beside its contents ("+strings.Join(r.extra, ", ")+") withheld: "+why)
		}
	}
	for i, raw := range r.raw {
		k := s.Parts[i]
		if unreadOut && len(r.items[i].Unread) > 0 {
			// Its URI may be what was not charged: it is not kept.
			r.raw[i] = mustJSON(map[string]string{"uri": "harness:withheld", "mimeType": "text/plain",
				"text": "[harness] this resource's contents, which hold what the harness does not read, withheld: " + why})
			continue
		}
		if !k.Cut && !k.Dropped {
			continue
		}
		var b map[string]json.RawMessage
		json.Unmarshal(raw, &b)
		if k.Dropped {
			delete(b, "blob")
			b["mimeType"] = mustJSON("text/plain")
			b["text"] = mustJSON("[harness] this resource's contents withheld: " + why)
		} else {
			b["text"] = mustJSON(k.Text + "\n[harness] the rest of this resource withheld: " + why)
		}
		r.raw[i] = mustJSON(b)
	}
}

func (r *contents) note(text string) { addNote(r.fields, text) }

func (r *contents) encode() json.RawMessage {
	r.fields["contents"] = mustJSON(r.raw)
	return mustJSON(r.fields)
}

// promptResult is a prompt's messages read for charging.
type promptResult struct {
	fields      map[string]json.RawMessage
	messages    []map[string]json.RawMessage
	blocks      []block
	description string
	// unread and extra are what of the result the gateway does not read
	// as its description and its messages' roles and contents (see
	// toolResult's); unreadIn: the messages that hold some.
	unread   []byte
	extra    []string
	unreadIn []bool
}

func readPrompt(result json.RawMessage) (*promptResult, error) {
	r := &promptResult{}
	// Read by the keys as they are spelled, each member counted: a key
	// given twice (whose first value a client may read, where the gateway
	// reads the last) has what holds it charged whole.
	fields, n, err := objectMembersN(result)
	if err != nil || fields == nil {
		return nil, errors.New("a prompt that is not an object")
	}
	r.fields = fields
	if n != len(fields) {
		r.unread = unread(r.unread, "", result)
	}
	raws, err := arrayElements(fields["messages"])
	if err != nil || raws == nil {
		return nil, errors.New("messages: not a list")
	}
	r.messages = make([]map[string]json.RawMessage, len(raws))
	dup := make([]bool, len(raws))
	for i, raw := range raws {
		m, n, err := objectMembersN(raw)
		if err != nil || m == nil {
			return nil, fmt.Errorf("messages[%d]: not an object", i)
		}
		r.messages[i], dup[i] = m, n != len(m)
	}
	if d := fields["description"]; isString(d) {
		r.description = stringValue(d)
	}
	r.blocks = make([]block, len(r.messages))
	r.unreadIn = make([]bool, len(r.messages))
	for i, m := range r.messages {
		r.blocks[i] = readBlock(m["content"])
		n := len(r.unread)
		r.unread = append(r.unread, r.blocks[i].Unread...)
		r.unread, _ = unreadMembers(r.unread, m, func(key string, v json.RawMessage) bool {
			return key == "content" || key == "role" && (string(bytes.TrimSpace(v)) == `"user"` || string(bytes.TrimSpace(v)) == `"assistant"`)
		})
		if dup[i] {
			r.unread = unread(r.unread, "", raws[i])
		}
		r.unreadIn[i] = len(r.unread) > n
	}
	free := 0
	for _, b := range r.blocks {
		free += len(b.uncounted())
	}
	if free > maxUncounted { // see maxUncounted
		for i, b := range r.blocks {
			if u := b.uncounted(); u != "" {
				r.unread = append(r.unread, u...)
				r.unreadIn[i] = true
			}
		}
	}
	r.unread, r.extra = unreadMembers(r.unread, r.fields, func(key string, v json.RawMessage) bool {
		return key == "messages" || key == "description" && isString(v)
	})
	return r, nil
}

// parts are the prompt's description, each message's content, then what
// the gateway does not read in the prompt, as text (when there is any).
func (r *promptResult) parts(o ChargeOptions) []govern.Part {
	out := []govern.Part{{Text: r.description}}
	for _, b := range r.blocks {
		out = append(out, o.part(b))
	}
	if len(r.unread) > 0 {
		out = append(out, govern.Part{Text: string(r.unread)})
	}
	return out
}

func (r *promptResult) apply(s govern.Settlement, why string) {
	unreadOut := withheldUnread(r.unread, &s)
	if unreadOut {
		for _, key := range r.extra {
			delete(r.fields, key)
		}
		if len(r.extra) > 0 {
			addNote(r.fields, "what this prompt holds beside its description and messages ("+strings.Join(r.extra, ", ")+") withheld: "+why)
		}
		for i := range r.messages {
			if r.unreadIn[i] {
				r.messages[i] = map[string]json.RawMessage{"role": mustJSON("user"), "content": mustJSON(map[string]string{"type": "text",
					"text": "[harness] this message, which holds what the harness does not read, withheld: " + why})}
			}
		}
	}
	if k := s.Parts[0]; k.Cut || k.Dropped {
		r.fields["description"] = mustJSON(k.Text)
	}
	for i, m := range r.messages {
		k := s.Parts[i+1]
		switch {
		case unreadOut && r.unreadIn[i]: // withheld above
		case k.Dropped || k.Cut && r.blocks[i].Type == "resource_link":
			m["content"] = mustJSON(map[string]string{"type": "text", "text": "[harness] this message's " + r.blocks[i].kind() + " withheld: " + why})
		case k.Cut:
			m["content"] = r.blocks[i].withText(m["content"], k.Text+"\n[harness] the rest of this message withheld: "+why)
		}
	}
}

func (r *promptResult) note(text string) { addNote(r.fields, text) }

func (r *promptResult) encode() json.RawMessage {
	r.fields["messages"] = mustJSON(r.messages)
	return mustJSON(r.fields)
}
