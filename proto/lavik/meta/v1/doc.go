// Package metav1 is the Go code generated from lavik/meta/v1/meta.proto: the gRPC contract
// between lavik-data nodes (and lavikctl) and lavik-meta. The .proto file is the source and
// documents every field and its invariants; regenerate with `make proto` after editing it.
package metav1
