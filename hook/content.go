package hook

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/internal/media"
)

// Content is what of a tool's response reaches the model, as Claude Code
// gives it back (its tool_response in a PostToolUse payload): the content,
// not the envelope around it. Read's file content with its lines numbered
// as the model reads them, not the file's path or "type": "text"; Bash's
// stdout and stderr; Grep's matches or the names of the files; WebFetch's
// result text; the snippet of an edit, not the whole original file Edit
// reports; an MCP tool's result as the gateway counts it.
// Images and audio are not text: Media estimates them. A PDF's pages are
// not counted (their tokens depend on the model), nor the fixed sentence
// Claude Code answers a TodoWrite with. A tool it does not know is charged
// every string of its response.
func Content(tool string, response gjson.Result) string {
	if f, ok := contents[tool]; ok {
		return f(response)
	}
	if up, _ := Origin(tool); up != "" {
		return mcpContent(response)
	}
	return texts(response)
}

// contents are the extractors of the tools of Claude Code's tools
// reference whose responses wrap their content, by the tool's name.
var contents = map[string]func(gjson.Result) string{
	"Bash":         fields("stdout", "stderr"),
	"PowerShell":   fields("stdout", "stderr"),
	"BashOutput":   fields("stdout", "stderr"),
	"Read":         readContent,
	"NotebookRead": readContent,
	"Grep":         grepContent,
	"Glob":         lines("filenames"),
	"WebFetch":     fields("result"),
	"WebSearch":    webSearchContent,
	// An edit answers with a snippet around the change: its patch.
	"Edit":         patchContent,
	"MultiEdit":    patchContent,
	"Write":        patchContent,
	"NotebookEdit": fields("new_source", "error"),
	"Agent":        blockTexts("content"),
	"Task":         blockTexts("content"),
	"TodoWrite":    func(gjson.Result) string { return "" },
	"KillShell":    fields("message"),
	"KillBash":     fields("message"),
	"TaskStop":     fields("message"),
	// ReadMcpResourceTool gives the resource's text.
	"ReadMcpResourceTool": func(r gjson.Result) string { return join(r.Get("contents.#.text").Array()) },
}

// readContent is a read file's text: a text file's content, a notebook's
// cells; nothing of an image or a PDF.
func readContent(r gjson.Result) string {
	if !r.IsObject() {
		return texts(r)
	}
	switch r.Get("type").String() {
	case "text":
		return numbered(r.Get("file.content").String(), r.Get("file.startLine").Int())
	case "notebook":
		return texts(r.Get("file.cells"))
	case "image", "pdf", "parts", "file_unchanged":
		return ""
	}
	if c := r.Get("file.content"); c.Type == gjson.String {
		return c.Str
	}
	return texts(r)
}

// numbered is a file's text as Read gives it to the model: each line after
// its number (from start, 1 when it is not given), as cat -n writes them;
// a final line break ends the last line.
func numbered(text string, start int64) string {
	if text == "" {
		return ""
	}
	start = max(start, 1)
	text = strings.TrimSuffix(text, "\n")
	var b strings.Builder
	b.Grow(len(text) + 8*(strings.Count(text, "\n")+1))
	var num [20]byte
	for i := start; ; i++ {
		line, rest, more := strings.Cut(text, "\n")
		n := strconv.AppendInt(num[:0], i, 10)
		for range 6 - len(n) {
			b.WriteByte(' ')
		}
		b.Write(n)
		b.WriteByte('\t')
		b.WriteString(line)
		if !more {
			return b.String()
		}
		b.WriteByte('\n')
		text = rest
	}
}

// grepContent is the matching lines (content and count modes), else the
// names of the matching files.
func grepContent(r gjson.Result) string {
	if !r.IsObject() {
		return texts(r)
	}
	if c := r.Get("content"); c.Type == gjson.String && c.Str != "" {
		return c.Str
	}
	return join(r.Get("filenames").Array())
}

// webSearchContent is the results: each link's title and address, and
// the text of the search.
func webSearchContent(r gjson.Result) string {
	if !r.IsObject() {
		return texts(r)
	}
	var parts []gjson.Result
	for _, res := range r.Get("results").Array() {
		if res.Type == gjson.String {
			parts = append(parts, res)
			continue
		}
		for _, link := range res.Get("content").Array() {
			parts = append(parts, link.Get("title"), link.Get("url"))
		}
	}
	return join(parts)
}

// patchContent is the lines of an edit's patch.
func patchContent(r gjson.Result) string {
	if !r.IsObject() {
		return texts(r)
	}
	return join(r.Get("structuredPatch.#.lines|@flatten").Array())
}

