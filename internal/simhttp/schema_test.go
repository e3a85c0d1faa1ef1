package simhttp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestSchemaInstance(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"absent is an empty object", ``, `{}`},
		{"empty properties", `{"type":"object","properties":{}}`, `{}`},
		{"any value", `{}`, `null`},
		{"boolean schema", `true`, `null`},
		{"small object has every property in order", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["a"]}`, `{"b":"text","a":1}`},
		{"enum first value", `{"enum":["celsius","fahrenheit"]}`, `"celsius"`},
		{"const", `{"const": {"k" : [1, 2]}}`, `{"k":[1,2]}`},
		{"string formats", `{"type":"object","properties":{"t":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uuid"}}}`,
			`{"t":"2026-01-01T00:00:00Z","e":"user@example.com","u":"123e4567-e89b-42d3-a456-426614174000"}`},
		{"string lengths", `{"type":"object","properties":{"long":{"type":"string","minLength":6},"short":{"type":"string","maxLength":2}}}`, `{"long":"textxx","short":"te"}`},
		{"integer bounds", `{"type":"object","properties":{"lo":{"type":"integer","minimum":10},"hi":{"type":"integer","maximum":-3},"ex":{"type":"integer","exclusiveMinimum":4},"mul":{"type":"integer","minimum":5,"multipleOf":4}}}`,
			`{"lo":10,"hi":-3,"ex":5,"mul":8}`},
		{"number between exclusive bounds", `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`, `0.5`},
		{"nullable type list", `{"type":["null","boolean"]}`, `true`},
		{"array of minItems", `{"type":"array","items":{"type":"string"},"minItems":3}`, `["text","text1","text2"]`},
		{"array with items has one", `{"type":"array","items":{"type":"integer"}}`, `[1]`},
		{"array maxItems zero", `{"type":"array","items":{"type":"integer"},"maxItems":0}`, `[]`},
		{"unique enum items", `{"type":"array","items":{"enum":["a","b","c"]},"minItems":2,"uniqueItems":true}`, `["a","b"]`},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}]}`, `["text",true]`},
		{"anyOf takes the first", `{"anyOf":[{"type":"integer"},{"type":"null"}]}`, `1`},
		{"oneOf takes the first", `{"oneOf":[{"type":"string","format":"date"},{"type":"integer"}]}`, `"2026-01-01"`},
		{"local ref into $defs", `{"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"]}`, `{"p":{"x":1}}`},
		{"ref into definitions with escapes", `{"definitions":{"a/b":{"const":7}},"$ref":"#/definitions/a~1b"}`, `7`},
		{"remote ref is any value", `{"$ref":"https://example.com/s.json"}`, `null`},
		{"recursive ref ends", `{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}},"required":["next"]}},"$ref":"#/$defs/N"}`,
			strings.Repeat(`{"next":`, 12) + `{}` + strings.Repeat(`}`, 12)},
		{"allOf merges objects", `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b"]}]}`, `{"a":1,"b":true}`},
		{"required without a property schema", `{"type":"object","required":["x"],"additionalProperties":false}`, `{"x":true}`},
		{"minItems beyond the cap", `{"type":"array","items":{"type":"boolean"},"minItems":1e9}`, "[" + strings.TrimSuffix(strings.Repeat("true,", schemaMaxItems), ",") + "]"},
		{"escaped key and enum", `{"type":"object","properties":{"q\"k":{"enum":["a\"b\u00e9"]}}}`, `{"q\"k":"a\"b\u00e9"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(schemaInstance(json.RawMessage(tt.schema), false))
			if got != tt.want {
				t.Errorf("instance\n got %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("instance %s is not valid JSON", got)
			}
		})
	}
}

func TestSchemaViolations(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"required property missing", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`, `{"b":"text"}`},
		{"wrong type without required", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":12345}`},
		{"extra property of a closed object", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":null,"surge_unexpected":true}`},
		{"not an object", `{"type":"object"}`, `[]`},
		{"outside the enum", `{"enum":["x","y"]}`, `"surge-not-in-enum"`},
		{"wrong root type", `{"type":"integer"}`, `"surge-wrong-type"`},
		{"through a ref", `{"$defs":{"R":{"type":"object","properties":{"k":{"type":"boolean"}},"required":["k"]}},"$ref":"#/$defs/R"}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(schemaInstance(json.RawMessage(tt.schema), true)); got != tt.want {
				t.Errorf("violation\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestSchemaInstanceLarge: a schema of the size and shape of a real
// structured-output request (nested objects, $defs and $ref, enums,
// arrays with bounds, anyOf, formats, closed objects) gets an instance
// with every required member, of the right types.
func TestSchemaInstanceLarge(t *testing.T) {
	raw, err := os.ReadFile("testdata/invoice.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < schemaSmall {
		t.Fatalf("testdata schema has %d bytes: not large", len(raw))
	}
	got := schemaInstance(raw, false)
	var inv struct {
		ID       string `json:"invoice_id"`
		Status   string `json:"status"`
		Issued   string `json:"issued"`
		Currency string `json:"currency"`
		Seller   struct {
			Name    string `json:"name"`
			Address struct {
				Street, City, Country string
			} `json:"address"`
		} `json:"seller"`
		Lines []struct {
			SKU      string  `json:"sku"`
			Quantity int     `json:"quantity"`
			Price    float64 `json:"unit_price"`
			Tax      struct {
				Kind string  `json:"kind"`
				Rate float64 `json:"rate"`
			} `json:"tax"`
		} `json:"lines"`
		Total float64 `json:"total"`
		Notes *string `json:"notes"`
	}
	dec := json.NewDecoder(strings.NewReader(string(got)))
	dec.DisallowUnknownFields() // required members only: a large schema
	if err := dec.Decode(&inv); err != nil {
		t.Fatalf("instance %s: %v", got, err)
	}
	if inv.ID != "textx" || inv.Status != "draft" || inv.Issued != "2026-01-01" || inv.Currency != "EUR" {
		t.Errorf("scalars: %+v", inv)
	}
	if inv.Seller.Name == "" || inv.Seller.Address.Country != "DE" || len(inv.Lines) != 1 {
		t.Errorf("nested: %s", got)
	}
	if l := inv.Lines[0]; l.SKU == "" || l.Quantity != 1 || l.Price != 0 || l.Tax.Kind != "vat" || l.Tax.Rate != 0 {
		t.Errorf("line: %+v", l)
	}
	if inv.Total != 0 || inv.Notes != nil {
		t.Errorf("total %v notes %v", inv.Total, inv.Notes)
	}
}

// FuzzSchemaInstance: no schema makes the generator panic or answer
// invalid JSON, violated or not.
func FuzzSchemaInstance(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/properties/a"}},"required":["a"]}`,
		`{"$ref":"#"}`, `{"$ref":"#/x/0/y"}`, `{"items":[{"type":"string"}],"additionalItems":false,"minItems":3}`,
		`{"type":"string","minLength":-1,"maxLength":-5}`, `{"type":"integer","minimum":1e308,"multipleOf":1e-308}`,
		`{"enum":[]}`, `{"anyOf":[]}`, `{"allOf":[{"$ref":"#"}]}`, `{"type":[]}`, `{"properties":[1]}`, `false`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // decodeRequest refuses the whole body first
		}
		for _, v := range []bool{false, true} {
			if out := schemaInstance(raw, v); !json.Valid(out) {
				t.Fatalf("schema %s violate %v: invalid instance %s", raw, v, out)
			}
		}
	})
}

