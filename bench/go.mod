module github.com/dpstat/dpstat/bench

go 1.26.8

require (
	github.com/dpstat/dpstat v0.0.0
	github.com/google/differential-privacy/go/v3 v3.0.0
)

require (
	github.com/golang/glog v1.2.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)

replace github.com/dpstat/dpstat => ../
