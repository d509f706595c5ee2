#!/usr/bin/env bash
# Makes the TLS test certificates in DIR (docs/security.md), for the server's TLS tests, the
# Java interop suite and the Pulsar TLS run; no key is ever checked in. Needs openssl (and
# keytool for the PKCS12 trust store, skipped without it).
#
#   ca.pem/.key, other-ca.pem/.key   two CAs; the bookie trusts only `ca`
#   bookie.pem/.key                  the bookie (SAN IP:127.0.0.1), EC P-256 key in PKCS#8
#   bookie-rsa.pem/.key              the same with a 2048-bit RSA key in PKCS#1
#   bookie-sec1.pem/.key             the same with an EC key in SEC1
#   bookie-peer.pem/.key             a bookie that is also a client of the other bookies (its
#                                    repairs): SAN IP:127.0.0.1, serverAuth and clientAuth,
#                                    OU=0:bookie;1:cluster
#   broker.pem/.key                  client, OU=0:broker,admin;1:cluster (first role broker)
#   reader.pem/.key                  client, OU=0:reader,broker;1:cluster (first role reader)
#   no-role.pem/.key                 client, OU=engineering (no role)
#   foreign.pem/.key                 client signed by other-ca, OU=0:broker
#   encrypted.key                    bookie.key encrypted (password "secret"): refused
#   truststore.p12, truststore.pass  ca.pem as a PKCS12 trust store and its password
#
# Usage: scripts/tls_certs.sh DIR
set -euo pipefail

dir=${1:?usage: tls_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

ec_key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' \
  > server.ext
printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' > client.ext
printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' \
  > peer.ext

for ca in ca other-ca; do
  openssl req -x509 "${ec_key[@]}" -keyout "$ca.key" -out "$ca.pem" -days 2 \
    -subj "/CN=ringlog test $ca" 2>/dev/null
done

# certificate NAME CA EXT: signs NAME.csr with CA into NAME.pem.
certificate() {
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -out "$1.pem" -days 2 -extfile "$3" 2>/dev/null
}

# signed NAME SUBJECT CA EXT: a new EC key (PKCS#8: `req -nodes` writes it) and its certificate.
signed() {
  openssl req "${ec_key[@]}" -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  certificate "$1" "$3" "$4"
}

signed bookie "/CN=bookie" ca server.ext
openssl genrsa -traditional -out bookie-rsa.key 2048 2>/dev/null
openssl req -new -key bookie-rsa.key -out bookie-rsa.csr -subj "/CN=bookie-rsa" 2>/dev/null
certificate bookie-rsa ca server.ext
openssl ecparam -name prime256v1 -genkey -noout -out bookie-sec1.key 2>/dev/null
openssl req -new -key bookie-sec1.key -out bookie-sec1.csr -subj "/CN=bookie-sec1" 2>/dev/null
certificate bookie-sec1 ca server.ext
signed bookie-peer "/CN=bookie-peer/OU=0:bookie;1:cluster" ca peer.ext

signed broker "/CN=broker/OU=0:broker,admin;1:cluster" ca client.ext
signed reader "/CN=reader/OU=0:reader,broker;1:cluster" ca client.ext
signed no-role "/CN=no-role/OU=engineering" ca client.ext
signed foreign "/CN=foreign/OU=0:broker" other-ca client.ext

openssl pkcs8 -topk8 -in bookie.key -out encrypted.key -passout pass:secret 2>/dev/null

printf 'ringlog-test' > truststore.pass
if command -v keytool >/dev/null; then
  rm -f truststore.p12
  keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 \
    -storetype PKCS12 -storepass ringlog-test >/dev/null 2>&1
fi
rm -f ./*.csr ./*.srl
