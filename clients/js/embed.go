// Package js ships dpstat's JavaScript local differential privacy client,
// dpstat-ldp.mjs, so that the collector can serve it to browsers.
package js

import _ "embed"

// Module is the source of dpstat-ldp.mjs, a dependency-free ES module.
//
//go:embed dpstat-ldp.mjs
var Module []byte
