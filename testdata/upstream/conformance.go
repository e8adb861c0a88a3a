package main

// The fixtures of the official MCP conformance suite's server scenarios
// (@modelcontextprotocol/conformance): the tools, resources, prompts and
// completions it calls, under the names and with the contents it expects.
// `make conformance` runs the suite against this server.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	// pngPixel is a 1×1 red PNG, wavSilence a WAV file of one silent sample.
	pngPixel   = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavSilence = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="

	// schema2020 keeps the JSON Schema 2020-12 keywords the suite checks
	// a server (and anything between it and the client) passes on.
	schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
		`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`

	watchedURI = "test://watched-resource"

	// notificationGrace is how long a tool waits after its last
	// notification before it answers. Over streamable HTTP, mcp-go (v1.2.1)
	// drops a notification that its forwarder has taken but not yet written
	// when the answer is written: the forwarder then finds the request done.
	notificationGrace = 50 * time.Millisecond
)

// conformanceOptions are the capabilities the suite's scenarios use.
func conformanceOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithElicitation(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completions{}),
		server.WithResourceCompletionProvider(completions{}),
	}
}

// addConformance registers the suite's fixtures on s, following resource
// subscriptions through hooks (which s must have been built with).
func addConformance(s *server.MCPServer, hooks *server.Hooks) {
	s.EnableSampling()
	addContentTools(s)
	addClientTools(s)
	addResources(s, hooks)
	addPrompts(s)
}

func textResult(t string) *mcp.CallToolResult { return mcp.NewToolResultText(t) }

func noArgs(name, description string) mcp.Tool {
	return mcp.NewTool(name, mcp.WithDescription(description))
}

// addContentTools: one tool per kind of content a result can hold, an error,
// logging and progress during a call, a schema to pass through, and a call
// whose stream the server closes before it answers.
func addContentTools(s *server.MCPServer) {
	s.AddTool(noArgs("test_simple_text", "Returns a simple text response"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("This is a simple text response for testing."), nil
		})
	s.AddTool(noArgs("test_image_content", "Returns an image"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(pngPixel, "image/png")}}, nil
		})
	s.AddTool(noArgs("test_audio_content", "Returns audio"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewAudioContent(wavSilence, "audio/wav")}}, nil
		})
	s.AddTool(noArgs("test_embedded_resource", "Returns an embedded text resource"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
			})}}, nil
		})
	s.AddTool(noArgs("test_multiple_content_types", "Returns text, an image and an embedded resource"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("Multiple content types test:"),
				mcp.NewImageContent(pngPixel, "image/png"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				}),
			}}, nil
		})
	s.AddTool(noArgs("test_error_handling", "Always fails with a tool error"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("This tool intentionally returns an error for testing"), nil
		})
	s.AddTool(noArgs("test_tool_with_logging", "Sends three log messages while it runs"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				if err := s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "fixture-upstream", msg)); err != nil {
					return nil, err
				}
			}
			time.Sleep(notificationGrace)
			return textResult("Tool with logging executed successfully"), nil
		})
	s.AddTool(noArgs("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 while it runs"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i, p := range []int{0, 50, 100} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				if token == nil {
					continue
				}
				if err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
					map[string]any{"progressToken": token, "progress": p, "total": 100}); err != nil {
					return nil, err
				}
			}
			time.Sleep(notificationGrace)
			return textResult("Tool with progress executed successfully"), nil
		})
	s.AddTool(mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
		RawInputSchema: json.RawMessage(schema2020)},
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("received " + req.GetString("name", "no name")), nil
		})
	s.AddTool(noArgs("test_reconnection", "Over HTTP, closes its response stream before answering: the client gets the result by resuming the stream (SEP-1699)"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if closeStream, ok := ctx.Value(closeStreamKey{}).(func()); ok {
				time.Sleep(50 * time.Millisecond)
				closeStream()
			}
			// Answer once the client has had time to reconnect; the
			// answer is kept for it either way.
			time.Sleep(200 * time.Millisecond)
			return textResult("Reconnection test completed"), nil
		})
}

// addClientTools: tools that ask the client something in the middle of a
// call (sampling, elicitation).
func addClientTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("test_sampling", mcp.WithDescription("Asks the client's LLM to answer a prompt (sampling/createMessage)"),
		mcp.WithString("prompt", mcp.Description("The prompt to send to the LLM"), mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}},
				MaxTokens: 100,
			}})
			if err != nil {
				return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			answer := "(no text)"
			if c, ok := res.Content.(mcp.TextContent); ok {
				answer = c.Text
			}
			return textResult("LLM response: " + answer), nil
		})
	s.AddTool(mcp.NewTool("test_elicitation", mcp.WithDescription("Asks the user for a username and an email (elicitation/create)"),
		mcp.WithString("message", mcp.Description("The message to show the user"), mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, s, "User response", req.GetString("message", ""), map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			})
		})
	s.AddTool(noArgs("test_elicitation_sep1034_defaults", "Asks the user for fields of every primitive type, each with a default (SEP-1034)"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, s, "Elicitation completed", "Please review your information", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "Your name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "Your age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "Your score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "Your status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verified", "default": true},
				},
			})
		})
	titled := func(prefix string) []any {
		var out []any
		for i, w := range []string{"First", "Second", "Third"} {
			out = append(out, map[string]any{"const": fmt.Sprintf("value%d", i+1), "title": w + " " + prefix})
		}
		return out
	}
	options := []string{"option1", "option2", "option3"}
	s.AddTool(noArgs("test_elicitation_sep1330_enums", "Asks the user to choose, in each of the five enum forms (SEP-1330)"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, s, "Elicitation completed", "Please choose", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "enum": options},
					"titledSingle":   map[string]any{"type": "string", "oneOf": titled("Option")},
					"legacyEnum": map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"},
						"enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": options}},
					"titledMulti":   map[string]any{"type": "array", "items": map[string]any{"anyOf": titled("Choice")}},
				},
			})
		})
}

