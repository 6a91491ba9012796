//go:build !goexperiment.jsonv2

package decode

// jsonV2 reports whether encoding/json is the v1 API on top of
// encoding/json/v2 (GOEXPERIMENT=jsonv2), which differs from the original
// in a few of the rules the compiler follows. The Decoder promises the
// result of json.Unmarshal in the build it is in.
const jsonV2 = false
