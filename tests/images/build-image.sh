#!/usr/bin/env bash
# Build a systemd-capable Debian base image for molecule and the demo, from the
# Debian mirror this machine's apt already uses (no container registry needed).
#
#   tests/images/build-image.sh SUITE        SUITE = bookworm | trixie
#
# Result: podman image localhost/gpuops-base:SUITE (CMD /sbin/init).
# The build is skipped when that image already exists; set GPUOPS_IMAGE_REBUILD=1
# to force it. GPUOPS_DEBIAN_MIRROR overrides the mirror found in the apt config.
set -euo pipefail

suite="${1:-}"
case "$suite" in
  bookworm|trixie) ;;
  *) echo "usage: $0 bookworm|trixie" >&2; exit 2 ;;
esac

image="localhost/gpuops-base:${suite}"
log() { printf '[build-image %s] %s\n' "$suite" "$*"; }

# The image is labelled with a hash of this script: an image built by another version of it is rebuilt.
recipe="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)"
if [[ "${GPUOPS_IMAGE_REBUILD:-0}" != 1 ]] && podman image exists "$image"; then
  built="$(podman image inspect --format '{{ index .Config.Labels "gpuops.recipe" }}' "$image" 2>/dev/null || true)"
  if [[ "$built" == "$recipe" ]]; then
    log "image $image already exists (recipe $recipe), skipping build"
    exit 0
  fi
  log "image $image was built by another recipe (${built:-none}), rebuilding"
fi

for tool in debootstrap podman tar; do
  command -v "$tool" >/dev/null || { log "missing tool: $tool"; exit 1; }
done

# Find the Debian mirror in the machine's apt configuration: the first URI of a
# deb source that serves the plain Debian archive (not -security, not a third
# party repository). Both one-line sources.list and deb822 *.sources work.
find_mirror() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f "$f" ]] || continue
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i, $(i + 1); break } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f "$f" ]] || continue
      awk 'BEGIN { RS = ""; FS = "\n" }
           { uri = ""; suites = "";
             for (i = 1; i <= NF; i++) {
               if ($i ~ /^URIs:/)   { sub(/^URIs:[ \t]*/, "", $i); split($i, u, /[ \t]+/); uri = u[1] }
               if ($i ~ /^Suites:/) { sub(/^Suites:[ \t]*/, "", $i); split($i, s, /[ \t]+/); suites = s[1] }
             }
             if (uri != "") print uri, suites }' "$f"
    done
  } | awk '$2 !~ /-security$/ && $1 ~ /debian\/?$/ && $1 !~ /security/ { print $1; exit }'
}

mirror="${GPUOPS_DEBIAN_MIRROR:-$(find_mirror)}"
if [[ -z "$mirror" ]]; then
  log "could not find a Debian mirror in /etc/apt; set GPUOPS_DEBIAN_MIRROR"
  exit 1
fi
log "mirror: $mirror"

packages=systemd,systemd-sysv,python3,python3-apt,sudo,iproute2,procps,ca-certificates
workdir="$(mktemp -d "${TMPDIR:-/var/tmp}/gpuops-base-${suite}.XXXXXX")"
rootfs="$workdir/rootfs"
cleanup() {
  # debootstrap can leave proc/sys/dev mounts behind when it fails: unmount
  # everything below the work dir (deepest first) before deleting it, and never
  # let rm cross into another file system.
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v root="$workdir/" 'index($2, root) == 1 { print $2 }' /proc/self/mounts | sort -r)
  rm -rf --one-file-system "$workdir"
}
trap cleanup EXIT

start=$SECONDS
log "debootstrap --variant=minbase $suite into $rootfs (packages: $packages)"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" \
  > "$workdir/debootstrap.log" 2>&1 || {
    log "debootstrap failed; last lines of its log:"
    tail -n 40 "$workdir/debootstrap.log" >&2
    [[ -f "$rootfs/debootstrap/debootstrap.log" ]] && tail -n 40 "$rootfs/debootstrap/debootstrap.log" >&2
    exit 1
  }
log "debootstrap done in $((SECONDS - start))s"

# Make the tree behave as a container: no hardware units, no getty, no udev
# settle waits; keep apt small; let systemd know it is in a container.
chroot "$rootfs" /bin/sh -eu <<'CHROOT'
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log
for unit in getty.target console-getty.service systemd-udevd.service \
            systemd-udev-trigger.service systemd-udev-settle.service \
            systemd-modules-load.service sys-kernel-config.mount \
            sys-kernel-debug.mount sys-kernel-tracing.mount \
            systemd-remount-fs.service systemd-firstboot.service \
            systemd-networkd-wait-online.service; do
  ln -sf /dev/null "/etc/systemd/system/$unit"
done
ln -sf /lib/systemd/system/multi-user.target /etc/systemd/system/default.target
: > /etc/machine-id
echo 'path-exclude /usr/share/doc/*' > /etc/dpkg/dpkg.cfg.d/01-nodoc
CHROOT
printf '%s\n' "deb $mirror $suite main" > "$rootfs/etc/apt/sources.list"

log "importing into podman as $image"
tar --numeric-owner -C "$rootfs" -c . \
  | podman import \
      --change 'CMD ["/sbin/init"]' \
      --change 'ENV container=podman' \
      --change 'STOPSIGNAL SIGRTMIN+3' \
      --change "LABEL gpuops.recipe=$recipe" \
      - "$image" >/dev/null
log "built $image in $((SECONDS - start))s ($(podman image inspect --format '{{.Size}}' "$image") bytes)"
