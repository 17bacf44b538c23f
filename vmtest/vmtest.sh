#!/usr/bin/env bash
# make vmtest: run the enforcement tests (integration/enforce_test.go) on
# Debian's kernels, under qemu, with the BPF LSM active: the LSM tier,
# which this machine cannot load, is tested there.
#
# For each kernel: download Debian's package into the cache (once), boot
# its vmlinuz with an initramfs of busybox, writewatch, wwop and the
# static integration test binary, run the tests as init, and read PASS
# and FAIL lines from the serial console. Any failure, timeout or missing
# tool fails the run, loudly.
#
# Environment:
#   VMTEST_KERNELS  package name patterns to test (default: the newest 6.1 and 6.12 cloud kernels)
#   VMTEST_CACHE    where kernels are kept (default /var/cache/writewatch-vmtest, or $XDG_CACHE_HOME/writewatch-vmtest)
#   VMTEST_TIMEOUT  seconds one boot may take (default 600)
#   VMTEST_RUN      tests to run (default: the enforcement tests, two tracing
#                   ones, Go test attribution and the exact-verdict cases,
#                   which the filesystem witness catches)
#   VMTEST_TIER     the tier the tests force (default lsm; another one shows that the checks can fail)
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "vmtest: FAIL: $*" >&2
	echo "vmtest: ******** the LSM tier was NOT tested ********" >&2
	exit 1
}

timeout_s=${VMTEST_TIMEOUT:-600}
run=${VMTEST_RUN:-'^(TestEnforce|TestEveryOperationAndItsAllowedTwin$|TestStrayFilesFromTreeAreCaught$|TestGoTestBinaryFollowed$|TestVerdict)'}
if [ -n "${VMTEST_CACHE:-}" ]; then
	cache=$VMTEST_CACHE
elif [ "$(id -u)" = 0 ]; then
	cache=/var/cache/writewatch-vmtest
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/writewatch-vmtest
fi
mkdir -p "$cache"

# Tools: install what is missing (Debian), or say what is missing.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
static_busybox() {
	local applets linkage
	applets=$(/bin/busybox --list 2>/dev/null) || return 1
	linkage=$(ldd /bin/busybox 2>&1 || true)
	grep -qx poweroff <<<"$applets" && grep -q "not a dynamic" <<<"$linkage"
}
static_busybox || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
	echo "vmtest: installing ${need[*]}"
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		die "missing ${need[*]}: install them (apt-get install ${need[*]}) or run make vmtest as root on Debian"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null ||
		{ apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${need[@]}" >/dev/null; } ||
		die "could not install ${need[*]}"
fi

# Kernels: the newest cloud image of each series in Debian's archive.
newest() {
	apt-cache search --names-only "$1" 2>/dev/null | awk '{print $1}' | sort -V | tail -1
}
pick_kernels() {
	kernels=("$(newest '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$')" "$(newest '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64$')")
}
# apt-get update, at most once.
updated=
refresh_lists() {
	[ -z "$updated" ] && [ "$(id -u)" = 0 ] && apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 && updated=1
}
if [ -n "${VMTEST_KERNELS:-}" ]; then
	read -r -a kernels <<<"$VMTEST_KERNELS"
else
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
	[ -n "$k" ] || die "no Debian 6.1 or 6.12 cloud kernel package found (apt-get update? apt-cache search linux-image)"
done

fetch_kernel() { # package -> path of vmlinuz
	local pkg=$1 dir=$cache/$1
	if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
		local tmp
		tmp=$(mktemp -d "$cache/dl.XXXXXX")
		chmod 755 "$tmp"
		(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			{ rm -rf "$tmp"; die "could not download $pkg (apt-get update? network?)"; }
		mkdir -p "$dir"
		dpkg-deb -x "$tmp"/*.deb "$dir" || { rm -rf "$tmp" "$dir"; die "could not unpack $pkg"; }
		rm -rf "$tmp"
	fi
	ls "$dir"/boot/vmlinuz-* | head -1
}

# The initramfs: static binaries only.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/bin"
export CGO_ENABLED=0
go build -o "$root/writewatch" ./cmd/writewatch
go build -o "$root/wwop" ./integration/testdata/wwop
go test -c -o "$root/integration.test" ./integration
(cd testdata/gotests && go test -c -ldflags=-w -o "$root/gotests.test" .)
go test -c -o "$root/tmpproj.test" ./integration/testdata/tmpproj
cp /bin/busybox "$root/bin/busybox"
cp vmtest/init "$root/init"
chmod 755 "$root/init"
echo "${VMTEST_TIER:-lsm}" >"$root/vmtest-tier"
printf '%s' "$run" >"$root/vmtest-run"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

failed=0
for pkg in "${kernels[@]}"; do
	vmlinuz=$(fetch_kernel "$pkg")
	mkdir -p "$cache/logs"
	log=$cache/logs/$pkg.log
	# One vCPU: with two, TCG was seen to livelock a vCPU in code the
	# kernel patches while attaching tracepoints (soft lockups in
	# syscall_trace_enter on 6.1, a panic on 6.12).
	echo "vmtest: booting $pkg under qemu (TCG, timeout ${timeout_s}s)"
	start=$(date +%s)
	set +e
	timeout "$timeout_s" qemu-system-x86_64 -nographic -no-reboot -m 2G -smp 1 -cpu max \
		-kernel "$vmlinuz" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=6 lsm=lockdown,capability,landlock,yama,bpf" </dev/null >"$log" 2>&1
	rc=$?
	set -e
	secs=$(($(date +%s) - start))
	tr -d '\r' <"$log" | grep '^VMTEST \(KERNEL\|LSM\|DOCTOR --enforce\)' | sed "s/^VMTEST /vmtest: $pkg: /"
	results=$(tr -d '\r' <"$log" | grep -E '^VMTEST\s*--- (PASS|FAIL|SKIP)' | sed -E 's/^VMTEST\s*--- //' || true)
	if [ -n "$results" ]; then
		while read -r line; do echo "vmtest: $pkg: $line"; done <<<"$results"
	fi
	if ! tr -d '\r' <"$log" | grep -q '^VMTEST DONE'; then
		echo "vmtest: $pkg: FAIL: the guest did not finish (qemu exit $rc after ${secs}s); its console ($log):" >&2
		tail -40 "$log" >&2
		failed=1
	elif [ -z "$results" ] || grep -q '^FAIL' <<<"$results" || ! grep -q '^PASS' <<<"$results"; then
		echo "vmtest: $pkg: FAIL (${secs}s); its console ($log):" >&2
		tr -d '\r' <"$log" | grep -v '^VMTEST' | tail -60 >&2
		failed=1
	elif ! tr -d '\r' <"$log" | grep -q '^VMTEST DOCTOR --enforce: *lsm'; then
		echo "vmtest: $pkg: FAIL: the guest would not use the lsm tier" >&2
		failed=1
	else
		echo "vmtest: $pkg: PASS (${secs}s)"
	fi
done
[ "$failed" = 0 ] || die "see above"
echo "vmtest: PASS: the enforcement and Go test attribution tests pass with the lsm tier on ${kernels[*]}"
