# -*- coding: utf-8 -*-
"""Build a tiny local stand-in of NVIDIA's CUDA RHEL 9 x86_64 repository, or of its RHEL 10 one.

It contains no NVIDIA content: every package only ships one small text file.
What it imitates is the *metadata*:

  * driver packages at epoch 3, release 1.el9 (nvidia-driver-3:580.126.20-1.el9.x86_64),
    kmod-nvidia-open-dkms / nvidia-kmod-common as noarch, kmod-nvidia-latest-dkms as x86_64;
  * nvidia-fabricmanager without epoch and without dist tag (nvidia-fabricmanager-580.126.20-1.x86_64);
  * exact-version Requires between the packages (like NVIDIA's specs), nvidia-driver's on nvidia-driver-libs with
    %{?_isa} as NVIDIA's nvidia-driver.spec writes it (the metadata: nvidia-driver-libs(x86-64) = 3:V);
  * NCCL as NVIDIA's pkg/redhat/nccl.spec.in builds it (NVIDIA/nccl@1672c857), outside the module: libnccl,
    libnccl-devel and libnccl-static at <nccl>-<revision>+cuda<major>.<minor> (libnccl-2.23.4-1+cuda12.6.x86_64),
    no epoch, no dist tag, libnccl-devel requiring "libnccl >= <nccl>" (not the exact version), the files at
    NVIDIA's paths (placeholders); its "Requires(pre,preun): /sbin/ldconfig" and ldconfig scriptlets are left out
    (the test root has no ldconfig);
  * DCGM 4 as NVIDIA's cmake/packaging.cmake builds its RPMs (NVIDIA/DCGM@72fa3fe, 4.6.0), outside the module:
    datacenter-gpu-manager-4-core, -cuda12 and -cuda13 at epoch 1, release 1, no dist tag
    (datacenter-gpu-manager-4-core-4.4.1-1.x86_64, NVIDIA's docker/Dockerfile.ubi9 installs
    "datacenter-gpu-manager-4-cuda13-${DCGM_VERSION}-1"), each cudaNN requiring "datacenter-gpu-manager-4-core =
    1:<version>-1" and providing "datacenter-gpu-manager-4 = 1:<version>-1" (packaging.cmake:336-342), the core
    conflicting with DCGM 3's datacenter-gpu-manager, unversioned and without Obsoletes (:290); core's other
    Requires (glibc, lshw, shadow-utils, nologin) and cudaNN's Recommends (libnuma) are left out (the test root has
    none of them). Guessed: the -proprietary packages' relations (not in the open build: each requiring the core,
    and -proprietary-cudaNN the cudaNN package, at the same version), and dcgm-exporter's
    (datacenter-gpu-manager-exporter <exporter>-1, no epoch, as the file names
    datacenter-gpu-manager-exporter-4.6.0-1.x86_64.rpm of public scripts show; its Requires is unpublished: here an
    unversioned datacenter-gpu-manager-4-core). DCGM 3 is datacenter-gpu-manager 1:3.3.9-1 (v3.3.9
    cmake/packaging.cmake: epoch 1, release 1);
  * a modules.yaml in the layout of NVIDIA/cuda-repo-management genmodules.py
    (document: modulemd, version: 2, name: nvidia-driver, summary "Nvidia driver for <stream> branch",
    profiles default/src/fm/ks, artifacts "<name>-<epoch>:<ver>-<rel>.<arch>", every version of the
    branch listed in its streams) and a modulemd-defaults document (default stream open-dkms,
    "<stream>: [default]" for every stream), added with modifyrepo_c.

Needs: rpmbuild (Debian package "rpm"), createrepo_c and modifyrepo_c (Debian package "createrepo-c").
Output is deterministic (same bytes on every run with the same options).

RHEL 10 (``--rhel 10``): the same packages at release 1.el10 and no modules.yaml. NVIDIA's rhel10 repository
has no module streams: its Driver Installation Guide ("Kernel Modules", table "Open GPU kernel module
installation") installs the newest with "dnf install nvidia-open" and holds a branch with "dnf versionlock
\\*nvidia\\*580\\*" alone. Guessed for RHEL 10: that its package names and Requires are those of rhel9.

Usage: python3 tests/repo/build_rhel_repo.py --out DIR [--rhel 9|10] [--kmod-artifacts all|latest]
       [--fm-non-modular]

What it cannot prove: NVIDIA's real modules.yaml, which is not public; the layout is the public generator's
(NVIDIA/cuda-repo-management@2944b7a4 genmodules.py), with every kmod and fabric manager version of a branch
listed in its streams, as the real repository's behaviour suggests (a fresh host cannot install
kmod-nvidia-latest-dkms while open-dkms is the default: ComputeCanada/puppet-magic_castle#374). No precompiled
streams, no scriptlets, no signatures (the repository is read with gpgcheck off).
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SOURCE_DATE_EPOCH = 1767225600  # 2026-01-01 00:00:00 UTC
MODULE_VERSION = "20260101000000"  # genmodules.py uses now().strftime("%Y%m%d%H%M%S")
EPOCH = 3
DIST = ".el9"
DISTRO = "el9"
ARCH = "x86_64"
VERSIONS = ["580.126.20", "580.159.04", "590.48.01"]
DEFAULT_STREAM = "open-dkms"

# Packages built from the "nvidia-driver" spec (same epoch/version/release).
# name -> (arch, list of Requires, list of Provides, list of Conflicts)
# %{evr} = 3:V-1.el9, %{ev} = 3:V   (NVIDIA's specs use both forms, and name the architecture with %{?_isa}:
# NVIDIA/yum-packaging-nvidia-driver nvidia-driver.spec "Requires: nvidia-driver-libs%{?_isa} =
# %{?epoch:%{epoch}:}%{version}", which the metadata lists as "nvidia-driver-libs(x86-64) = 3:V")
DRIVER_PKGS = {
    "nvidia-driver": (ARCH, ["nvidia-driver-libs%{?_isa} = %{ev}", "nvidia-kmod-common = %{ev}",
                             "libnvidia-ml = %{evr}"], [], []),
    "nvidia-driver-libs": (ARCH, ["libnvidia-ml%{?_isa} = %{evr}", "nvidia-kmod-common = %{ev}"], [], []),
    "nvidia-driver-cuda": (ARCH, ["nvidia-driver = %{evr}", "nvidia-persistenced = %{evr}",
                                  "libnvidia-ml = %{evr}"], [], []),
    "libnvidia-ml": (ARCH, ["nvidia-kmod-common = %{ev}"], [], []),
    "nvidia-persistenced": (ARCH, ["libnvidia-ml = %{evr}"], [], []),
    "nvidia-kmod-common": ("noarch", ["nvidia-kmod = %{ev}"], [], []),
    "kmod-nvidia-open-dkms": ("noarch", ["nvidia-kmod-common = %{ev}"], ["nvidia-kmod = %{ev}"],
                              ["kmod-nvidia-latest-dkms"]),
    "kmod-nvidia-latest-dkms": (ARCH, ["nvidia-kmod-common = %{ev}"], ["nvidia-kmod = %{ev}"],
                                ["kmod-nvidia-open-dkms"]),
}
# The part of genmodules.py BRANCH_PKGS (+ libnvidia-ml, split out since 560) that exists here.
BRANCH_PKGS = ["nvidia-driver", "nvidia-driver-libs", "nvidia-driver-cuda", "libnvidia-ml", "nvidia-persistenced",
               "nvidia-kmod-common"]
FM_NAME = "nvidia-fabricmanager"  # name from 580 on; release "1", no epoch, no dist tag
# NCCL releases in NVIDIA's rhel9 repository: <nccl>-<pkg revision>+cuda<major>.<minor> (the same releases as
# build_cuda_repo.py's Debian packages)
NCCL = ["2.23.4-1+cuda12.6", "2.26.2-1+cuda12.8"]

# DCGM 4 releases in NVIDIA's rhel9 repository: (version, the exporter release paired with it); and DCGM 3's last
DCGM = [("4.4.1", "4.6.0"), ("4.6.0", "4.8.3")]
DCGM3 = "3.3.9"
DESCRIPTION = [
    "This package provides the most recent NVIDIA display driver which allows for",
    "hardware accelerated rendering with recent NVIDIA chipsets.",
    "",
    "For the full product support list, please consult the release notes for",
    "driver version {version}.",
]


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def sub_header(name, arch, requires, provides, conflicts, main):
    lines = []
    if not main:
        lines.append("%package -n " + name)
        lines.append("Summary: Stand-in for " + name)
    if arch == "noarch":
        lines.append("BuildArch: noarch")
    lines += ["Requires: " + r for r in requires]
    lines += ["Provides: " + p for p in provides]
    lines += ["Conflicts: " + c for c in conflicts]
    lines.append("")
    lines.append("%description" + ("" if main else " -n " + name))
    lines.append("Test stand-in, no NVIDIA content.")
    lines.append("")
    return lines


def driver_spec(version):
    out = [
        "%global ev %{epoch}:%{version}",
        "%global evr %{epoch}:%{version}-%{release}",
        "Name: nvidia-driver",
        "Epoch: %d" % EPOCH,
        "Version: " + version,
        "Release: 1%{?dist}",
        "Summary: Stand-in for nvidia-driver",
        "License: MIT",
        "URL: https://example.invalid/nvidia-standin",
        "AutoReqProv: no",
    ]
    arch, req, prov, conf = DRIVER_PKGS["nvidia-driver"]
    out += sub_header("nvidia-driver", arch, req, prov, conf, True)
    for name, (arch, req, prov, conf) in DRIVER_PKGS.items():
        if name != "nvidia-driver":
            out += sub_header(name, arch, req, prov, conf, False)
    out += ["%prep", "%build", "%install", "mkdir -p %{buildroot}/usr/share/nvidia-standin"]
    for name in DRIVER_PKGS:
        out.append("echo '%s %%{evr}' > %%{buildroot}/usr/share/nvidia-standin/%s" % (name, name))
    out.append("")
    for name in DRIVER_PKGS:
        out.append("%files" + ("" if name == "nvidia-driver" else " -n " + name))
        out.append("/usr/share/nvidia-standin/" + name)
        out.append("")
    return "\n".join(out) + "\n"


def fm_spec(version):
    return "\n".join([
        "Name: " + FM_NAME,
        "Version: " + version,
        "Release: 1",
        "Summary: Stand-in for NVIDIA Fabric Manager",
        "License: MIT",
        "AutoReqProv: no",
        "",
        "%description",
        "Test stand-in, no NVIDIA content.",
        "",
        "%prep", "%build", "%install",
        "mkdir -p %{buildroot}/usr/share/nvidia-standin",
        "echo '%{name} %{version}-%{release}' > %{buildroot}/usr/share/nvidia-standin/%{name}",
        "",
        "%files",
        "/usr/share/nvidia-standin/%{name}",
        "",
    ])


def nccl_spec(release):
    """NVIDIA's nccl.spec.in for ``release`` (2.23.4-1+cuda12.6): its names, version, release and relations."""
    version, revision = release.split("-", 1)
    major = version.split(".")[0]
    return "\n".join([
        "Name: libnccl",
        "Version: " + version,
        "Release: " + revision,
        "Summary: Stand-in for NVIDIA Collective Communication Library (NCCL) Runtime",
        "License: BSD",
        "AutoReqProv: no",
        "",
        "%description",
        "Test stand-in, no NVIDIA content.",
        "",
        "%package devel",
        "Summary: Stand-in for NCCL development files",
        "Requires: libnccl >= " + version,
        "%description devel",
        "Test stand-in, no NVIDIA content.",
        "",
        "%package static",
        "Summary: Stand-in for the NCCL static library",
        "%description static",
        "Test stand-in, no NVIDIA content.",
        "",
        "%prep", "%build", "%install",
        "mkdir -p %{buildroot}/usr/lib64 %{buildroot}/usr/include %{buildroot}/usr/bin",
        "echo 'libnccl %{version}-%{release} stand-in' > %{buildroot}/usr/lib64/libnccl.so." + version,
        "ln -s libnccl.so.%s %%{buildroot}/usr/lib64/libnccl.so.%s" % (version, major),
        "ln -s libnccl.so.%s %%{buildroot}/usr/lib64/libnccl.so" % major,
        "echo '/* nccl.h stand-in */' > %{buildroot}/usr/include/nccl.h",
        "printf '#!/bin/sh\\necho ncclras stand-in >&2\\nexit 1\\n' > %{buildroot}/usr/bin/ncclras",
        "echo 'static stand-in' > %{buildroot}/usr/lib64/libnccl_static.a",
        "",
        "%files",
        "/usr/lib64/libnccl.so." + major,
        "/usr/lib64/libnccl.so." + version,
        "",
        "%files devel",
        "%attr(0755, root, root) /usr/bin/ncclras",
        "/usr/include/nccl.h",
        "/usr/lib64/libnccl.so",
        "",
        "%files static",
        "/usr/lib64/libnccl_static.a",
        "",
    ])


