package mcp

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The example of RFC 8785 section 3.2.2.
func TestCanonicalizeRFCExample(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],` +
		`"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The sorting example of RFC 8785 section 3.2.3: keys sort by UTF-16 code units, so the
// emoji (surrogates D83D DE00) comes before U+FB33 although its code point is higher.
func TestCanonicalizeSortsByUTF16(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control",` +
		`"ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign",` +
		`"😀":"Emoji: Grinning Face","` + "\ufb33" + `":"Hebrew Letter Dalet With Dagesh"}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestCanonicalizeStrings(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"quote and backslash", `"a\"b\\c"`, `"a\"b\\c"`},
		{"short escapes", `"\b\t\n\f\r"`, `"\b\t\n\f\r"`},
		{"other controls lowercase hex", `"\u0000\u001F\u000b"`, `"\u0000\u001f\u000b"`},
		{"DEL stays literal", `"\u007f"`, "\"\x7f\""},
		{"slash unescaped", `"a\/b"`, `"a/b"`},
		{"line separators literal", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"non-ASCII literal", `"\u00e9\u4e2d"`, `"é中"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"raw UTF-8 kept", `"ünïcode 😀"`, `"ünïcode 😀"`},
		{"escaped ASCII", `"\u0041"`, `"A"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ``},
		{"whitespace", `   `},
		{"truncated", `{"a":`},
		{"trailing comma", `[1,]`},
		{"trailing value", `{} {}`},
		{"trailing junk", `1 x`},
		{"leading zero", `01`},
		{"single quotes", `{'a':1}`},
		{"duplicate key", `{"a":1,"a":2}`},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`},
		{"nested duplicate key", `{"x":[{"k":1,"k":1}]}`},
		{"invalid UTF-8", "\"\xff\""},
		{"encoded surrogate", "\"\xed\xa0\x80\""},
		{"lone high surrogate", `"\ud800"`},
		{"high then non-low", `"\ud800\u0041"`},
		{"lone low surrogate", `"\udc00"`},
		{"lone surrogate in key", `{"\udfff":1}`},
		{"two highs", `"\ud800\ud800"`},
		{"overflow", `1e309`},
		{"negative overflow", `-1e400`},
		{"NaN", `NaN`},
		{"Infinity", `Infinity`},
		{"raw control char", "\"\x01\""},
		{"too deep", strings.Repeat("[", MaxCanonicalDepth+1) + strings.Repeat("]", MaxCanonicalDepth+1)},
		{"too deep objects", strings.Repeat(`{"a":`, MaxCanonicalDepth+1) + "1" + strings.Repeat("}", MaxCanonicalDepth+1)},
		{"hostile depth", strings.Repeat("[", 1_000_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err == nil {
				t.Fatalf("Canonicalize(%.40q) = %s, want an error", tt.in, got)
			}
			if !errors.Is(err, ErrNotCanonicalizable) {
				t.Errorf("error %v does not wrap ErrNotCanonicalizable", err)
			}
		})
	}
}

func TestCanonicalizeDepthLimitIsExact(t *testing.T) {
	in := strings.Repeat("[", MaxCanonicalDepth) + strings.Repeat("]", MaxCanonicalDepth)
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatalf("depth %d refused: %v", MaxCanonicalDepth, err)
	}
	if string(got) != in {
		t.Errorf("got %s", got)
	}
}

