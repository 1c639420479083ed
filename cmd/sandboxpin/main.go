package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	grace := graceOf(os.Args[1:])
	go func() {
		<-ctx.Done() // a signal, or stop below
		time.Sleep(grace)
		os.Exit(exitError)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
