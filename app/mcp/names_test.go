package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestNameSuffix(t *testing.T) {
	sum := sha256.Sum256([]byte("vikunja\x00list_tasks"))
	want := hex.EncodeToString(sum[:])[:6]
	if got := NameSuffix("vikunja", "list_tasks"); got != want {
		t.Errorf("NameSuffix = %q, want %q", got, want)
	}
	// The NUL keeps ("ab","c") and ("a","bc") apart.
	if NameSuffix("ab", "c") == NameSuffix("a", "bc") {
		t.Error("suffix ignores where the server name ends")
	}
}

// namesRegistry hands out names the way discovery does: each pair keeps the name it got.
type namesRegistry struct {
	byName map[string][2]string
}

func (r *namesRegistry) assign(server, tool string) string {
	pair := [2]string{server, tool}
	name := LocalName(server, tool, func(n string) bool {
		owner, ok := r.byName[n]
		return ok && owner != pair
	})
	if owner, ok := r.byName[name]; ok && owner != pair {
		panic("LocalName handed out a taken name " + name)
	}
	r.byName[name] = pair
	return name
}

func TestLocalName(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"vikunja", "list_tasks", "vikunja_list_tasks"},
		{"Home Assistant", "Turn-On", "home_assistant_turn_on"},
		{"", "list", "x_list"},
		{"memory", "😀", "memory_x"},
		{"--", "", "x_x"},
	}
	for _, tt := range tests {
		if got := LocalName(tt.server, tt.tool, nil); got != tt.want {
			t.Errorf("LocalName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
}

func TestLocalNameCollisionGetsSuffix(t *testing.T) {
	r := &namesRegistry{byName: map[string][2]string{}}
	first := r.assign("srv", "my-tasks")
	second := r.assign("srv", "my_tasks")
	if first != "srv_my_tasks" {
		t.Errorf("first = %q, want the plain name", first)
	}
	if want := "srv_my_tasks_" + NameSuffix("srv", "my_tasks"); second != want {
		t.Errorf("second = %q, want %q", second, want)
	}
	// Asked again, each pair gets back the name it holds.
	if again := r.assign("srv", "my-tasks"); again != first {
		t.Errorf("first pair renamed to %q", again)
	}
	if again := r.assign("srv", "my_tasks"); again != second {
		t.Errorf("second pair renamed to %q", again)
	}
	// A pair from another server flattening to the same name is told apart too.
	third := r.assign("srv_my", "tasks")
	if third == first || third == second || !strings.HasSuffix(third, NameSuffix("srv_my", "tasks")) {
		t.Errorf("third = %q", third)
	}
}

func TestLocalNameLongNameIsCutAndSuffixed(t *testing.T) {
	tool := strings.Repeat("a", 150) + strings.Repeat("b", 50)
	got := LocalName("vikunja", tool, nil)
	if len(got) > MaxLocalName {
		t.Errorf("len = %d", len(got))
	}
	suffix := NameSuffix("vikunja", tool)
	if !strings.HasSuffix(got, "_"+suffix) || !strings.HasPrefix(got, "vikunja_aaa") {
		t.Errorf("got %q", got)
	}
	if again := LocalName("vikunja", tool, nil); again != got {
		t.Errorf("not stable: %q then %q", got, again)
	}
	// Two long names sharing the first 64 characters still differ.
	if other := LocalName("vikunja", tool+"c", nil); other == got {
		t.Errorf("long names collide: %q", other)
	}
}

func TestLocalNameCutTrimsUnderscore(t *testing.T) {
	// The cut falls right after an underscore, which must not end up doubled.
	server := strings.Repeat("s", 56)
	got := LocalName(server, "t"+strings.Repeat("-x", 10), nil)
	if strings.Contains(got, "__") || len(got) > MaxLocalName {
		t.Errorf("got %q", got)
	}
	if want := server + "_" + NameSuffix(server, "t"+strings.Repeat("-x", 10)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLocalNameSuffixedNameTaken(t *testing.T) {
	// Someone already holds the 6-hex suffixed name (a brute-forced collision): the suffix grows.
	plain := "srv_tool"
	six := plain + "_" + NameSuffix("srv", "tool")
	got := LocalName("srv", "tool", func(n string) bool { return n == plain || n == six })
	if got == plain || got == six || !strings.HasPrefix(got, six) || len(got) > MaxLocalName {
		t.Errorf("got %q", got)
	}
	// A caller that says everything is taken still gets a valid name, not a loop.
	if got := LocalName("srv", "tool", func(string) bool { return true }); len(got) > MaxLocalName {
		t.Errorf("got %q", got)
	}
}

func FuzzLocalName(f *testing.F) {
	f.Add("vikunja", "list_tasks", false)
	f.Add("srv", "my-tasks", true)
	f.Add("", "", true)
	f.Add("日本", "<script>alert(1)</script>", false)
	f.Add(strings.Repeat("s", 70), strings.Repeat("-", 10), false)
	f.Fuzz(func(t *testing.T, server, tool string, baseTaken bool) {
		base := LocalName(server, tool, nil)
		taken := func(n string) bool { return baseTaken && n == base }
		name := LocalName(server, tool, taken)
		if len(name) == 0 || len(name) > MaxLocalName {
			t.Fatalf("bad length %d: %q", len(name), name)
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
				t.Fatalf("bad character %q in %q", c, name)
			}
		}
		if name[0] == '_' || name[len(name)-1] == '_' {
			t.Fatalf("leading or trailing underscore: %q", name)
		}
		if baseTaken && name == base {
			t.Fatalf("returned a taken name %q", name)
		}
		if again := LocalName(server, tool, taken); again != name {
			t.Fatalf("not stable: %q then %q", name, again)
		}
	})
}
