// Package datav1 is the Go code generated from lavik/data/v1/data.proto: the DataAdmin gRPC
// service a lavik-data node serves to lavikctl and lavik-meta. The .proto file is the source
// and documents every field and its invariants; regenerate with `make proto` after editing it.
package datav1
