package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"
	"payd/internal/hang"
	"payd/internal/sqlstore"
)

type runner struct {
	target string
	store  *sqlstore.Store
	hc     *http.Client
	creds  *payd.Credentials
	token  string
	c, n   int
	d      time.Duration
	rtpIDs []string
	listAs *payd.Credentials // a seeded merchant for rtp-list, if any
}

func runCmd(ctx context.Context, args []string) error {
	fs := flags("run")
	target := fs.String("target", "http://127.0.0.1:8080", "the payd to drive (loopback only)")
	dbURLFlag := fs.String("database-url", "sqlite:data/payd.db", "payd's database: for the merchant and the storage floor")
	list := fs.String("scenarios", "http-floor,storage-floor,token,rtp-create,rtp-get,rtp-list,rtp-flow,qr-pay,checkout-create", "what to run, in order")
	c := fs.Int("c", 32, "concurrent connections")
	n := fs.Int("n", 1_000_000, "at most this many requests per scenario")
	d := fs.Duration("d", 10*time.Second, "at most this long per scenario")
	pid := fs.Int("server-pid", 0, "payd's pid, to report its peak RSS and its CPU an operation")
	credsFile := fs.String("creds", "", "seed-merchants.json from 'payd-load seed': rtp-list runs as its first merchant")
	failOnError := fs.Bool("fail-on-error", false, "exit 1 if any request failed (CI smoke)")
	fs.Float64Var(&rateLimit, "rate", 0, "cap each scenario at this many operations a second (0: as fast as it goes)")
	fs.DurationVar(&faultFor, "fault-for", faultFor, "fault: how long the database is away")
	fs.StringVar(&faultStop, "fault-stop", faultStop, "fault: the command that stops PostgreSQL")
	fs.StringVar(&faultStart, "fault-start", faultStart, "fault: the command that starts it again")
	railsKeyFile := fs.String("rails-key-file", "", "rails-credit: the file holding payd's PAYD_RAILS_KEY (default: $PAYD_RAILS_KEY)")
	fs.StringVar(&railsBIC, "rails-bic", railsBIC, "rails-credit: payd's PAYD_RAILS_BIC, the credits' creditor agent")
	fs.IntVar(&railsQRs, "rails-qrs", railsQRs, "rails-credit: how many Static QRs the credits go round")
	fs.StringVar(&railsSink, "rails-sink", "", "be payd's connector on this address (PAYD_RAILS_URL=http://ADDR/iso20022): rtp-create then measures each pain.013's arrival")
	fs.Parse(args)
	var err error
	if railsKey, err = railsKeyFrom(*railsKeyFile); err != nil {
		return err
	}
	dbURL = *dbURLFlag
	if err := loopbackOnly(*target); err != nil {
		return err
	}
	if railsSink != "" {
		if railsKey == "" {
			return fmt.Errorf("-rails-sink needs payd's rails key (-rails-key-file or PAYD_RAILS_KEY)")
		}
		if err := startSink(railsSink); err != nil {
			return err
		}
	}
	store, err := openStore(dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	cr, err := store.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "payd-load", CommissionBP: 100, IBAN: loadIBAN}, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("create merchant (is the database migrated? start payd first): %w", err)
	}
	r := &runner{target: strings.TrimRight(*target, "/"), store: store, hc: newHTTPClient(*c), creds: cr, c: *c, n: *n, d: *d}
	if *credsFile != "" {
		var all []payd.Credentials
		b, err := os.ReadFile(*credsFile)
		if err != nil || json.Unmarshal(b, &all) != nil || len(all) == 0 {
			return fmt.Errorf("read %s: %v", *credsFile, err)
		}
		r.listAs = &all[0]
	}
	if r.token, err = r.newToken(ctx, cr); err != nil {
		return err
	}
	var peak peakRSS
	serverPID = *pid
	if *pid > 0 {
		stop := peak.watch(*pid)
		defer stop()
	}
	floors := map[string]float64{}
	failed, serverErrors := 0, 0
	for _, name := range strings.Split(*list, ",") {
		sts, err := r.scenario(ctx, strings.TrimSpace(name))
		if err != nil {
			return err
		}
		for _, st := range sts {
			switch st.Name {
			case "http-floor", "storage-floor":
				floors[st.Name] = st.Throughput()
			case "rtp-create":
				st.FloorName, st.FloorRatio = "storage-floor", ratio(st, floors["storage-floor"])
			default:
				st.FloorName, st.FloorRatio = "http-floor", ratio(st, floors["http-floor"])
			}
			if floors[st.FloorName] == 0 {
				st.FloorName = ""
			}
			fmt.Println(st)
			for code, v := range st.Errors {
				if (st.Name == "overload" || st.Name == "fault") && code == "503" {
					continue // the answer an overload or an outage calls for
				}
				if strings.HasPrefix(code, "5") {
					serverErrors += v
				}
				failed += v
			}
			if st.Callbacks != nil {
				failed += st.Callbacks.Lost + st.Callbacks.Dups
			}
		}
	}
	if *pid > 0 {
		fmt.Printf("server peak RSS: %.1f MB\n", float64(peak.max())/1024)
	}
	if serverErrors > 0 {
		return fmt.Errorf("%d answers were 5xx other than an overload's 503", serverErrors)
	}
	if *failOnError && failed > 0 {
		return fmt.Errorf("%d requests failed, or callbacks were lost or duplicated", failed)
	}
	return nil
}

