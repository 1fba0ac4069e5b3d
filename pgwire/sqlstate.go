package pgwire

import "github.com/dpstat/dpstat/answer"

// sqlState is the PostgreSQL error code an error of kind k is reported
// with.
func sqlState(k answer.Kind) string {
	switch k {
	case answer.KindBadRequest:
		return "22023" // invalid_parameter_value
	case answer.KindSyntax:
		return "42601" // syntax_error
	case answer.KindRefused:
		return "0A000" // feature_not_supported
	case answer.KindNotGranted:
		return "42501" // insufficient_privilege
	case answer.KindBudgetExceeded:
		return "53400" // configuration_limit_exceeded
	case answer.KindUnknownTable:
		return "42P01" // undefined_table
	case answer.KindUnknownColumn:
		return "42703" // undefined_column
	case answer.KindTimeout:
		return "57014" // query_canceled
	case answer.KindOverloaded:
		return "53000" // insufficient_resources
	case answer.KindRateLimited:
		return "53400" // configuration_limit_exceeded
	case answer.KindUnavailable:
		return "57P03" // cannot_connect_now
	}
	return "XX000" // internal_error
}
