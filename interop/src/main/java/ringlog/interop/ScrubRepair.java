package ringlog.interop;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.meta.LedgerUnderreplicationManager;
import org.apache.bookkeeper.meta.UnderreplicatedLedger;

/**
 * Issue 35, "a bookie that heals itself" (docs/scrub.md): ringlog's scrubber reads sealed
 * segments back on a slow cycle; damage in an entry record is repaired from another bookie of
 * the entry's write set, or, with no good copy anywhere, the ledger is marked under-replicated
 * as BookKeeper's ZkLedgerUnderreplicationManager marks it. Three ringlog bookies, the real
 * Java client and ZooKeeper; the damage is written into the segment files by this process, as
 * a failing disk would. ringlog only: the Java bookie's scrubber checks no payloads and does
 * not repair.
 */
final class ScrubRepair {
    /** Every entry body is 1 KiB: about 3,700 records fill a 4 MiB segment. */
    static final int BODY_SIZE = 1024;
    static final int REPAIR_ENTRY_COUNT = 100_000;
    static final int REPAIR_ENTRY_COUNT_QUICK = 10_000;
    static final int MARK_ENTRY_COUNT = 20_000;
    /** Segments of bookie 0 that get damage in scrub-repair (fewer if fewer are sealed). */
    static final int DAMAGE_SITES = 3;
    static final int DAMAGE_BYTES = 64;
    static final long WAIT_MS = 60_000;
    /** scrub-mark-underreplicated: how long the marks that follow the first are counted. */
    static final long REMARK_WINDOW_MS = 5_000;

    /** A segment file's header sector; records start after it. */
    static final int SEGMENT_HEADER_SIZE = 4096;
    static final int RECORD_HEADER_SIZE = 64;
    /** engine/src/record.rs `RecordKind::Entry`. */
    static final int KIND_ENTRY = 1;

    /** The flags both scenarios give ringlog (Main registers them). */
    static final Map<String, String> SETTINGS = Map.of(
            "--segment-size", "4194304",
            // Sorting would rewrite sealed segments in ledger order, moving records away from
            // where they were written: this test must know which entries its damage hits.
            "--sort-sealed-segments", "false",
            // A 3.6 s cycle, read at up to 64 MiB/s: a cycle completes within seconds.
            "--scrub-cycle-hours", "0.001",
            "--scrub-rate-mib", "64",
            // No collection or compaction moving or removing segments under the test.
            "--gc-interval-ms", "0");

    static final String JAVA_SKIP = "(ringlog only: the Java bookie's ScrubberService"
            + " (localScrubInterval, off by default) runs its ledger storage's"
            + " localConsistencyCheck, which checks no entry payload, and repairs nothing;"
            + " docs/scrub.md)";

    private ScrubRepair() {}

    // ---------------------------------------------------------------------------------------
    // scrub-repair

