// Command payd-load measures payd: it drives a running payd over loopback
// (and refuses any other host) with N concurrent connections, bounded by a
// request count and a duration, and reports per scenario the requests,
// errors by status, throughput and latency percentiles; for callbacks, the
// delay from the accept response to the callback's arrival at a receiver it
// runs itself. It also measures the floors the hardware allows, in the
// same run: a minimal net/http handler (HTTP floor) and single-row insert
// transactions straight into the same database (storage floor).
//
//	payd-load run     -target URL -database-url DB [-scenarios a,b] [-c 32] [-n N] [-d 10s] [-server-pid PID]
//	payd-load seed    -database-url DB -rtps 1000000 -merchants 100
//	payd-load startup -database-url DB -payd PATH [-times 5]
//
// See BENCHMARKS.md for the commands behind the published figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(ctx, os.Args[2:])
	case "seed":
		err = seedCmd(ctx, os.Args[2:])
	case "startup":
		err = startupCmd(ctx, os.Args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payd-load:", err)
		os.Exit(1)
	}
}

const usage = `Usage:
  payd-load run     -target http://127.0.0.1:8080 -database-url DB [-scenarios LIST] [-c 32] [-n 100000] [-d 10s]
  payd-load seed    -database-url DB -rtps 1000000 -merchants 100
  payd-load startup -database-url DB -payd ./payd [-times 5]
Scenarios: token rtp-create rtp-get rtp-list rtp-flow qr-pay checkout-create (default: all), and the floors http-floor storage-floor;
  rtp-flow-hung (rtp-flow with one flow in 8 calling back to an endpoint that never answers; the others are measured);
  rails-credit (signed pacs.008 credits through /rails/iso20022 to payd in production, -rails-key-file or PAYD_RAILS_KEY);
  -rails-sink ADDR makes payd-load payd's connector (PAYD_RAILS_URL=http://ADDR/iso20022): rtp-create then times each pain.013;
  overload (past what the database serves: 503s only) and fault (rtp-flow while the database is away for -fault-for: 503s only,
  no callback lost or sent twice; PostgreSQL stopped with -fault-stop/-fault-start, SQLite's filesystem filled).
`

func flags(name string) *flag.FlagSet { return flag.NewFlagSet("payd-load "+name, flag.ExitOnError) }
