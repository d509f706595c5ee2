package ringlog.pulsar;

/** A scenario's expectation does not hold; the message goes on its FAIL line. */
final class Failure extends RuntimeException {
    Failure(String message) {
        super(message);
    }

    static void check(boolean condition, String message) {
        if (!condition) {
            throw new Failure(message);
        }
    }
}
