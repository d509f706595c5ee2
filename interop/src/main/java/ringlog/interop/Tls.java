package ringlog.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;

/**
 * Issue 34: the real client over TLS. START_TLS with v3 and with v2 (Pulsar's protocol), PEM
 * and PKCS12 trust stores, client certificates, roles, --tls-required, and a rotation while a
 * client stays connected. Certificates are made by scripts/tls_certs.sh in the run directory
 * when the suite starts; no key is checked in.
 */
final class Tls {
    static final String FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory";
    /** As many as the plaintext sync scenarios, so their latencies compare. */
    static final int ENTRY_COUNT = Scenarios.SYNC_ENTRY_COUNT;

    private Tls() {}

    /** The certificates of one run: a CA, the bookie's, clients' with roles, a foreign CA's. */
    record Certificates(Path dir) {
        Path file(String name) {
            return dir.resolve(name);
        }

        /** Runs scripts/tls_certs.sh (from the repo root or interop/) into `dir`. */
        static Certificates make(Path dir) throws Exception {
            Path script = Path.of("scripts", "tls_certs.sh");
            if (!Files.exists(script)) {
                script = Path.of("..", "scripts", "tls_certs.sh");
            }
            Process process = new ProcessBuilder("bash", script.toString(), dir.toString())
                    .redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes());
            if (process.waitFor() != 0) {
                throw new IOException(script + ": " + output);
            }
            return new Certificates(dir);
        }
    }

    /** The bookie's TLS settings: ringlog flags and the Java bookie's keys, side by side. */
    static Map<String, String> bookieSettings(Certificates certs, boolean roles,
            boolean required, Path live) {
        Map<String, String> settings = new LinkedHashMap<>();
        Path cert = live != null ? live.resolve("bookie.pem") : certs.file("bookie.pem");
        Path key = live != null ? live.resolve("bookie.key") : certs.file("bookie.key");
        settings.put("--tls-cert", cert.toString());
        settings.put("--tls-key", key.toString());
        settings.put("--tls-trust", certs.file("ca.pem").toString());
        settings.put("--tls-client-auth", "true");
        settings.put("tlsProviderFactoryClass", FACTORY);
        settings.put("tlsKeyStoreType", "PEM");
        settings.put("tlsKeyStore", key.toString());
        settings.put("tlsCertificatePath", cert.toString());
        settings.put("tlsTrustStoreType", "PEM");
        settings.put("tlsTrustStore", certs.file("ca.pem").toString());
        settings.put("tlsClientAuthentication", "true");
        if (roles) {
            settings.put("--tls-authorized-roles", "broker");
            settings.put("bookieAuthProviderFactoryClass",
                    "org.apache.bookkeeper.tls.BookieAuthZFactory");
            settings.put("authorizedRoles", "broker");
        }
        if (required) {
            // The Java bookie has no equivalent (apache/bookkeeper#2368 was never merged).
            settings.put("--tls-required", "true");
        }
        if (live != null) {
            settings.put("--tls-refresh-s", "1");
            settings.put("tlsCertFilesRefreshDurationSeconds", "1");
        }
        return settings;
    }

    /** A client configuration with TLS, presenting `identity`'s certificate, trusting `ca`. */
    static Consumer<ClientConfiguration> client(Certificates certs, String identity, String ca,
            boolean v2, boolean pkcs12) {
        return conf -> {
            if (v2) {
                Cluster.pulsarLike(conf);
            }
            conf.setTLSProviderFactoryClass(FACTORY);
            conf.setTLSClientAuthentication(true);
            conf.setTLSKeyStoreType("PEM");
            conf.setTLSKeyStore(certs.file(identity + ".key").toString());
            conf.setTLSCertificatePath(certs.file(identity + ".pem").toString());
            if (pkcs12) {
                conf.setTLSTrustStoreType("PKCS12");
                conf.setTLSTrustStore(certs.file("truststore.p12").toString());
                conf.setTLSTrustStorePasswordPath(certs.file("truststore.pass").toString());
            } else {
                conf.setTLSTrustStoreType("PEM");
                conf.setTLSTrustStore(certs.file(ca + ".pem").toString());
            }
            // A refused client fails fast instead of waiting out the default timeouts.
            conf.setAddEntryTimeout(5);
            conf.setReadEntryTimeout(5);
        };
    }

    /** Writes, reads back, closes; a second client recovers (opens) and reads it again. */
    static String writeReadRecover(Cluster cluster, Certificates certs, boolean v2,
            boolean pkcs12) throws Exception {
        DigestType digest = v2 ? DigestType.CRC32C : DigestType.CRC32;
        BookKeeper writer = cluster.client(client(certs, "broker", "ca", v2, pkcs12));
        Scenarios.step("createLedger over TLS");
        LedgerHandle handle = writer.createLedger(1, 1, 1, digest, Scenarios.PASSWORD);
        long ledgerId = handle.getId();
        long start = System.nanoTime();
        Scenarios.step("addEntry x" + ENTRY_COUNT);
        long[] latencies = new long[ENTRY_COUNT];
        for (int index = 0; index < ENTRY_COUNT; index++) {
            long sent = System.nanoTime();
            Check.equal(index, handle.addEntry(Entries.body(ledgerId, index)), "entry id");
            latencies[index] = System.nanoTime() - sent;
        }
        double writeSeconds = Scenarios.seconds(System.nanoTime() - start);
        Scenarios.step("read back");
        Scenarios.readAndVerify(handle, ledgerId, ENTRY_COUNT);
        // Recovery: a second client opens the ledger while it is still open (fencing it).
        BookKeeper recoverer = cluster.client(client(certs, "broker", "ca", v2, pkcs12));
        Scenarios.step("openLedger (recovery)");
        LedgerHandle recovered = recoverer.openLedger(ledgerId, digest, Scenarios.PASSWORD);
        Check.equal(ENTRY_COUNT - 1L, recovered.getLastAddConfirmed(), "LAC after recovery");
        Scenarios.readAndVerify(recovered, ledgerId, ENTRY_COUNT);
        recovered.close();
        return String.format("entries=%d digest=%s protocol=%s trust=%s adds_per_s=%.0f",
                ENTRY_COUNT, digest, v2 ? "v2" : "v3", pkcs12 ? "PKCS12" : "PEM",
                ENTRY_COUNT / writeSeconds) + " add_latency_ms " + Scenarios.percentiles(latencies);
    }

    /** True when an add through a client configured by `changes` fails. */
    static boolean addFails(Cluster cluster, Consumer<ClientConfiguration> changes)
            throws Exception {
        BookKeeper client = cluster.client(changes);
        LedgerHandle handle = client.createLedger(1, 1, 1, DigestType.CRC32C,
                Scenarios.PASSWORD);
        try {
            handle.addEntry(Entries.body(handle.getId(), 0));
            return false;
        } catch (Exception expected) {
            return true;
        }
    }

    /**
     * Roles and refusals: a certificate with role broker is served; first role reader, a CA
     * the bookie does not trust, and (ringlog, --tls-required) a plaintext client are not.
     */
    static String refusals(Cluster cluster, Certificates certs, boolean ringlog)
            throws Exception {
        Scenarios.step("authorized client");
        BookKeeper broker = cluster.client(client(certs, "broker", "ca", true, false));
        LedgerHandle handle = broker.createLedger(1, 1, 1, DigestType.CRC32C,
                Scenarios.PASSWORD);
        handle.addEntry(Entries.body(handle.getId(), 0));
        List<String> refused = new ArrayList<>();
        Scenarios.step("first role reader");
        Check.that(addFails(cluster, client(certs, "reader", "ca", true, false)),
                "a client whose first role is reader was served");
        refused.add("role");
        Scenarios.step("untrusted CA");
        Check.that(addFails(cluster, client(certs, "foreign", "ca", false, false)),
                "a client certificate from another CA was served");
        refused.add("foreign-ca");
        if (ringlog) {
            Scenarios.step("plaintext against --tls-required");
            Check.that(addFails(cluster, conf -> {
                conf.setAddEntryTimeout(5);
                conf.setUseV2WireProtocol(true);
            }), "a plaintext client was served with --tls-required");
            refused.add("plaintext");
        }
        Scenarios.step("authorized client again");
        handle.addEntry(Entries.body(handle.getId(), 1));
        handle.close();
        return "served=broker refused=" + String.join(",", refused);
    }

    /** A rotation while a client stays connected: it keeps writing; a new client connects. */
    static String rotation(Cluster cluster, Certificates certs, Path live) throws Exception {
        BookKeeper before = cluster.client(client(certs, "broker", "ca", true, false));
        LedgerHandle first = before.createLedger(1, 1, 1, DigestType.CRC32C,
                Scenarios.PASSWORD);
        for (int index = 0; index < 100; index++) {
            first.addEntry(Entries.body(first.getId(), index));
        }
        Scenarios.step("rotate the bookie's certificate");
        Files.copy(certs.file("bookie-rsa.key"), live.resolve("next.key"),
                StandardCopyOption.REPLACE_EXISTING);
        Files.copy(certs.file("bookie-rsa.pem"), live.resolve("next.pem"),
                StandardCopyOption.REPLACE_EXISTING);
        Files.move(live.resolve("next.key"), live.resolve("bookie.key"),
                StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Files.move(live.resolve("next.pem"), live.resolve("bookie.pem"),
                StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Thread.sleep(2_500);
        Scenarios.step("the connected client keeps writing");
        for (int index = 100; index < 200; index++) {
            first.addEntry(Entries.body(first.getId(), index));
        }
        Scenarios.step("a new client after the rotation");
        BookKeeper after = cluster.client(client(certs, "broker", "ca", true, false));
        LedgerHandle second = after.createLedger(1, 1, 1, DigestType.CRC32C,
                Scenarios.PASSWORD);
        for (int index = 0; index < 100; index++) {
            second.addEntry(Entries.body(second.getId(), index));
        }
        Scenarios.readAndVerify(first, first.getId(), 200);
        Scenarios.readAndVerify(second, second.getId(), 100);
        first.close();
        second.close();
        return "entries_before_and_after=200 new_client_entries=100";
    }

    /** The rotation's live directory, holding copies of the first certificate and key. */
    static Path liveDirectory(Certificates certs) throws IOException {
        Path live = certs.dir().resolve("live");
        Files.createDirectories(live);
        Files.copy(certs.file("bookie.pem"), live.resolve("bookie.pem"),
                StandardCopyOption.REPLACE_EXISTING);
        Files.copy(certs.file("bookie.key"), live.resolve("bookie.key"),
                StandardCopyOption.REPLACE_EXISTING);
        return live;
    }
}
