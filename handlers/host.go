package handlers

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"maven/views"
)

// wrongHost refuses a browser-facing request whose Host is not one of the configured origins'.
type wrongHost struct{ host string }

func (e wrongHost) Error() string {
	return fmt.Sprintf("host %q is not one of the configured origins", e.host)
}

// originHosts are the Host values the configured origins are reached at: the host and port as
// written, and, for an origin on its scheme's default port, the host with that port spelled out.
func originHosts(origins []string) (map[string]bool, error) {
	hosts := map[string]bool{}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("handlers: origin %q is not a URL with a host", o)
		}
		h := strings.ToLower(u.Host)
		hosts[h] = true
		if u.Port() == "" {
			hosts[net.JoinHostPort(strings.ToLower(u.Hostname()), defaultPorts[u.Scheme])] = true
		}
	}
	return hosts, nil
}

// requireOriginHost refuses the browser-facing requests (pages, WebAuthn ceremonies, the
// recovery form) whose Host is not one of the configured origins' (docs/design.md#rule-23): a page
// served at another name for this machine, a DNS-rebound one included, must not reach the
// owner's session, ceremonies or recovery code. A browser gets a short page (421) linking to the
// configured origins; maven.js and htmx the refusal as an error. /healthz, /voice and /metrics
// are outside it: front ends and monitors call them by IP, and they carry their own token.
func (s *server) requireOriginHost(origins []string) (func(http.Handler) http.Handler, error) {
	hosts, err := originHosts(origins)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return s.handle(func(w http.ResponseWriter, r *http.Request) error {
			if hosts[strings.ToLower(r.Host)] {
				next.ServeHTTP(w, r)
				return nil
			}
			if wantsJSON(r) || isHTMX(r) {
				return wrongHost{r.Host}
			}
			s.log.Warn("request refused: wrong host", "host", r.Host, "path", r.URL.Path, "source", r.RemoteAddr)
			s.renderPage(w, r, http.StatusMisdirectedRequest, views.PageWrongHost, views.WrongHostPage{
				Page: s.pageInfo(r, "Not at this address", ""), Host: r.Host, Path: askedFor(r), Reach: s.reach(r),
			})
			return nil
		})
	}, nil
}
