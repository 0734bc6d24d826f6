package config

import (
	"slices"
	"testing"
)

func TestDerivedOriginFollowsTLS(t *testing.T) {
	cfg, err := Parse([]byte(`{"listen": "127.0.0.1:8443", "tls_cert": "/c.pem", "tls_key": "/k.pem"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://localhost:8443"}; !slices.Equal(cfg.Origins, want) {
		t.Fatalf("origins with tls_cert: %v, want %v", cfg.Origins, want)
	}
	if err := cfg.SetListen("127.0.0.1:9443"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://localhost:9443"}; !slices.Equal(cfg.Origins, want) {
		t.Fatalf("origins after SetListen: %v, want %v", cfg.Origins, want)
	}
	plain, err := Parse([]byte(`{"listen": "127.0.0.1:8080"}`))
	if err != nil || !slices.Equal(plain.Origins, []string{"http://localhost:8080"}) {
		t.Fatalf("origins without TLS: %v %v", plain.Origins, err)
	}
}