// mcpContent is an MCP tool's result as the gateway counts it: the text
// of its text blocks and embedded resources, a resource link's name,
// address and description (a result object's content blocks), and its
// structured content as its JSON; a string as it is. Images, audio and
// binary resources are not counted.
func mcpContent(r gjson.Result) string {
	var structured gjson.Result
	if r.IsObject() && r.Get("content").IsArray() {
		structured = r.Get("structuredContent")
		r = r.Get("content")
	}
	if !r.IsArray() {
		return texts(r)
	}
	var parts []gjson.Result
	for _, b := range r.Array() {
		switch b.Get("type").String() {
		case "text":
			parts = append(parts, b.Get("text"))
		case "resource":
			parts = append(parts, b.Get("resource.text"))
		case "resource_link":
			parts = append(parts, b.Get("name"), b.Get("uri"), b.Get("description"))
		}
	}
	if structured.Exists() {
		parts = append(parts, gjson.Result{Type: gjson.String, Str: structured.Raw})
	}
	return join(parts)
}

// fields is an extractor of the string fields keys of a response, in
// order, each non-empty one on its own line.
func fields(keys ...string) func(gjson.Result) string {
	return func(r gjson.Result) string {
		if !r.IsObject() {
			return texts(r)
		}
		parts := make([]gjson.Result, len(keys))
		for i, k := range keys {
			parts[i] = r.Get(k)
		}
		return join(parts)
	}
}

// lines is an extractor of the strings of the array at key, one a line.
func lines(key string) func(gjson.Result) string {
	return func(r gjson.Result) string {
		if !r.IsObject() {
			return texts(r)
		}
		return join(r.Get(key).Array())
	}
}

// blockTexts is an extractor of the text of the text blocks at key.
func blockTexts(key string) func(gjson.Result) string {
	return func(r gjson.Result) string {
		if !r.IsObject() {
			return texts(r)
		}
		return join(r.Get(key + `.#(type=="text")#.text`).Array())
	}
}

// join joins the non-empty strings among parts with newlines.
func join(parts []gjson.Result) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type != gjson.String || p.Str == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Str)
	}
	return b.String()
}

// texts gathers every string of a response, for a tool whose shape is
// not known: the conservative count.
func texts(r gjson.Result) string {
	switch {
	case r.Type == gjson.String:
		return r.Str
	case r.IsObject() || r.IsArray():
		var b strings.Builder
		r.ForEach(func(_, v gjson.Result) bool {
			if s := texts(v); s != "" {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(s)
			}
			return true
		})
		return b.String()
	}
	return ""
}

// Media estimates, in tokens, what of a tool's response reaches the model
// that is not text, as the gateway charges it: an image Read by its size;
// an MCP tool's image blocks by their size, its audio blocks by their
// bytes, and the blobs of its embedded resources (and of a
// ReadMcpResourceTool's contents) by their type and bytes.
func Media(tool string, response gjson.Result, o Options) int64 {
	px, most, audio := o.ImagePixelsPerToken, o.MaxImageTokens, o.AudioTokensPerKB
	if px <= 0 {
		px = media.ImagePixelsPerToken
	}
	if most <= 0 {
		most = media.MaxImageTokens
	}
	if audio <= 0 {
		audio = media.AudioTokensPerKB
	}
	blob := func(data, mime string) int64 {
		switch {
		case strings.HasPrefix(mime, "image/"):
			return media.ImageTokens(data, px, most)
		case strings.HasPrefix(mime, "audio/"):
			return media.PerKB(media.DecodedLen(data), audio)
		}
		return media.PerKB(media.DecodedLen(data), media.BlobTokensPerKB)
	}
	var n int64
	switch up, _ := Origin(tool); {
	case tool == "Read":
		if response.Get("type").String() == "image" {
			n = media.ImageTokens(response.Get("file.base64").String(), px, most)
		}
	case tool == "ReadMcpResourceTool":
		for _, c := range response.Get("contents").Array() {
			if b := c.Get("blob"); b.Type == gjson.String {
				n += blob(b.Str, c.Get("mimeType").String())
			}
		}
	case up != "":
		blocks := response
		if response.IsObject() {
			blocks = response.Get("content")
		}
		for _, b := range blocks.Array() {
			switch b.Get("type").String() {
			case "image":
				n += media.ImageTokens(b.Get("data").String(), px, most)
			case "audio":
				n += media.PerKB(media.DecodedLen(b.Get("data").String()), audio)
			case "resource":
				if d := b.Get("resource.blob"); d.Type == gjson.String {
					n += blob(d.Str, b.Get("resource.mimeType").String())
				}
			}
		}
	}
	return n
}
