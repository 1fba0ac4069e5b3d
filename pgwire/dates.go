package pgwire

import (
	"encoding/binary"
	"fmt"

	"github.com/dpstat/dpstat/schema"
)

// pgEpochDays is 2000-01-01, PostgreSQL's epoch for dates and timestamps
// in binary format, in days since 1970-01-01.
const pgEpochDays = 10957

// encodeTemporal writes a released date ("2024-03-01") or timestamp
// ("2024-03-01 13:45:00") key: as it is in text format, as days or
// microseconds since 2000-01-01 in binary format.
func encodeTemporal(v any, oid uint32, format int16) ([]byte, error) {
	s := fmt.Sprint(v)
	if format == 0 {
		return []byte(s), nil
	}
	if oid == oidDate {
		d, err := schema.ParseDate(s)
		if err != nil {
			return nil, fmt.Errorf("value %v is not a date", v)
		}
		return binary.BigEndian.AppendUint32(nil, uint32(int32(d-pgEpochDays))), nil
	}
	us, err := schema.ParseTimestamp(s)
	if err != nil {
		return nil, fmt.Errorf("value %v is not a timestamp", v)
	}
	return binary.BigEndian.AppendUint64(nil, uint64(us-pgEpochDays*schema.MicrosPerDay)), nil
}
