package main

import (
	"fmt"
	"io"
	"os"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"
)

// applyPolicyFile reads a --policy file: the whole policy or a quota file
// (quotafile's format, docs/policy.md). Alone (base is nil) it is
// quotafile.Load: the file's declaration over the defaults. With --preset
// the declaration is layered onto the preset with quotafile.Apply (a
// preset: key in the file replaces it).
func applyPolicyFile(base *toolguard.Policy, path string) (toolguard.Policy, error) {
	if base == nil {
		return quotafile.Load(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return toolguard.Policy{}, fmt.Errorf("quotafile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, quotafile.MaxSize+1))
	if err != nil {
		return toolguard.Policy{}, fmt.Errorf("quotafile: %w", err)
	}
	return quotafile.Apply(*base, path, data)
}
