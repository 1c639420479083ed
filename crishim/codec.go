package crishim

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as bytes on the wire, passed through undecoded
// in gRPC's own buffers.
type frame struct {
	bufs mem.BufferSlice
}

// wireCodec moves frames without decoding them, so that the shim forwards
// messages of any method, known to this cri-api version or not, unchanged.
// A frame keeps gRPC's receive buffers by reference (no copy) and hands
// them back to gRPC on send, which frees them into the buffer pool once
// written: a message crosses the shim without being copied unless the
// shim patches it.
//
// Its name is empty so that the runtime sees the content type the kubelet
// and crictl send, plain "application/grpc": grpc-go (v1.79.3, rpc_util.go
// setCallInfoCodec) derives a call's content subtype from a forced CodecV2's
// Name(), and internal/grpcutil.ContentType adds "+name" only when it is not
// empty. A name "proto" made the shim send "application/grpc+proto", and
// CRI-O's listener resets such connections.
type wireCodec struct{}

var _ encoding.CodecV2 = wireCodec{}

// Marshal returns the buffers of a *frame; gRPC frees them after sending.
func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("wire codec: cannot marshal %T", v)
	}
	bufs := f.bufs
	f.bufs = nil // sent: the frame no longer owns them
	return bufs, nil
}

// Unmarshal keeps a reference to data in a *frame.
func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("wire codec: cannot unmarshal into %T", v)
	}
	data.Ref()
	f.bufs = data
	return nil
}

// Name returns "", so that calls carry no content subtype.
func (wireCodec) Name() string { return "" }
