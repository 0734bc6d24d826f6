package vault

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"
)

// TestWipeErasesKeySchedules checks that the AES key schedule and the GCM state, which hold the
// key itself, are erased in place: if a Go release gave them pointers, wipeOpaque would refuse
// them and this test would say so.
func TestWipeErasesKeySchedules(t *testing.T) {
	key := bytes.Repeat([]byte{0xA5}, keySize)
	k, err := newGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	blockPtr := ifacePointer(k.block)
	aeadPtr := ifacePointer(k.aead)
	blockSize, aeadSize := typeSize(k.block), typeSize(k.aead)
	if !bytes.Contains(unsafe.Slice(blockPtr, blockSize), key) {
		t.Skip("this platform's AES keeps no verbatim key in its schedule; nothing to look for")
	}
	if !wipeOpaque(k.block) || !wipeOpaque(k.aead) {
		t.Fatalf("wipeOpaque refused %T or %T: they hold pointers now", k.block, k.aead)
	}
	for name, mem := range map[string][]byte{"block": unsafe.Slice(blockPtr, blockSize), "gcm": unsafe.Slice(aeadPtr, aeadSize)} {
		if !bytes.Equal(mem, make([]byte, len(mem))) {
			t.Errorf("the %s is not all zero after wipe", name)
		}
	}
	if wipeOpaque(&struct{ p *int }{}) {
		t.Error("wipeOpaque erased a value with a pointer in it")
	}
}

func ifacePointer(x any) *byte { return (*byte)(reflect.ValueOf(x).UnsafePointer()) }

func typeSize(x any) uintptr { return reflect.TypeOf(x).Elem().Size() }
