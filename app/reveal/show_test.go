package reveal

import "testing"

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"plain", []string{"npx", "-y", "@scope/server"}, "npx -y @scope/server"},
		{"secret references as written", []string{"srv", "--token", "${secret:tok}"}, "srv --token ${secret:tok}"},
		{"white space and empty", []string{"sh", "-c", "rm -rf /tmp/x", ""}, `sh -c "rm -rf /tmp/x" ""`},
		{"quotes and backslashes", []string{"echo", `it's`, `a"b`, `c\d`}, `echo "it's" "a\"b" "c\\d"`},
		{"shell operators", []string{"run", "a;reboot", "x|y", "$(id)", "`id`", "a&b", "<in"},
			`run "a;reboot" "x|y" "$(id)" "` + "`id`" + `" "a&b" "<in"`},
		{"hidden characters escaped", []string{"run", "safe\u202etxt.exe", "tab\there", "a\u200bb", "vs\ufe0f"},
			`run "safe\u202etxt.exe" "tab\there" "a\u200bb" "vs\ufe0f"`},
		{"escape sequence", []string{"x\x1b[31m"}, `"x\x1b[31m"`},
		{"not UTF-8", []string{"a\xffb"}, `"a\xffb"`},
		{"other scripts as they are", []string{"/opt/café/中文"}, "/opt/café/中文"},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.argv); got != tt.want {
			t.Errorf("%s: CommandLine = %s, want %s", tt.name, got, tt.want)
		}
		if got := CommandLine(tt.argv); Contains(got) {
			t.Errorf("%s: %q still holds a hidden character", tt.name, got)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := map[string]string{
		"list_tasks":          "list_tasks",
		"a\u200bb":            `a\u200bb`,
		"red\x1b[31m":         `red\x1b[31m`,
		"two\nlines\tand tab": `two\nlines\tand tab`,
		"bad\xff":             `bad\xff`,
		"tag\U000E0041":       `tag\U000e0041`,
		"é 中文 \"quoted\"":     "é 中文 \"quoted\"",
	}
	for in, want := range tests {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		want  string
		cut   bool
	}{
		{"short", 10, "short", false},
		{"exactly10!", 10, "exactly10!", false},
		{"abcdefghijkl", 10, "abcdefg…", true}, // "…" is 3 bytes: 7 + 3
		{"abcdeféééé", 10, "abcdef…", true},    // é (2 bytes) at 6–7 is not split
		{"abcdefghijkl", 2, "…", true},         // a marker longer than the limit stands alone
		{"日本語のテキスト", 9, "日本…", true},           // never half a character
	}
	for _, c := range tests {
		got, cut := Cut(c.s, c.limit, "…")
		if got != c.want || cut != c.cut {
			t.Errorf("Cut(%q, %d) = %q, %v; want %q, %v", c.s, c.limit, got, cut, c.want, c.cut)
		}
	}
}

// TestCutError: an error message over its length keeps that many bytes, at a character
// boundary, and says it was cut; one that fits is left alone.
func TestCutError(t *testing.T) {
	for _, c := range []struct {
		msg  string
		keep int
		want string
	}{
		{"dial: refused", 64, "dial: refused"},
		{"abcdefghij", 4, "abcd [cut]"},
		{"ab€def", 4, "ab [cut]"}, // € is 3 bytes: keeping 4 would split it
	} {
		if got := CutError(c.msg, c.keep); got != c.want {
			t.Errorf("CutError(%q, %d) = %q, want %q", c.msg, c.keep, got, c.want)
		}
	}
}