func TestCanonicalizeStructure(t *testing.T) {
	tests := []struct{ in, want string }{
		{` { "b" : [ 1 , { "d":true, "c":null } ], "a" : "" } `, `{"a":"","b":[1,{"c":null,"d":true}]}`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`"x"`, `"x"`},
		{`null`, `null`},
		{`{"aa":1,"a":2,"b":3,"":4}`, `{"":4,"a":2,"aa":1,"b":3}`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// fpTool is a typical declared tool used by the fingerprint tests and the benchmark.
func fpTool() Declared {
	return Declared{
		Name: "list_tasks",
		Description: "List the tasks in a project, newest first. Use this to answer questions " +
			"about what is due, what is overdue and what was done recently. It returns the title, " +
			"the due date, the labels and whether each task is done; it never changes anything. " +
			"Pass a project name to narrow the list, or leave it out for all projects.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"project": {"type": "string", "description": "project name"},
				"done":    {"type": "boolean", "description": "include finished tasks"},
				"limit":   {"type": "integer", "minimum": 1, "maximum": 100},
				"labels":  {"type": "array", "items": {"type": "string"}}
			},
			"required": ["project"]
		}`),
		ReadOnlyHint: true,
	}
}

func TestDeclaredCanonical(t *testing.T) {
	d := Declared{Name: "echo", Description: "Says \"hi\"\n", InputSchema: json.RawMessage(` {"b":1, "a":[true]} `)}
	got, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"Says \"hi\"\n","inputSchema":{"a":[true],"b":1},"name":"echo","readOnlyHint":false}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The hand-written layout must be what Canonicalize itself produces.
	again, err := Canonicalize([]byte(got))
	if err != nil || string(again) != got {
		t.Errorf("Canonical is not canonical: %s (%v)", again, err)
	}
}

func TestDeclaredCanonicalEmptySchema(t *testing.T) {
	want := `{"description":"","inputSchema":{},"name":"t","readOnlyHint":true}`
	for _, schema := range []json.RawMessage{nil, json.RawMessage(""), json.RawMessage(" "), json.RawMessage("null"), json.RawMessage(" {} ")} {
		got, err := Declared{Name: "t", InputSchema: schema, ReadOnlyHint: true}.Canonical()
		if err != nil {
			t.Fatalf("schema %q: %v", schema, err)
		}
		if got != want {
			t.Errorf("schema %q: got %s", schema, got)
		}
	}
}

func TestDeclaredCanonicalRefuses(t *testing.T) {
	tests := []struct {
		name string
		d    Declared
	}{
		{"duplicate schema key", Declared{Name: "t", InputSchema: json.RawMessage(`{"type":"object","type":"string"}`)}},
		{"invalid schema", Declared{Name: "t", InputSchema: json.RawMessage(`{`)}},
		{"invalid UTF-8 name", Declared{Name: "t\xff"}},
		{"invalid UTF-8 description", Declared{Name: "t", Description: "\xc0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.d.Canonical(); err == nil {
				t.Error("Canonical: no error")
			}
			if _, err := Fingerprint(tt.d); err == nil {
				t.Error("Fingerprint: no error")
			}
		})
	}
}

func TestFingerprintFormat(t *testing.T) {
	shape, err := Fingerprint(Declared{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	fp := shape.Fingerprint
	// sha256 of {"description":"","inputSchema":{},"name":"t","readOnlyHint":false}
	const want = "sha256:"
	if !strings.HasPrefix(fp, want) || len(fp) != len(want)+64 || strings.ToLower(fp) != fp {
		t.Errorf("fingerprint %q is not sha256: + 64 lowercase hex", fp)
	}
}

func TestFingerprintIgnoresKeyOrderAndWhitespace(t *testing.T) {
	base := fpTool()
	want, err := Fingerprint(base)
	if err != nil {
		t.Fatal(err)
	}
	same := []string{
		`{"required":["project"],"properties":{"labels":{"items":{"type":"string"},"type":"array"},"limit":{"maximum":100,"minimum":1,"type":"integer"},"done":{"description":"include finished tasks","type":"boolean"},"project":{"description":"project name","type":"string"}},"type":"object"}`,
		"{\n\t\"type\":\"object\",\"properties\":{\"project\":{\"type\":\"string\",\"description\":\"project name\"},\"done\":{\"type\":\"boolean\",\"description\":\"include finished tasks\"},\"limit\":{\"type\":\"integer\",\"minimum\":1.0,\"maximum\":1e2},\"labels\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"project\"]\r\n}",
		`{"type":"\u006fbject","properties":{"project":{"type":"string","description":"project name"},"done":{"type":"boolean","description":"include finished tasks"},"limit":{"type":"integer","minimum":1,"maximum":100},"labels":{"type":"array","items":{"type":"string"}}},"required":["project"]}`,
	}
	for i, s := range same {
		d := base
		d.InputSchema = json.RawMessage(s)
		got, err := Fingerprint(d)
		if err != nil {
			t.Fatalf("variant %d: %v", i, err)
		}
		if got.Fingerprint != want.Fingerprint {
			t.Errorf("variant %d changed the fingerprint", i)
		}
		changed, err := ChangedFields(base, d)
		if err != nil || changed != nil {
			t.Errorf("variant %d: ChangedFields = %v, %v; want nothing", i, changed, err)
		}
	}
}

func TestFingerprintSeesEveryRealChange(t *testing.T) {
	base := fpTool()
	baseFP, err := Fingerprint(base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(d *Declared)
		want   []string
	}{
		{"name", func(d *Declared) { d.Name = "list_task" }, []string{"name"}},
		{"description", func(d *Declared) { d.Description += " " }, []string{"description"}},
		{"read-only claim dropped", func(d *Declared) { d.ReadOnlyHint = false }, []string{"readOnlyHint"}},
		{"schema type", func(d *Declared) {
			d.InputSchema = json.RawMessage(strings.Replace(string(d.InputSchema), `"type": "boolean"`, `"type": "string"`, 1))
		}, []string{"inputSchema"}},
		{"schema number", func(d *Declared) {
			d.InputSchema = json.RawMessage(strings.Replace(string(d.InputSchema), `"maximum": 100`, `"maximum": 101`, 1))
		}, []string{"inputSchema"}},
		{"schema array order", func(d *Declared) {
			d.InputSchema = json.RawMessage(`{"type":"object","required":["b","a"]}`)
		}, []string{"inputSchema"}},
		{"schema dropped", func(d *Declared) { d.InputSchema = nil }, []string{"inputSchema"}},
		{"everything", func(d *Declared) {
			*d = Declared{Name: "x", Description: "y", InputSchema: json.RawMessage(`{"type":"object"}`)}
		}, []string{"name", "description", "inputSchema", "readOnlyHint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			tt.change(&d)
			shape, err := Fingerprint(d)
			if err != nil {
				t.Fatal(err)
			}
			if shape.Fingerprint == baseFP.Fingerprint {
				t.Error("fingerprint did not change")
			}
			got, err := ChangedFields(base, d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChangedFields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangedFieldsRefusesBadSchema(t *testing.T) {
	bad := Declared{Name: "t", InputSchema: json.RawMessage(`{"a":1,"a":1}`)}
	if _, err := ChangedFields(fpTool(), bad); err == nil {
		t.Error("bad new schema: no error")
	}
	if _, err := ChangedFields(bad, fpTool()); err == nil {
		t.Error("bad old schema: no error")
	}
}

func TestParseDeclaredRoundTrip(t *testing.T) {
	for _, d := range []Declared{fpTool(), {Name: "bare"}, {Name: "😀\u2028", Description: "\x00", ReadOnlyHint: true}} {
		c, err := d.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseDeclared(c)
		if err != nil {
			t.Fatalf("ParseDeclared(%s): %v", c, err)
		}
		c2, err := back.Canonical()
		if err != nil || c2 != c {
			t.Errorf("round trip: %s became %s (%v)", c, c2, err)
		}
		if changed, err := ChangedFields(d, back); err != nil || changed != nil {
			t.Errorf("round trip changed %v (%v)", changed, err)
		}
	}
}

func TestParseDeclaredRefuses(t *testing.T) {
	for _, in := range []string{
		``,
		`null`,
		`[]`,
		`{"description":""}`,
		`{"name":"a","name":"b"}`,
		`{"name":"a","extra":1}`,
		`{"name":1}`,
		`{"name":"a","readOnlyHint":"yes"}`,
	} {
		if d, err := ParseDeclared(in); err == nil {
			t.Errorf("ParseDeclared(%s) = %+v, want an error", in, d)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `0`, `-0`, `1e21`, `1e-7`, `"\u2028"`, `"\ud83d\ude00"`,
		`{"b":1,"a":{"d":[1,2,{"c":null}]}}`, `{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"",
		`{"€":1,"\r":2,"דּ":3,"😀":4}`, `[1.5e300, -2.25e-300, 123456789012345680000]`,
		string(fpTool().InputSchema),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical output %q refused: %v", out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
		// The canonical form means the same as the input.
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("accepted input that encoding/json refuses: %v", err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
		// The decoded value canonicalises to the same bytes: the path listed schemas take.
		fromValue, err := CanonicalizeValue(a)
		if err != nil || string(fromValue) != string(out) {
			t.Fatalf("CanonicalizeValue = %q, %v; Canonicalize gave %q", fromValue, err, out)
		}
	})
}

// TestCanonicalizeValue: a value as encoding/json decodes it canonicalises as its encoding does,
// and what JCS cannot hold is refused on this path too.
func TestCanonicalizeValue(t *testing.T) {
	var schema any
	if err := json.Unmarshal(fpTool().InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	want, err := Canonicalize(fpTool().InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := CanonicalizeValue(schema); err != nil || string(got) != string(want) {
		t.Errorf("CanonicalizeValue = %s, %v; want %s", got, err, want)
	}
	deep := any(map[string]any{})
	for range MaxCanonicalDepth {
		deep = []any{deep}
	}
	for name, v := range map[string]any{
		"NaN":               math.NaN(),
		"infinity":          []any{math.Inf(1)},
		"invalid UTF-8":     map[string]any{"a": "\xff"},
		"invalid UTF-8 key": map[string]any{"\xff": 1},
		"too deep":          deep,
		"another type":      map[string]any{"n": 1},
	} {
		if _, err := CanonicalizeValue(v); !errors.Is(err, ErrNotCanonicalizable) {
			t.Errorf("%s: %v, want ErrNotCanonicalizable", name, err)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	d := fpTool()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint(d); err != nil {
			b.Fatal(err)
		}
	}
}
