//go:build !race

package trim

const raceEnabled = false
