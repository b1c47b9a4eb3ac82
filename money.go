package payd

import (
	"errors"
	"strconv"
	"strings"
)

// Money is an amount in minor units (bani for MDL). Amounts are never
// floating point anywhere in payd.
type Money int64

// MaxAmount is the largest amount any payment may have: 100000.00.
const MaxAmount Money = 100000_00

// errAmountFormat is returned by ParseMoney for text that is not a decimal
// number with at most two fraction digits.
var (
	ErrAmountFormat    = errors.New("must be a number with at most 2 decimals")
	ErrAmountPrecision = errors.New("must have at most 2 decimals")
	ErrAmountRange     = errors.New("is out of range")
)

// ParseMoney reads a decimal number in major units, as it appears in JSON
// or in a query string: an optional minus sign, digits, an optional
// fraction and an optional exponent ("50", "50.5", "50.500", "5e1").
// More than two significant fraction digits is an error, as is a value
// that does not fit comfortably in int64 minor units.
func ParseMoney(s string) (Money, error) {
	if s == "" || len(s) > 64 {
		return 0, ErrAmountFormat
	}
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || s[i+1:] == "" {
			return 0, ErrAmountFormat
		}
		if e > 30 || e < -30 {
			return 0, ErrAmountRange
		}
		exp = e
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
		if frac == "" {
			return 0, ErrAmountFormat
		}
	}
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, ErrAmountFormat
	}
	// digits * 10^(exp - len(frac)) is the value; we want it * 100.
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := exp - len(frac) + 2
	if shift < 0 {
		cut := -shift
		if cut >= len(digits) {
			if digits != "" {
				return 0, ErrAmountPrecision
			}
			digits = ""
		} else {
			if strings.Trim(digits[len(digits)-cut:], "0") != "" {
				return 0, ErrAmountPrecision
			}
			digits = digits[:len(digits)-cut]
		}
	} else if digits != "" {
		digits += strings.Repeat("0", shift)
	}
	if digits == "" {
		return 0, nil
	}
	if len(digits) > 17 {
		return 0, ErrAmountRange
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, ErrAmountRange
	}
	if neg {
		v = -v
	}
	return Money(v), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String renders the amount in major units with exactly two decimals.
func (m Money) String() string {
	return string(m.AppendText(nil))
}

// AppendText appends the two-decimal rendering of m to b.
func (m Money) AppendText(b []byte) []byte {
	v := int64(m)
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendInt(b, v/100, 10)
	b = append(b, '.')
	c := v % 100
	b = append(b, byte('0'+c/10), byte('0'+c%10))
	return b
}

// MarshalJSON renders the amount as a JSON number with two decimals.
func (m Money) MarshalJSON() ([]byte, error) { return m.AppendText(nil), nil }

// UnmarshalJSON reads a JSON number with at most two decimals, exactly;
// null leaves m as it is, as encoding/json does for its own types.
func (m *Money) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseMoney(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Commission is round-half-up(amount × rate ÷ 10000), rate in basis points.
func Commission(amount Money, rateBP int) Money {
	return Money((int64(amount)*int64(rateBP) + 5000) / 10000)
}
