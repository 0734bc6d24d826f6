package handlers

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"maven/views"
)

// reach says how to reach Maven where passkeys work (the setup, sign-in and unlock pages, and
// the page refusing another address): the configured origins and, when they are all on
// localhost, the SSH tunnel from another computer. host is what the browser called this
// machine, for the tunnel command; the address it asked for is a good guess at the SSH host.
func (s *server) reach(r *http.Request) views.Reach {
	rc := views.Reach{Origins: slices.Clone(s.origins), LocalOnly: len(s.origins) > 0}
	if b, err := json.Marshal(s.origins); err == nil {
		rc.OriginsJSON = string(b)
	}
	port := ""
	for _, o := range s.origins {
		u, err := url.Parse(o)
		if err != nil {
			continue
		}
		if rc.Origin == "" {
			rc.Origin, port = o, u.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
			}
		}
		h := strings.ToLower(u.Hostname())
		if h != "localhost" && !strings.HasSuffix(h, ".localhost") {
			rc.LocalOnly = false
		}
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host != "" && !strings.EqualFold(host, "localhost") {
		rc.TunnelHost = host
	}
	target := rc.TunnelHost
	if target == "" {
		target = "this-machine"
	}
	rc.Tunnel = "ssh -L " + port + ":localhost:" + port + " you@" + target
	return rc
}
