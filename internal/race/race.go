// Package race reports whether the binary was built with the race
// detector, which makes the code it checks several times slower. CI runs
// every benchmark once under -race, as a run of its code; the benchmarks
// that first fill a store with tens of thousands of rows fill a smaller
// one there, and their figures are read from runs without -race.
package race
