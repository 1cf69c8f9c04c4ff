.PHONY: run test bench

run:
	go run ./cmd/wsserver

test:
	./scripts/test.sh

bench:
	./scripts/bench.sh
