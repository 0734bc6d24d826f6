package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"maven/db"
)

// memHit is where a pattern was found in a process's memory.
type memHit struct {
	Pattern string // the pattern's label
	Addr    uint64
	Region  string // the mapping's name from /proc/PID/maps, "" for anonymous memory
}

// scanMemory reads every readable mapping of process pid through /proc/PID/mem, as another
// process would, and returns each place one of patterns (label → bytes) occurs. An error opening
// /proc/PID/mem is returned as is: it is what a reader without the right to read gets.
func scanMemory(pid int, patterns map[string][]byte) ([]memHit, error) {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	longest := 0
	for _, p := range patterns {
		longest = max(longest, len(p))
	}
	var hits []memHit
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		var start, end uint64
		var perms string
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &start, &end); err != nil {
			continue
		}
		perms = fields[1]
		name := ""
		if len(fields) >= 6 {
			name = fields[5]
		}
		if perms[0] != 'r' || name == "[vvar]" || name == "[vsyscall]" || name == "[vvar_vclock]" {
			continue
		}
		hits = append(hits, scanRegion(mem, start, end, name, patterns, longest)...)
	}
	return hits, sc.Err()
}

// scanRegion searches one mapping in chunks that overlap by a pattern's length, so a match
// across a chunk boundary is found once.
func scanRegion(mem io.ReaderAt, start, end uint64, name string, patterns map[string][]byte, longest int) []memHit {
	const chunk = 1 << 20
	var hits []memHit
	buf := make([]byte, chunk+longest)
	for off := start; off < end; off += chunk {
		n := min(uint64(len(buf)), end-off)
		got, err := mem.ReadAt(buf[:n], int64(off))
		if got == 0 && err != nil {
			continue // unreadable page (guard, not yet mapped): nothing to find there
		}
		data := buf[:got]
		for label, p := range patterns {
			for i := 0; ; {
				j := bytes.Index(data[i:], p)
				if j < 0 {
					break
				}
				at := i + j
				// A match starting in the overlap belongs to the next chunk.
				if uint64(at) < chunk || off+chunk >= end {
					hits = append(hits, memHit{Pattern: label, Addr: off + uint64(at), Region: name})
				}
				i = at + 1
			}
		}
	}
	return hits
}

// countHits counts hits by pattern label.
func countHits(hits []memHit) map[string]int {
	out := map[string]int{}
	for _, h := range hits {
		out[h.Pattern]++
	}
	return out
}

// recoveryDEK opens the vault's recovery slot in the database of data with code, from the slot
// format alone (Argon2id header, salt, AES-256-GCM wrap), and returns the data key: the bytes a
// memory reader would look for. Run it while no daemon uses data, or beside one (WAL readers do
// not block).
func recoveryDEK(t *testing.T, data, code string) []byte {
	t.Helper()
	bdb, err := db.Open(context.Background(), filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	slot, err := db.NewVaultStore(bdb).RecoverySlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var v, m, tm, p uint32
	if _, err := fmt.Sscanf(slot.KDF, "argon2id$v=%d$m=%d,t=%d,p=%d", &v, &m, &tm, &p); err != nil {
		t.Fatalf("slot header %q: %v", slot.KDF, err)
	}
	canon := strings.ToUpper(strings.ReplaceAll(code, "-", ""))
	kek := argon2.IDKey([]byte(canon), slot.Salt, tm, m, uint8(p), 32)
	block, err := aes.NewCipher(kek)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	dek, err := gcm.Open(nil, slot.Nonce, slot.WrappedKey, []byte("maven/wrap/v1|recovery"))
	if err != nil {
		t.Fatalf("open the recovery slot: %v", err)
	}
	return dek
}

// waitForScan scans pid until cond holds for the hit counts or within passes, and returns the
// last counts: freed memory may take a moment to be handed back.
func waitForScan(t *testing.T, pid int, patterns map[string][]byte, within time.Duration, cond func(map[string]int) bool) (map[string]int, []memHit) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		hits, err := scanMemory(pid, patterns)
		if err != nil {
			t.Fatalf("scan the daemon's memory: %v", err)
		}
		counts := countHits(hits)
		if cond(counts) || time.Now().After(deadline) {
			return counts, hits
		}
		time.Sleep(200 * time.Millisecond)
	}
}