func ratio(st *stats, floor float64) float64 {
	if floor == 0 {
		return 0
	}
	return st.Throughput() / floor
}

func (r *runner) newToken(ctx context.Context, cr *payd.Credentials) (string, error) {
	body, _ := json.Marshal(map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret})
	status, b := do(ctx, r.hc, "POST", r.target+"/v2/auth/token", "", body)
	var v struct {
		Result struct{ AccessToken string } `json:"result"`
	}
	if status != 200 || json.Unmarshal(b, &v) != nil {
		return "", fmt.Errorf("token: %d %s", status, b)
	}
	return v.Result.AccessToken, nil
}

func (r *runner) rtpBody(callback string) []byte {
	b, _ := json.Marshal(map[string]any{"alias": "37369112221", "amount": 12.34, "currency": "MDL", "description": "load",
		"orderId": "ord-" + strconv.Itoa(rand.IntN(1000)), "expiresAt": payd.FormatTime(time.Now().Add(time.Hour)), "callbackUrl": callback})
	return b
}

func field(b []byte, name string) string {
	var v struct {
		Result map[string]any `json:"result"`
	}
	json.Unmarshal(b, &v)
	s, _ := v.Result[name].(string)
	return s
}

func (r *runner) scenario(ctx context.Context, name string) ([]*stats, error) {
	switch name {
	case "http-floor":
		return []*stats{r.httpFloor(ctx)}, nil
	case "storage-floor":
		st, err := r.storageFloor(ctx)
		return []*stats{st}, err
	case "token":
		body, _ := json.Marshal(map[string]string{"clientId": r.creds.ClientID, "clientSecret": r.creds.ClientSecret})
		return []*stats{drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, _ int) int {
			s, _ := do(ctx, r.hc, "POST", r.target+"/v2/auth/token", "", body)
			return s
		})}, nil
	case "rtp-create":
		var mu sync.Mutex
		if sink != nil {
			sink.reset() // each run reports its own RTPs' messages only
		}
		st := drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, _ int) int {
			s, b := do(ctx, r.hc, "POST", r.target+"/v2/rtp", r.token, r.rtpBody(""))
			if s == 200 {
				id := field(b, "rtpId")
				if sink != nil {
					sink.answered(id, time.Now())
				}
				mu.Lock()
				if len(r.rtpIDs) < 100_000 {
					r.rtpIDs = append(r.rtpIDs, id)
				}
				mu.Unlock()
			}
			return s
		})
		if sink != nil {
			// The connector's side: each RTP's pain.013, from the API's answer.
			st.Callbacks = sink.finish()
			st.Callbacks.From, st.Callbacks.What = "answer", "pain.013"
		}
		return []*stats{st}, nil
	case "rtp-get":
		if len(r.rtpIDs) == 0 {
			for i := 0; i < 1000; i++ {
				_, b := do(ctx, r.hc, "POST", r.target+"/v2/rtp", r.token, r.rtpBody(""))
				r.rtpIDs = append(r.rtpIDs, field(b, "rtpId"))
			}
		}
		return []*stats{drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, i int) int {
			s, _ := do(ctx, r.hc, "GET", r.target+"/v2/rtp/"+r.rtpIDs[i%len(r.rtpIDs)], r.token, nil)
			return s
		})}, nil
	case "rtp-list":
		return r.rtpList(ctx)
	case "overload":
		return []*stats{r.overload(ctx)}, nil
	case "rtp-flow":
		st, err := r.rtpFlow(ctx, "rtp-flow", nil, "")
		return []*stats{st}, err
	case "rtp-flow-hung":
		st, err := r.hungFlow(ctx)
		return []*stats{st}, err
	case "fault":
		st, err := r.fault(ctx)
		return []*stats{st}, err
	case "rails-credit":
		st, err := r.railsCredits(ctx)
		return []*stats{st}, err
	case "qr-pay":
		return []*stats{drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, _ int) int {
			b, _ := json.Marshal(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 25, "currency": "MDL",
				"description": "load", "expiresAt": payd.FormatTime(time.Now().Add(time.Hour))})
			s, out := do(ctx, r.hc, "POST", r.target+"/v2/instant/qr", r.token, b)
			if s != 200 {
				return s
			}
			b, _ = json.Marshal(map[string]any{"qrId": field(out, "qrId"), "amount": 25, "currency": "MDL", "iban": payd.TestIBAN, "payerName": "LOAD"})
			s, _ = do(ctx, r.hc, "POST", r.target+"/v2/instant/test-pay", r.token, b)
			return s
		})}, nil
	case "checkout-create":
		body := []byte(`{"amount":120.50,"currency":"MDL","language":"en","orderInfo":{"id":"load","items":[{"title":"Item","amount":120.5,"quantity":1}]}}`)
		return []*stats{drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, _ int) int {
			s, _ := do(ctx, r.hc, "POST", r.target+"/v2/checkouts", r.token, body)
			return s
		})}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q", name)
}

