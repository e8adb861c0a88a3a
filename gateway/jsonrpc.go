package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentharness/harness/internal/jsonstr"
)

// message is one JSON-RPC 2.0 message, its parts kept as they came: the
// gateway reads what it governs and passes the rest on byte for byte.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// JSON-RPC and MCP error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	// codeRefused is MCP's error of a request the user (here: the
	// harness) declined, such as a sampling request.
	codeRefused = -1
)

// hasID reports whether the message carries an id (a request or a
// response).
func (m *message) hasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) }

func (m *message) isRequest() bool      { return m.Method != "" && m.hasID() }
func (m *message) isNotification() bool { return m.Method != "" && !m.hasID() }
func (m *message) isResponse() bool     { return m.Method == "" && m.hasID() }

// parseMessage reads one JSON-RPC message. Its parts are slices of b.
func parseMessage(b []byte) (*message, error) {
	m, ok := quickMessage(b)
	if !ok {
		m = &message{}
		if err := json.Unmarshal(b, m); err != nil {
			return nil, err
		}
	}
	if m.JSONRPC != "2.0" {
		return nil, errors.New(`not a JSON-RPC 2.0 message ("jsonrpc": "2.0" is missing)`)
	}
	if m.Method == "" && !m.hasID() {
		return nil, errors.New("neither a request, a notification nor a response")
	}
	return m, nil
}

// quickMessage reads the message b as json.Unmarshal would, in one check
// of b and one pass over its members, where the parts are slices of b
// rather than copies (a result of 100 KB was read three times and copied
// once). It reports false for anything out of the ordinary (b not JSON,
// not an object, a member of another type than expected, a key that is a
// member's name in other letter cases, which json.Unmarshal would take,
// or a key given twice), which json.Unmarshal reads instead, giving its
// errors.
func quickMessage(b []byte) (*message, bool) {
	if !validJSON(b) {
		return nil, false
	}
	members, n, err := objectMembersN(b)
	if err != nil || members == nil || n != len(members) {
		return nil, false // of a key given twice json.Unmarshal merges objects
	}
	m := &message{}
	for key, v := range members {
		switch key {
		case "jsonrpc", "method":
			if len(v) == 0 || v[0] != '"' {
				return nil, false
			}
			if key == "jsonrpc" {
				m.JSONRPC = stringValue(v)
			} else {
				m.Method = stringValue(v)
			}
		case "id":
			m.ID = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			if bytes.Equal(v, []byte("null")) {
				continue
			}
			m.Error = &rpcError{}
			if json.Unmarshal(v, m.Error) != nil {
				return nil, false
			}
		default:
			for _, name := range messageKeys {
				if strings.EqualFold(key, name) {
					return nil, false
				}
			}
		}
	}
	return m, true
}

// messageKeys are the members of a message (of message's JSON names).
var messageKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// idKey is an id as a map key: its JSON text.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// resultMessage is the response of id with result (raw JSON), in a
// buffer of its own with a byte to spare for the line's end.
func resultMessage(id, result json.RawMessage) []byte {
	b := make([]byte, 0, len(result)+len(id)+41)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// errorMessage is the error response of id.
func errorMessage(id json.RawMessage, e *rpcError) []byte {
	body, _ := json.Marshal(e)
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := make([]byte, 0, len(body)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, body...)
	return append(b, '}')
}

// notificationMessage is a notification of method with params (any JSON
// value, or raw).
func notificationMessage(method string, params any) []byte {
	p, _ := asRaw(params)
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", method, p})
	return b
}

// requestMessage is a request of method with params, of id n, as
// encoding/json marshals it (params compacted: a line break between its
// tokens would end the line); nil if params is not JSON.
func requestMessage(n int64, method string, params json.RawMessage) []byte {
	b := make([]byte, 0, len(method)+len(params)+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, `,"method":`...)
	b = jsonstr.Append(b, method)
	if len(params) > 0 {
		var err error
		b = append(b, `,"params":`...)
		if b, err = appendRaw(b, params); err != nil {
			return nil
		}
	}
	return append(b, '}')
}

// asRaw is v as raw JSON: itself if it is raw already.
func asRaw(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	}
	return json.Marshal(v)
}

