package voice

import (
	"net/url"
	"strings"
)

// While the daemon is locked a turn says so, and how to unlock it with what this configuration
// offers (docs/design.md#rule-19): a passkey needs a secure context, so a phone unlocks only at
// an https origin with a real name; a localhost origin works in a browser on the server itself,
// or on another machine through an SSH tunnel to it. The address is in Output only: it is not
// for reading out.

// unlockReply is the locked reply for the browser origins the owner configured.
func unlockReply(origins []string) Reply {
	const locked = "Maven is locked, so nothing can run. "
	var phone, local []string
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" {
			continue
		}
		if host := u.Hostname(); host == "localhost" || strings.HasSuffix(host, ".localhost") {
			local = append(local, o)
		} else if u.Scheme == "https" {
			phone = append(phone, o)
		}
	}
	switch {
	case len(phone) > 0:
		u, _ := url.Parse(phone[0])
		return Reply{Speech: locked + "Unlock it on your phone with your passkey, at " + u.Hostname() + ".",
			Output: locked + "Unlock it with your passkey at " + unlockPages(phone) + ".", Outcome: OutcomeLocked}
	case len(local) > 0:
		u, _ := url.Parse(local[0])
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		return Reply{Speech: locked + "Unlock it with your passkey in a browser on the Maven server, or through an SSH tunnel to it.",
			Output: locked + "Unlock it with your passkey at " + unlockPages(local) + " in a browser on the Maven server, or from another " +
				"machine through an SSH tunnel (ssh -L " + port + ":localhost:" + port + " you@the-server).",
			Outcome: OutcomeLocked}
	}
	return Reply{Speech: locked + "Unlock it with your passkey.", Outcome: OutcomeLocked}
}

// unlockPages lists the unlock page at each origin.
func unlockPages(origins []string) string {
	pages := make([]string, len(origins))
	for i, o := range origins {
		pages[i] = strings.TrimSuffix(o, "/") + "/unlock"
	}
	return strings.Join(pages, " or ")
}
