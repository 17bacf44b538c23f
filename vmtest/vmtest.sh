#!/usr/bin/env bash
# make vmtest: run the enforcement tests (integration/enforce_test.go) on
# Debian's kernels, under qemu, with the BPF LSM active: the LSM tier,
# which this machine cannot load, is tested there.
#
# For each kernel: download Debian's package into the cache (once), boot
# its vmlinuz with an initramfs of busybox, writewatch, wwop and the
# static integration test binary, all built for the kernel's
# architecture, run the tests as init, and read PASS and FAIL lines from
# the serial console. Any failure, timeout or missing tool fails the run,
# loudly.
#
# Environment:
#   VMTEST_KERNELS  package names to test (default: the newest 6.1 and 6.12
#                   x86-64 cloud kernels and the newest 6.12 arm64 one); a
#                   name ending in -arm64 or -arm64-unsigned boots under
#                   qemu-system-aarch64
#   VMTEST_CACHE    where kernels are kept (default /var/cache/writewatch-vmtest, or $XDG_CACHE_HOME/writewatch-vmtest)
#   VMTEST_TIMEOUT  seconds one boot may take (default 1200: a boot takes 3 to
#                   4 minutes on an idle machine, more than 10 in a slow spell);
#                   the tests' own timeout (-test.timeout) is a minute less
#   VMTEST_RUN      tests to run on every kernel (default: on x86-64, the
#                   enforcement tests, two tracing ones, Go test attribution,
#                   the exact-verdict cases, which the filesystem witness
#                   catches, with root's mounts while contents wait, and
#                   a block device refused by the LSM tier; on
#                   arm64, where TCG is slower, the part of them that the
#                   architecture changes: run_arm64 below)
#   VMTEST_JOBS     how many guests boot at once (default: the number of
#                   CPUs; a benchmark's always one)
#   VMTEST_SKIP     tests left out on every kernel (default: those that need
#                   go, git or pytest, which the guests lack)
#   VMTEST_TIER     the tier the tests force (default lsm; another one shows that the checks can fail)
#   VMTEST_MODE     test (default), or bench (make vmbench): instead of the
#                   tests, the guest runs `make bench`'s driver in its VM
#                   mode (bench -vm: the micro rows and start-up, bare, under
#                   the empty hooks of each observation path and under
#                   writewatch), and the table it prints is kept in
#                   $VMTEST_CACHE/logs/vmbench-<kernel>.md; by default on
#                   the 6.12 x86-64 kernel only, 1800 s per boot
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${VMTEST_MODE:-test}
case $mode in
test | bench) ;;
*) echo "vmtest: FAIL: VMTEST_MODE=$mode: want test or bench" >&2 && exit 1 ;;
esac
die() {
	echo "vmtest: FAIL: $*" >&2
	[ "$mode" = bench ] || echo "vmtest: ******** the LSM tier was NOT tested ********" >&2
	exit 1
}

timeout_s=${VMTEST_TIMEOUT:-1200}
[ "$mode" = bench ] && timeout_s=${VMTEST_TIMEOUT:-1800}
run_amd64=${VMTEST_RUN:-'^(TestEnforce|TestEveryOperationAndItsAllowedTwin$|TestStrayFilesFromTreeAreCaught$|TestGoTestBinaryFollowed$|TestVerdict|TestContentsRoot|TestSandbox(HoldsWhatRecordsMiss|OnAnOverlayRoot)$|TestGateBlockDevice$)'}
# On arm64: the LSM tier refusing each kind of write and the metadata
# guard's seccomp filter (its own syscall numbers and audit arch), every
# operation through arm64's *at syscalls, the process tree, Go test
# attribution through uprobes (the g register is R28 there), the ring
# buffer under load, io_uring, and root's calls that ask for file
# contents (their own syscall numbers).
run_arm64=${VMTEST_RUN:-'^(TestEnforce(StopsWritesBeforeTheyLand|BlockOnly|RingBufferFlood|MetadataRefused)$|TestEveryOperationAndItsAllowedTwin$|TestStrayFilesFromTreeAreCaught$|TestGoTestBinaryFollowed$|TestVerdict(Root)?WritesNoCallNames$|TestContentsRootBindMount$|TestSandboxHoldsWhatRecordsMiss$)'}
# Left out of every guest: tests that need what an initramfs of busybox
# has not (go, git, python3 and pytest).
skip=${VMTEST_SKIP:-'^(TestEnforceKill(GoTest|Pytest)|TestVerdictHardLinksOfUnchangedFiles)$'}
if [ -n "${VMTEST_CACHE:-}" ]; then
	cache=$VMTEST_CACHE
