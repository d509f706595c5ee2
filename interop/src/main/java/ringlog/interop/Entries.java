package ringlog.interop;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Deterministic entry bodies: the bytes of (ledger, entry) can be recomputed at read time, so a
 * read-back compares every byte without keeping what was written in memory.
 */
final class Entries {
    static final int SIZE_MIN = 16;
    static final int SIZE_MAX = 1024;

    private Entries() {}

    static byte[] body(long ledgerId, long entryId) {
        return body(ledgerId, entryId, SIZE_MIN, SIZE_MAX);
    }

    /** A body of sizeMin..=sizeMax bytes (disk-full fills a file system with large ones). */
    static byte[] body(long ledgerId, long entryId, int sizeMin, int sizeMax) {
        SplittableRandom random = new SplittableRandom(ledgerId * 1_000_003L + entryId);
        byte[] body = new byte[sizeMin + random.nextInt(sizeMax - sizeMin + 1)];
        random.nextBytes(body);
        return body;
    }

    /** Fails naming the entry when the bytes read differ from what was written. */
    static void verify(long ledgerId, long entryId, byte[] read) {
        verify(ledgerId, entryId, read, SIZE_MIN, SIZE_MAX);
    }

    /** As `verify`, for a body made by `body(ledgerId, entryId, sizeMin, sizeMax)`. */
    static void verify(long ledgerId, long entryId, byte[] read, int sizeMin, int sizeMax) {
        byte[] expected = body(ledgerId, entryId, sizeMin, sizeMax);
        if (!Arrays.equals(expected, read)) {
            throw new Check.Failure("ledger " + ledgerId + " entry " + entryId + ": read "
                    + read.length + " bytes that differ from the " + expected.length + " written");
        }
    }
}