def _sub(name, summary, requires=(), provides=(), conflicts=()):
    """A %package section of a spec whose main package has no files (its subpackages are what is built)."""
    lines = ["%package -n " + name, "Summary: Stand-in for " + summary]
    lines += ["Requires: " + r for r in requires] + ["Provides: " + p for p in provides]
    lines += ["Conflicts: " + c for c in conflicts]
    return lines + ["%description -n " + name, "Test stand-in, no NVIDIA content.", ""]


def _files(name, paths):
    return ["%files -n " + name] + list(paths) + [""]


def dcgm_spec(version):
    """DCGM ``version`` (4.4.1) as packaging.cmake names and relates its RPMs (see the module docstring)."""
    full = "1:%s-1" % version
    core = "datacenter-gpu-manager-4-core"
    subs, files, install = [], [], []
    for name, requires, provides, conflicts, path in (
            (core, (), (), ("datacenter-gpu-manager",), "/usr/bin/nv-hostengine"),
            ("datacenter-gpu-manager-4-proprietary", (core + " = " + full,), (), (),
             "/usr/lib64/libdcgmmoduleprofiling.so." + version)):
        subs += _sub(name, name, requires, provides, conflicts)
        files += _files(name, [path])
        install.append(path)
    for cuda in (12, 13):
        name = "datacenter-gpu-manager-4-cuda%d" % cuda
        prop = "datacenter-gpu-manager-4-proprietary-cuda%d" % cuda
        plugins = "/usr/libexec/datacenter-gpu-manager-4/plugins/cuda%d/" % cuda
        for sub, requires, provides, path in (
                (name, (core + " = " + full,), ("datacenter-gpu-manager-4 = " + full,), plugins + "libpluginCommon.so"),
                (prop, ("datacenter-gpu-manager-4-proprietary = " + full, name + " = " + full), (),
                 plugins + "libprofiling.so")):
            subs += _sub(sub, sub, requires, provides)
            files += _files(sub, [path])
            install.append(path)
    return "\n".join(
        ["Name: datacenter-gpu-manager-4", "Epoch: 1", "Version: " + version, "Release: 1",
         "Summary: Stand-in for NVIDIA DCGM 4", "License: Apache-2.0", "AutoReqProv: no", "",
         "%description", "Test stand-in, no NVIDIA content.", ""] + subs
        + ["%prep", "%build", "%install"]
        + ["mkdir -p %%{buildroot}%s && echo '%s stand-in' > %%{buildroot}%s" % (os.path.dirname(p), full, p)
           for p in install] + [""] + files)


