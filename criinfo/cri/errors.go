package cri

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped by [*Error]. Test with [errors.Is].
var (
	// ErrNoSocket reports that no server listens at the endpoint: the socket
	// file is missing, is not a socket, or refuses connections.
	ErrNoSocket = errors.New("no CRI socket")
	// ErrNotCRI reports a server that does not speak CRI v1 (for example an
	// Unimplemented answer to Version, or no gRPC at all).
	ErrNotCRI = errors.New("not a CRI v1 server")
	// ErrInvalidEndpoint reports an endpoint that is neither "unix:///path"
	// nor "/path".
	ErrInvalidEndpoint = errors.New("invalid CRI endpoint")
	// ErrClosed reports a call on a [Client] that was closed, or that
	// [Dial] did not make (a zero or nil *Client). It is not
	// context.Canceled: the caller's context may well be alive.
	ErrClosed = errors.New("CRI client closed")
)

// Error reports a failed call to a CRI endpoint.
type Error struct {
	// Endpoint is the endpoint as the caller gave it.
	Endpoint string
	// RPC is the call that failed, such as "RuntimeService/Version", or
	// "dial".
	RPC string
	// Err is the cause. It wraps ErrNoSocket, ErrNotCRI, ErrInvalidEndpoint,
	// ErrClosed, context.DeadlineExceeded or context.Canceled when one applies, a
	// *criinfo.ParseError when the Status Info did not parse, and
	// criinfo.ErrTooLarge when the Status answer was over 16 MiB. The gRPC status
	// error stays in the chain too (status.FromError finds it).
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("cri: %s: %s: %v", e.Endpoint, e.RPC, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
