package suggest

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"listen", "rp_id", "refresh_interval", "mcpServers", "serve", "status"}
	for in, want := range map[string]string{
		"rpId":              "rp_id",
		"mcp_servers":       "mcpServers",
		"lisen":             "listen",
		"refresh_intervall": "refresh_interval",
		"serv":              "serve",
		"stauts":            "status",
		"colour":            "",
		"xyz":               "",
	} {
		if got := Closest(in, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"serve", "serv", 1}, {"abc", "abc", 0}, {"café", "cafe", 1}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
