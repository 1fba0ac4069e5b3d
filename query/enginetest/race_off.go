//go:build !race

package enginetest

// raceDetector is true when the package is built with the race detector.
const raceDetector = false