// readTestdata returns a file of testdata/ as a string.
func readTestdata(name string) (string, error) {
	b, err := os.ReadFile("testdata/" + name)
	return string(b), err
}

// BenchmarkSchemaInstance is the once-per-request cost of a structured
// answer: the instance of a 4 KiB schema ($refs, enums, nested arrays),
// generated, and from the server's cache when the schema comes again.
func BenchmarkSchemaInstance(b *testing.B) {
	raw, err := os.ReadFile("testdata/invoice.schema.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("generate", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			schemaInstance(raw, false)
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := newInstanceCache()
		b.ReportAllocs()
		for range b.N {
			c.instance(raw, false)
		}
	})
}

// TestInstanceCache: a schema seen again is answered from the cache, the
// violating instance apart from the valid one, at most
// maxCachedInstances of each kind, and large schemas not kept.
func TestInstanceCache(t *testing.T) {
	c := newInstanceCache()
	s := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`)
	first := c.instance(s, false)
	if again := c.instance(s, false); string(again) != `{"a":1}` || &again[0] != &first[0] {
		t.Errorf("second instance %s not the cached one", again)
	}
	if bad := c.instance(s, true); string(bad) != `{}` {
		t.Errorf("violating instance %s", bad)
	}
	for i := range 2 * maxCachedInstances {
		c.instance(json.RawMessage(`{"const":`+strings.Repeat("1", i+1)+`}`), false)
	}
	if len(c.valid) > maxCachedInstances || len(c.bad) != 1 {
		t.Errorf("cache holds %d valid, %d violating", len(c.valid), len(c.bad))
	}
	big := json.RawMessage(`{"description":"` + strings.Repeat("x", maxCachedSchema) + `","type":"boolean"}`)
	if got := string(c.instance(big, false)); got != "true" || c.valid[string(big)] != nil {
		t.Errorf("large schema: %s, cached %v", got, c.valid[string(big)] != nil)
	}
	var nilCache *instanceCache
	if got := string(nilCache.instance(s, false)); got != `{"a":1}` {
		t.Errorf("nil cache: %s", got)
	}
}
