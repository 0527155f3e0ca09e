# Loopback HTTPS for fetch tests (sourced after lib.sh): a CA made for this
# run, a certificate for 127.0.0.1 and one for the wrong host, and
# tests/https-server.py serving a directory with fault injection.
make_certs() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/ca.key" -out "$TMP/ca.pem" -days 2 -subj "/CN=gpuboot test CA" 2>/dev/null
	for h in good wrong; do
		if [ $h = good ]; then san="IP:127.0.0.1,DNS:localhost"; else san="DNS:wrong.example"; fi
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/$h.key" -out "$TMP/$h.csr" -subj "/CN=$h" 2>/dev/null
		printf 'subjectAltName=%s\n' "$san" >"$TMP/$h.ext"
		openssl x509 -req -in "$TMP/$h.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial -out "$TMP/$h.pem" -days 2 -extfile "$TMP/$h.ext" 2>/dev/null
	done
}
# start_server ROOT: sets PORT (good certificate) and WPORT (wrong host)
start_server() {
	python3 tests/https-server.py "$1" "$TMP/good.pem" "$TMP/good.key" "$TMP/ports" "$TMP/wrong.pem" "$TMP/wrong.key" 2>"$TMP/server.log" &
	SRV=$!
	trap 'kill $SRV 2>/dev/null; rm -rf "$TMP"' EXIT
	for i in $(seq 50); do [ -f "$TMP/ports" ] && break; sleep 0.1; done
	read -r PORT WPORT <"$TMP/ports"
}