    /**
     * E3/W3/A2, 100,000 entries of 1 KiB (10,000 with -Dquick=true), closed. After a clean scrub
     * cycle on every bookie, 64 random bytes overwrite the middle of the data of up to three of
     * bookie 0's sealed segments while it is stopped; restarted, it must find and repair every
     * damaged entry from the other two, mark nothing, and then serve the whole ledger alone,
     * byte for byte.
     */
    static String repair(Cluster cluster, boolean quick) throws Exception {
        int entryCount = quick ? REPAIR_ENTRY_COUNT_QUICK : REPAIR_ENTRY_COUNT;
        long start = System.nanoTime();
        BookKeeper client = cluster.client(conf -> { });
        Scenarios.step("createLedger E3/W3/A2");
        LedgerHandle handle = client.createLedger(3, 3, 2, DigestType.CRC32C, Scenarios.PASSWORD);
        long ledgerId = handle.getId();
        Scenarios.step("async adds x" + entryCount);
        long writeStart = System.nanoTime();
        addAll(handle, entryCount);
        double writeSeconds = Scenarios.seconds(System.nanoTime() - writeStart);
        handle.close();

        Scenarios.step("a clean scrub cycle on every bookie");
        long cleanStart = System.nanoTime();
        waitForCleanCycle(cluster);
        double cleanSeconds = Scenarios.seconds(System.nanoTime() - cleanStart);

        // Stopped first: the bookie reads these files (scrubber, client reads) and a write
        // racing one of its reads would make what it saw depend on timing. With the bookie
        // down, the damage is simply there when it comes back, as on a disk gone bad.
        Bookie victim = cluster.bookies.get(0);
        Scenarios.step("stop " + victim.name + " and damage its sealed segments");
        victim.stop();
        List<Site> sites = damageSealedSegments(victim, ledgerId, DAMAGE_SITES);
        TreeSet<Long> damaged = new TreeSet<>();
        TreeSet<Long> damagedHeaders = new TreeSet<>();
        for (Site site : sites) {
            damaged.addAll(site.entries());
            damagedHeaders.addAll(site.headers());
        }
        Check.that(!damaged.isEmpty(), "the damage hit no entry record: " + sites);

        Scenarios.step("restart " + victim.name);
        restart(victim);
        long restarted = System.nanoTime();
        long cyclesAtRestart = metric(victim, "ringlog_scrub_cycles_total");

        // The counters start again at the restart. A cycle in progress when the bookie
        // stopped resumes from its checkpointed position and may end after a part of one:
        // two completions after the restart include one full cycle over every sealed segment.
        Scenarios.step("wait for " + damaged.size() + " repairs on " + victim.name);
        long cyclesWanted = cyclesAtRestart + 2;
        Map<String, Long> counters = waitForCounters(victim, WAIT_MS, values ->
                values.get("ringlog_repair_written_total") >= damaged.size()
                        && values.get("ringlog_scrub_cycles_total") >= cyclesWanted);
        double repairSeconds = Scenarios.seconds(System.nanoTime() - restarted);
        TreeSet<Long> repaired = repairedInLog(victim, ledgerId);
        TreeSet<Long> missing = new TreeSet<>(damaged);
        missing.removeAll(repaired);
        if (counters.get("ringlog_repair_written_total") < damaged.size()
                || counters.get("ringlog_scrub_cycles_total") < cyclesWanted
                || !missing.isEmpty()) {
            throw new Check.Failure(String.format("%.0f s after the restart: %s; scrub cycles"
                    + " %d (wanted %d); damaged entries %s (headers damaged: %s); repaired in"
                    + " the log: %d; not repaired: %s%s; sites %s; scrub %s; log %s: %s",
                    repairSeconds, counters, counters.get("ringlog_scrub_cycles_total"),
                    cyclesWanted, damaged, damagedHeaders, repaired.size(), missing,
                    missingDetail(missing, damagedHeaders), sites, scrubJson(victim),
                    victim.log(), scrubLines(victim)));
        }
        Check.equal(0, counters.get("ringlog_repair_marked_total"),
                "ringlog_repair_marked_total on " + victim.name
                        + " (every entry has two good copies) " + counters);

        Scenarios.step("stop the other bookies; read everything from " + victim.name + " alone");
        for (Bookie other : cluster.bookies.subList(1, cluster.bookies.size())) {
            other.stop();
        }
        BookKeeper reader = cluster.client(conf -> { });
        LedgerHandle reopened = reader.openLedgerNoRecovery(ledgerId, DigestType.CRC32C,
                Scenarios.PASSWORD);
        Check.that(reopened.isClosed(), "the ledger is not closed in its metadata");
        Check.equal(entryCount - 1, reopened.getLastAddConfirmed(), "LAC after reopen");
        double readSeconds = readAndVerify(reopened, ledgerId, 0, entryCount - 1);
        reopened.close();
        return String.format("entries=%d body_bytes=%d write_s=%.1f clean_cycle_s=%.1f"
                + " damage_sites=%d damaged_entries=%d damaged_headers=%d sites=%s"
                + " repair_s=%.1f scrub_cycles=%d damage_records=%d requested=%d copied=%d"
                + " written=%d marked=%d failed=%d read_alone_s=%.1f total_s=%.1f",
                entryCount, BODY_SIZE, writeSeconds, cleanSeconds, sites.size(), damaged.size(),
                damagedHeaders.size(), sites.stream().map(Site::toString)
                        .collect(Collectors.joining(",", "[", "]")), repairSeconds,
                counters.get("ringlog_scrub_cycles_total"),
                counters.get("ringlog_scrub_damage_records_total"),
                counters.get("ringlog_repair_requested_total"),
                counters.get("ringlog_repair_copied_total"),
                counters.get("ringlog_repair_written_total"),
                counters.get("ringlog_repair_marked_total"),
                counters.get("ringlog_repair_failed_total"), readSeconds,
                Scenarios.seconds(System.nanoTime() - start));
    }

