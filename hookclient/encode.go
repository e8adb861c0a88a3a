package hookclient

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentharness/harness/internal/jsonstr"
)

// A hook process is new for every call, and encoding/json's first use of
// a type in a process (its reflection, its cached encoder) cost about a
// tenth of a millisecond, a tenth of what the hook adds to a bare
// process. A request is a few strings and the payload, so it is written
// here by hand, byte for byte as json.Encoder writes it
// (TestEncodeRequestAsEncodingJSON, FuzzEncodeRequest hold it to that).

// appendRequest appends req as json.Encoder encodes it, newline and all.
// The payload must be valid JSON (Call checks): it is compacted and its
// strings escaped for HTML, as encoding/json does a RawMessage.
func appendRequest(b []byte, req Request) []byte {
	b = append(b, `{"payload":`...)
	if req.Payload == nil {
		b = append(b, "null"...)
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Payload); err != nil {
			return nil
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, compact.Bytes())
		b = append(b, escaped.Bytes()...)
	}
	b = append(b, `,"project":`...)
	b = jsonstr.Append(b, req.Project)
	b = append(b, `,"work_dir":`...)
	b = jsonstr.Append(b, req.WorkDir)
	b = append(b, `,"env":`...)
	if req.Env == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, k)
			b = append(b, ':')
			b = jsonstr.Append(b, req.Env[k])
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}
