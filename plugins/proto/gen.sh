#!/bin/sh
# Regenerates the Go and Python code of agent.proto. The generated files
# are committed, so building and testing harnessd needs none of this.
#
# Needs: protoc (Debian: protobuf-compiler), and
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
#   python3-grpc-tools (Debian) for the Python stubs of the example
set -eu
cd "$(dirname "$0")"
PATH="$(go env GOPATH)/bin:$PATH"
protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	agent.proto
py=../examples/python
# protoc itself for the messages (grpc_tools bundles an older protoc whose
# output today's python3-protobuf refuses), grpc_tools for the service stubs.
protoc -I . --python_out="$py" agent.proto
/usr/bin/python3 -m grpc_tools.protoc -I . --grpc_python_out="$py" agent.proto