def dcgm_exporter_spec(exporter):
    """datacenter-gpu-manager-exporter ``exporter``-1 (see the module docstring for what is guessed)."""
    return "\n".join([
        "Name: datacenter-gpu-manager-exporter", "Version: " + exporter, "Release: 1",
        "Summary: Stand-in for NVIDIA DCGM-Exporter", "License: Apache-2.0", "AutoReqProv: no",
        "Requires: datacenter-gpu-manager-4-core", "", "%description", "Test stand-in, no NVIDIA content.", "",
        "%prep", "%build", "%install", "mkdir -p %{buildroot}/usr/bin",
        "echo 'dcgm-exporter %{version} stand-in' > %{buildroot}/usr/bin/dcgm-exporter", "",
        "%files", "/usr/bin/dcgm-exporter", ""])


def dcgm3_spec(version):
    """datacenter-gpu-manager 1:``version``-1, DCGM 3's single package (the host engine at the same path)."""
    return "\n".join([
        "Name: datacenter-gpu-manager", "Epoch: 1", "Version: " + version, "Release: 1",
        "Summary: Stand-in for NVIDIA DCGM 3", "License: Apache-2.0", "AutoReqProv: no", "",
        "%description", "Test stand-in, no NVIDIA content.", "",
        "%prep", "%build", "%install", "mkdir -p %{buildroot}/usr/bin",
        "echo 'DCGM 3 %{version} stand-in' > %{buildroot}/usr/bin/nv-hostengine", "",
        "%files", "/usr/bin/nv-hostengine", ""])