// overload drives 64 connections (or -c, if more) of mixed lists, creates
// and gets at once: past what the database serves, payd must answer 503
// with Retry-After and never another 5xx. Every status is reported.
func (r *runner) overload(ctx context.Context) *stats {
	token := r.token
	if r.listAs != nil {
		if t, err := r.newToken(ctx, r.listAs); err == nil {
			token = t
		}
	}
	if len(r.rtpIDs) == 0 {
		for i := 0; i < 200; i++ {
			if _, b := do(ctx, r.hc, "POST", r.target+"/v2/rtp", r.token, r.rtpBody("")); field(b, "rtpId") != "" {
				r.rtpIDs = append(r.rtpIDs, field(b, "rtpId"))
			}
		}
	}
	lists := []string{"", "sortBy=status", "sortBy=amount&order=desc", "status=Active", "description=coffee", "sortBy=type"}
	c := max(r.c, 64)
	hc := newHTTPClient(c)
	return drive(ctx, "overload", c, r.n, r.d, func(ctx context.Context, i int) int {
		switch i % 3 {
		case 0:
			s, _ := do(ctx, hc, "GET", r.target+"/v2/rtp?count=50&offset=0&"+lists[(i/3)%len(lists)], token, nil)
			return s
		case 1:
			s, _ := do(ctx, hc, "POST", r.target+"/v2/rtp", r.token, r.rtpBody(""))
			return s
		}
		if len(r.rtpIDs) == 0 {
			return 0
		}
		s, _ := do(ctx, hc, "GET", r.target+"/v2/rtp/"+r.rtpIDs[i%len(r.rtpIDs)], r.token, nil)
		return s
	})
}

// rtpList runs every documented filter and sort as its own measurement.
func (r *runner) rtpList(ctx context.Context) ([]*stats, error) {
	token := r.token
	if r.listAs != nil {
		t, err := r.newToken(ctx, r.listAs)
		if err != nil {
			return nil, err
		}
		token = t
	}
	now := time.Now().UTC()
	from := now.Add(-6 * time.Hour).Format(time.RFC3339)
	to := now.Add(-3 * time.Hour).Format(time.RFC3339)
	queries := []string{
		"", "order=desc", "sortBy=amount", "sortBy=amount&order=desc", "sortBy=orderId", "sortBy=orderId&order=desc",
		"sortBy=status", "sortBy=status&order=desc", "sortBy=expiresAt", "sortBy=expiresAt&order=desc", "sortBy=type",
		"status=Active", "status=Expired", "status=Accepted", "amount=12.34", "orderId=ord-42", "description=coffee", "terminalId=T7",
		"createdAtFrom=" + from + "&createdAtTo=" + to, "expiresAtFrom=" + to + "&expiresAtTo=" + from, "status=Accepted&sortBy=amount&order=desc",
	}
	n := min(r.n, 2000)
	var out []*stats
	for _, q := range queries {
		path := r.target + "/v2/rtp?count=50&offset=" + strconv.Itoa(0) + "&" + strings.ReplaceAll(q, "+", "%2B")
		st := drive(ctx, "rtp-list", r.c, n, r.d, func(ctx context.Context, i int) int {
			s, _ := do(ctx, r.hc, "GET", path, token, nil)
			return s
		})
		if q == "" {
			q = "(default)"
		}
		st.Name = "list " + q
		if len(st.Name) > 30 {
			st.Name = st.Name[:30]
		}
		out = append(out, st)
	}
	// A description search's total is kept while the merchant has the same
	// number of RTPs (sqlstore's totals.go), which the shapes above never
	// change: the same search with the merchant creating 20 RTPs a second
	// beside it counts most times.
	stop := make(chan struct{})
	done := make(chan struct{})
	failed := map[int]int{} // the creates beside that failed, by status
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if s, _ := do(ctx, r.hc, "POST", r.target+"/v2/rtp", token, r.rtpBody("")); s != http.StatusOK {
					failed[s]++
				}
			}
		}
	}()
	path := r.target + "/v2/rtp?count=50&offset=0&description=coffee"
	st := drive(ctx, "list description, creating", r.c, n, r.d, func(ctx context.Context, i int) int {
		s, _ := do(ctx, r.hc, "GET", path, token, nil)
		return s
	})
	close(stop)
	<-done
	for s, k := range failed { // the shape measured nothing if creates failed
		st.Errors["create "+strconv.Itoa(s)] += k
	}
	st.Name = st.Name[:min(len(st.Name), 30)]
	return append(out, st), nil
}

