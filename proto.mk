# proto.mk: Go code generation for proto/, included from the Makefile.
#
# The generated *.pb.go and *_grpc.pb.go files are committed beside their .proto files, so
# building Lavik needs no protoc. `make proto` regenerates them; `make proto-check` regenerates
# into a temporary directory and fails if the committed files differ (CI runs it).
#
# Needs protoc on PATH (Debian: apt-get install protobuf-compiler) and the module proxy, from
# which the two Go plugins are installed at pinned versions into $(PROTO_GOBIN). The .proto
# files import no well-known types, so protoc's own include files are not needed.
#
# The generated files name the protoc version that made them. proto-check ignores that one
# comment line, so a developer's protoc and CI's may differ; everything else must match.

GO     ?= go
PROTOC ?= protoc

# Bump these together with google.golang.org/protobuf and google.golang.org/grpc in go.mod,
# then run `make proto` and commit the result.
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2

PROTO_DIR   := proto
# First GOPATH entry's bin/, where `go install` puts binaries when GOBIN is unset.
PROTO_GOBIN ?= $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
# .proto files relative to PROTO_DIR (which is the import root), in a stable order.
PROTO_FILES  = $(patsubst $(PROTO_DIR)/%,%,$(shell find $(PROTO_DIR) -name '*.proto' | LC_ALL=C sort))
# Lines that may differ between the committed and the regenerated files: the protoc version.
PROTO_IGNORE := '^//.*protoc  *v[0-9]'

# proto_gen generates every .proto file into directory $(1), laid out as under PROTO_DIR. The
# plugins are passed by path so that an older copy elsewhere on PATH is never used.
define proto_gen
$(PROTOC) -I $(PROTO_DIR) \
	--plugin=protoc-gen-go=$(PROTO_GOBIN)/protoc-gen-go \
	--plugin=protoc-gen-go-grpc=$(PROTO_GOBIN)/protoc-gen-go-grpc \
	--go_out=$(1) --go_opt=paths=source_relative \
	--go-grpc_out=$(1) --go-grpc_opt=paths=source_relative \
	$(PROTO_FILES)
endef

.PHONY: proto-plugins
proto-plugins: ## install the pinned protoc-gen-go and protoc-gen-go-grpc if missing or another version
	@command -v $(PROTOC) >/dev/null 2>&1 || { \
		echo "proto: $(PROTOC) not found (Debian: apt-get install protobuf-compiler)"; exit 1; }
	@if [ "$$($(PROTO_GOBIN)/protoc-gen-go --version 2>/dev/null)" != "protoc-gen-go $(PROTOC_GEN_GO_VERSION)" ]; then \
		echo "proto: installing protoc-gen-go $(PROTOC_GEN_GO_VERSION) into $(PROTO_GOBIN)"; \
		GOBIN=$(PROTO_GOBIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION) || exit 1; \
	fi
	@if [ "$$($(PROTO_GOBIN)/protoc-gen-go-grpc --version 2>/dev/null)" != "protoc-gen-go-grpc $(PROTOC_GEN_GO_GRPC_VERSION:v%=%)" ]; then \
		echo "proto: installing protoc-gen-go-grpc $(PROTOC_GEN_GO_GRPC_VERSION) into $(PROTO_GOBIN)"; \
		GOBIN=$(PROTO_GOBIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION) || exit 1; \
	fi

# Generating into a temporary directory first means a failed protoc run leaves proto/ as it
# was, and a .proto file that was deleted takes its generated files with it.
.PHONY: proto
proto: proto-plugins ## regenerate the Go code in proto/ from the .proto files
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(call proto_gen,"$$tmp") && \
	find $(PROTO_DIR) -name '*.pb.go' -delete && \
	cp -R "$$tmp"/. $(PROTO_DIR)/ && \
	echo "proto: generated $$(cd "$$tmp" && find . -name '*.pb.go' | wc -l | tr -d ' ') files from $(words $(PROTO_FILES)) .proto files with $$($(PROTOC) --version)"

.PHONY: proto-check
proto-check: proto-plugins ## fail if the committed generated code in proto/ is not what the .proto files generate
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	mkdir "$$tmp/generated" "$$tmp/committed" && \
	$(call proto_gen,"$$tmp/generated") && \
	(cd $(PROTO_DIR) && find . -name '*.pb.go' -exec cp --parents {} "$$tmp/committed/" \;) && \
	if diff -rq -I $(PROTO_IGNORE) "$$tmp/committed" "$$tmp/generated" >"$$tmp/files"; then \
		echo "proto-check: generated code in $(PROTO_DIR)/ is up to date"; \
	else \
		echo "proto-check: generated code in $(PROTO_DIR)/ is out of date; run 'make proto' and commit the result."; \
		echo "Files that differ (committed = $(PROTO_DIR)/, generated = fresh protoc output):"; \
		sed -e "s|$$tmp/committed|$(PROTO_DIR)|g" -e "s|$$tmp/generated|generated|g" -e 's/^/  /' "$$tmp/files"; \
		echo "Differences:"; \
		diff -r -I $(PROTO_IGNORE) "$$tmp/committed" "$$tmp/generated" | \
			sed -e "s|$$tmp/committed|$(PROTO_DIR)|g" -e "s|$$tmp/generated|generated|g" | head -n 200; \
		exit 1; \
	fi
