#!/bin/sh
# Build the static musl prefix gpuboot links against, from pinned Debian 12
# source packages. The prefix is cached outside the work tree, keyed on the
# architecture and the sha256 of this recipe, so a second build takes seconds.
#
# usage: scripts/build-static-deps.sh [ARCH]   prints the prefix path on stdout
#        ARCH: x86_64 or aarch64 (default: the build machine's). The build
#        machine's own architecture links with its musl-gcc (musl-tools); the
#        other is cross-compiled with Debian's ARCH-linux-gnu- toolchain and a
#        musl built here from Debian's musl source package.
# env:   GPUBOOT_DEPS_CACHE   cache root (default: ~/.cache/gpuboot-deps)
#        JOBS                 parallel make jobs (default: nproc)
set -eu

# The recipe: source package and pinned version. A version the mirror no
# longer carries falls back to the current one of the same package, loudly,
# and the version actually built is recorded in the prefix's BUILDINFO.
PINS="zlib=1:1.2.13.dfsg-1
xz-utils=5.4.1-1+deb12u2
libzstd=1.5.4+dfsg2-5
openssl=3.0.17-1~deb12u2
json-c=0.16-2
libarchive=3.6.2-1+deb12u5
curl=7.88.1-10+deb12u15
kmod=30+20221128-1"
# The C library, built only for a cross prefix (natively: musl-tools).
MUSL_PIN="musl=1.2.3-1"

log() { printf 'build-static-deps: %s\n' "$*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
recipe_hash=$(sha256sum "$here/build-static-deps.sh" | cut -c1-16)
cache=${GPUBOOT_DEPS_CACHE:-${HOME:-/root}/.cache/gpuboot-deps}
arch=${1:-$(uname -m)}
case $arch in
x86_64) ossl_target=linux-x86_64 ;;
aarch64) ossl_target=linux-aarch64 ;;
*)
	log "unsupported architecture '$arch' (x86_64 or aarch64)"
	exit 2
	;;
esac
prefix=$cache/prefix-$arch-$recipe_hash
jobs=${JOBS:-$(nproc)}

if [ -f "$prefix/.complete" ]; then
	echo "$prefix"
	exit 0
fi

# cross: the target's binutils and gcc prefix ("" for a native build).
cross=""
[ "$arch" = "$(uname -m)" ] || cross=$arch-linux-gnu-
need="dpkg-source autoreconf libtoolize cmake make perl pkg-config flock"
if [ -n "$cross" ]; then
	need="$need ${cross}gcc ${cross}ar ${cross}ranlib ${cross}ld ${cross}objcopy"
else
	need="$need musl-gcc"
fi
missing=""
for t in $need; do command -v "$t" >/dev/null 2>&1 || missing="$missing $t"; done
if [ -n "$missing" ]; then
	log "missing tools:$missing (run: make deps)"
	exit 1
fi

# The prefix is built where it will stay (musl-gcc's specs name their own
# directory), one build at a time; a prefix counts only once .complete exists.
mkdir -p "$cache"
exec 9>"$prefix.lock"
flock 9
if [ -f "$prefix/.complete" ]; then
	echo "$prefix"
	exit 0
fi
work=$(mktemp -d "$cache/work.XXXXXX")
stage=$prefix
trap 'rm -rf "$work"; [ -f "$stage/.complete" ] || rm -rf "$stage"' EXIT INT TERM
rm -rf "$stage"
mkdir -p "$stage/include" "$stage/lib"

# A private apt configuration for deb-src, so the host's sources are untouched.
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
cat >"$apt_dir/sources.list" <<SRC
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
SRC
apt_opts="-o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$apt_dir/lists -o Dir::Cache=$apt_dir -o APT::Sandbox::User=root -q"
# The indexes and downloads are shared by every prefix: one apt-get at a time
# (a second one would fail on apt's own lock), until the sources are fetched.
exec 8>"$apt_dir.lock"
flock 8
log "updating source indexes"
# shellcheck disable=SC2086
apt-get $apt_opts update >"$work/apt-update.log" 2>&1 || {
	cat "$work/apt-update.log" >&2
	exit 1
}

src=$work/src
mkdir -p "$src"
buildinfo=$stage/BUILDINFO
echo "recipe $recipe_hash $arch" >"$buildinfo"

