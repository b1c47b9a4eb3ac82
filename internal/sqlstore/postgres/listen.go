package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"payd"
)

// Listener keeps a connection of its own listening on a channel (LISTEN)
// and tells what it hears: each notification's payload, and the pings it
// sends itself through the pool every Ping. A connection that hangs
// without closing hears nothing, its pings included, so whoever relies on
// the notifications serves what they keep fresh only while a recent ping
// has come back.
type Listener struct {
	URL     string  // the database to listen on
	Channel string  // the channel to LISTEN to
	Pool    *sql.DB // the pings go through it, as the changes notified do
	Ping    time.Duration

	// On is called with true once the connection listens, and with false
	// when it is lost (and when Run returns).
	On func(listening bool)
	// Heard is called with each notification's payload, pings aside.
	Heard func(payload string)
	// Back is called when a ping sent at sent has come back.
	Back func(sent time.Time)
	// Lost is called with why the connection was lost; Run reconnects a
	// second later.
	Lost func(err error)
}

// Run listens until ctx ends.
func (l *Listener) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := l.once(ctx)
		l.On(false)
		if ctx.Err() != nil {
			return
		}
		l.Lost(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (l *Listener) once(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, l.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+l.Channel); err != nil {
		return err
	}
	// Listening from here on: whatever is notified after is heard.
	l.On(true)
	pingCtx, stopPings := context.WithCancel(ctx)
	defer stopPings()
	prefix := "ping:" + payd.NewID(time.Now()) + ":"
	go l.ping(pingCtx, prefix)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if sent, ok := strings.CutPrefix(n.Payload, prefix); ok {
			if ns, err := strconv.ParseInt(sent, 10, 64); err == nil {
				l.Back(time.Unix(0, ns))
			}
			continue
		}
		l.Heard(n.Payload)
	}
}

// ping notifies the channel every Ping through the pool, with the time it
// sent the ping.
func (l *Listener) ping(ctx context.Context, prefix string) {
	t := time.NewTicker(l.Ping)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, l.Ping)
		l.Pool.ExecContext(pctx, "SELECT pg_notify($1, $2)", l.Channel, prefix+strconv.FormatInt(time.Now().UnixNano(), 10))
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
