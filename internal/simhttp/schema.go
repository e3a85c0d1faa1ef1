package simhttp

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Bounds of one generated instance, so that no schema (recursive, or
// asking for a billion items) costs more than a few milliseconds.
const (
	schemaMaxDepth  = 24       // nesting of $ref, anyOf, objects and arrays
	schemaMaxOut    = 64 << 10 // bytes of JSON; past it every value is minimal
	schemaMaxVisits = 20000    // schema nodes visited
	schemaMaxItems  = 64       // items of one array (minItems beyond it is not met)
	schemaMaxString = 1024     // characters of one string (minLength beyond it is not met)
	// schemaSmall is the size in bytes under which a schema is small: its
	// instance then has every property, not only the required ones.
	schemaSmall = 2048
)

// schemaInstance returns one JSON instance of the JSON Schema raw (an
// object or a boolean schema; absent: any object), generated the way a
// grammar-constrained engine would answer it: required properties (every
// property when the schema is small), enums' first value, const, arrays
// of minItems items (at least one when items are given), strings of a
// sane format and length, numbers within their bounds, local $refs
// followed, the first branch of anyOf/oneOf, allOf merged. With violate,
// the instance is valid JSON that breaks the schema at its root (a
// required property missing, a wrong type or a value outside the enum),
// as an engine without constrained decoding would answer.
//
// It never fails: what it cannot satisfy (pattern, not, a minItems above
// schemaMaxItems) it ignores.
func schemaInstance(raw json.RawMessage, violate bool) []byte {
	if absent(raw) {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	g := &schemaGen{root: raw, all: len(raw) < schemaSmall, nodes: map[rawKey]*schemaNode{}}
	g.gen(raw, 0, 0, violate)
	return g.out
}

// Bounds of the instance cache: schemas of at most 64 KiB, 64 of each
// kind (valid, violating).
const (
	maxCachedSchema    = 64 << 10
	maxCachedInstances = 64
)

// instanceCache keeps the instances of the schemas seen lately, so that
// requests sending the same schema again (a dataset's rows, a check's
// repeated requests) do not generate it again: 0.5 ms for a 4 KiB schema.
// Safe for concurrent use; the nil cache generates every time. The
// instances it returns are shared: callers must not modify them.
type instanceCache struct {
	mu         sync.Mutex
	valid, bad map[string][]byte
}

func newInstanceCache() *instanceCache {
	return &instanceCache{valid: map[string][]byte{}, bad: map[string][]byte{}}
}

// instance is schemaInstance(raw, violate), from the cache when it holds it.
func (c *instanceCache) instance(raw json.RawMessage, violate bool) []byte {
	if c == nil || len(raw) > maxCachedSchema {
		return schemaInstance(raw, violate)
	}
	m := c.valid
	if violate {
		m = c.bad
	}
	c.mu.Lock()
	out, ok := m[string(raw)]
	c.mu.Unlock()
	if ok {
		return out
	}
	out = schemaInstance(raw, violate)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m) >= maxCachedInstances {
		for k := range m { // evict one at random
			delete(m, k)
			break
		}
	}
	m[string(raw)] = out
	return out
}

type schemaGen struct {
	root   json.RawMessage
	all    bool // every property, not only the required ones
	out    []byte
	visits int
	nodes  map[rawKey]*schemaNode // parsed schema objects by their bytes
}

// rawKey identifies a sub-message of the schema by its bytes' address:
// a $ref reached twice resolves to the same slice of the parsed parent.
type rawKey struct {
	p *byte
	n int
}

// schemaNode is one parsed schema object.
type schemaNode struct {
	m         map[string]json.RawMessage
	propKeys  []string // "properties" in document order
	propVals  []json.RawMessage
	propsDone bool
}

// node parses raw as a schema object; nil for a boolean schema or
// anything that is not an object.
func (g *schemaGen) node(raw json.RawMessage) *schemaNode {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	k := rawKey{&raw[0], len(raw)}
	if n, ok := g.nodes[k]; ok {
		return n
	}
	n := &schemaNode{}
	if json.Unmarshal(raw, &n.m) != nil {
		n = nil
	}
	g.nodes[k] = n
	return n
}

// props returns the node's properties in document order.
func (n *schemaNode) props() ([]string, []json.RawMessage) {
	if !n.propsDone {
		n.propsDone = true
		n.propKeys, n.propVals = orderedMembers(n.m["properties"])
	}
	return n.propKeys, n.propVals
}

// orderedMembers returns the members of a JSON object in document order
// (the last of duplicated keys wins, as encoding/json decides).
func orderedMembers(raw json.RawMessage) ([]string, []json.RawMessage) {
	if absent(raw) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	var vals []json.RawMessage
	idx := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys, vals
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return keys, vals
		}
		if i, dup := idx[k]; dup {
			vals[i] = v
			continue
		}
		idx[k] = len(keys)
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals
}

