package pgwire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpstat/dpstat/analyst"
)

// scramMechanism is the one SASL mechanism offered. Channel binding
// (SCRAM-SHA-256-PLUS) is not offered; over TLS the channel is protected
// by TLS itself.
const scramMechanism = "SCRAM-SHA-256"

// scramFailure says why a SCRAM login failed, for the client.
type scramFailure struct {
	code, msg string
}

// fakeKeys are the keys shown for an unknown name, so that the exchange
// looks the same whether the name exists or not: the salt depends only on
// the name and the server's secret.
func (s *Server) fakeKeys(name string) analyst.SCRAMKeys {
	m := hmac.New(sha256.New, s.secret[:])
	m.Write([]byte(name))
	sum := m.Sum(nil)
	k := analyst.SCRAMKeys{Salt: sum[:16], Iterations: analyst.SCRAMIterations}
	copy(k.StoredKey[:], sum)
	return k
}

// scramLogin runs the SCRAM-SHA-256 exchange with the client logging in as
// user. It returns the login, or the failure to report.
func (s *Server) scramLogin(be *pgproto3.Backend, user string) (analyst.SCRAMLogin, *scramFailure) {
	login, lerr := s.opts.Analysts.SCRAM(user)
	keys := login.Keys
	if lerr != nil && !errors.Is(lerr, analyst.ErrRevoked) {
		keys = s.fakeKeys(user)
	}
	protocol := func(format string, args ...any) *scramFailure {
		return &scramFailure{code: "08P01", msg: "SCRAM-SHA-256 authentication: " + fmt.Sprintf(format, args...)}
	}
	be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}})
	if err := be.Flush(); err != nil {
		return login, &scramFailure{}
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return login, protocol("%v", err)
	}
	msg, err := be.Receive()
	if err != nil {
		// A password message in answer to the SASL request cannot be
		// decoded as a SASL response.
		return login, &scramFailure{code: "28000", msg: fmt.Sprintf("this server authenticates with SCRAM-SHA-256 only; the answer to its SASL request was not a SASL response (%v): use a client that supports SCRAM (libpq 10 or later, pgx, psycopg, JDBC 42.2 or later)", err)}
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return login, &scramFailure{code: "28000", msg: fmt.Sprintf("this server authenticates with SCRAM-SHA-256 only (got %T): use a client that supports it (libpq 10 or later, pgx, psycopg, JDBC 42.2 or later)", msg)}
	}
	if init.AuthMechanism != scramMechanism {
		return login, &scramFailure{code: "28000", msg: fmt.Sprintf("SASL mechanism %q is not offered: want %s", init.AuthMechanism, scramMechanism)}
	}
	first := string(init.Data)
	var gs2 string
	switch {
	case strings.HasPrefix(first, "n,,"), strings.HasPrefix(first, "y,,"):
		gs2 = first[:3]
	case strings.HasPrefix(first, "p="):
		return login, protocol("channel binding was asked for, but %s-PLUS is not offered", scramMechanism)
	default:
		return login, protocol("client-first-message %.40q does not start with a GS2 header (n,, or y,,)", first)
	}
	bare := first[len(gs2):]
	clientNonce := ""
	for _, attr := range strings.Split(bare, ",") {
		switch {
		case strings.HasPrefix(attr, "r="):
			clientNonce = attr[2:]
		case strings.HasPrefix(attr, "n="):
			// PostgreSQL ignores this user name: the startup message's
			// counts.
		case strings.HasPrefix(attr, "m="):
			return login, protocol("mandatory extension %.40q is not supported", attr)
		}
	}
	if clientNonce == "" || strings.ContainsAny(clientNonce, ", ") {
		return login, protocol("client-first-message has no usable nonce")
	}
	var sn [18]byte
	if _, err := rand.Read(sn[:]); err != nil {
		return login, &scramFailure{code: "XX000", msg: "no random bytes for a nonce"}
	}
	nonce := clientNonce + base64.StdEncoding.EncodeToString(sn[:])
	serverFirst := fmt.Sprintf("r=%s,s=%s,i=%d", nonce, base64.StdEncoding.EncodeToString(keys.Salt), keys.Iterations)
	be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := be.Flush(); err != nil {
		return login, &scramFailure{}
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return login, protocol("%v", err)
	}
	if msg, err = be.Receive(); err != nil {
		return login, &scramFailure{}
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return login, protocol("expected a SASL response, got %T", msg)
	}
	final := string(resp.Data)
	i := strings.LastIndex(final, ",p=")
	if i < 0 {
		return login, protocol("client-final-message has no proof")
	}
	withoutProof, proofText := final[:i], final[i+3:]
	var binding, gotNonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		switch {
		case strings.HasPrefix(attr, "c="):
			binding = attr[2:]
		case strings.HasPrefix(attr, "r="):
			gotNonce = attr[2:]
		}
	}
	if binding != base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return login, protocol("channel binding %q does not match the GS2 header %q", binding, gs2)
	}
	if gotNonce != nonce {
		return login, protocol("the nonce of the final message is not the one the server sent")
	}
	proof, err := base64.StdEncoding.DecodeString(proofText)
	if err != nil {
		return login, protocol("the proof is not base64")
	}
	sig, ok := analyst.VerifySCRAMProof(keys, bare+","+serverFirst+","+withoutProof, proof)
	switch {
	case lerr == nil && ok:
		be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte("v=" + base64.StdEncoding.EncodeToString(sig))})
		return login, nil
	case ok && errors.Is(lerr, analyst.ErrRevoked):
		return login, &scramFailure{code: "28P01", msg: fmt.Sprintf("password authentication failed for user %q: the token has been revoked", user)}
	}
	return login, &scramFailure{code: "28P01", msg: fmt.Sprintf("password authentication failed for user %q: the password must be the analyst's token (a token issued before SCRAM logins must be rotated once: dpstat analyst rotate)", user)}
}