def rpmbuild(spec_text, specname, workdir, outdir, dist=DIST):
    top = os.path.join(workdir, specname)
    os.makedirs(top)
    spec = os.path.join(top, specname + ".spec")
    with open(spec, "w") as f:
        f.write(spec_text)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH), HOME=top, LC_ALL="C", TZ="UTC")
    defs = {
        "_topdir": top,
        "_rpmdir": outdir,
        "_build_name_fmt": "%%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm",
        "dist": dist,
        "_buildhost": "standin.example.invalid",
        "use_source_date_epoch_as_buildtime": "1",
        "clamp_mtime_to_source_date_epoch": "1",
        "source_date_epoch_from_changelog": "0",
        "_binary_payload": "w9.gzdio",
        "__os_install_post": "%{nil}",
        "debug_package": "%{nil}",
        "_build_id_links": "none",
        "_dbpath": os.path.join(top, "rpmdb"),
    }
    cmd = ["rpmbuild", "-bb", "--quiet"]
    for k, v in defs.items():
        cmd += ["--define", "%s %s" % (k, v)]
    cmd.append(spec)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    if r.returncode != 0:
        raise RuntimeError("rpmbuild failed for %s:\n%s" % (specname, r.stdout.decode(errors="replace")))


def nevra(name, version, arch, epoch=EPOCH, release="1" + DIST):
    return "%s-%d:%s-%s.%s" % (name, epoch, version, release, arch)


