//go:build !race

package mcpproxy

const raceEnabled = false
