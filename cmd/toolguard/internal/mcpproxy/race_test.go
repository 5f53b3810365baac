//go:build race

package mcpproxy

// raceEnabled: the race detector slows the proxy and changes its memory.
const raceEnabled = true