// rtpFlow creates and accepts RTPs whose callbacks come to a receiver this
// process runs, and measures accept-response → arrival. during, when set,
// runs beside the drive (the fault scenario's outage).
func (r *runner) rtpFlow(ctx context.Context, name string, during func(ctx context.Context), hungURL string) (*stats, error) {
	rc, err := newReceiver("payId")
	if err != nil {
		return nil, err
	}
	defer rc.close()
	duringDone := make(chan struct{})
	if during != nil {
		go func() { defer close(duringDone); during(ctx) }()
	} else {
		close(duringDone)
	}
	st := drive(ctx, name, r.c, r.n, r.d, func(ctx context.Context, i int) int {
		url := rc.url
		if hungURL != "" && i%hungEvery == 0 {
			url = hungURL
		}
		s, b := do(ctx, r.hc, "POST", r.target+"/v2/rtp", r.token, r.rtpBody(url))
		if s != 200 {
			return s
		}
		s, b = do(ctx, r.hc, "POST", r.target+"/v2/rtp/"+field(b, "rtpId")+"/test-accept", r.token, []byte(`{"amount":12.34,"currency":"MDL"}`))
		if s == 200 && url == rc.url {
			rc.answered(field(b, "payId"), time.Now())
		}
		return s
	})
	<-duringDone
	st.Callbacks = rc.finish()
	return st, nil
}

// hungEvery: in rtp-flow-hung, every hungEvery-th flow's callback goes to
// an endpoint that accepts connections and never answers.
const hungEvery = 8

// hungFlow is rtp-flow with one flow in hungEvery calling back to an
// endpoint that accepts connections and never answers (a merchant's
// server that hangs): the callbacks measured are the others', which must
// not wait on the hung ones' 10 s timeouts.
func (r *runner) hungFlow(ctx context.Context) (*stats, error) {
	hung, err := hang.Listen()
	if err != nil {
		return nil, err
	}
	defer hung.Close()
	return r.rtpFlow(ctx, "rtp-flow-hung", nil, hung.URL())
}

// receiver is a merchant's callback endpoint run by payd-load: it keys
// each callback by a field of its result (the payment's payId, or a payer
// name the scenario made unique) and measures the delay from payd's
// answer to the callback's arrival.
type receiver struct {
	*tracker
	url string
	srv *http.Server
}

// tracker pairs what payd answered with what arrived after it (a
// callback, a pain.013 at the connector), by a key, and measures the
// delay between them.
type tracker struct {
	key      string
	mu       sync.Mutex
	accepted map[string]time.Time
	arrived  map[string]time.Time
	delays   []time.Duration
	dups     int
	first    time.Time
	last     time.Time
}

// reset forgets everything tracked so far.
func (rc *tracker) reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.accepted, rc.arrived = map[string]time.Time{}, map[string]time.Time{}
	rc.delays, rc.dups, rc.first, rc.last = nil, 0, time.Time{}, time.Time{}
}

func newTracker(key string) *tracker {
	return &tracker{key: key, accepted: map[string]time.Time{}, arrived: map[string]time.Time{}}
}

func newReceiver(key string) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{tracker: newTracker(key), url: "http://" + ln.Addr().String() + "/cb"}
	rc.srv = &http.Server{Handler: http.HandlerFunc(rc.serve)}
	go rc.srv.Serve(ln)
	return rc, nil
}

