package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchBoot times `maven serve` from the exec to the first 200 from /healthz, with a fresh data
// directory each time, alternating a config with no MCP servers and one with the black-holed
// ones (each round flips which goes first). The first boot of each is a warm-up.
func benchBoot(t *testing.T, bin string, holes []string, rounds int) (zero, holed []time.Duration) {
	dir := t.TempDir()
	cfgs := [2]string{
		writeFile(t, dir, "zero.json", []byte(`{}`)),
		writeFile(t, dir, "holes.json", blackHoleConfig(holes, false)),
	}
	boot := func(cfg string) time.Duration {
		run, err := os.MkdirTemp(dir, "run")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(run)
		start := time.Now()
		d := startDaemon(t, bin, filepath.Join(run, "data"), cfg)
		took := time.Since(start)
		d.stop(t)
		return took
	}
	boot(cfgs[0])
	boot(cfgs[1])
	var took [2][]time.Duration
	for r := range rounds {
		for _, i := range order(r) {
			took[i] = append(took[i], boot(cfgs[i]))
		}
	}
	return took[0], took[1]
}

// order is the order of the two sides in round r: alternating, so neither always goes first.
func order(r int) [2]int {
	if r%2 == 0 {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// reportBoot adds boot to ready with 0 vs the black-holed servers.
func reportBoot(t *testing.T, e *benchEnv, rep *report) {
	boot0, holed := benchBoot(t, e.bin, e.holes.Addrs, e.n(61))
	rep.versus(fmt.Sprintf("Boot to ready (`maven serve` → `/healthz` 200), %d black-holed servers", len(e.holes.Addrs)),
		holed, boot0, "no servers", targetBootRatio)
	rep.raw("boot, no servers", boot0)
	rep.raw(fmt.Sprintf("boot, %d black-holed servers", len(e.holes.Addrs)), holed)
}