def context(stream):
    # genmodules.py get_stream_hash(name, stream, version, distro)
    return hashlib.md5(("nvidia-driver" + stream + MODULE_VERSION + DISTRO).encode()).hexdigest()[:10]


def modules_yaml(kmod_artifacts, fm_modular):
    majors = sorted({v.split(".", 1)[0] for v in VERSIONS}, key=int)
    latest_major = majors[-1]
    streams = []  # (stream name, major, kind)
    for m in majors:
        streams.append((m + "-dkms", m, "dkms"))
        streams.append((m + "-open", m, "open"))
    streams.append(("latest-dkms", latest_major, "dkms"))
    streams.append(("open-dkms", latest_major, "open"))
    # genmodules.py order: latest, latest-dkms, open-dkms, then branches newest first
    order = {"latest-dkms": 1, "open-dkms": 2}
    streams.sort(key=lambda s: (order.get(s[0], 9), -int(s[1]), s[0]))

    L = []
    for sname, major, kind in streams:
        vers = sorted([v for v in VERSIONS if v.split(".", 1)[0] == major], key=vkey, reverse=True)
        branch_version = vers[0]
        kmod = "kmod-nvidia-open-dkms" if kind == "open" else "kmod-nvidia-latest-dkms"
        kmod_arch = DRIVER_PKGS[kmod][0]
        L += ["---", "document: modulemd", "version: 2", "data:",
              "    name: nvidia-driver",
              "    stream: " + sname,
              "    version: " + MODULE_VERSION,
              "    context: " + context(sname),
              "    arch: " + ARCH,
              "    summary: Nvidia driver for " + sname + " branch",
              "    description: >-"]
        L += [("        " + d.replace("{version}", branch_version)).rstrip() for d in DESCRIPTION]
        L += ["    license:", "        module:", "            - MIT",
              "    artifacts:", "        rpms:"]
        for pkg in BRANCH_PKGS:
            for v in vers:
                L.append("            - " + nevra(pkg, v, DRIVER_PKGS[pkg][0]))
        if fm_modular:
            for v in vers:
                L.append("            - " + nevra(FM_NAME, v, ARCH, epoch=0, release="1"))
        for v in (vers if kmod_artifacts == "all" else vers[:1]):
            L.append("            - " + nevra(kmod, v, kmod_arch))
        pkgs = sorted(BRANCH_PKGS) + [kmod]
        L += ["    profiles:", "        default:", "            description: Default installation",
              "            rpms:"]
        L += ["                - " + p for p in pkgs]
        if kind == "open":
            L += ["        src:", "            description: Source files for compiling open kernel modules",
                  "            rpms:", "                - nvidia-kmod-source"]
        L += ["        fm:", "            description: FabricManager installation", "            rpms:"]
        L += ["                - " + p for p in pkgs + [FM_NAME]]
        L += ["        ks:", "            description: Installation via kickstart", "            rpms:"]
        L += ["                - " + p for p in pkgs]
        L.append("...")
    L += ["---", "document: modulemd-defaults", "version: 1", "data:",
          "    module: nvidia-driver", "    stream: " + DEFAULT_STREAM, "    profiles:"]
    L += ["        %s: [default]" % s[0] for s in streams]
    L.append("...")
    return "\n".join(L) + "\n"


