package main

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as bytes on the wire, passed through undecoded.
type frame struct {
	data []byte
}

// rawCodec moves frames without decoding them, so that the shim forwards
// messages of any method, known to this cri-api version or not, unchanged.
// It names itself "proto" so that the runtime sees the content type every CRI
// client sends (application/grpc+proto).
type rawCodec struct{}

var _ encoding.CodecV2 = rawCodec{}

// Marshal returns the bytes of a *frame.
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

// Unmarshal copies data into a *frame: gRPC frees data when this returns.
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	f.data = data.Materialize()
	return nil
}

// Name returns "proto", the content subtype of CRI.
func (rawCodec) Name() string { return "proto" }
