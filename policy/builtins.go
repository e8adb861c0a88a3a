package policy

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// allowedBuiltins are the built-in functions a policy may call in the
// harness: an allow-list, so that a built-in a later OPA release adds (a
// new way to reach the network, say) is refused until someone decides
// otherwise here. A policy from a cloned repository must not send tool
// arguments anywhere or read the process's environment: refusedBuiltins
// lists OPA's built-ins left out for that reason. TestBuiltinLists holds
// the two lists and OPA's built-ins equal, so an upgrade of OPA that adds
// a built-in fails it until the built-in is put in one list or the other.
var allowedBuiltins = []string{
	// Operators, comparisons, types, numbers, strings, aggregates.
	"abs", "all", "and", "any", "assign", "cast_array", "cast_boolean", "cast_null", "cast_object",
	"cast_set", "cast_string", "ceil", "concat", "contains", "count", "div", "endswith", "eq",
	"equal", "floor", "format_int", "gt", "gte", "indexof", "indexof_n", "intersection", "is_array",
	"is_boolean", "is_null", "is_number", "is_object", "is_set", "is_string", "lower", "lt", "lte",
	"max", "min", "minus", "mul", "neq", "or", "plus", "print", "product", "re_match", "rem",
	"replace", "round", "set_diff", "sort", "split", "sprintf", "startswith", "substring", "sum",
	"to_number", "trace", "trim", "trim_left", "trim_prefix", "trim_right", "trim_space",
	"trim_suffix", "type_name", "union", "upper", "walk",
	"array.concat", "array.flatten", "array.reverse", "array.slice",
	"base64.decode", "base64.encode", "base64.is_valid",
	"base64url.decode", "base64url.encode", "base64url.encode_no_pad",
	"bits.and", "bits.lsh", "bits.negate", "bits.or", "bits.rsh", "bits.xor",
	"crypto.hmac.equal", "crypto.hmac.md5", "crypto.hmac.sha1", "crypto.hmac.sha256",
	"crypto.hmac.sha512", "crypto.md5", "crypto.parse_private_keys", "crypto.sha1", "crypto.sha256",
	"crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_certificate_request",
	"crypto.x509.parse_certificates", "crypto.x509.parse_keypair",
	"crypto.x509.parse_rsa_private_key",
	"glob.match", "glob.quote_meta",
	"graph.reachable",
	"graphql.is_valid", "graphql.parse", "graphql.parse_and_verify", "graphql.parse_query",
	"graphql.parse_schema", "graphql.schema_is_valid",
	"hex.decode", "hex.encode",
	"internal.member_2", "internal.member_3", "internal.print", "internal.template_string",
	"internal.test_case",
	"io.jwt.decode", "io.jwt.decode_verify", "io.jwt.encode_sign", "io.jwt.encode_sign_raw",
	"io.jwt.verify_eddsa", "io.jwt.verify_es256", "io.jwt.verify_es384", "io.jwt.verify_es512",
	"io.jwt.verify_hs256", "io.jwt.verify_hs384", "io.jwt.verify_hs512", "io.jwt.verify_ps256",
	"io.jwt.verify_ps384", "io.jwt.verify_ps512", "io.jwt.verify_rs256", "io.jwt.verify_rs384",
	"io.jwt.verify_rs512",
	"json.filter", "json.is_valid", "json.marshal", "json.marshal_with_options", "json.match_schema",
	"json.patch", "json.remove", "json.unmarshal", "json.verify_schema",
	"net.cidr_contains", "net.cidr_contains_matches", "net.cidr_expand", "net.cidr_intersects",
	"net.cidr_is_valid", "net.cidr_merge", "net.cidr_overlap",
	"numbers.range", "numbers.range_step",
	"object.filter", "object.get", "object.keys", "object.remove", "object.subset", "object.union",
	"object.union_n",
	"rand.intn",
	"regex.find_all_string_submatch_n", "regex.find_n", "regex.globs_match", "regex.is_valid",
	"regex.match", "regex.replace", "regex.split", "regex.template_match",
	"rego.metadata.chain", "rego.metadata.rule", "rego.parse_module",
	"semver.compare", "semver.is_valid",
	"strings.any_prefix_match", "strings.any_suffix_match", "strings.count",
	"strings.render_template", "strings.replace_n", "strings.reverse", "strings.split_n",
	"time.add_date", "time.clock", "time.date", "time.diff", "time.format", "time.now_ns",
	"time.parse_duration_ns", "time.parse_ns", "time.parse_rfc3339_ns", "time.weekday",
	"units.parse", "units.parse_bytes",
	"uri.is_valid", "uri.parse",
	"urlquery.decode", "urlquery.decode_object", "urlquery.encode", "urlquery.encode_object",
	"uuid.parse", "uuid.rfc4122",
	"yaml.is_valid", "yaml.marshal", "yaml.unmarshal",
}

// refusedBuiltins are OPA's built-ins that policies may not call: they reach
// the network (http.send, net.lookup_ip_addr, providers.aws.sign_req, and
// certificate verification with options, which may fetch), read the
// process's environment and configuration (opa.runtime), or do work
// exponential in their arguments inside one call, where neither the
// evaluation's deadline nor its heap bound is looked at
// (graph.reachable_paths enumerates every path: a graph of 80 nodes has
// 2^40, and the process grows until it dies).
var refusedBuiltins = []string{
	"crypto.x509.parse_and_verify_certificates_with_options",
	"graph.reachable_paths",
	"http.send",
	"net.lookup_ip_addr",
	"opa.runtime",
	"providers.aws.sign_req",
}

// clockBuiltins are allowed built-ins whose result depends on the time
// although OPA does not mark them non-deterministic: a certificate chain
// is verified against the clock (NotBefore, NotAfter). A policy calling
// one is never answered from the decision cache, which would go on
// allowing what the policy refuses once a certificate expires. A built-in
// OPA adds is decided on in TestBuiltinLists; one whose result may change
// while its arguments do not belongs here unless OPA marks it.
var clockBuiltins = []string{
	"crypto.x509.parse_and_verify_certificates",
}

// variesAlone reports whether a built-in's result may change while its
// arguments do not: OPA marks it non-deterministic, or it reads the clock.
func variesAlone(b *ast.Builtin) bool {
	return b.Nondeterministic || slices.Contains(clockBuiltins, b.Name)
}

// Capabilities are what the harness's policy and custom policies are
// compiled with: OPA's capabilities, with only the allowed built-ins and no
// network host.
func Capabilities() *ast.Capabilities { return restrict(ast.CapabilitiesForThisVersion()) }

// restrict keeps the allowed built-ins of caps.
func restrict(caps *ast.Capabilities) *ast.Capabilities {
	caps.Builtins = slices.DeleteFunc(slices.Clone(caps.Builtins), func(b *ast.Builtin) bool {
		return !slices.Contains(allowedBuiltins, b.Name)
	})
	caps.AllowNet = []string{}
	return caps
}