def build(out, kmod_artifacts="all", fm_modular=True, rhel="9"):
    """Build the repository in ``out`` (removed first): NVIDIA's rhel9 one, or with ``rhel`` "10" its rhel10 one
    (release 1.el10, no modules.yaml); returns its absolute path."""
    if rhel not in ("9", "10"):
        raise RuntimeError("rhel must be 9 or 10, not %r" % (rhel,))
    dist = ".el" + rhel
    for tool in ("rpmbuild", "createrepo_c", "modifyrepo_c"):
        if not shutil.which(tool):
            raise RuntimeError("missing %s (apt-get install -y rpm createrepo-c)" % tool)
    out = os.path.abspath(out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    work = tempfile.mkdtemp(prefix="nvrepo-build-")
    try:
        jobs = []
        for v in VERSIONS:
            jobs.append((driver_spec(v), "nvidia-driver-" + v))
            jobs.append((fm_spec(v), FM_NAME + "-" + v))
        for release in NCCL:
            jobs.append((nccl_spec(release), "libnccl-" + release))
        for version, exporter in DCGM:
            jobs.append((dcgm_spec(version), "datacenter-gpu-manager-4-" + version))
            jobs.append((dcgm_exporter_spec(exporter), "datacenter-gpu-manager-exporter-" + exporter))
        jobs.append((dcgm3_spec(DCGM3), "datacenter-gpu-manager-" + DCGM3))
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as ex:
            list(ex.map(lambda j: rpmbuild(j[0], j[1], work, out, dist), jobs))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for f in os.listdir(out):
        os.utime(os.path.join(out, f), (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH), LC_ALL="C", TZ="UTC")
    subprocess.run(["createrepo_c", "--quiet", "--no-database", "--revision", str(SOURCE_DATE_EPOCH),
                    "--set-timestamp-to-revision", "--workers", "1", out], check=True, env=env)
    # NVIDIA's rhel10 repository has no module metadata
    if rhel == "9":
        my = os.path.join(out, "modules.yaml")
        with open(my, "w") as f:
            f.write(modules_yaml(kmod_artifacts, fm_modular))
        os.utime(my, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
        subprocess.run(["modifyrepo_c", "--compress-type=gz", my, os.path.join(out, "repodata")], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        # modifyrepo_c stamps repomd.xml with the current time; pinned, so that every build is the same bytes
        repomd = os.path.join(out, "repodata", "repomd.xml")
        with open(repomd) as f:
            x = f.read()
        x = re.sub(r"<timestamp>\d+</timestamp>", "<timestamp>%d</timestamp>" % SOURCE_DATE_EPOCH, x)
        x = re.sub(r"<revision>\d+</revision>", "<revision>%d</revision>" % SOURCE_DATE_EPOCH, x)
        with open(repomd, "w") as f:
            f.write(x)
    for root, _dirs, files in os.walk(out):
        for f in files:
            os.utime(os.path.join(root, f), (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="repository directory to (re)create")
    ap.add_argument("--kmod-artifacts", choices=["all", "latest"], default="all",
                    help="list every kmod version of a branch in its stream (default) or only the newest, "
                         "as the public genmodules.py does (latest_rpm_from_pkgname)")
    ap.add_argument("--fm-non-modular", action="store_true",
                    help="do not list nvidia-fabricmanager as module artifact (the public genmodules.py "
                         "only knows the pre-580 name nvidia-fabric-manager)")
    ap.add_argument("--rhel", choices=["9", "10"], default="9",
                    help="the RHEL release whose repository to imitate: 10 has no module streams")
    a = ap.parse_args()
    try:
        print(build(a.out, a.kmod_artifacts, not a.fm_non_modular, a.rhel))
    except RuntimeError as exc:
        sys.exit(str(exc))


if __name__ == "__main__":
    main()