func elicit(ctx context.Context, s *server.MCPServer, label, message string, schema map[string]any) (*mcp.CallToolResult, error) {
	res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: message, RequestedSchema: schema}})
	if err != nil {
		return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
	}
	content, _ := json.Marshal(res.Content)
	return textResult(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, content)), nil
}

// addResources: a text and a binary resource, a template, and a resource
// to subscribe to. A subscription is answered by one
// notifications/resources/updated for it shortly after, as if it had
// changed; an unsubscribed session gets none.
func addResources(s *server.MCPServer, hooks *server.Hooks) {
	s.AddResource(mcp.NewResource("test://static-text", "static-text",
		mcp.WithResourceDescription("A static text resource"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static-text", MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}, nil
		})
	s.AddResource(mcp.NewResource("test://static-binary", "static-binary",
		mcp.WithResourceDescription("A static binary resource (a PNG image)"), mcp.WithMIMEType("image/png")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: pngPixel}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://template/{id}/data", "template",
		mcp.WithTemplateDescription("Data for an id"), mcp.WithTemplateMIMEType("application/json")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			id := templateArg(req.Params.Arguments["id"])
			data, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(data)}}, nil
		})

	var mu sync.Mutex
	revision := 0
	subscribed := map[string]bool{} // session id + "\x00" + uri
	s.AddResource(mcp.NewResource(watchedURI, "watched-resource",
		mcp.WithResourceDescription("A resource to subscribe to; it changes on each subscription"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			mu.Lock()
			defer mu.Unlock()
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: watchedURI, MIMEType: "text/plain",
				Text: fmt.Sprintf("Watched resource content, revision %d", revision)}}, nil
		})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		session := server.ClientSessionFromContext(ctx)
		if session == nil {
			return
		}
		key := session.SessionID() + "\x00" + req.Params.URI
		mu.Lock()
		subscribed[key] = true
		if req.Params.URI == watchedURI {
			revision++
		}
		mu.Unlock()
		go func() {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			still := subscribed[key]
			mu.Unlock()
			if still {
				_ = s.SendNotificationToSpecificClient(session.SessionID(), string(mcp.MethodNotificationResourceUpdated),
					map[string]any{"uri": req.Params.URI})
			}
		}()
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if session := server.ClientSessionFromContext(ctx); session != nil {
			mu.Lock()
			delete(subscribed, session.SessionID()+"\x00"+req.Params.URI)
			mu.Unlock()
		}
	})
}

// templateArg is the value of a template variable as mcp-go gives it: a
// string, or the strings of a list.
func templateArg(v any) string {
	if list, ok := v.([]string); ok {
		return strings.Join(list, ",")
	}
	return fmt.Sprint(v)
}

// addPrompts: a plain prompt, one with arguments, one embedding a resource,
// one with an image.
func addPrompts(s *server.MCPServer) {
	user := func(c mcp.Content) mcp.PromptMessage { return mcp.PromptMessage{Role: mcp.RoleUser, Content: c} }
	s.AddPrompt(mcp.NewPrompt("test_simple_prompt", mcp.WithPromptDescription("A prompt without arguments")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent("This is a simple prompt for testing."))}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_arguments", mcp.WithPromptDescription("A prompt with two required arguments"),
		mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
		mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent(fmt.Sprintf(
				"Prompt with arguments: arg1='%s', arg2='%s'", req.Params.Arguments["arg1"], req.Params.Arguments["arg2"])))}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_embedded_resource", mcp.WithPromptDescription("A prompt embedding a resource"),
		mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain",
					Text: "Embedded resource content for testing."})),
				user(mcp.NewTextContent("Please process the embedded resource above.")),
			}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("test_prompt_with_image", mcp.WithPromptDescription("A prompt with an image")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewImageContent(pngPixel, "image/png")),
				user(mcp.NewTextContent("Please analyze the image above.")),
			}}, nil
		})
}

// completions completes test_prompt_with_arguments' arg1 and the template's
// id from short fixed lists, by prefix; anything else has no completions.
type completions struct{}

func complete(value string, from ...string) *mcp.Completion {
	out := []string{}
	for _, v := range from {
		if strings.HasPrefix(v, value) {
			out = append(out, v)
		}
	}
	return &mcp.Completion{Values: out, Total: len(out)}
}

func (completions) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt == "test_prompt_with_arguments" && arg.Name == "arg1" {
		return complete(arg.Value, "paris", "park", "party"), nil
	}
	return complete(arg.Value), nil
}

func (completions) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if uri == "test://template/{id}/data" && arg.Name == "id" {
		return complete(arg.Value, "123", "456", "789"), nil
	}
	return complete(arg.Value), nil
}
