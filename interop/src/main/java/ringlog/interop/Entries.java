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
        SplittableRandom random = new SplittableRandom(ledgerId * 1_000_003L + entryId);
        byte[] body = new byte[SIZE_MIN + random.nextInt(SIZE_MAX - SIZE_MIN + 1)];
        random.nextBytes(body);
        return body;
    }

    /** Fails naming the entry when the bytes read differ from what was written. */
    static void verify(long ledgerId, long entryId, byte[] read) {
        byte[] expected = body(ledgerId, entryId);
        if (!Arrays.equals(expected, read)) {
            throw new Check.Failure("ledger " + ledgerId + " entry " + entryId + ": read "
                    + read.length + " bytes that differ from the " + expected.length + " written");
        }
    }
}
