package server

import (
	"net/http"

	"github.com/dpstat/dpstat/answer"
)

// RequestIDHeader is the response header carrying an HTTP request's id.
const RequestIDHeader = "X-Request-Id"

// httpStatus is the HTTP status an error of kind k is reported with.
func httpStatus(k answer.Kind) int {
	switch k {
	case answer.KindBadRequest, answer.KindSyntax, answer.KindRefused, answer.KindUnknownTable, answer.KindUnknownColumn:
		return http.StatusBadRequest
	case answer.KindNotGranted:
		return http.StatusForbidden
	case answer.KindBudgetExceeded:
		return http.StatusConflict
	case answer.KindTimeout, answer.KindUnavailable:
		return http.StatusServiceUnavailable
	case answer.KindOverloaded, answer.KindRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}
