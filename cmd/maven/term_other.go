//go:build !linux

package main

import (
	"os"
)

// isTerminal is false where Maven cannot turn the terminal's echo off: the value is then read
// from standard input like a pipe, so pipe it in (`maven secret set NAME < file`).
func isTerminal(*os.File) bool { return false }

func readLineNoEcho(*os.File) ([]byte, error) { return nil, os.ErrInvalid }