func (rc *receiver) serve(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	var v struct {
		Result map[string]any `json:"result"`
	}
	json.NewDecoder(bufio.NewReader(req.Body)).Decode(&v)
	k, _ := v.Result[rc.key].(string)
	rc.arrive(k, now)
}

// arrive records that k arrived at now.
func (rc *tracker) arrive(k string, now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, seen := rc.arrived[k]; seen {
		rc.dups++
		return
	}
	rc.arrived[k] = now
	if at, ok := rc.accepted[k]; ok {
		rc.delays = append(rc.delays, now.Sub(at))
	}
	if rc.first.IsZero() {
		rc.first = now
	}
	rc.last = now
}

// answered records that payd answered about k at (what follows is now due).
func (rc *tracker) answered(k string, at time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if arrivedAt, ok := rc.arrived[k]; ok { // the callback beat the response home
		rc.delays = append(rc.delays, arrivedAt.Sub(at))
	}
	rc.accepted[k] = at
}

// finish waits for the stragglers, up to 30 s (longer than a failed first
// attempt's retry, 10 s + jitter, plus an attempt's 10 s timeout), and
// reports the callbacks: every answered payment's, lost, duplicated.
func (rc *tracker) finish() *callbackStats {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rc.mu.Lock()
		done := allArrived(rc.accepted, rc.arrived)
		rc.mu.Unlock()
		if done {
			break
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	lost := 0
	for k := range rc.accepted {
		if _, ok := rc.arrived[k]; !ok {
			lost++
			fmt.Printf("callback of %s %s has not arrived\n", rc.key, k)
		}
	}
	cs := &callbackStats{Delays: rc.delays, Lost: lost, Dups: rc.dups}
	if span := rc.last.Sub(rc.first).Seconds(); span > 0 {
		cs.Sustained = float64(len(rc.arrived)) / span
	}
	return cs
}

func (rc *receiver) close() { rc.srv.Close() }

// allArrived reports whether the callback of every payment accepted has
// arrived. Counting is not enough: an acceptance the drive's end cut off
// after payd had committed it is not among the accepted, but its callback
// arrives, and counted it let the receiver close while an accepted
// payment's callback was still on its way (reported lost, then refused).
func allArrived(accepted, arrived map[string]time.Time) bool {
	for pay := range accepted {
		if _, ok := arrived[pay]; !ok {
			return false
		}
	}
	return true
}

// httpFloor serves a fixed JSON body of an RTP record's size from a bare
// net/http handler and drives it the same way.
func (r *runner) httpFloor(ctx context.Context) *stats {
	body := []byte(`{"ok":true,"result":{"rtpId":"01a1fd38-56fa-7f9d-ba9b-1038a64df444","orderId":"ord-1","url":"http://127.0.0.1:8080/rtp/01a1fd38-56fa-7f9d-ba9b-1038a64df444","amount":12.34,"currency":"MDL","description":"load","status":"Active","createdAt":"2026-11-21T08:28:10.362+00:00","updatedAt":"2026-11-21T08:28:10.362+00:00","expiresAt":"2026-11-21T09:28:10.000+00:00"}}`)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	u := "http://" + ln.Addr().String() + "/v2/rtp/x"
	return drive(ctx, "http-floor", r.c, r.n, r.d, func(ctx context.Context, _ int) int {
		s, _ := do(ctx, r.hc, "GET", u, r.token, nil)
		return s
	})
}

// storageFloor runs single-row insert transactions of an RTP-shaped row
// through the same driver and pool settings, at the same concurrency.
func (r *runner) storageFloor(ctx context.Context) (*stats, error) {
	if err := r.store.PrepareFloor(ctx); err != nil {
		return nil, err
	}
	defer r.store.DropFloor(context.WithoutCancel(ctx))
	return drive(ctx, "storage-floor", r.c, r.n, r.d, func(ctx context.Context, _ int) int {
		if err := r.store.FloorInsert(ctx, time.Now().UTC()); err != nil {
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return 0
			}
			return 500
		}
		return 200
	}), nil
}

// peakRSS samples a process's resident set size.
type peakRSS struct {
	mu  sync.Mutex
	kb  int
	end chan struct{}
}

func (p *peakRSS) watch(pid int) func() {
	p.end = make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if kb := rssKB(pid); kb > 0 {
				p.mu.Lock()
				p.kb = max(p.kb, kb)
				p.mu.Unlock()
			}
			select {
			case <-p.end:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(p.end) }
}

func (p *peakRSS) max() int { p.mu.Lock(); defer p.mu.Unlock(); return p.kb }

func rssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
