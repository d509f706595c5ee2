package ringlog.pulsar;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Issue 34: the suite with TLS between the broker and the bookies (-Dtls.dir=DIR holding the
 * certificates of scripts/tls_certs.sh; `make interop-pulsar-tls`). The bookies require TLS and
 * a client certificate whose first role is broker; the broker sets Pulsar's bookkeeperTLS* keys
 * (docs/security.md), and its BookKeeper client then speaks v2 inside TLS.
 */
final class TlsMode {
    private TlsMode() {}

    /** The certificate directory, or null without TLS. */
    static Path dir() {
        String dir = System.getProperty("tls.dir", "").trim();
        return dir.isEmpty() ? null : Path.of(dir).toAbsolutePath();
    }

    /** ringlog serve's TLS flags. */
    static List<String> ringlogFlags(Path dir) {
        return List.of("--tls-cert", dir.resolve("bookie.pem").toString(),
                "--tls-key", dir.resolve("bookie.key").toString(),
                "--tls-trust", dir.resolve("ca.pem").toString(),
                "--tls-client-auth", "true", "--tls-authorized-roles", "broker",
                "--tls-required", "true");
    }

    /** The Java bookie's TLS keys (it cannot refuse plaintext clients). */
    static void javaBookieSettings(Map<String, String> settings, Path dir) {
        settings.put("tlsProviderFactoryClass", "org.apache.bookkeeper.tls.TLSContextFactory");
        settings.put("tlsKeyStoreType", "PEM");
        settings.put("tlsKeyStore", dir.resolve("bookie.key").toString());
        settings.put("tlsCertificatePath", dir.resolve("bookie.pem").toString());
        settings.put("tlsTrustStoreType", "PEM");
        settings.put("tlsTrustStore", dir.resolve("ca.pem").toString());
        settings.put("tlsClientAuthentication", "true");
        settings.put("bookieAuthProviderFactoryClass",
                "org.apache.bookkeeper.tls.BookieAuthZFactory");
        settings.put("authorizedRoles", "broker");
    }

    /** The broker's keys, as docs/security.md gives them. */
    static void brokerSettings(Map<String, String> settings, Path dir) {
        settings.put("bookkeeperTLSClientAuthentication", "true");
        settings.put("bookkeeperTLSProviderFactoryClass",
                "org.apache.bookkeeper.tls.TLSContextFactory");
        settings.put("bookkeeperTLSKeyFileType", "PEM");
        settings.put("bookkeeperTLSTrustCertTypes", "PEM");
        settings.put("bookkeeperTLSCertificateFilePath", dir.resolve("broker.pem").toString());
        settings.put("bookkeeperTLSKeyFilePath", dir.resolve("broker.key").toString());
        settings.put("bookkeeperTLSTrustCertsFilePath", dir.resolve("ca.pem").toString());
    }
}
