package ringlog.interop;

/** Assertions that are always on (unlike `assert`), with a message that says what was expected. */
final class Check {
    private Check() {}

    /** A scenario's expectation does not hold; the message goes on its FAIL line. */
    static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    static void that(boolean condition, String message) {
        if (!condition) {
            throw new Failure(message);
        }
    }

    static void equal(long expected, long actual, String what) {
        if (expected != actual) {
            throw new Failure(what + ": expected " + expected + ", got " + actual);
        }
    }
}