    /** For the FAIL line: whether each entry not repaired had its record header damaged. */
    private static String missingDetail(TreeSet<Long> missing, TreeSet<Long> headers) {
        if (missing.isEmpty()) {
            return "";
        }
        return " " + missing.stream().map(entry -> entry + (headers.contains(entry)
                ? ":header-damaged" : ":header-intact")).toList();
    }

    /** One damaged place: its file, its bytes and the records they overlap. */
    record Site(String segment, long offset, String aim, List<Long> entries, List<Long> headers,
            int otherRecords) {
        @Override
        public String toString() {
            return segment + "@" + offset + "/" + aim + ":entries" + entries.toString()
                    .replace(" ", "") + (headers.isEmpty() ? "" : ":headers"
                    + headers.toString().replace(" ", ""))
                    + (otherRecords == 0 ? "" : ":other_records" + otherRecords);
        }
    }

    /**
     * Overwrites DAMAGE_BYTES random bytes near the middle of the data of `count` sealed
     * segments of a stopped bookie (spread over them; if fewer are sealed, several places in
     * one, spread over its data), as a failing disk would, and returns which entry records each
     * place overlaps, found by walking the file before it is damaged. The first place lies
     * inside one payload, the second straddles the end of one record and the header of the
     * next (the scrubber must then find the next sound header and the entry in between), the
     * third is the exact middle of the data, whatever is there.
     */
    static List<Site> damageSealedSegments(Bookie bookie, long ledgerId, int count)
            throws IOException {
        List<Path> sealed = sealedSegments(bookie);
        Check.that(!sealed.isEmpty(), "no sealed segment in " + shardDirectory(bookie));
        List<Path> chosen = new ArrayList<>();
        for (int index = 0; index < count; index++) {
            chosen.add(sealed.size() >= count
                    ? sealed.get(sealed.size() * (2 * index + 1) / (2 * count))
                    : sealed.get(index % sealed.size()));
        }
        Random random = new Random(ledgerId * 31 + count);
        String[] aims = {"payload", "boundary", "middle"};
        List<Site> sites = new ArrayList<>();
        for (int index = 0; index < count; index++) {
            Path segment = chosen.get(index);
            int sharing = 0;
            int rank = 0;
            for (int other = 0; other < count; other++) {
                if (chosen.get(other).equals(segment)) {
                    rank += other < index ? 1 : 0;
                    sharing += 1;
                }
            }
            byte[] image = Files.readAllBytes(segment);
            List<Rec> records = walk(image);
            Check.that(!records.isEmpty(), "no records found in " + segment);
            long dataEnd = records.get(records.size() - 1).end();
            long middle = SEGMENT_HEADER_SIZE
                    + (dataEnd - SEGMENT_HEADER_SIZE) * (rank + 1) / (sharing + 1);
            String aim = aims[index % aims.length];
            long offset = aim(records, middle, aim, ledgerId);
            List<Long> entries = new ArrayList<>();
            List<Long> headers = new ArrayList<>();
            int otherRecords = 0;
            for (Rec rec : records) {
                if (!rec.overlaps(offset, offset + DAMAGE_BYTES)) {
                    continue;
                }
                if (rec.kind() == KIND_ENTRY && rec.ledger() == ledgerId) {
                    entries.add(rec.entry());
                    if (rec.headerOverlaps(offset, offset + DAMAGE_BYTES)) {
                        headers.add(rec.entry());
                    }
                } else {
                    otherRecords += 1;
                }
            }
            byte[] noise = new byte[DAMAGE_BYTES];
            random.nextBytes(noise);
            try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
                file.seek(offset);
                file.write(noise);
                file.getFD().sync();
            }
            sites.add(new Site(segment.getFileName().toString().replace(".segment", ""),
                    offset, aim, entries, headers, otherRecords));
        }
        return sites;
    }

    /** Where a damage place of the given aim starts, from the middle point chosen. */
    private static long aim(List<Rec> records, long middle, String aim, long ledgerId) {
        if (aim.equals("middle")) {
            return middle;
        }
        for (int index = 0; index + 1 < records.size(); index++) {
            Rec rec = records.get(index);
            Rec next = records.get(index + 1);
            if (rec.end() <= middle || rec.kind() != KIND_ENTRY || rec.ledger() != ledgerId) {
                continue;
            }
            if (aim.equals("payload") && rec.payloadSize() >= 2 * DAMAGE_BYTES) {
                return rec.position() + RECORD_HEADER_SIZE + rec.payloadSize() / 2
                        - DAMAGE_BYTES / 2;
            }
            // Two records of one commit, back to back: the last 32 bytes of the first (payload
            // and its padding) and the first 32 of the next one's header.
            if (aim.equals("boundary") && next.position() == rec.end()
                    && next.kind() == KIND_ENTRY && next.ledger() == ledgerId) {
                return rec.end() - DAMAGE_BYTES / 2;
            }
        }
        return middle;
    }

    // ---------------------------------------------------------------------------------------
    // scrub-mark-underreplicated

    /**
     * The same cluster, 20,000 entries: one entry's payload gets one byte flipped on all three
     * bookies (stopped), in a sealed segment of each. Restarted, each finds it, finds no good
     * copy at the others and marks the ledger under-replicated naming itself; the mark is read
     * back through BookKeeper's own LedgerUnderreplicationManager. The client reading that
     * entry gets an error, never data; its neighbours read back.
     */
    static String markUnderreplicated(Cluster cluster) throws Exception {
        int entryCount = MARK_ENTRY_COUNT;
        long start = System.nanoTime();
        BookKeeper client = cluster.client(conf -> { });
        Scenarios.step("createLedger E3/W3/A2");
        LedgerHandle handle = client.createLedger(3, 3, 2, DigestType.CRC32C, Scenarios.PASSWORD);
        long ledgerId = handle.getId();
        Scenarios.step("async adds x" + entryCount);
        addAll(handle, entryCount);
        handle.close();

        Scenarios.step("a clean scrub cycle on every bookie");
        waitForCleanCycle(cluster);

        Scenarios.step("stop every bookie");
        for (Bookie bookie : cluster.bookies) {
            bookie.stop();
        }
        Scenarios.step("find one entry in a sealed segment of every bookie");
        List<Map<Long, Located>> where = new ArrayList<>();
        long sealedUpTo = Long.MAX_VALUE;
        for (Bookie bookie : cluster.bookies) {
            Map<Long, Located> entries = sealedEntries(bookie, ledgerId);
            Check.that(!entries.isEmpty(), bookie.name + " has no entry in a sealed segment");
            sealedUpTo = Math.min(sealedUpTo, entries.keySet().stream()
                    .mapToLong(Long::longValue).max().orElseThrow());
            where.add(entries);
        }
        long target = sealedUpTo / 2;
        List<String> flipped = new ArrayList<>();
        for (int index = 0; index < cluster.bookies.size(); index++) {
            Located located = where.get(index).get(target);
            Check.that(located != null, "entry " + target + " is in no sealed segment of "
                    + cluster.bookies.get(index).name);
            // A byte of the body itself, past BookKeeper's digest header: every copy damaged.
            long at = located.record().position() + RECORD_HEADER_SIZE
                    + located.record().payloadSize() / 2;
            try (RandomAccessFile file = new RandomAccessFile(located.segment().toFile(), "rw")) {
                file.seek(at);
                int old = file.read();
                file.seek(at);
                file.write(old ^ 0x20);
                file.getFD().sync();
            }
            flipped.add(located.segment().getFileName().toString().replace(".segment", "")
                    + "@" + at);
        }

        Scenarios.step("restart every bookie");
        for (Bookie bookie : cluster.bookies) {
            restart(bookie);
        }
        long restarted = System.nanoTime();
        Scenarios.step("wait for every bookie to mark the ledger under-replicated");
        List<Map<String, Long>> counters = new ArrayList<>();
        for (Bookie bookie : cluster.bookies) {
            long deadline = WAIT_MS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted);
            Map<String, Long> values = waitForCounters(bookie, Math.max(deadline, 1_000),
                    v -> v.get("ringlog_repair_marked_total") >= 1);
            Check.that(values.get("ringlog_repair_marked_total") >= 1, bookie.name
                    + " did not mark the ledger under-replicated within " + WAIT_MS / 1000
                    + " s of the restarts (entry " + target + " flipped at " + flipped + "): "
                    + values + "; log " + bookie.log() + ": " + scrubLines(bookie));
            counters.add(values);
        }
        double markSeconds = Scenarios.seconds(System.nanoTime() - restarted);
        for (int index = 0; index < cluster.bookies.size(); index++) {
            // No good copy exists: anything journaled as a repair would be a bad copy accepted.
            Check.equal(0, counters.get(index).get("ringlog_repair_written_total"),
                    "ringlog_repair_written_total on " + cluster.bookies.get(index).name
                            + " with every copy damaged " + counters.get(index));
        }

        Scenarios.step("read the mark through LedgerUnderreplicationManager");
        List<String> replicas;
        long ctime;
        try (LedgerUnderreplicationManager manager =
                client.getLedgerManagerFactory().newLedgerUnderreplicationManager()) {
            UnderreplicatedLedger info = manager.getLedgerUnreplicationInfo(ledgerId);
            Check.that(info != null, "ledger " + ledgerId + " is not marked under-replicated"
                    + " in ZooKeeper although every bookie counted a mark");
            Check.equal(ledgerId, info.getLedgerId(), "ledger id of the mark");
            replicas = info.getReplicaList();
            ctime = info.getCtime();
        }
        for (Bookie bookie : cluster.bookies) {
            Check.that(replicas.contains(bookie.id()), "the mark's replicas " + replicas
                    + " do not name " + bookie.id() + " (" + bookie.name + ")");
        }
        Check.equal(cluster.bookies.size(), replicas.size(), "replicas in the mark " + replicas);

        Scenarios.step("read the damaged entry " + target + " and its neighbours");
        BookKeeper reader = cluster.client(conf -> { });
        LedgerHandle reopened = reader.openLedgerNoRecovery(ledgerId, DigestType.CRC32C,
                Scenarios.PASSWORD);
        int readError;
        try {
            Enumeration<LedgerEntry> read = reopened.readEntries(target, target);
            LedgerEntry entry = read.nextElement();
            throw new Check.Failure("entry " + target + ", damaged on every bookie, was read: "
                    + entry.getLength() + " bytes, "
                    + (Arrays.equals(entry.getEntry(),
                            Entries.body(ledgerId, target, BODY_SIZE, BODY_SIZE))
                            ? "the bytes written" : "NOT the bytes written"));
        } catch (BKException e) {
            readError = e.getCode();
        }
        readAndVerify(reopened, ledgerId, target - 1, target - 1);
        readAndVerify(reopened, ledgerId, target + 1, target + 1);
        readAndVerify(reopened, ledgerId, 0, 0);
        readAndVerify(reopened, ledgerId, entryCount - 1, entryCount - 1);
        reopened.close();

        // How often each bookie marks the ledger again once marked. The scrubber finds the
        // damage once a cycle (3.6 s here); a read of a damaged record also asks for a repair,
        // and the repairers' own reads of each other's damaged copies are such reads, so the
        // three kept one another repairing (and marking) about ten times a second until a
        // shard asked for the same entry at most once a minute (REPAIR_RETRY_MS): none in
        // this window.
        Scenarios.step("count the marks that follow");
        long windowStart = System.nanoTime();
        List<Long> marksBefore = new ArrayList<>();
        for (Bookie bookie : cluster.bookies) {
            marksBefore.add(metric(bookie, "ringlog_repair_marked_total"));
        }
        Thread.sleep(REMARK_WINDOW_MS);
        List<String> remarks = new ArrayList<>();
        for (int index = 0; index < cluster.bookies.size(); index++) {
            long marks = metric(cluster.bookies.get(index), "ringlog_repair_marked_total")
                    - marksBefore.get(index);
            Check.that(marks == 0, "bookie " + index + " marked the ledger " + marks
                    + " more times within " + REMARK_WINDOW_MS + " ms of its first mark");
            remarks.add(String.format("%.1f", marks
                    / Scenarios.seconds(System.nanoTime() - windowStart)));
        }
        return String.format("entries=%d damaged_entry=%d flipped=%s mark_s=%.1f marked=%s"
                + " requested=%s replicas=%s mark_ctime=%d read_error=%d(%s) neighbours_ok=true"
                + " marks_per_s_after=%s total_s=%.1f", entryCount, target,
                flipped.toString().replace(" ", ""),
                markSeconds,
                counters.stream().map(c -> c.get("ringlog_repair_marked_total").toString())
                        .collect(Collectors.joining(",")),
                counters.stream().map(c -> c.get("ringlog_repair_requested_total").toString())
                        .collect(Collectors.joining(",")),
                replicas.toString().replace(" ", ""), ctime, readError,
                BKException.getMessage(readError).replace(' ', '_'), String.join(",", remarks),
                Scenarios.seconds(System.nanoTime() - start));
    }

    /** An entry record and the segment file holding it. */
    record Located(Path segment, Rec record) {}

    /** Every entry of `ledgerId` in a sealed segment of a stopped bookie, by entry id. */
    static Map<Long, Located> sealedEntries(Bookie bookie, long ledgerId) throws IOException {
        Map<Long, Located> entries = new HashMap<>();
        for (Path segment : sealedSegments(bookie)) {
            for (Rec rec : walk(Files.readAllBytes(segment))) {
                if (rec.kind() == KIND_ENTRY && rec.ledger() == ledgerId) {
                    Located before = entries.put(rec.entry(), new Located(segment, rec));
                    Check.that(before == null, "entry " + rec.entry() + " is written twice on "
                            + bookie.name + ": " + before + " and " + segment + "@"
                            + rec.position());
                }
            }
        }
        return entries;
    }

    // ---------------------------------------------------------------------------------------
    // The journal's files, walked as docs/format.md lays them out.

    /** One record: where its header starts, its aligned size, and what its header says. */
    record Rec(long position, int size, int kind, int payloadSize, long ledger, long entry) {
        long end() {
            return position + size;
        }

        boolean overlaps(long from, long to) {
            return position < to && from < end();
        }

        boolean headerOverlaps(long from, long to) {
            return position < to && from < position + RECORD_HEADER_SIZE;
        }
    }

    /**
     * The records of a segment file's image. At position p (from 4096): "RLGR" and a header
     * naming p as its own position make a record of align8(64 + payload_size) bytes; anything
     * else is the zero padding that ends a commit, so the walk goes on at the next 4096
     * boundary. Checksums are not checked: this runs on files known good (before damage).
     */
    static List<Rec> walk(byte[] image) {
        ByteBuffer buffer = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
        List<Rec> records = new ArrayList<>();
        long position = SEGMENT_HEADER_SIZE;
        while (position + RECORD_HEADER_SIZE <= image.length) {
            int at = (int) position;
            boolean framed = image[at] == 'R' && image[at + 1] == 'L' && image[at + 2] == 'G'
                    && image[at + 3] == 'R' && buffer.getLong(at + 56) == position;
            long payloadSize = Integer.toUnsignedLong(buffer.getInt(at + 16));
            long size = (RECORD_HEADER_SIZE + payloadSize + 7) & ~7L;
            if (framed && position + size <= image.length) {
                records.add(new Rec(position, (int) size, image[at + 5] & 0xff, (int) payloadSize,
                        buffer.getLong(at + 32), buffer.getLong(at + 40)));
                position += size;
            } else {
                position = (position / SEGMENT_HEADER_SIZE + 1) * SEGMENT_HEADER_SIZE;
            }
        }
        return records;
    }

    static Path shardDirectory(Bookie bookie) {
        return bookie.dataDirectory().resolve("shard-0");
    }

    /**
     * The sealed segments, by id: every segment but the highest-numbered (the one written), and
     * only those whose index file is published (a segment is sealed once its index is).
     */
    static List<Path> sealedSegments(Bookie bookie) throws IOException {
        Path shard = shardDirectory(bookie);
        TreeMap<Long, Path> segments = new TreeMap<>();
        try (Stream<Path> files = Files.list(shard)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String name = file.getFileName().toString();
                if (name.matches("\\d{10}\\.segment")) {
                    segments.put(Long.parseLong(name.substring(0, 10)), file);
                }
            }
        }
        if (!segments.isEmpty()) {
            segments.pollLastEntry();
        }
        List<Path> sealed = new ArrayList<>();
        for (Map.Entry<Long, Path> segment : segments.entrySet()) {
            String index = String.format("%010d.index", segment.getKey());
            if (Files.exists(shard.resolve(index))) {
                sealed.add(segment.getValue());
            }
        }
        return sealed;
    }

    // ---------------------------------------------------------------------------------------
    // Writing and reading.

    /** Adds entries 0..count-1 of BODY_SIZE bytes with up to 1,000 outstanding. */
    static void addAll(LedgerHandle handle, int count) throws Exception {
        Semaphore outstanding = new Semaphore(1_000);
        AtomicReference<String> error = new AtomicReference<>();
        for (int index = 0; index < count; index++) {
            outstanding.acquire();
            handle.asyncAddEntry(Entries.body(handle.getId(), index, BODY_SIZE, BODY_SIZE),
                    (rc, lh, entryId, ctx) -> {
                        if (rc != BKException.Code.OK) {
                            error.compareAndSet(null,
                                    "entry " + ctx + ": " + BKException.getMessage(rc));
                        }
                        outstanding.release();
                    }, index);
        }
        Check.that(outstanding.tryAcquire(1_000, 120, TimeUnit.SECONDS), "adds still outstanding");
        Check.that(error.get() == null, "an add failed: " + error.get());
    }

    /** Reads [first, last] in batches, every byte compared; returns the seconds taken. */
    static double readAndVerify(LedgerHandle handle, long ledgerId, long first, long last)
            throws Exception {
        long start = System.nanoTime();
        long expected = first;
        for (long from = first; from <= last; from += Scenarios.READ_BATCH_COUNT) {
            long to = Math.min(last, from + Scenarios.READ_BATCH_COUNT - 1);
            Enumeration<LedgerEntry> entries = handle.readEntries(from, to);
            while (entries.hasMoreElements()) {
                LedgerEntry entry = entries.nextElement();
                Check.equal(expected, entry.getEntryId(), "entry id in read order");
                Entries.verify(ledgerId, entry.getEntryId(), entry.getEntry(), BODY_SIZE,
                        BODY_SIZE);
                expected += 1;
            }
        }
        Check.equal(last - first + 1, expected - first, "entries read back");
        return Scenarios.seconds(System.nanoTime() - start);
    }

    // ---------------------------------------------------------------------------------------
    // The bookies' own account: /metrics and their logs.

    static final String HTTP_LINE = "ringlog http on ";
    static final List<String> COUNTERS = List.of("ringlog_scrub_cycles_total",
            "ringlog_scrub_damage_records_total", "ringlog_repair_requested_total",
            "ringlog_repair_copied_total", "ringlog_repair_written_total",
            "ringlog_repair_marked_total", "ringlog_repair_failed_total");
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final Pattern REPAIRED =
            Pattern.compile("repaired ledger (-?\\d+) entry (-?\\d+) from another bookie");

    /** Starts a stopped bookie and waits for its new HTTP address line (a new port). */
    static void restart(Bookie bookie) throws Exception {
        long before = httpLines(bookie).size();
        bookie.start();
        waitUntil(() -> httpLines(bookie).size() > before, 10_000,
                () -> bookie.name + " restarted but printed no new \"" + HTTP_LINE.trim()
                        + "\" line: " + bookie.logTail());
    }

    /** Every "ringlog http on ADDRESS" of the bookie's log, oldest first (one per start). */
    static List<String> httpLines(Bookie bookie) {
        try {
            List<String> addresses = new ArrayList<>();
            for (String line : Files.readAllLines(bookie.log(), StandardCharsets.UTF_8)) {
                int at = line.indexOf(HTTP_LINE);
                if (at >= 0) {
                    addresses.add(line.substring(at + HTTP_LINE.length()).trim());
                }
            }
            return addresses;
        } catch (IOException e) {
            return List.of();
        }
    }

    /**
     * The COUNTERS of the bookie's /metrics (its latest address), each summed over its series
     * (`name value` or `name{labels} value`, maybe a timestamp after); 0 when absent.
     */
    static Map<String, Long> counters(Bookie bookie) throws Exception {
        List<String> addresses = httpLines(bookie);
        Check.that(!addresses.isEmpty(), bookie.name + " printed no \"" + HTTP_LINE.trim()
                + "\" line: " + bookie.logTail());
        String address = addresses.get(addresses.size() - 1);
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                URI.create("http://" + address + "/metrics")).timeout(Duration.ofSeconds(10))
                .build(), HttpResponse.BodyHandlers.ofString());
        Check.equal(200, response.statusCode(), "status of " + address + "/metrics");
        Map<String, Long> values = new TreeMap<>();
        for (String name : COUNTERS) {
            values.put(name, 0L);
        }
        for (String line : response.body().split("\n")) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] fields = line.split("\\s+");
            if (fields.length < 2) {
                continue;
            }
            int brace = fields[0].indexOf('{');
            String name = brace >= 0 ? fields[0].substring(0, brace) : fields[0];
            if (values.containsKey(name)) {
                values.merge(name, (long) Double.parseDouble(fields[1]), Long::sum);
            }
        }
        return values;
    }

    /** The bookie's /api/v1/bookie/scrub (its scrubbers' state), for a FAIL line. */
    static String scrubJson(Bookie bookie) {
        List<String> addresses = httpLines(bookie);
        if (addresses.isEmpty()) {
            return "(no address)";
        }
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://"
                    + addresses.get(addresses.size() - 1) + "/api/v1/bookie/scrub"))
                    .timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString()).body().trim();
        } catch (Exception e) {
            return "(failed: " + e + ")";
        }
    }

    static long metric(Bookie bookie, String name) throws Exception {
        return counters(bookie).get(name);
    }

    /** What a predicate over a bookie's counters sees. */
    interface CountersTest {
        boolean test(Map<String, Long> values);
    }

    /**
     * Polls the bookie's counters until `done` holds or `timeoutMs` passes; returns the last
     * values read (the caller checks them). A scrape that fails is tried again.
     */
    static Map<String, Long> waitForCounters(Bookie bookie, long timeoutMs, CountersTest done)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Map<String, Long> values = null;
        Exception last = null;
        while (true) {
            try {
                values = counters(bookie);
                if (done.test(values)) {
                    return values;
                }
            } catch (IOException e) {
                last = e;
            }
            if (System.nanoTime() >= deadline) {
                if (values == null) {
                    throw new Check.Failure(bookie.name + "'s /metrics did not answer within "
                            + timeoutMs + " ms: " + last);
                }
                return values;
            }
            Thread.sleep(200);
        }
    }

    /**
     * Every bookie completes a scrub cycle over its sealed segments and finds nothing: the
     * data as written is sound, so what is found later is the test's damage.
     */
    static void waitForCleanCycle(Cluster cluster) throws Exception {
        for (Bookie bookie : cluster.bookies) {
            Map<String, Long> values = waitForCounters(bookie, WAIT_MS,
                    v -> v.get("ringlog_scrub_cycles_total") >= 1
                            || v.get("ringlog_scrub_damage_records_total") > 0);
            Check.that(values.get("ringlog_scrub_cycles_total") >= 1, bookie.name
                    + " completed no scrub cycle within " + WAIT_MS / 1000 + " s (the cycle is"
                    + " 3.6 s): " + values + "; /api/v1/bookie/scrub " + scrubJson(bookie)
                    + "; sealed segments " + sealedSegments(bookie).size());
            Check.equal(0, values.get("ringlog_scrub_damage_records_total"), bookie.name
                    + "'s ringlog_scrub_damage_records_total on undamaged files ("
                    + scrubLines(bookie) + ")");
            Check.that(!sealedSegments(bookie).isEmpty(), bookie.name
                    + " has no sealed segment after a scrub cycle");
        }
    }

    /** The entries of `ledgerId` the bookie's log says it repaired. */
    static TreeSet<Long> repairedInLog(Bookie bookie, long ledgerId) throws IOException {
        TreeSet<Long> repaired = new TreeSet<>();
        for (String line : Files.readAllLines(bookie.log(), StandardCharsets.UTF_8)) {
            Matcher matcher = REPAIRED.matcher(line);
            if (matcher.find() && Long.parseLong(matcher.group(1)) == ledgerId) {
                repaired.add(Long.parseLong(matcher.group(2)));
            }
        }
        return repaired;
    }

    /** The bookie's scrub and repair log lines, at most the last 12, for a FAIL line. */
    static String scrubLines(Bookie bookie) {
        try {
            List<String> lines = Files.readAllLines(bookie.log(), StandardCharsets.UTF_8).stream()
                    .filter(line -> line.contains("scrub") || line.contains("repair"))
                    .toList();
            return lines.isEmpty() ? "(no scrub or repair lines)" : String.join(" | ",
                    lines.subList(Math.max(0, lines.size() - 12), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    static void waitUntil(BooleanSupplier condition, long timeoutMs, Supplier<String> failure)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() >= deadline) {
                throw new Check.Failure(failure.get());
            }
            Thread.sleep(50);
        }
    }
}
