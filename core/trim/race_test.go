//go:build race

package trim

// raceEnabled shrinks the big streaming tests: the race detector makes them
// many times slower without finding more in single-goroutine code.
const raceEnabled = true
