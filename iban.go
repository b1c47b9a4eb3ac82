package payd

import "strings"

// NormalizeIBAN is an IBAN as payd stores and compares it: without spaces,
// in upper case ("md24 ag00 …" is "MD24AG00…").
func NormalizeIBAN(s string) string {
	return strings.ToUpper(strings.Join(strings.Fields(s), ""))
}

// ValidIBAN reports whether a normalized IBAN has the IBAN's shape (two
// letters, two check digits, up to 30 letters and digits) and its check
// digits hold (ISO 13616: the number read with letters as 10–35, the
// country and check digits moved to the end, is 1 modulo 97).
func ValidIBAN(iban string) bool {
	if len(iban) > MaxIBAN || !ibanRE.MatchString(iban) {
		return false
	}
	rem := 0
	for _, c := range iban[4:] + iban[:4] {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		default: // A–Z, as 10–35: two digits
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	return rem == 1
}
