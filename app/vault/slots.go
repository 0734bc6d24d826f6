package vault

// openPRFSlot returns the data key a PRF slot wraps, or errOpen.
func (v *Vault) openPRFSlot(s Slot, prfOutput []byte) ([]byte, error) {
	if len(prfOutput) != prfSize {
		return nil, errOpen
	}
	binding := prfBinding(v.rpID, s.CredentialID)
	switch s.KDF {
	case kdfHKDF:
		kek, err := prfKEK(prfOutput, s.Salt, v.rpID, s.CredentialID)
		if err != nil {
			return nil, err
		}
		defer clear(kek)
		return openDEK(kek, s, adWrapPRF+binding)
	case kdfX25519:
		priv, err := x25519Key(prfOutput, s.Salt, v.rpID, s.CredentialID)
		if err != nil {
			return nil, err
		}
		defer clear(priv)
		dek, err := unwrapX25519(priv, s.Nonce, s.WrappedKey, binding)
		return checkedDEK(dek, err)
	}
	return nil, errOpen
}

// newPRFSlot makes the slot of passkey p: an X25519 key derived from its PRF output, and key
// wrapped for it.
func (v *Vault) newPRFSlot(key *dataKey, p PRFResult) (Slot, error) {
	salt := randomBytes(saltSizePRF)
	priv, err := x25519Key(p.Output, salt, v.rpID, p.CredentialID)
	if err != nil {
		return Slot{}, err
	}
	defer clear(priv)
	pub, err := x25519Public(priv)
	if err != nil {
		return Slot{}, err
	}
	s := Slot{
		Kind: SlotPRF, CredentialID: bytesClone(p.CredentialID), PRFInput: bytesClone(p.Input),
		KDF: kdfX25519, Salt: salt, CreatedAt: v.now(),
	}
	return v.wrapPRFSlot(key, s, pub)
}

// wrapPRFSlot wraps key for the slot's public key pub and seals pub under key.
func (v *Vault) wrapPRFSlot(key *dataKey, s Slot, pub []byte) (Slot, error) {
	binding := prfBinding(v.rpID, s.CredentialID)
	nonce, wrapped, err := wrapX25519(key.raw, pub, binding)
	if err != nil {
		return Slot{}, err
	}
	pubNonce, sealedPub := key.gcm.seal(pub, adSlotKey+binding)
	s.Nonce, s.WrappedKey, s.PublicKey = nonce, wrapped, append(pubNonce, sealedPub...)
	return s, nil
}