// resolve follows a local $ref ("#", "#/$defs/X", "#/definitions/X", any
// JSON pointer into the document); nil for another document's.
func (g *schemaGen) resolve(ref string) json.RawMessage {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if p, err := url.PathUnescape(ptr); err == nil {
		ptr = p
	}
	cur := g.root
	if ptr == "" {
		return cur
	}
	if ptr[0] != '/' {
		return nil // an anchor: not followed
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if n := g.node(cur); n != nil {
			if cur, ok = n.m[tok]; !ok {
				return nil
			}
			continue
		}
		var arr []json.RawMessage
		i, err := strconv.Atoi(tok)
		if json.Unmarshal(cur, &arr) != nil || err != nil || i < 0 || i >= len(arr) {
			return nil
		}
		cur = arr[i]
	}
	return cur
}

// gen appends an instance of the schema raw; variant makes the items of
// an array differ (uniqueItems); violate breaks the schema (the root only).
func (g *schemaGen) gen(raw json.RawMessage, depth, variant int, violate bool) {
	g.visits++
	n := g.node(raw)
	if n == nil { // true, false, or not a schema: any value will do
		g.out = append(g.out, "null"...)
		return
	}
	if depth > schemaMaxDepth || len(g.out) > schemaMaxOut || g.visits > schemaMaxVisits {
		g.minimal(n)
		return
	}
	if ref := str(n.m["$ref"]); ref != "" {
		if target := g.resolve(ref); target != nil {
			g.gen(target, depth+1, variant, violate)
			return
		}
	}
	if c, ok := n.m["const"]; ok {
		if violate {
			g.out = append(g.out, `"surge-not-the-const"`...)
			return
		}
		g.appendCompact(c)
		return
	}
	if e, ok := n.m["enum"]; ok {
		var vals []json.RawMessage
		if json.Unmarshal(e, &vals) == nil && len(vals) > 0 {
			if violate {
				g.out = append(g.out, `"surge-not-in-enum"`...)
				return
			}
			g.appendCompact(vals[variant%len(vals)])
			return
		}
	}
	for _, k := range [...]string{"anyOf", "oneOf"} {
		var alts []json.RawMessage
		if raw, ok := n.m[k]; ok && json.Unmarshal(raw, &alts) == nil && len(alts) > 0 {
			g.gen(alts[0], depth+1, variant, violate)
			return
		}
	}
	typ := schemaType(n)
	if violate {
		if typ != "object" {
			g.out = append(g.out, wrongType(typ)...)
			return
		}
	}
	switch typ {
	case "object":
		g.object(n, depth, variant, violate)
	case "array":
		g.array(n, depth)
	case "string":
		g.str(n, variant)
	case "integer", "number":
		g.number(n, typ == "integer", variant)
	case "boolean":
		g.out = append(g.out, "true"...)
	default:
		g.out = append(g.out, "null"...)
	}
}

