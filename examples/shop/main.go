// Command shop is a small web shop that takes payments with payd's hosted
// checkout: it sells two products, sends the buyer to payd's page, learns
// the outcome from payd's signed callback, lists its orders and refunds
// them from its admin page. It is an example to read and to run against the
// sandbox (README.md beside this file).
package main

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"
	"payd/callback"
	"payd/client"
)

//go:embed templates/*.html
var templates embed.FS

// Config is where the shop is and how it reaches payd.
type Config struct {
	Addr      string // where the shop listens
	PublicURL string // how payd and the buyer reach the shop
	PaydURL   string
	ClientID  string
	Secret    string
	SignKey   string // the merchant's signature key (payd prints it with the credentials)
}

func main() {
	cfg := Config{
		Addr: env("SHOP_ADDR", "127.0.0.1:8090"), PaydURL: env("PAYD_URL", "http://127.0.0.1:8080"),
		ClientID: os.Getenv("PAYD_CLIENT_ID"), Secret: os.Getenv("PAYD_CLIENT_SECRET"), SignKey: os.Getenv("PAYD_SIGNATURE_KEY"),
	}
	cfg.PublicURL = env("SHOP_PUBLIC_URL", "http://"+cfg.Addr)
	if cfg.ClientID == "" || cfg.Secret == "" || cfg.SignKey == "" {
		log.Fatal("set PAYD_CLIENT_ID, PAYD_CLIENT_SECRET and PAYD_SIGNATURE_KEY (see examples/shop/README.md)")
	}
	log.Printf("shop on %s, paying through %s", cfg.PublicURL, cfg.PaydURL)
	log.Fatal(http.ListenAndServe(cfg.Addr, New(cfg)))
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Product is something the shop sells.
type Product struct {
	ID    string
	Name  string
	Price payd.Money
}

var products = []Product{{"tea", "Green tea, 100 g", 8900}, {"mug", "Ceramic mug", 14550}}

// Order is one purchase; payd's callbacks move it from pending to paid (or
// failed) and to refunded.
type Order struct {
	ID         string
	Product    Product
	Status     string // pending, paid, failed, refund requested, refunded
	CheckoutID string
	PaymentID  string
	RefundID   string
	Created    time.Time
}

// Shop is the shop's web handler. Orders live in memory.
type Shop struct {
	cfg    Config
	payd   *client.Client
	tmpl   *template.Template
	mux    *http.ServeMux
	mu     sync.Mutex
	orders map[string]*Order
	seq    int
}

// New returns the shop.
func New(cfg Config) *Shop {
	s := &Shop{cfg: cfg, payd: client.New(cfg.PaydURL, cfg.ClientID, cfg.Secret), orders: map[string]*Order{},
		tmpl: template.Must(template.New("").Funcs(template.FuncMap{"money": func(m payd.Money) string { return m.String() }}).ParseFS(templates, "templates/*.html"))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("POST /buy", s.buy)
	mux.HandleFunc("GET /orders", s.list)
	mux.HandleFunc("GET /orders/{id}", s.order)
	mux.HandleFunc("POST /admin/orders/{id}/refund", s.refund)
	v := callback.NewVerifier(s.cfg.SignKey)
	mux.Handle("POST /payd/callback", v.Handler(callback.NewMemoryDedup(), s.onCallback))
	s.mux = mux
	return s
}

func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Shop) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, name, data); err != nil {
		log.Print(err)
	}
}

func (s *Shop) home(w http.ResponseWriter, r *http.Request) { s.render(w, "home.html", products) }

// buy creates the order and its checkout, and sends the buyer to payd.
func (s *Shop) buy(w http.ResponseWriter, r *http.Request) {
	var p *Product
	for i := range products {
		if products[i].ID == r.FormValue("product") {
			p = &products[i]
		}
	}
	if p == nil {
		http.Error(w, "no such product", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.seq++
	o := &Order{ID: "ORD-" + strconv.Itoa(s.seq), Product: *p, Status: "pending", Created: time.Now()}
	s.orders[o.ID] = o
	s.mu.Unlock()
	back := s.cfg.PublicURL + "/orders/" + o.ID
	co, err := s.payd.CreateCheckout(r.Context(), client.CheckoutRequest{
		Amount: p.Price, Currency: "MDL", Language: "en",
		CallbackURL: s.cfg.PublicURL + "/payd/callback", SuccessURL: back, FailURL: back,
		OrderInfo: &client.OrderInfo{ID: o.ID, Description: p.Name,
			Items: []client.OrderItem{{Title: p.Name, Amount: p.Price, Currency: "MDL", Quantity: 1}}},
	})
	if err != nil {
		http.Error(w, "payd: "+err.Error(), http.StatusBadGateway)
		return
	}
	s.mu.Lock()
	o.CheckoutID = co.CheckoutID
	s.mu.Unlock()
	http.Redirect(w, r, co.CheckoutURL, http.StatusSeeOther)
}

// onCallback applies a verified callback to its order.
func (s *Shop) onCallback(_ context.Context, e *callback.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e.Checkout != nil:
		o := s.byCheckout(e.Checkout.CheckoutID)
		if o == nil {
			return nil // not ours (or from before a restart): nothing to do
		}
		o.PaymentID = e.Checkout.PaymentID
		if e.Name == callback.EventCheckoutCompleted {
			o.Status = "paid"
		} else {
			o.Status = "failed"
		}
	case e.Refund != nil:
		for _, o := range s.orders {
			if o.RefundID == e.Refund.RefundID || o.PaymentID == e.Refund.PayID {
				o.Status = "refunded"
			}
		}
	}
	return nil
}

func (s *Shop) byCheckout(id string) *Order {
	for _, o := range s.orders {
		if o.CheckoutID == id {
			return o
		}
	}
	return nil
}

func (s *Shop) snapshot() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Order, 0, len(s.orders))
	for _, o := range s.orders {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

func (s *Shop) list(w http.ResponseWriter, r *http.Request) { s.render(w, "orders.html", s.snapshot()) }

func (s *Shop) order(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o, ok := s.orders[r.PathValue("id")]
	var cp Order
	if ok {
		cp = *o
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.render(w, "order.html", cp)
}

// refund refunds a paid order in full; the refund callback marks it refunded.
func (s *Shop) refund(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o, ok := s.orders[r.PathValue("id")]
	var pay string
	if ok && o.Status == "paid" {
		pay = o.PaymentID
	}
	s.mu.Unlock()
	if pay == "" {
		http.Error(w, "only a paid order can be refunded", http.StatusConflict)
		return
	}
	rf, err := s.payd.Refund(r.Context(), pay, client.RefundRequest{Reason: "refunded from the shop's admin page",
		CallbackURL: s.cfg.PublicURL + "/payd/callback"})
	if err != nil {
		http.Error(w, "payd: "+err.Error(), http.StatusBadGateway)
		return
	}
	s.mu.Lock()
	if o.Status == "paid" { // the callback may already have arrived
		o.Status, o.RefundID = "refund requested", rf.RefundID
	}
	s.mu.Unlock()
	http.Redirect(w, r, "/orders", http.StatusSeeOther)
}

// String helps the templates.
func (o Order) String() string { return fmt.Sprintf("%s %s", o.ID, strings.ToUpper(o.Status)) }
