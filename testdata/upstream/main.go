// Command upstream is the MCP server the gateway's tests put behind
// `harness serve`: read, shell and edit tools like lean-ctx's, a schema that
// client libraries do not fully model (to check that the gateway passes
// schemas through untouched), and ways to misbehave on demand.
//
//	ctx_read  {path, bytes,   "contents of PATH", or BYTES bytes of text;
//	           resource}      with resource, as an embedded text resource
//	ctx_shell {command}       "ran: COMMAND"; special commands:
//	                            "big N"  N bytes of build-log-like output with ANSI colours
//	                            "fail"   a tool error (isError)
//	                            "rpcfail" a JSON-RPC error
//	                            "rpcauth" a JSON-RPC error with its own code
//	                                      and data (URL elicitation required)
//	                            "crash"  the process exits at once
//	                            "hang"   waits until the call is cancelled,
//	                                     then writes "cancelled" to the file
//	                                     $UPSTREAM_CANCELLED names (and
//	                                     "started" to its .started file
//	                                     when it begins)
//	                            "roots"  the client's roots (roots/list)
//	                            "image W H"  a W×H PNG image
//	                            "audio N"    N bytes of WAV audio
//	                            "blob N"     an embedded binary resource of N bytes
//	                            "structured N"  N bytes of text only in
//	                                            structuredContent
//	                            "log N"  a log message of N bytes, then "logged"
//	ctx_edit  {path, content} "edited PATH"
//	add_tool  {name}          adds tool extra_NAME and tells clients the list changed
//
// Beside them, the fixtures of the official MCP conformance suite's server
// scenarios (conformance.go, run by `make conformance`), under the names the
// suite calls:
//
//	tools      test_simple_text, test_image_content, test_audio_content,
//	           test_embedded_resource, test_multiple_content_types,
//	           test_error_handling, test_tool_with_logging (three log messages
//	           during the call), test_tool_with_progress (progress 0, 50, 100),
//	           test_sampling and test_elicitation (a request to the client during
//	           the call), test_elicitation_sep1034_defaults,
//	           test_elicitation_sep1330_enums, json_schema_2020_12_tool (a
//	           2020-12 schema: $schema, $defs, additionalProperties), and
//	           test_reconnection (over HTTP it closes its stream before it
//	           answers, and the client resumes the stream for the answer;
//	           over stdio it just answers)
//	resources  test://static-text, test://static-binary, the template
//	           test://template/{id}/data, test://watched-resource (a
//	           subscription is answered by one notifications/resources/updated)
//	prompts    test_simple_prompt, test_prompt_with_arguments {arg1, arg2},
//	           test_prompt_with_embedded_resource {resourceUri},
//	           test_prompt_with_image
//	and        logging/setLevel, completion/complete, ping
//
// With $UPSTREAM_STACKS naming a directory, a SIGUSR1 writes the process's
// goroutines, each with its stack, to stacks-PID.txt there (the soak's
// record of a call that hangs).
//
// It serves stdio, or streamable HTTP on /mcp with --http ADDR (a port of 0
// picks a free one; the address is logged as "listening on URL"). Over HTTP
// it adds what mcp-go's transport lacks (streams.go): SSE priming events,
// retry fields and resumable POST streams (SEP-1699), and refusing pages of
// other origins (DNS rebinding).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// readSchema uses keywords that mcp-go's typed schema drops (oneOf, a
// top-level description, $defs): the gateway must pass it on as it is.
const readSchema = `{"type":"object","description":"Read a file, or a number of bytes of text","properties":{"path":{"type":"string","description":"file to read"},"bytes":{"$ref":"#/$defs/size"},"resource":{"type":"boolean"}},"oneOf":[{"required":["path"]},{"required":["bytes"]}],"$defs":{"size":{"type":"integer","minimum":0}}}`

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	if dir := os.Getenv("UPSTREAM_STACKS"); dir != "" {
		go stacksOnSignal(dir)
	}
	hooks := &server.Hooks{}
	opts := append([]server.ServerOption{server.WithToolCapabilities(true), server.WithHooks(hooks)}, conformanceOptions()...)
	s := server.NewMCPServer("fixture-upstream", "1.0.0", opts...)
	s.AddTool(mcp.Tool{Name: "ctx_read", Description: "Read a file", RawInputSchema: json.RawMessage(readSchema)}, read)
	s.AddTool(mcp.NewTool("ctx_shell", mcp.WithDescription("Run a shell command"), mcp.WithString("command", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.GetString("command", "") == "roots" {
				res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
				if err != nil {
					return mcp.NewToolResultError("roots: " + err.Error()), nil
				}
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				return mcp.NewToolResultText("roots: " + strings.Join(uris, " ")), nil
			}
			return shell(ctx, req)
		})
	s.AddTool(mcp.NewTool("ctx_edit", mcp.WithDescription("Edit a file"),
		mcp.WithString("path", mcp.Required()), mcp.WithString("content")), edit)
	s.AddTool(mcp.NewTool("add_tool", mcp.WithDescription("Add a tool"), mcp.WithString("name", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := "extra_" + req.GetString("name", "x")
			s.AddTool(mcp.NewTool(name, mcp.WithDescription("An added tool")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("hello from " + name), nil
				})
			return mcp.NewToolResultText("added " + name), nil
		})
	addConformance(s, hooks)
	if *httpAddr != "" {
		log.Fatal(serveHTTP(*httpAddr, s))
	}
	if err := serveStdio(s); err != nil {
		log.Fatal(err)
	}
}

// serveStdio serves s on stdin and stdout as server.ServeStdio does (until
// SIGTERM or SIGINT), with stdin read through the runtime's poller.
//
// mcp-go reads each message on a goroutine of its own, which waits in a
// blocking read(2) of stdin until the next message comes. On Go 1.26, a
// goroutine that enters a system call just as the runtime stops the world
// (a collection started by the call being answered) can hold that stop
// until the call returns: here until the next message, which the gateway
// sends only once it has the answer, which waits for the stop. The soak
// saw it once in about ten runs, a call that never got its answer. Read
// through the poller, a goroutine waiting for stdin is parked, not in a
// system call.
func serveStdio(s *server.MCPServer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return server.NewStdioServer(s).Listen(ctx, pollableStdin(), os.Stdout)
}

// pollableStdin is stdin opened again non-blocking (/proc/self/fd/0), a
// file of the runtime's poller, when it is a pipe; else stdin as it is.
// The new open file leaves the mode of the one the process was given (and
// may share) alone.
func pollableStdin() *os.File {
	st, err := os.Stdin.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return os.Stdin
	}
	fd, err := syscall.Open("/proc/self/fd/0", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "stdin")
}

