//go:build race

package toolguard

const raceEnabled = true