// minimal appends the smallest value of the node's type.
func (g *schemaGen) minimal(n *schemaNode) {
	switch schemaType(n) {
	case "object":
		g.out = append(g.out, "{}"...)
	case "array":
		g.out = append(g.out, "[]"...)
	case "string":
		g.out = append(g.out, `""`...)
	case "integer", "number":
		g.out = append(g.out, '0')
	case "boolean":
		g.out = append(g.out, "true"...)
	default:
		g.out = append(g.out, "null"...)
	}
}

// schemaType is the node's type: the "type" keyword (the first that is
// not "null" of a list), else inferred from the keywords present; "" for
// any value.
func schemaType(n *schemaNode) string {
	if t, ok := n.m["type"]; ok {
		if s := str(t); s != "" {
			return s
		}
		var ts []string
		if json.Unmarshal(t, &ts) == nil {
			for _, s := range ts {
				if s != "null" {
					return s
				}
			}
			if len(ts) > 0 {
				return ts[0]
			}
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := n.m[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "allOf", "minProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems"):
		return "array"
	case has("minLength", "maxLength", "format", "pattern"):
		return "string"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return ""
}

// wrongType is a value that is not of type typ.
func wrongType(typ string) string {
	if typ == "string" {
		return "12345"
	}
	return `"surge-wrong-type"`
}

// object appends an object: the node merged with its allOf members.
func (g *schemaGen) object(n *schemaNode, depth, variant int, violate bool) {
	parts := []*schemaNode{n}
	var all []json.RawMessage
	if raw, ok := n.m["allOf"]; ok && json.Unmarshal(raw, &all) == nil {
		for _, a := range all {
			if an := g.node(g.derefObject(a)); an != nil {
				parts = append(parts, an)
			}
		}
	}
	// The parts merged, their properties in order (the first part to
	// describe a key gives its schema). The slices and maps stay in this
	// frame, where they need not be allocated.
	var keys []string
	var vals []json.RawMessage
	seen := map[string]bool{}
	var required []string
	closed := false
	var extra json.RawMessage // additionalProperties as a schema
	minProps := 0
	for _, p := range parts {
		ks, vs := p.props()
		for i, k := range ks {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
				vals = append(vals, vs[i])
			}
		}
		req, noMore, ap, mp := g.objectLimits(p)
		required = append(required, req...)
		closed = closed || noMore
		if ap != nil {
			extra = ap
		}
		minProps = max(minProps, mp)
	}
	isReq := map[string]bool{}
	for _, r := range required {
		isReq[r] = true
	}
	var members []objectMember
	for i, k := range keys {
		if g.all || isReq[k] {
			members = append(members, objectMember{key: k, val: vals[i]})
		}
	}
	for _, r := range required { // required but not described
		if !seen[r] {
			seen[r] = true
			members = append(members, objectMember{key: r, val: extra})
		}
	}
	for i := 0; len(members) < minProps && i < len(keys); i++ {
		if !g.all && !isReq[keys[i]] {
			members = append(members, objectMember{key: keys[i], val: vals[i]})
		}
	}
	if violate {
		var ok bool
		if members, ok = g.violateObject(members, required, closed); !ok {
			g.out = append(g.out, "[]"...) // not an object at all
			return
		}
	}
	g.appendMembers(members, depth, variant)
}

// derefObject follows the $refs of the schema a (an allOf member) to the
// object they name; a itself when it has none, nil when one is not found.
func (g *schemaGen) derefObject(a json.RawMessage) json.RawMessage {
	for range schemaMaxDepth {
		an := g.node(a)
		ref := ""
		if an != nil {
			ref = str(an.m["$ref"])
		}
		if ref == "" {
			break
		}
		if a = g.resolve(ref); a == nil {
			break
		}
	}
	return a
}

// objectLimits are what one part of an object says beyond its properties:
// its required keys, whether it allows no other properties
// (additionalProperties false), its additionalProperties as a schema (nil
// for none) and its minProperties (0 for none, at most schemaMaxItems).
func (g *schemaGen) objectLimits(p *schemaNode) (required []string, closed bool, extra json.RawMessage, minProps int) {
	var req []string
	if raw, ok := p.m["required"]; ok && json.Unmarshal(raw, &req) == nil {
		required = req
	}
	if ap, ok := p.m["additionalProperties"]; ok {
		if string(bytes.TrimSpace(ap)) == "false" {
			closed = true
		} else if g.node(ap) != nil {
			extra = ap
		}
	}
	if mp, ok := num(p.m["minProperties"]); ok && mp > 0 {
		minProps = int(min(mp, schemaMaxItems))
	}
	return required, closed, extra, minProps
}

// objectMember is one property of a generated object.
type objectMember struct {
	key   string
	val   json.RawMessage // nil: no schema (any value)
	wrong bool            // violate: a value of the wrong type
}

// violateObject breaks an object's members: it drops the first required
// property, else gives the first a value of the wrong type, else adds one
// a closed object does not allow; false when none of these applies (the
// instance is then not to be an object at all).
func (g *schemaGen) violateObject(members []objectMember, required []string, closed bool) ([]objectMember, bool) {
	switch {
	case len(required) > 0: // drop the first required property
		for i, m := range members {
			if m.key == required[0] {
				members = append(members[:i], members[i+1:]...)
				break
			}
		}
	case len(members) > 0 && g.typed(members[0].val):
		members[0].wrong = true
	case closed:
		members = append(members, objectMember{key: "surge_unexpected", val: nil})
	default:
		return members, false
	}
	return members, true
}

// appendMembers appends the object of members, each value generated from
// its schema (true without one, a wrong type when marked so).
func (g *schemaGen) appendMembers(members []objectMember, depth, variant int) {
	g.out = append(g.out, '{')
	for i, m := range members {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.out = appendJSONString(g.out, m.key)
		g.out = append(g.out, ':')
		switch {
		case m.wrong:
			g.out = append(g.out, wrongType(g.typeOf(m.val))...)
		case m.val == nil:
			g.out = append(g.out, "true"...)
		default:
			g.gen(m.val, depth+1, variant, false)
		}
	}
	g.out = append(g.out, '}')
}

// typeOf is the type of the schema raw after following $refs.
func (g *schemaGen) typeOf(raw json.RawMessage) string {
	for range schemaMaxDepth {
		n := g.node(raw)
		if n == nil {
			return ""
		}
		ref := str(n.m["$ref"])
		if ref == "" || g.resolve(ref) == nil {
			return schemaType(n)
		}
		raw = g.resolve(ref)
	}
	return ""
}

// typed reports whether the schema raw restricts the type of its values.
func (g *schemaGen) typed(raw json.RawMessage) bool { return g.typeOf(raw) != "" }

// array appends an array of minItems items (one when items are given
// and minItems is not), prefixItems first.
func (g *schemaGen) array(n *schemaNode, depth int) {
	var prefix []json.RawMessage
	if raw, ok := n.m["prefixItems"]; ok {
		_ = json.Unmarshal(raw, &prefix)
	}
	items, hasItems := n.m["items"]
	if hasItems && len(bytes.TrimSpace(items)) > 0 && bytes.TrimSpace(items)[0] == '[' { // draft 4 tuple
		_ = json.Unmarshal(items, &prefix)
		items, hasItems = n.m["additionalItems"]
	}
	if hasItems && string(bytes.TrimSpace(items)) == "false" {
		hasItems = false
	}
	count := len(prefix)
	if lo, ok := num(n.m["minItems"]); ok {
		count = max(count, int(min(lo, schemaMaxItems)))
	}
	if count == 0 && hasItems {
		count = 1
	}
	if hi, ok := num(n.m["maxItems"]); ok && float64(count) > hi {
		count = max(int(hi), 0)
	}
	count = min(count, schemaMaxItems)
	g.out = append(g.out, '[')
	for i := range count {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		switch {
		case i < len(prefix):
			g.gen(prefix[i], depth+1, i, false)
		case hasItems:
			g.gen(items, depth+1, i, false)
		default:
			g.out = append(g.out, "null"...)
		}
	}
	g.out = append(g.out, ']')
}

// formats are sane values of the string formats engines are asked for.
var formats = map[string]string{
	"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "time": "12:00:00Z",
	"duration": "P1D", "email": "user@example.com", "idn-email": "user@example.com",
	"hostname": "example.com", "idn-hostname": "example.com", "ipv4": "192.0.2.1",
	"ipv6": "2001:db8::1", "uri": "https://example.com/", "uri-reference": "https://example.com/",
	"iri": "https://example.com/", "iri-reference": "https://example.com/", "url": "https://example.com/",
	"uuid": "123e4567-e89b-42d3-a456-426614174000", "uri-template": "https://example.com/{id}",
	"json-pointer": "/a", "relative-json-pointer": "0", "regex": "a+",
}

// str appends a string: the format's value, else "text" (with the
// variant's number), padded with x to minLength, cut to maxLength.
func (g *schemaGen) str(n *schemaNode, variant int) {
	s, known := formats[str(n.m["format"])]
	if !known {
		s = "text"
		if variant > 0 {
			s += strconv.Itoa(variant)
		}
	}
	if lo, ok := num(n.m["minLength"]); ok && float64(len(s)) < lo {
		s += strings.Repeat("x", int(min(lo, schemaMaxString))-len(s))
	}
	if hi, ok := num(n.m["maxLength"]); ok && float64(len(s)) > hi {
		s = s[:max(int(hi), 0)]
	}
	g.out = appendJSONString(g.out, s)
}

// number appends a number within minimum/maximum (inclusive or
// exclusive, draft 4's boolean form too), a multiple of multipleOf when
// that fits: the lower bound when there is one, else 1 (+ variant),
// pulled under the upper bound.
func (g *schemaGen) number(n *schemaNode, integer bool, variant int) {
	lo, hasLo := num(n.m["minimum"])
	hi, hasHi := num(n.m["maximum"])
	exLo, exHi := false, false
	if v, ok := num(n.m["exclusiveMinimum"]); ok {
		lo, hasLo, exLo = v, true, true
	} else if str(n.m["exclusiveMinimum"]) == "" && string(bytes.TrimSpace(n.m["exclusiveMinimum"])) == "true" {
		exLo = true
	}
	if v, ok := num(n.m["exclusiveMaximum"]); ok {
		hi, hasHi, exHi = v, true, true
	} else if string(bytes.TrimSpace(n.m["exclusiveMaximum"])) == "true" {
		exHi = true
	}
	v := float64(1 + variant)
	if hasLo {
		v = lo + float64(variant)
		if exLo {
			v = lo + 1 + float64(variant)
			if !integer && hasHi {
				v = lo + (hi-lo)/2
			}
		}
	}
	if hasHi && (v > hi || (exHi && v >= hi)) {
		v = hi
		if exHi {
			v = hi - 1
			if !integer && hasLo {
				v = lo + (hi-lo)/2
			}
		}
	}
	if integer {
		switch {
		case hasLo && exLo:
			v = math.Max(math.Floor(v), math.Floor(lo)+1)
		case hasLo:
			v = math.Max(math.Floor(v), math.Ceil(lo))
		default:
			v = math.Floor(v)
		}
	}
	if m, ok := num(n.m["multipleOf"]); ok && m > 0 && !math.IsInf(v/m, 0) {
		if k := math.Ceil(v / m); !hasHi || k*m <= hi {
			v = k * m
		}
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		v = 0
	}
	if integer && math.Abs(v) < 1<<53 {
		g.out = strconv.AppendInt(g.out, int64(v), 10)
		return
	}
	g.out = strconv.AppendFloat(g.out, v, 'g', -1, 64)
}

// appendCompact appends the JSON value raw without insignificant space.
func (g *schemaGen) appendCompact(raw json.RawMessage) {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		g.out = append(g.out, "null"...)
		return
	}
	g.out = append(g.out, b.Bytes()...)
}

// str is raw as a JSON string; "" when it is not one.
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// num is raw as a number; false when it is not one.
func num(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}