elif [ "$(id -u)" = 0 ]; then
	cache=/var/cache/writewatch-vmtest
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/writewatch-vmtest
fi
mkdir -p "$cache"

# A kernel package's architecture (Debian's name for it), from its name.
arch_of() {
	case $1 in
	*-arm64 | *-arm64-unsigned) echo arm64 ;;
	*) echo amd64 ;;
	esac
}
native=$(dpkg --print-architecture 2>/dev/null || echo amd64)

# Kernels: the newest cloud image of each series in Debian's archive.
newest() {
	apt-cache search --names-only "$1" 2>/dev/null | awk '{print $1}' | sort -V | tail -1
}
pick_kernels() {
	if [ "$mode" = bench ]; then
		kernels=("$(newest '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64$')")
		return
	fi
	kernels=("$(newest '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$')"
		"$(newest '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64$')"
		"$(newest '^linux-image-6\.12\.[0-9]+\+deb12-cloud-arm64-unsigned$')")
}
# apt-get update, at most once.
updated=
refresh_lists() {
	[ -z "$updated" ] && [ "$(id -u)" = 0 ] && apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 && updated=1
}
# apt downloads another architecture's packages (the arm64 kernel and
# busybox) only once dpkg knows that architecture: add it, and read its
# package lists, when it is missing.
add_arch() {
	[ "$1" = "$native" ] && return 0
	dpkg --print-foreign-architectures | grep -qx "$1" && return 0
	[ "$(id -u)" = 0 ] || die "apt cannot download $1 packages: as root, dpkg --add-architecture $1 && apt-get update"
	echo "vmtest: dpkg --add-architecture $1"
	dpkg --add-architecture "$1" || die "dpkg --add-architecture $1 failed"
	updated=
	refresh_lists || die "apt-get update failed after dpkg --add-architecture $1"
}
if [ -n "${VMTEST_KERNELS:-}" ]; then
	read -r -a kernels <<<"$VMTEST_KERNELS"
	for k in "${kernels[@]}"; do add_arch "$(arch_of "$k")"; done
else
	add_arch amd64
	[ "$mode" = bench ] || add_arch arm64
	pick_kernels
	# A kernel to download: make sure it is the archive's newest first
	# (the lists may be missing, or name a package since replaced).
	for k in "${kernels[@]}"; do
		if [ -z "$k" ] || ! ls "$cache/$k"/boot/vmlinuz-* >/dev/null 2>&1; then
			refresh_lists && pick_kernels
			break
		fi
	done
fi
for k in "${kernels[@]}"; do
	[ -n "$k" ] || die "no Debian 6.1 or 6.12 cloud kernel package found, for amd64 or arm64 (apt-get update? apt-cache search linux-image)"
done
archs=$(for k in "${kernels[@]}"; do arch_of "$k"; done | sort -u)

# Tools: install what is missing (Debian), or say what is missing.
need=()
for a in $archs; do
	case $a in
	arm64) command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm) ;;
	*) command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86) ;;
	esac
done
static_busybox() {
	local applets linkage
	applets=$(/bin/busybox --list 2>/dev/null) || return 1
	linkage=$(ldd /bin/busybox 2>&1 || true)
	grep -qx poweroff <<<"$applets" && grep -q "not a dynamic" <<<"$linkage"
}
# The native architecture's busybox is the system's; another one's is
# downloaded into the cache (busybox_for).
if grep -qx "$native" <<<"$archs"; then
	static_busybox || need+=(busybox-static)
