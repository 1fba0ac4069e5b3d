//go:build race

package query

// raceDetector is true when the tests run under the race detector.
const raceDetector = true