// mustJSON marshals a value that cannot fail to marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// oneLine is the message b on one line, a line break made a space. The
// gateway writes a message a line (stdio) or as an event's one data line
// (SSE), and a message may carry another peer's JSON raw (a result, an
// answer), which may hold line breaks between its tokens: passed on, they
// would split it into messages of that peer's choosing. A line break in
// JSON is whitespace between tokens (within a string it is escaped), so
// as a space it means the same; CR goes too, which some readers take for a
// line's end. b is not changed.
func oneLine(b []byte) []byte {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	out := bytes.Clone(b)
	spaceBreaks(out)
	return out
}

// appendLine appends the message b to dst as one line (see oneLine) and
// its end.
func appendLine(dst, b []byte) []byte {
	n := len(dst)
	dst = append(dst, b...)
	spaceBreaks(dst[n:])
	return append(dst, '\n')
}

// spaceBreaks makes every CR and LF of b a space.
func spaceBreaks(b []byte) {
	for _, c := range []byte{'\n', '\r'} {
		for i := 0; ; {
			j := bytes.IndexByte(b[i:], c)
			if j < 0 {
				break
			}
			i += j
			b[i] = ' '
		}
	}
}

// appendRaw appends the JSON value v as encoding/json marshals a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped.
// Most values (an agent's arguments) hold none of those nor any white
// space and are appended as they are, in one look at their bytes.
func appendRaw(dst []byte, v json.RawMessage) ([]byte, error) {
	plain := true
	for i := 0; i < len(v) && plain; i++ {
		switch v[i] {
		case ' ', '\t', '\r', '\n', '<', '>', '&', 0xE2: // 0xE2 begins U+2028 and U+2029
			plain = false
		}
	}
	if plain && json.Valid(v) {
		return append(dst, v...), nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		return dst, err
	}
	out := bytes.NewBuffer(dst)
	json.HTMLEscape(out, compact.Bytes())
	return out.Bytes(), nil
}

// toolCallParams is the params of a tools/call of the tool name with
// arguments and _meta (raw JSON; either may be absent), as mustJSON makes
// them of a map of the three: the members in the order of their keys,
// each value as appendRaw writes it.
func toolCallParams(name string, arguments, meta json.RawMessage) (json.RawMessage, error) {
	b := make([]byte, 0, len(name)+len(arguments)+len(meta)+32)
	b = append(b, '{')
	var err error
	if len(meta) > 0 {
		b = append(b, `"_meta":`...)
		if b, err = appendRaw(b, meta); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	if len(arguments) > 0 {
		b = append(b, `"arguments":`...)
		if b, err = appendRaw(b, arguments); err != nil {
			return nil, err
		}
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b = jsonstr.Append(b, name)
	return append(b, '}'), nil
}

// toolCall is the params of an agent's tools/call.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// toolCallMembers are toolCall's members by their JSON names.
var toolCallMembers = []string{"name", "arguments", "_meta"}

// readToolCall reads params as json.Unmarshal reads them into a toolCall,
// in one pass over their members where they are out of the ordinary in
// nothing (each member once, named exactly, the name a string); anything
// else json.Unmarshal reads, with its errors. Arguments and _meta are
// slices of params.
func readToolCall(params json.RawMessage) (toolCall, error) {
	var p toolCall
	members, n, err := objectMembersN(params)
	quick := err == nil && members != nil && n == len(members)
	for key, v := range members {
		if !quick {
			break
		}
		switch key {
		case "name":
			if quick = len(v) > 0 && v[0] == '"'; quick {
				p.Name = stringValue(v)
			}
		case "arguments":
			p.Arguments = v
		case "_meta":
			p.Meta = v
		default:
			for _, name := range toolCallMembers {
				quick = quick && !strings.EqualFold(key, name)
			}
		}
	}
	if quick {
		return p, nil
	}
	p = toolCall{}
	err = json.Unmarshal(params, &p)
	return p, err
}
