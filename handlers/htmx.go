package handlers

import (
	"encoding/json"
	"net/http"

	"maven/app/auth"
)

// The htmx request and response headers Maven uses (https://htmx.org/reference/#headers).
const (
	hxRequest        = "HX-Request"                 // set on every htmx request
	hxBoosted        = "HX-Boosted"                 // a boosted link or form: wants a full page
	hxHistoryRestore = "HX-History-Restore-Request" // history restore: wants a full page
	hxTrigger        = "HX-Trigger"                 // response: events to raise on the requesting element
	hxRedirect       = "HX-Redirect"                // response: navigate the whole page
	hxRetarget       = "HX-Retarget"                // response: swap into this element instead
	hxReswap         = "HX-Reswap"                  // response: swap this way instead
	hxCurrentURL     = "HX-Current-URL"             // request: the page's URL
)

// eventStepUp is the event maven.js turns into a step-up ceremony and a retry.
const eventStepUp = "maven:step-up"

// isHTMX reports whether htmx sent r.
func isHTMX(r *http.Request) bool { return r.Header.Get(hxRequest) == "true" }

// isPartial decides, in one place, whether to answer with a partial instead of a full page: an
// htmx request that is neither boosted nor restoring history.
func isPartial(r *http.Request) bool {
	return isHTMX(r) && r.Header.Get(hxBoosted) != "true" && r.Header.Get(hxHistoryRestore) != "true"
}

// triggerStepUp sets the HX-Trigger header that raises eventStepUp with what to step up for:
// the approval, which maven.js posts to /step-up/begin as it is. Its JSON deliberately has no
// "target" key: htmx reads one as the element to fire on.
func triggerStepUp(w http.ResponseWriter, need stepUpNeeded) {
	b, _ := json.Marshal(map[string]auth.Approval{eventStepUp: need.approval})
	w.Header().Set(hxTrigger, string(b))
}

// redirect sends the browser to url after a POST: HX-Redirect for htmx, 303 otherwise.
func redirect(w http.ResponseWriter, r *http.Request, url string) {
	if isHTMX(r) {
		w.Header().Set(hxRedirect, url)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, url, http.StatusSeeOther)
}

// swapOrRedirect answers a change made from a page: htmx gets the partial, rendered from what
// data builds (only then), and any other browser a 303 back to page.
func (s *server) swapOrRedirect(w http.ResponseWriter, r *http.Request, page, partial string, data func() (any, error)) error {
	if !isHTMX(r) {
		http.Redirect(w, r, page, http.StatusSeeOther)
		return nil
	}
	v, err := data()
	if err != nil {
		return err
	}
	s.renderPartial(w, r, http.StatusOK, partial, v)
	return nil
}