# fetch PKG VERSION [--tar-only]: unpack the source into $src/PKG
fetch() {
	pkg=$1 ver=$2 extra=${3:-}
	d=$work/dl-$pkg
	mkdir -p "$d"
	# shellcheck disable=SC2086
	if ! (cd "$d" && apt-get $apt_opts source $extra --download-only "$pkg=$ver" >"$d.log" 2>&1); then
		log "WARNING: $pkg=$ver is not on the mirror any more; using its current version"
		# shellcheck disable=SC2086
		(cd "$d" && apt-get $apt_opts source $extra --download-only "$pkg" >"$d.log" 2>&1) || {
			cat "$d.log" >&2
			exit 1
		}
	fi
	if [ -n "$extra" ]; then
		tarball=$(ls "$d"/*.orig.tar.* | grep -v '\.asc$' | head -n1)
		mkdir -p "$src/$pkg"
		tar -xf "$tarball" -C "$src/$pkg" --strip-components=1
		echo "$pkg $(basename "$tarball") (orig tarball)" >>"$buildinfo"
	else
		dsc=$(ls "$d"/*.dsc | head -n1)
		dpkg-source --no-check -x "$dsc" "$src/$pkg" >/dev/null
		echo "$pkg $(basename "$dsc" .dsc)" >>"$buildinfo"
	fi
}

pins=$PINS
[ -z "$cross" ] || pins="$MUSL_PIN
$PINS"
echo "$pins" | while IFS='=' read -r pkg ver; do
	case $pkg in
	openssl) fetch "$pkg" "$ver" --tar-only ;;
	*) fetch "$pkg" "$ver" ;;
	esac
done
exec 8>&-

step() { log "$1 ($(date +%H:%M:%S))"; }

# Cross: musl first, into its own directory with its gcc wrapper (as
# musl-tools installs it natively), then the target's binutils for the rest.
host_opt=""
if [ -n "$cross" ]; then
	step musl
	(cd "$src/musl" && env -u CFLAGS -u CPPFLAGS -u LDFLAGS CC="${cross}gcc" CROSS_COMPILE="$cross" \
		./configure --target="$arch" --prefix="$stage/musl" --disable-shared >/dev/null &&
		make -j"$jobs" >/dev/null && make install >/dev/null)
	export CC="$stage/musl/bin/musl-gcc"
	export AR="${cross}ar" RANLIB="${cross}ranlib" NM="${cross}nm" STRIP="${cross}strip" LD="${cross}ld"
	host_opt="--host=$arch-linux-musl"
	kheaders=/usr/$arch-linux-gnu/include
	kasm=$kheaders/asm
else
	export CC=musl-gcc
	kheaders=/usr/include
	kasm=/usr/include/$(gcc -dumpmachine)/asm
fi
export CFLAGS="-Os -fPIC -ffunction-sections -fdata-sections -D_FORTIFY_SOURCE=0"
export PKG_CONFIG_PATH=$stage/lib/pkgconfig
export PKG_CONFIG_LIBDIR=$stage/lib/pkgconfig
export CPPFLAGS="-I$stage/include"
export LDFLAGS="-L$stage/lib"

# musl-gcc sees no kernel headers; kmod and libarchive need a few.
ln -s "$kheaders/linux" "$stage/include/linux"
ln -s "$kheaders/asm-generic" "$stage/include/asm-generic"
ln -s "$kasm" "$stage/include/asm"

step zlib
(cd "$src/zlib" && ./configure --static --prefix="$stage" >/dev/null && make -j"$jobs" >/dev/null && make install >/dev/null)

step xz
(cd "$src/xz-utils" && ./configure $host_opt --prefix="$stage" --disable-shared --enable-static \
	--disable-xz --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links \
	--disable-scripts --disable-doc --disable-nls >/dev/null &&
	make -j"$jobs" >/dev/null && make install >/dev/null)

step zstd
(cd "$src/libzstd/lib" && make -j"$jobs" libzstd.a ZSTD_LEGACY_SUPPORT=0 >/dev/null &&
	make install-static install-includes install-pc PREFIX="$stage" >/dev/null)

step openssl
(cd "$src/openssl" && ./Configure "$ossl_target" no-shared no-tests no-engine no-dso no-async \
	no-afalgeng no-comp no-idea no-mdc2 no-rc5 no-camellia no-seed no-bf no-cast no-sm2 no-sm3 no-sm4 \
	no-gost no-srp no-whirlpool no-ssl3 no-weak-ssl-ciphers no-legacy no-ui-console \
	--prefix="$stage" --libdir=lib --openssldir=/etc/ssl >/dev/null &&
	make -j"$jobs" build_libs >/dev/null 2>&1 && make install_dev >/dev/null)

step json-c
mkdir -p "$work/b-json-c"
cmake_cross=""
[ -z "$cross" ] || cmake_cross="-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=$arch -DCMAKE_AR=$(command -v "$AR") -DCMAKE_RANLIB=$(command -v "$RANLIB")"
# shellcheck disable=SC2086
(cd "$work/b-json-c" && cmake -G Ninja "$src/json-c" $cmake_cross -DCMAKE_INSTALL_PREFIX="$stage" \
	-DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF \
	-DDISABLE_WERROR=ON -DCMAKE_BUILD_TYPE=MinSizeRel >/dev/null && ninja >/dev/null && ninja install >/dev/null)

step libarchive
(cd "$src/libarchive" && autoreconf -fi >/dev/null 2>&1 &&
	./configure $host_opt --prefix="$stage" --disable-shared --enable-static --disable-bsdtar --disable-bsdcpio \
		--disable-bsdcat --disable-bsdunzip --disable-acl --disable-xattr --without-bz2lib --without-lz4 \
		--without-libb2 --without-iconv --without-lzo2 --without-cng --without-nettle --without-mbedtls \
		--without-openssl --without-xml2 --without-expat --with-zlib --with-lzma --with-zstd >/dev/null &&
	make -j"$jobs" >/dev/null && make install-libLTLIBRARIES install-includeHEADERS install-pkgconfigDATA >/dev/null)

step curl
# Debian's series ends with two patches that rename the library for its
# GnuTLS and NSS flavours; this build is the OpenSSL one, so undo them.
(cd "$src/curl" && patch -R -s -p1 <debian/patches/99_nss.patch && patch -R -s -p1 <debian/patches/90_gnutls.patch &&
	autoreconf -fi >/dev/null 2>&1 &&
	LIBS="-lzstd" ./configure $host_opt --prefix="$stage" --disable-shared --enable-static \
		--with-openssl="$stage" --with-zlib="$stage" --without-zstd --without-brotli --without-libpsl \
		--without-libidn2 --without-nghttp2 --without-nghttp3 --without-ngtcp2 --without-librtmp \
		--without-libssh2 --without-libssh --without-gssapi --disable-ldap --disable-ldaps \
		--disable-rtsp --disable-dict --disable-telnet --disable-tftp --disable-pop3 --disable-imap \
		--disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-ftp --enable-file \
		--disable-manual --disable-ntlm --disable-ntlm-wb --disable-docs --without-ca-bundle \
		--without-ca-path --with-ca-fallback --enable-threaded-resolver --disable-unix-sockets >/dev/null &&
	make -C lib -j"$jobs" >/dev/null && make -C lib install >/dev/null && make -C include install >/dev/null &&
	make install-pkgconfigDATA >/dev/null)

step kmod
# --sysconfdir=/etc: libkmod compiles its configuration directories in; with
# the build prefix it would read <prefix>/etc/modprobe.d and miss the
# machine's aliases and install rules (Debian's nvidia -> nvidia-current).
(cd "$src/kmod" && mkdir -p libkmod/docs && : >libkmod/docs/gtk-doc.make &&
	sed -i 's/AC_MSG_ERROR(\[--enable-static is not supported by kmod\])/true/' configure.ac &&
	autoreconf -fi >/dev/null 2>&1 &&
	./configure $host_opt --prefix="$stage" --sysconfdir=/etc --enable-static --disable-shared --disable-manpages --disable-gtk-doc \
		--disable-test-modules --disable-tools --with-xz --with-zstd --with-zlib >/dev/null &&
	make -j"$jobs" libkmod/libkmod.la >/dev/null)
# libkmod's static archive exports generic names (hash_new, array_*): keep
# only kmod_* global so they cannot collide with anything else.
(cd "$src/kmod" && objs=$(ls libkmod/.libs/*.o shared/.libs/*.o 2>/dev/null || true) &&
	if [ -z "$objs" ]; then objs=$(find libkmod shared -name '*.o' | grep -v /python/); fi &&
	"${cross}ld" -r -o "$work/kmod-all.o" $objs &&
	"${cross}objcopy" --keep-global-symbol='kmod_*' -w "$work/kmod-all.o" "$work/kmod.o" &&
	rm -f "$stage/lib/libkmod.a" && "${cross}ar" rcs "$stage/lib/libkmod.a" "$work/kmod.o" &&
	install -m 0644 libkmod/libkmod.h "$stage/include/libkmod.h")

rm -rf "$stage/share" "$stage/bin" "$stage/ssl"
rm -f "$stage"/lib/*.la
# Replace the include symlinks with real copies so the prefix stands alone.
for l in linux asm-generic asm; do
	t=$(readlink -f "$stage/include/$l")
	rm "$stage/include/$l"
	cp -a "$t" "$stage/include/$l"
done
touch "$stage/.complete"
log "done: $prefix"
echo "$prefix"
