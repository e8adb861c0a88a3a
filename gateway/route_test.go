package gateway

import (
	"encoding/json"
	"fmt"
	"testing"
)

// A call finds its route as the session's whole map of routes has it:
// the first upstream that lists the name, by the name the agent sees
// (prefixed by its upstream's when names are prefixed), ctx_session never
// an upstream's tool. The map is what tools/list shows; route, what a call
// uses.
func TestARouteIsTheMapsRoute(t *testing.T) {
	type up struct {
		name  string
		tools []string
	}
	for _, tc := range []struct {
		name   string
		prefix bool
		ups    []up
		probes []string // names no list has, or spelled near one
	}{
		{name: "one upstream", ups: []up{{"a", []string{"read", "write", "ctx_shell"}}},
			probes: []string{"", "rea", "read ", "a__read", "READ"}},
		{name: "a clash: the first upstream wins", ups: []up{{"a", []string{"read", "x"}}, {"b", []string{"read", "y"}}},
			probes: []string{"b__read", "z"}},
		{name: "a tool listed twice by one upstream", ups: []up{{"a", []string{"read", "read"}}}},
		{name: "an upstream's ctx_session", ups: []up{{"a", []string{SessionTool, "read"}}},
			probes: []string{SessionTool}},
		{name: "prefixed", prefix: true, ups: []up{{"a", []string{"read", "x"}}, {"b", []string{"read", "y"}}},
			probes: []string{"read", "a__", "__read", "a_read", "b__x", "c__read"}},
		{name: "prefixed, names that run into each other", prefix: true,
			ups:    []up{{"a", []string{"b__c", "d"}}, {"a__b", []string{"c", "e"}}},
			probes: []string{"a__b__c", "a__b__e", "a__b__d", "a__d"}},
		{name: "prefixed, ctx_session", prefix: true, ups: []up{{"ctx", []string{"session"}}, {"a", []string{SessionTool}}},
			probes: []string{SessionTool, "ctx__session", "a__" + SessionTool}},
		{name: "no upstreams", probes: []string{"read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{g: &Gateway{prefix: tc.prefix}}
			for _, u := range tc.ups {
				var list []item
				for i, name := range u.tools {
					list = append(list, item{name: name, raw: json.RawMessage(fmt.Sprintf(`{"name":%q,"i":%d}`, name, i))})
				}
				s.ups = append(s.ups, &upstream{cfg: UpstreamConfig{Name: u.name}, s: s,
					lists: map[string][]item{"tools/list": list, "prompts/list": list}})
			}
			for _, method := range []string{"tools/list", "prompts/list"} {
				order, routes := s.routes(method)
				names := append(order, tc.probes...)
				for _, u := range tc.ups {
					for _, tool := range u.tools {
						names = append(names, tool, u.name+"__"+tool)
					}
				}
				found := 0
				for _, name := range names {
					want, wantOK := routes[name]
					got, ok := s.route(method, name)
					if ok != wantOK || got.up != want.up || got.name != want.name || string(got.raw) != string(want.raw) {
						t.Errorf("%s %q: route %v %+v, the map's %v %+v", method, name, ok, got, wantOK, want)
					}
					if ok {
						found++
					}
				}
				if len(order) > 0 && found == 0 {
					t.Errorf("%s: no name was routed", method)
				}
			}
		})
	}
}
