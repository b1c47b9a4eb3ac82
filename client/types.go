package client

import "payd/client/internal/wire"

// The client's requests and records are the contract's JSON types,
// generated from api/openapi.yaml (package wire): a field the contract
// gains or loses is the client's too. Amounts are payd.Money, times
// time.Time; an optional field is a value, left out of a request when it
// is zero, and a null in an answer reads as its zero.
type (
	RTPRequest    = wire.RTPCreate        // POST /v2/rtp
	RTPCreated    = wire.RTPCreated       // its result
	RTP           = wire.RTP              // an RTP record
	RTPCancelled  = wire.RTPCancelled     // CancelRTP's result
	RTPDecision   = wire.RTPPaymentResult // the sandbox's TestAcceptRTP and TestRejectRTP
	RTPRefund     = wire.RTPRefundRequest // POST /v2/rtp/{payId}/refund
	RefundRequest = wire.RefundRequest    // POST /v2/payments/{payId}/refund: Amount zero refunds what is left
	RefundCreated = wire.RefundCreatedResult
	Refund        = wire.Refund // a refund record

	QRRequest        = wire.QRCreate        // POST /v2/instant/qr: Static or Dynamic
	HybridRequest    = wire.HybridCreate    // POST /v2/instant/qr/hybrid, optionally with the first extension
	ExtensionRequest = wire.ExtensionCreate // a Hybrid QR's terms
	QRCreated        = wire.QRCreated
	HybridCreated    = wire.HybridCreated
	QRCancelled      = wire.QRCancelled
	QR               = wire.QR
	Extension        = wire.Extension
	QRPayment        = wire.QRPayment     // the QR area's payment record
	TestPayment      = wire.TestPayResult // the sandbox's TestPayQR

	CheckoutRequest   = wire.CheckoutCreate // POST /v2/checkouts
	OrderInfo         = wire.OrderInfo
	OrderItem         = wire.OrderItem
	PayerInfo         = wire.PayerInfo
	CheckoutCreated   = wire.CheckoutCreated // send the buyer to CheckoutURL
	CheckoutCancelled = wire.CheckoutCancelled
	Checkout          = wire.Checkout
	CheckoutOrder     = wire.CheckoutOrder
	CheckoutOrderItem = wire.CheckoutOrderItem
	CheckoutPayer     = wire.CheckoutPayer
	CheckoutPayment   = wire.CheckoutPayment

	Payment         = wire.Payment // a payments-area record
	CallbackItem    = wire.CallbackItem
	CallbackDetail  = wire.CallbackDetail
	CallbackAttempt = wire.CallbackAttempt
	Clock           = wire.ClockResult // the sandbox clock
	ErrorItem       = wire.ErrorItem   // one error of an envelope
)
