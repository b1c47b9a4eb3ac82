package web

// languages are the page languages, in the order the switcher shows them.
var languages = []string{"ro", "ru", "en"}

// messages are the pages' texts by language.
var messages = map[string]map[string]string{
	"ro": {
		"qr.title": "Plată prin QR", "qr.range": "Interval", "qr.paid": "Plata a fost efectuată:", "qr.simulate": "Simulează plata",
		"qr.payer": "Plătitor", "qr.pay": "Plătește", "qr.notPayable": "Codul QR nu poate fi plătit acum.",
		"form.invalid": "Datele introduse nu sunt valide.",
		"qr.Active":    "Activ", "qr.Inactive": "Inactiv", "qr.Expired": "Expirat", "qr.Paid": "Plătit", "qr.Cancelled": "Anulat",
		"rtp.title": "Cerere de plată", "rtp.from": "Solicitant", "amount": "Suma", "description": "Descriere",
		"status": "Stare", "rtp.accept": "Acceptă plata", "rtp.reject": "Respinge",
		"rtp.accepted": "Plata a fost efectuată.", "rtp.rejected": "Cererea a fost respinsă.",
		"rtp.conflict": "Cererea nu mai poate fi modificată.", "sandbox": "Mediu de testare: nu se transferă bani.",
		"status.Created": "Creată", "status.Active": "În așteptare", "status.Accepted": "Acceptată",
		"status.Rejected": "Respinsă", "status.Expired": "Expirată", "status.Cancelled": "Anulată", "status.Refunded": "Rambursată",
	},
	"ru": {
		"qr.title": "Оплата по QR", "qr.range": "Диапазон", "qr.paid": "Платёж выполнен:", "qr.simulate": "Симуляция оплаты",
		"qr.payer": "Плательщик", "qr.pay": "Оплатить", "qr.notPayable": "Этот QR-код сейчас нельзя оплатить.",
		"form.invalid": "Введённые данные неверны.",
		"qr.Active":    "Активен", "qr.Inactive": "Неактивен", "qr.Expired": "Истёк", "qr.Paid": "Оплачен", "qr.Cancelled": "Отменён",
		"rtp.title": "Запрос на оплату", "rtp.from": "Получатель", "amount": "Сумма", "description": "Описание",
		"status": "Статус", "rtp.accept": "Оплатить", "rtp.reject": "Отклонить",
		"rtp.accepted": "Платёж выполнен.", "rtp.rejected": "Запрос отклонён.",
		"rtp.conflict": "Запрос больше нельзя изменить.", "sandbox": "Тестовая среда: деньги не переводятся.",
		"status.Created": "Создан", "status.Active": "Ожидает", "status.Accepted": "Принят",
		"status.Rejected": "Отклонён", "status.Expired": "Истёк", "status.Cancelled": "Отменён", "status.Refunded": "Возвращён",
	},
	"en": {
		"qr.title": "QR payment", "qr.range": "Range", "qr.paid": "Payment made:", "qr.simulate": "Simulate a payment",
		"qr.payer": "Payer", "qr.pay": "Pay", "qr.notPayable": "This QR code cannot be paid now.",
		"form.invalid": "The form has invalid data.",
		"qr.Active":    "Active", "qr.Inactive": "Inactive", "qr.Expired": "Expired", "qr.Paid": "Paid", "qr.Cancelled": "Cancelled",
		"rtp.title": "Payment request", "rtp.from": "Requested by", "amount": "Amount", "description": "Description",
		"status": "Status", "rtp.accept": "Accept and pay", "rtp.reject": "Reject",
		"rtp.accepted": "The payment was made.", "rtp.rejected": "The request was rejected.",
		"rtp.conflict": "The request can no longer be changed.", "sandbox": "Sandbox: no money moves.",
		"status.Created": "Created", "status.Active": "Waiting", "status.Accepted": "Accepted",
		"status.Rejected": "Rejected", "status.Expired": "Expired", "status.Cancelled": "Cancelled", "status.Refunded": "Refunded",
	},
}
