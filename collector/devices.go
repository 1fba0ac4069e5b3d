package collector

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Enrolment. A survey created with Enrolment accepts reports only from
// devices the curator enrolled: each device gets a token (shown once; the
// store keeps its SHA-256), and the device's report id is derived from the
// token, so that a device is counted once however often it posts.

// bucketDevices holds, per survey, the SHA-256 of each enrolled device's
// token.
var bucketDevices = []byte("devices")

// MaxEnrolBatch is the most devices one EnrolDevices call enrols.
const MaxEnrolBatch = 10000

// DeviceTokenPrefix starts every device token.
const DeviceTokenPrefix = "dpd_"

// ErrNotEnrolled is returned (wrapped) for a device token that was not
// enrolled in the survey.
var ErrNotEnrolled = errors.New("device not enrolled in this survey")

// EnrolDevices enrols n new devices in an enrolment survey and returns
// their tokens, which are not stored (only their hashes are).
func (s *Store) EnrolDevices(surveyID string, n int) ([]string, error) {
	if s.readOnly {
		return nil, errors.New("the store is open read-only")
	}
	b, err := s.get(surveyID)
	if err != nil {
		return nil, err
	}
	if !b.Enrolment {
		return nil, fmt.Errorf("survey %q was created without enrolment: any device may report (create a survey with \"enrolment\": true to enrol devices)", surveyID)
	}
	if n < 1 || n > MaxEnrolBatch {
		return nil, fmt.Errorf("count = %d: want 1 to %d devices per request", n, MaxEnrolBatch)
	}
	toks := make([]string, n)
	for i := range toks {
		var r [32]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		toks[i] = DeviceTokenPrefix + hex.EncodeToString(r[:])
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		db, err := tx.Bucket(bucketDevices).CreateBucketIfNotExists([]byte(surveyID))
		if err != nil {
			return err
		}
		for _, t := range toks {
			h := sha256.Sum256([]byte(t))
			if err := db.Put(h[:], []byte{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return toks, nil
}

// DeviceReportID checks that token is enrolled in the survey and returns
// the report id its reports are counted under: one per device.
func (s *Store) DeviceReportID(surveyID, token string) (string, error) {
	if len(token) > 128 {
		return "", fmt.Errorf("device token of %d bytes: %w", len(token), ErrNotEnrolled)
	}
	h := sha256.Sum256([]byte(token))
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		if db := tx.Bucket(bucketDevices); db != nil {
			if sb := db.Bucket([]byte(surveyID)); sb != nil {
				ok = sb.Get(h[:]) != nil
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("survey %q: %w", surveyID, ErrNotEnrolled)
	}
	return "device:" + hex.EncodeToString(h[:16]), nil
}