fi
command -v cpio >/dev/null || need+=(cpio)
# The kernel modules the guest loads: modinfo reads their dependencies,
# xz decompresses them (Debian's 6.12 packages ship them as .ko.xz,
# which busybox's insmod cannot load).
command -v modinfo >/dev/null || need+=(kmod)
command -v xz >/dev/null || need+=(xz-utils)
if [ ${#need[@]} -gt 0 ]; then
	echo "vmtest: installing ${need[*]}"
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		die "missing ${need[*]}: install them (apt-get install ${need[*]}) or run make vmtest as root on Debian"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null ||
		{ refresh_lists && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null; } ||
		die "could not install ${need[*]}"
fi

# Download a package of an architecture into the cache and unpack it
# there, once; $1 is the package, $2 its architecture, $3 the directory.
fetch_deb() {
	local pkg=$1 arch=$2 dir=$3 tmp
	tmp=$(mktemp -d "$cache/dl.XXXXXX")
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get download -q "$pkg:$arch" >/dev/null 2>&1) ||
		{ refresh_lists && (cd "$tmp" && apt-get download -q "$pkg:$arch" >/dev/null 2>&1); } ||
		{ rm -rf "$tmp"; die "could not download $pkg:$arch (apt-get update? network?)"; }
	mkdir -p "$dir"
	dpkg-deb -x "$tmp"/*.deb "$dir" || { rm -rf "$tmp" "$dir"; die "could not unpack $pkg:$arch"; }
	rm -rf "$tmp"
}
fetch_kernel() { # package -> path of vmlinuz
	local pkg=$1 dir=$cache/$1
	ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1 || fetch_deb "$pkg" "$(arch_of "$pkg")" "$dir"
	ls "$dir"/boot/vmlinuz-* | head -1
}
busybox_for() { # architecture -> a static busybox built for it
	local dir=$cache/busybox-static-$1
	if [ "$1" = "$native" ]; then
		echo /bin/busybox
		return
	fi
	[ -x "$dir/bin/busybox" ] || fetch_deb busybox-static "$1" "$dir"
	[ -x "$dir/bin/busybox" ] || die "busybox-static:$1 has no bin/busybox"
	echo "$dir/bin/busybox"
}

# Kernel modules the guest loads, with their dependencies, before the
# tests: overlayfs, for --sandbox (Debian builds it as a module,
# CONFIG_OVERLAY_FS=m).
guest_modules=(overlay)
# Copy module $2 of the kernel unpacked in $1, after the modules it
# depends on, decompressed, into $3/lib/modules/NAME.ko, and add its
# name to $3/lib/modules/order, the order the guest loads them in.
add_module() {
	local kdir=$1 name=$2 dest=$3 f dep
	grep -qx "$name" "$dest/lib/modules/order" 2>/dev/null && return 0
	# Module names say _ where file names may say -.
	f=$(find "$kdir"/lib/modules -name "$(sed 's/[-_]/[-_]/g' <<<"$name").ko*" | head -1)
	[ -n "$f" ] || die "$(basename "$kdir") has no module $name (lib/modules/*/kernel/.../$name.ko*)"
	for dep in $(modinfo -F depends "$f" | tr , ' '); do
		add_module "$kdir" "$dep" "$dest"
	done
	mkdir -p "$dest/lib/modules"
	case $f in
	*.ko) cat "$f" ;;
	*.ko.xz) xz -dc "$f" ;;
	*.ko.zst) zstd -dc "$f" ;;
	*.ko.gz) gzip -dc "$f" ;;
	*) die "$f: a module compressed in a way this script does not know" ;;
	esac >"$dest/lib/modules/$name.ko" || die "could not decompress $f"
	echo "$name" >>"$dest/lib/modules/order"
}
# The initramfs one kernel boots: its architecture's, with an archive of
# that kernel's modules appended (the kernel unpacks concatenated
# archives one after the other).
initrd_for() { # package -> path of its initramfs
	local pkg=$1 dir=$work/kernels/$1 m
	rm -rf "$dir" && mkdir -p "$dir/root"
	for m in "${guest_modules[@]}"; do add_module "$cache/$pkg" "$m" "$dir/root"; done
	(cd "$dir/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/modules.gz"
	cat "$work/$(arch_of "$pkg")/initramfs.gz" "$dir/modules.gz" >"$dir/initramfs.gz"
	echo "$dir/initramfs.gz"
}

# An initramfs per architecture: static binaries only, cross-compiled
# (GOARCH) for a kernel of another architecture.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0
for arch in $archs; do
	bb=$(busybox_for "$arch")
	root=$work/$arch/root
	mkdir -p "$root/bin"
	GOARCH=$arch go build -o "$root/writewatch" ./cmd/writewatch
	if [ "$mode" = bench ]; then
		for p in bench bench/micro bench/floor; do
			GOARCH=$arch go build -o "$root/$(basename $p)" ./$p
		done
	else
		GOARCH=$arch go build -o "$root/wwop" ./integration/testdata/wwop
		GOARCH=$arch go test -c -o "$root/integration.test" ./integration
		(cd testdata/gotests && GOARCH=$arch go test -c -ldflags=-w -o "$root/gotests.test" .)
		GOARCH=$arch go test -c -o "$root/tmpproj.test" ./integration/testdata/tmpproj
	fi
	echo "$mode" >"$root/vmtest-mode"
	cp "$bb" "$root/bin/busybox"
	cp vmtest/init "$root/init"
	chmod 755 "$root/init"
	echo "${VMTEST_TIER:-lsm}" >"$root/vmtest-tier"
	echo "$((timeout_s > 120 ? timeout_s - 60 : timeout_s / 2))s" >"$root/vmtest-test-timeout"
	run=run_$arch
	printf '%s' "${!run}" >"$root/vmtest-run"
	printf '%s' "$skip" >"$root/vmtest-skip"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/$arch/initramfs.gz"
done

# Boot kernel package $1 (its vmlinuz $2, initramfs $3), run the tests
# (or the benchmark) there and say how it went; fails when they did.
boot() {
	local pkg=$1 vmlinuz=$2 initrd=$3 arch log lsm qemu console machine start rc secs table results
	arch=$(arch_of "$pkg")
	log=$cache/logs/$pkg.log
	lsm=lsm=lockdown,capability,landlock,yama,bpf
	case $arch in
	# One vCPU: with two, TCG was seen to livelock a vCPU in code the
	# kernel patches while attaching tracepoints (soft lockups in
	# syscall_trace_enter on 6.1, a panic on 6.12).
	amd64) qemu=(qemu-system-x86_64 -cpu max) console=ttyS0 machine=x86_64 ;;
	# pauth-impdef: pointer authentication with QEMU's own cheap
	# algorithm; the architected one, which plain max emulates, makes
	# the boot take three times as long.
	arm64) qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on) console=ttyAMA0 machine=aarch64 ;;
	*) echo "vmtest: $pkg: no qemu for $arch" >&2; return 1 ;;
	esac
	start=$(date +%s)
	set +e
	# 2 GiB: the test files live in the guest's memory (tmpfs), and
	# TestEnforceHugeAllowlist's 100,000 of them with writewatch's maps
	# for them do not fit in 1 GiB.
	timeout "$timeout_s" "${qemu[@]}" -nographic -no-reboot -m 2G -smp 1 \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=$console panic=-1 loglevel=6 $lsm" </dev/null >"$log" 2>&1
	rc=$?
	set -e
	secs=$(($(date +%s) - start))
	# The console without carriage returns, read from a file: grep -q in
	# a pipeline can stop reading early, and with pipefail the writer's
	# SIGPIPE fails a check that matched. (A run whose arm64 console held
	# the ARCH line once failed its check; the line is matched from its
	# start only, in case the kernel's messages run into it.)
	console=$log.txt
	tr -d '\r' <"$log" >"$console"
	grep -a '^VMTEST \(KERNEL\|ARCH\|LSM\|MODULE\|DOCTOR --enforce\|DOCTOR sandbox\)' "$console" | sed "s/^VMTEST /vmtest: $pkg: /"
	if [ "$mode" = bench ]; then
		table=$cache/logs/vmbench-$pkg.md
		sed -n 's/^VMTEST BENCH //p' "$console" >"$table"
		if grep -q '^Took ' "$table" && grep -aq "^VMTEST ARCH $machine" "$console"; then
			sed "s/^/vmtest: $pkg: /" "$table"
			echo "vmtest: $pkg: PASS (${secs}s; the table: $table)"
		else
			echo "vmtest: $pkg: FAIL: the benchmark did not finish (qemu exit $rc after ${secs}s); its console ($log):" >&2
			grep -av '^VMTEST BENCH' "$console" | tail -40 >&2
			return 1
		fi
		return 0
	fi
	results=$(grep -aE '^VMTEST\s*--- (PASS|FAIL|SKIP)' "$console" | sed -E 's/^VMTEST\s*--- //' || true)
	if [ -n "$results" ]; then
		while read -r line; do echo "vmtest: $pkg: $line"; done <<<"$results"
	fi
	if ! grep -aq '^VMTEST DONE' "$console"; then
		echo "vmtest: $pkg: FAIL: the guest did not finish (qemu exit $rc after ${secs}s); its console ($log):" >&2
		tail -40 "$log" >&2
		return 1
	elif [ -z "$results" ] || grep -q '^FAIL' <<<"$results" || ! grep -q '^PASS' <<<"$results"; then
		echo "vmtest: $pkg: FAIL (${secs}s); its console ($log):" >&2
		grep -av '^VMTEST' "$console" | tail -60 >&2
		return 1
	elif ! grep -aq '^VMTEST EXIT 0$' "$console"; then
		# A panic (the tests' timeout) prints no --- FAIL line.
		echo "vmtest: $pkg: FAIL: the tests' binary $(grep -a '^VMTEST EXIT' "$console" | sed 's/^VMTEST EXIT/exited with/') (${secs}s); its console ($log):" >&2
		{ grep -a -A6 '^panic: ' "$console" || grep -av '^VMTEST' "$console" | tail -60; } >&2
		return 1
	elif grep -aq '^VMTEST MODULE .*FAILED' "$console"; then
		echo "vmtest: $pkg: FAIL: the guest could not load a kernel module" >&2
		return 1
	elif ! grep -aq '^VMTEST DOCTOR --enforce: *lsm' "$console"; then
		echo "vmtest: $pkg: FAIL: the guest would not use the lsm tier" >&2
		return 1
	elif ! grep -aq "^VMTEST ARCH $machine" "$console"; then
		echo "vmtest: $pkg: FAIL: the guest is not $arch" >&2
		return 1
	else
		echo "vmtest: $pkg: PASS (${secs}s)"
	fi
}

