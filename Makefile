# make run   serves the API on 127.0.0.1:8080 from the memory store
# make test  runs every check and test (scripts/test.sh)
# make bench runs the Go benchmarks

.PHONY: run test bench

run:
	go run ./examples/server

test:
	./scripts/test.sh

bench:
	go test -run '^$$' -bench . -benchmem ./...
