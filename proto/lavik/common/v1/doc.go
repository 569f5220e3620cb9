// Package commonv1 is the Go code generated from lavik/common/v1/common.proto: the types the
// data and meta APIs share (Role). Regenerate with `make proto` after editing the .proto file.
package commonv1