# The guests boot side by side, as many at once as there are CPUs (each
# has one vCPU; VMTEST_JOBS sets another number), each boot's lines
# printed when it is done; a benchmark's one at a time, so that no guest
# slows another's. The kernels are fetched first, one at a time.
mkdir -p "$cache/logs"
jobs_max=${VMTEST_JOBS:-$(nproc)}
[ "$mode" = bench ] && jobs_max=1
declare -a vmlinuz_of initrd_of
for i in "${!kernels[@]}"; do
	vmlinuz_of[i]=$(fetch_kernel "${kernels[i]}")
	initrd_of[i]=$(initrd_for "${kernels[i]}")
done
for i in "${!kernels[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n || true
	done
	echo "vmtest: booting ${kernels[i]} (TCG, timeout ${timeout_s}s)"
	{ boot "${kernels[i]}" "${vmlinuz_of[i]}" "${initrd_of[i]}" >"$work/out.$i" 2>&1; echo $? >"$work/rc.$i"; } &
done
wait
failed=0
for i in "${!kernels[@]}"; do
	cat "$work/out.$i"
	[ "$(cat "$work/rc.$i" 2>/dev/null)" = 0 ] || failed=1
done
[ "$failed" = 0 ] || die "see above"
if [ "$mode" = bench ]; then
	echo "vmtest: PASS: the benchmark ran on ${kernels[*]}"
else
	echo "vmtest: PASS: the enforcement and Go test attribution tests pass with the lsm tier on ${kernels[*]}"
fi
