# writewatch build, test and demo targets.
# The go command: from PATH, else where Go's release tarball puts it
# (sudo's secure_path lacks /usr/local/go/bin, so `sudo make` finds it here).
ifeq ($(origin GO),undefined)
GO := $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
endif
CLANG    ?= clang-19
STRIP    ?= llvm-strip-19
CFLAGS   := -O2 -g -Wall -Werror
BIN      := bin/writewatch

export BPF2GO_CC     := $(CLANG)
export BPF2GO_STRIP  := $(STRIP)
export BPF2GO_CFLAGS := $(CFLAGS)

.PHONY: all build generate check-generate test test-deps unit-test dogfood vmtest vmbench demo lint clean bench release action-test

# Packages whose tests need no kernel: these also run under writewatch.
# Listed only when used (make dogfood).
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /integration)

all: build

build:
	$(GO) build -o $(BIN) ./cmd/writewatch

# Regenerate bpf/ops.h from the table of operations (internal/ops), then
# the BPF objects and their Go bindings (needs clang and libbpf headers).
# clang's BTF output depends on the length of the paths it is given (the
# order of forward-declared types follows its heap layout), so generation
# runs in a copy of the tree at a path of fixed length, under /tmp: every
# clone then gets the same bytes. check-generate compares that copy's
# output with the tree's and changes nothing.
GEN_PKGS  := ./internal/ops/ ./tracer/ ./bench/floor/
GEN_FILES := bpf/ops.h tracer/*_bpfel.go tracer/*_bpfel.o bench/floor/*_bpfel.go bench/floor/*_bpfel.o
GEN_COPY   = gen=$$(mktemp -d /tmp/writewatch-generate.XXXXXXXXXX) && trap 'rm -rf "$$gen"' EXIT && \
	tar --exclude=./.git --exclude=./bin -cf - . | tar -xf - -C "$$gen" && \
	(cd "$$gen" && $(GO) generate $(GEN_PKGS))

generate:
	@$(GEN_COPY) && cd "$$gen" && for f in $(GEN_FILES); do cp "$$f" "$(CURDIR)/$$f"; done

# Fails when the generated files in the tree differ from a fresh regeneration.
check-generate:
	@$(GEN_COPY) && cd "$$gen" && for f in $(GEN_FILES); do \
		cmp -s "$$f" "$(CURDIR)/$$f" || { echo "$$f is stale: run make generate and commit it"; exit 1; }; \
	done && echo "generated files are fresh"

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# arm64 too: make vmtest builds for it, and some of x/sys/unix's
	@# types differ there (Stat_t.Nlink is a uint32).
	GOARCH=arm64 $(GO) vet ./...

# The Go releases TestGoTestAttribution builds test binaries with
# (integration/tests_test.go): fetched here, before the tests, so that no
# test waits on a download.
GO_TEST_TOOLCHAINS := go1.24.0 go1.25.0 go1.27.3

# Debian packages the tests run: promtool (package prometheus), the
# Pushgateway, strace (ground truth for the edge-case suite), a C
# compiler (its glibc clone3 helper), and pytest with pytest-xdist (the
# pytest attribution tests). Installed only when missing; needs root then.
test-deps:
	@cd / && for v in $(GO_TEST_TOOLCHAINS); do GOTOOLCHAIN=$$v $(GO) version >/dev/null || \
		{ echo "make test-deps: could not fetch the Go toolchain $$v from the module proxy"; exit 1; }; done
	@missing=""; \
	command -v prometheus-pushgateway >/dev/null 2>&1 || missing="$$missing prometheus-pushgateway"; \
	/usr/bin/python3 -c "import pytest" >/dev/null 2>&1 || missing="$$missing python3-pytest"; \
	/usr/bin/python3 -c "import xdist" >/dev/null 2>&1 || missing="$$missing python3-pytest-xdist"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v strace >/dev/null 2>&1 || missing="$$missing strace"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	if [ -n "$$missing" ]; then \
		echo "make test-deps: installing$$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $$missing || \
		{ apt-get -o DPkg::Lock::Timeout=600 update && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $$missing; } || \
		{ echo "make test-deps: could not install$$missing; as root: apt-get install -y$$missing"; exit 1; }; \
	fi

# The one test command (README, .ci/run). Needs root for the kernel tests.
test: lint test-deps
	@if command -v $(CLANG) >/dev/null 2>&1; then $(MAKE) --no-print-directory check-generate; \
	else echo "make test: $(CLANG) not found; skipping the check that the committed BPF bindings are fresh"; fi
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory dogfood
	$(MAKE) --no-print-directory action-test
	$(MAKE) --no-print-directory vmtest

# Our own unit tests under writewatch, with the strict .writewatch.yaml:
# any write they make outside the temp dir and the Go caches fails this.
dogfood: build
	$(BIN) -- $(GO) test -count=1 $(UNIT_PKGS)

# The GitHub Action's run step (action/run.sh), run here on tiny commands
# with the runner's files pointed at temp files; then the workflows
# docs/ci.md gives, read from the page and run step by step as GitHub's
# runner would, on a clean suite and a dirty one (TestCIRecipe). Needs root.
action-test: build
	action/test.sh $(BIN)
	WRITEWATCH_CI_RECIPE=1 $(GO) test -count=1 -run '^TestCIRecipe$$' ./action/

# The enforcement tests with the LSM tier, on Debian's 6.1 and 6.12 x86-64
# kernels and its 6.12 arm64 kernel under qemu (TCG; minutes, see
# docs/development.md). Installs qemu-system-x86, qemu-system-arm,
# busybox-static and cpio when missing (and adds dpkg's arm64 architecture,
# for the arm64 kernel and busybox), and caches the kernels in
# /var/cache/writewatch-vmtest. Fails, loudly, when it cannot run.
vmtest:
	vmtest/vmtest.sh

# make bench's micro rows and start-up inside a VM, on Debian's 6.12
# x86-64 kernel (VMTEST_KERNELS for others), in one boot: bare, under the
# empty hooks of each observation path (syscall tracepoints; fentry where
# it loads) and under writewatch. Prints the table and keeps it in
# /var/cache/writewatch-vmtest/logs/vmbench-KERNEL.md (docs/performance.md).
vmbench:
	VMTEST_MODE=bench vmtest/vmtest.sh

# Runs writewatch on the sample suite in testdata/sample, whose tests
# write a stray file into its root and a config into a fake home, and
# checks that the JSON report holds exactly those (internal/demo); exits
# non-zero with the reason otherwise. As root (make demo, sudo make demo)
# on a checkout a normal user owns, go and the suite run as that user,
# with their HOME and Go caches, so that no root-owned file is left in
# the checkout; writewatch alone runs as root. Its config,
# testdata/writewatch-demo.yaml, makes testdata/ the project (the sample
# and the fake home), so a checkout under /tmp shows the same writes.
demo:
	@set -u; cd "$(CURDIR)"; \
	uid=$$(stat -c %u .); as=""; ww_env=""; \
	if [ "$$(id -u)" = 0 ] && [ "$$uid" != 0 ]; then \
		pw=$$(getent passwd "$$uid") || { echo "make demo: the owner of $(CURDIR), uid $$uid, is not in the password database"; exit 1; }; \
		name=$$(echo "$$pw" | cut -d: -f1); gid=$$(echo "$$pw" | cut -d: -f4); home=$$(echo "$$pw" | cut -d: -f6); \
		as="setpriv --reuid=$$uid --regid=$$gid --init-groups env -u GOCACHE -u GOMODCACHE -u GOPATH -u GOENV -u XDG_CACHE_HOME -u XDG_CONFIG_HOME HOME=$$home USER=$$name LOGNAME=$$name"; \
		ww_env="SUDO_UID=$$uid SUDO_GID=$$gid SUDO_USER=$$name"; \
	fi; \
	$$as $(GO) build -o $(dir $(BIN)) ./cmd/writewatch ./internal/demo || { echo "make demo: FAILED: could not build writewatch with $(GO) (pass GO=/path/to/go when Go is neither on PATH nor in /usr/local/go/bin)"; exit 1; }; \
	rm -rf testdata/fakehome testdata/sample/debug-output.txt; \
	tmp=$$($$as mktemp -d /var/tmp/writewatch-demo.XXXXXX) || exit 1; \
	(cd testdata/sample && env $$ww_env ../../$(BIN) --config ../writewatch-demo.yaml --json $$tmp/report.json -- $(GO) test -count=1 ./...); code=$$?; \
	$$as $(dir $(BIN))demo $$tmp/report.json $$code; ok=$$?; \
	rm -rf $$tmp testdata/fakehome testdata/sample/debug-output.txt; \
	exit $$ok

# writewatch's cost next to running bare and next to strace, in one run
# (about 10 minutes; needs root). Go benchmarks of the user-space hot path
# follow.
bench: build
	@command -v strace >/dev/null || apt-get install -y strace
	$(GO) run ./bench -writewatch $(BIN)
	$(GO) test -run '^$$' -bench . -benchmem ./tracer/ ./internal/allowlist/ ./internal/live/ ./internal/witness/ ./internal/session/ ./internal/sandbox/

# Static release binaries (no cgo, -trimpath, the git revision stamped
# in: writewatch --version) in dist/, with SHA-256 sums. A platform is
# GOOS/GOARCH; each needs the BPF bindings bpf2go generated for it.
RELEASE_PLATFORMS := linux/amd64 linux/arm64
release:
	rm -rf dist && mkdir dist
	@set -e; for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=dist/writewatch-$$os-$$arch; \
		echo "$$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=true -o $$out ./cmd/writewatch; \
	done
	cd dist && sha256sum writewatch-* > SHA256SUMS && cat SHA256SUMS

clean:
	rm -rf bin dist
