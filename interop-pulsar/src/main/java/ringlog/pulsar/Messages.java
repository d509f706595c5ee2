package ringlog.pulsar;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongPredicate;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;

/**
 * Message bodies and the produce and read loops. Message number N of a topic is 1 KiB: N as 8
 * bytes, then bytes drawn from a generator seeded with (topic, N), so every byte read back is
 * checked and a message from the wrong place or another topic cannot pass.
 */
final class Messages {
    static final int SIZE = 1024;

    private Messages() {}

    static byte[] body(String topic, long number) {
        byte[] body = new byte[SIZE];
        ByteBuffer.wrap(body).putLong(number);
        long state = topic.hashCode() * 0x9E3779B97F4A7C15L + number * 0xBF58476D1CE4E5B9L + 1;
        for (int i = 8; i < SIZE; i++) {
            state ^= state << 13;
            state ^= state >>> 7;
            state ^= state << 17;
            body[i] = (byte) state;
        }
        return body;
    }

    static void verify(String topic, long expected, byte[] got) {
        if (!Arrays.equals(body(topic, expected), got)) {
            long number = got.length >= 8 ? ByteBuffer.wrap(got).getLong() : -1;
            throw new Failure(topic + ": message " + expected + " differs (got " + got.length
                    + " bytes, numbered " + number + ")");
        }
    }

    static Producer<byte[]> producer(PulsarClient client, String topic, boolean batching,
            int outstanding) throws Exception {
        return client.newProducer(Schema.BYTES).topic(topic).enableBatching(batching)
                .blockIfQueueFull(true).maxPendingMessages(Math.max(outstanding, 1) * 2)
                .sendTimeout(60, TimeUnit.SECONDS).create();
    }

    /** Synchronous sends of messages [from, from + count); returns sends per second. */
    static double sendSync(Producer<byte[]> producer, String topic, long from, long count)
            throws Exception {
        long start = System.nanoTime();
        for (long n = from; n < from + count; n++) {
            producer.send(body(topic, n));
        }
        return count / ((System.nanoTime() - start) / 1e9);
    }

    /** What an asynchronous run did: acked messages, the first error, and the rate. */
    record Sent(long acked, Throwable error, double perSecond) {}

    /**
     * Asynchronous sends of [from, from + count) with at most `outstanding` unacknowledged.
     * `progress` runs in this (the sending) thread with the acked count before each send; it
     * may kill things. Stops sending at the first error, and waits for what is in flight; or,
     * when `progress` returns false, stops at once without waiting (the caller has shut the
     * client down: its pending sends never complete).
     */
    static Sent sendAsync(Producer<byte[]> producer, String topic, long from, long count,
            int outstanding, LongPredicate progress) throws Exception {
        Semaphore window = new Semaphore(outstanding);
        AtomicLong acked = new AtomicLong();
        AtomicReference<Throwable> error = new AtomicReference<>();
        long start = System.nanoTime();
        CompletableFuture<MessageId> last = CompletableFuture.completedFuture(null);
        for (long n = from; n < from + count && error.get() == null; n++) {
            if (!progress.test(acked.get())) {
                return new Sent(acked.get(), null, 0);
            }
            window.acquire();
            last = producer.sendAsync(body(topic, n)).whenComplete((id, failure) -> {
                if (failure != null) {
                    error.compareAndSet(null, failure);
                } else {
                    acked.incrementAndGet();
                }
                window.release();
            });
        }
        // Pulsar completes a producer's sends in order: the window drained means all are done.
        Failure.check(window.tryAcquire(outstanding, 120, TimeUnit.SECONDS),
                "sends still pending 120 s after the last one");
        return new Sent(acked.get(), error.get(),
                acked.get() / ((System.nanoTime() - start) / 1e9));
    }

    /**
     * Reads the topic from the earliest message to the last one the broker has (a Reader:
     * non-durable, nothing acknowledged), checking message N is the N-th, byte for byte.
     * Returns the count.
     */
    static long readAll(PulsarClient client, String topic) throws Exception {
        try (Reader<byte[]> reader = reader(client, topic)) {
            return readAll(reader, topic);
        }
    }

    /** A reader from the earliest message; creating it loads the topic on the broker. */
    static Reader<byte[]> reader(PulsarClient client, String topic) throws Exception {
        return client.newReader(Schema.BYTES).topic(topic).startMessageId(MessageId.earliest)
                .create();
    }

    static long readAll(Reader<byte[]> reader, String topic) throws Exception {
        long n = 0;
        while (reader.hasMessageAvailable()) {
            Message<byte[]> message = reader.readNext(60, TimeUnit.SECONDS);
            Failure.check(message != null, topic + ": message " + n
                    + " not delivered within 60 s though the broker has more");
            verify(topic, n, message.getValue());
            n += 1;
        }
        return n;
    }

    /** Receives exactly `count` messages on a durable subscription, checked, and acks them. */
    static void consumeAndAck(Consumer<byte[]> consumer, String topic, long count)
            throws Exception {
        Message<byte[]> message = null;
        for (long n = 0; n < count; n++) {
            message = consumer.receive(60, TimeUnit.SECONDS);
            Failure.check(message != null, topic + ": message " + n + " of " + count
                    + " not received within 60 s");
            verify(topic, n, message.getValue());
        }
        if (message != null) {
            consumer.acknowledgeCumulative(message);
        }
    }
}
