package main

// The production networks payd can run, each registered by its own
// package (internal/network): importing a network's package is all the
// wiring it needs. PAYD_RAILS and PAYD_CARD_ACQUIRER choose among them.
import (
	_ "payd/internal/acquirer/maibecomm"
	_ "payd/internal/rails/iso20022"
)