// stacksOnSignal writes the goroutine profile to dir/stacks-PID.txt at
// each SIGUSR1, whole or not at all (renamed into place).
func stacksOnSignal(dir string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	path := filepath.Join(dir, fmt.Sprintf("stacks-%d.txt", os.Getpid()))
	for range sig {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 2)
		if os.WriteFile(path+".tmp", b.Bytes(), 0o644) == nil {
			os.Rename(path+".tmp", path)
		}
	}
}

// serveHTTP serves s as streamable HTTP on /mcp at addr.
func serveHTTP(addr string, s *server.MCPServer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", newStreams(server.NewStreamableHTTPServer(s), 500*time.Millisecond))
	log.Printf("fixture-upstream: listening on http://%s/mcp", ln.Addr())
	return http.Serve(ln, mux)
}

func read(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out := "contents of " + req.GetString("path", "?") + "\n"
	if n := req.GetInt("bytes", -1); n >= 0 {
		out = text(n)
	}
	if req.GetBool("resource", false) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///" + req.GetString("path", "text"), MIMEType: "text/plain", Text: out}),
		}}, nil
	}
	return mcp.NewToolResultText(out), nil
}

func shell(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cmd := req.GetString("command", "")
	switch fields := strings.Fields(cmd); {
	case cmd == "crash":
		os.Exit(3)
	case cmd == "hang":
		if f := os.Getenv("UPSTREAM_CANCELLED"); f != "" {
			// The call is under way here, where a cancellation can reach it.
			os.WriteFile(f+".started", []byte("started\n"), 0o600)
		}
		<-ctx.Done()
		if f := os.Getenv("UPSTREAM_CANCELLED"); f != "" {
			os.WriteFile(f, []byte("cancelled\n"), 0o600)
		}
		return nil, ctx.Err()
	case cmd == "fail":
		return mcp.NewToolResultError("command failed: exit status 1"), nil
	case cmd == "rpcfail":
		return nil, errors.New("the upstream could not run the command")
	case cmd == "rpcauth":
		return nil, mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{
			{Mode: "url", Message: "Sign in to run commands", ElicitationID: "e-1", URL: "https://example.test/auth"}}}
	case len(fields) == 2 && fields[0] == "big":
		n, _ := strconv.Atoi(fields[1])
		return mcp.NewToolResultText(buildLog(n)), nil
	case len(fields) == 3 && fields[0] == "image":
		w, _ := strconv.Atoi(fields[1])
		h, _ := strconv.Atoi(fields[2])
		var b bytes.Buffer
		png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(base64.StdEncoding.EncodeToString(b.Bytes()), "image/png")}}, nil
	case len(fields) == 2 && fields[0] == "audio":
		n, _ := strconv.Atoi(fields[1])
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewAudioContent(base64.StdEncoding.EncodeToString(make([]byte, n)), "audio/wav")}}, nil
	case len(fields) == 2 && fields[0] == "blob":
		n, _ := strconv.Atoi(fields[1])
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.BlobResourceContents{
			URI: "file:///blob", MIMEType: "application/octet-stream", Blob: base64.StdEncoding.EncodeToString(make([]byte, n))})}}, nil
	case len(fields) == 2 && fields[0] == "structured":
		n, _ := strconv.Atoi(fields[1])
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"text": text(n)}}, nil
	case len(fields) == 2 && fields[0] == "log":
		n, _ := strconv.Atoi(fields[1])
		if srv := server.ServerFromContext(ctx); srv != nil {
			srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "fixture-upstream", text(n)))
		}
		return mcp.NewToolResultText("logged"), nil
	}
	return mcp.NewToolResultText("ran: " + cmd + "\n"), nil
}

func edit(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("edited " + req.GetString("path", "?")), nil
}

// text is n bytes of plain words.
func text(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of the file: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:n]
}

// buildLog is about n bytes of compiler-like output: colours, repeated
// lines, progress.
func buildLog(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch i % 10 {
		case 0:
			fmt.Fprintf(&b, "\x1b[1;32m   Compiling\x1b[0m crate-%d v0.%d.0\n", i, i%7)
		case 1, 2, 3:
			b.WriteString("warning: unused import: `std::fmt`\n")
		default:
			fmt.Fprintf(&b, "\x1b[36mnote\x1b[0m: step %d of the build took %d ms\n", i, i*13%900)
		}
	}
	return b.String()
}
